"""Spec -> widgets and widgets -> spec for a built prompt pane (prompt_pane.py).

Every event of the spec marks its field dirty; a field the user or an action changed renders at once, streamed
result changes at most once per event-loop turn, so a pump of many steps repaints the pane once, and not while
the pane is scrolled out of view (they show when it is painted again). An editor already showing a value is left
alone, so typing is never disturbed by the echo of its own edit. Widgets -> spec: `commit_form` copies the
sampling, output, tools and video forms into the spec (the tools' texts as written: a run or Continue checks them).
A settings section not made yet (settings_sections.py) has nothing to show or copy: it loads the spec when made.
"""

from __future__ import annotations

from app.ui.pane.video_fields import has_video

EDITOR_FIELDS = frozenset({"system", "draft", "sampling", "max_tokens", "stop", "show_probabilities",
                           "output_format", "rating", "note", "editing", "backend", "title", "number", "group",
                           "thinking", "thinking_budget", "speculative", "tools", "tool_choice", "mocks",
                           "expected_calls", "lora", "parallel_tool_calls", "speculative_kind",
                           "draft_model", "tool_call_first", "video_fps", "video_max_frames"})
VIDEO_FIELDS = frozenset({"video_fps", "video_max_frames"})


def changed_field(info) -> str:
    """The spec's field an event is about ("new result": a run started or the conversation was cleared, not a
    streamed change)."""
    field = info.path[0].attr if info.path and info.path[0].attr else "result"
    return "new result" if field == "result" and len(info.path) == 1 else field


def render(pane, dirty: set[str]) -> None:
    """Show what changed in the spec's `dirty` fields."""
    if dirty & EDITOR_FIELDS:
        load_editors(pane, dirty)
    if dirty & {"draft_images", "turns"}:
        pane.video_fields.setVisible(has_video(pane.spec))
    if "draft_images" in dirty or dirty & VIDEO_FIELDS:
        pane.images.render()  # (a video's caption says how many frames the rate and budget take)
    elif dirty & {"backend", "turns"}:
        pane.images.check()  # another backend, or images in the conversation: can they still be read?
    if dirty & {"turns", "show_probabilities", "editing", "new result"}:
        pane.output.render(pane.spec)
    elif "result" in dirty:
        pane.output.sync(pane.spec)
    if dirty & {"result", "new result", "turns", "tools", "mocks", "group"}:
        pane.tool_cards.sync()
    if dirty & {"group", "tools"} and pane.sections.built("tools"):
        pane.group_mocks.sync()
    if dirty & {"result", "new result", "turns"}:
        pane.thinking_view.sync(pane.spec)
        pane.show_state()
    if dirty & {"new result", "turns", "versions", "current"}:
        pane.version_bar.sync()
    if dirty & {"new result", "turns"}:
        pane.arrange()
        if "new result" in dirty and pane.busy:
            pane.prompt.fold()  # the message is sent: its reply gets the room until the user types again


def load_spec(pane) -> None:
    """Show everything the spec holds (when the pane is built, after a restore, a duplicate or a run)."""
    load_editors(pane)
    pane.video_fields.setVisible(has_video(pane.spec))
    pane.output.render(pane.spec)
    pane.thinking_view.sync(pane.spec)
    pane.show_state()
    pane.arrange()


def load_editors(pane, fields=EDITOR_FIELDS) -> None:
    """Show the spec's values in the editors for `fields` (an editor already showing them is untouched, so
    typing is never disturbed by the echo of its own edit). A settings section not made yet is left so: it
    loads the spec when it is made (settings_sections.py), except the Output section of a pane that shows token
    probabilities, whose legend goes under the reply."""
    spec, sections = pane.spec, pane.sections
    for editor, text in ((pane.system_prompt, spec.system), (pane.prompt, spec.draft)):
        if editor.toPlainText() != text:
            editor.blockSignals(True)
            editor.setPlainText(text)
            editor.blockSignals(False)
    if sections.built("sampling"):
        load_sampling(pane, fields)
    if sections.built("options"):
        load_options(pane, fields)
    elif "show_probabilities" in fields and spec.show_probabilities:
        sections.make("options")
    if sections.built("tools"):
        load_tools(pane, fields)
    if fields & VIDEO_FIELDS:
        pane.video_fields.load(spec.video_fps, spec.video_max_frames)
    if fields & {"rating", "note"}:
        pane.rating.load(spec.rating, spec.note)
    pane.header.show_spec()
    if fields & {"title", "number"}:
        pane.name_controls()
    editing = spec.editing is not None
    if editing:
        pane.edit_banner.setText(f"Editing message {spec.editing // 2 + 1}: Run replaces it and everything after it.")
    pane.edit_banner.setVisible(editing)
    pane.cancel_edit_button.setVisible(editing)


def load_sampling(pane, fields) -> None:
    spec, sampling = pane.spec, pane.sampling
    if fields & {"sampling", "max_tokens", "stop"}:
        sampling.load(spec.sampling, spec.max_tokens, spec.stop)
    if fields & {"thinking", "thinking_budget"}:
        sampling.thinking.load(spec.thinking, spec.thinking_budget)
    if "speculative" in fields:
        sampling.load_speculative(spec.speculative)
    if "lora" in fields:
        sampling.adapters.load(spec.lora)
    if fields & {"speculative_kind", "draft_model"}:
        sampling.draft.load(spec.speculative_kind, spec.draft_model)


def load_options(pane, fields) -> None:
    if fields & {"show_probabilities", "output_format"}:
        pane.options.load(pane.spec.show_probabilities, pane.spec.output_format)


def load_tools(pane, fields) -> None:
    spec, tools = pane.spec, pane.tools
    if fields & {"tools", "tool_choice", "mocks", "expected_calls"}:
        tools.load(*(getattr(spec, name) if name in fields else None
                     for name in ("tools", "tool_choice", "mocks", "expected_calls")))
    if "parallel_tool_calls" in fields:
        tools.load_parallel(spec.parallel_tool_calls)
    if "tool_call_first" in fields:
        tools.load_call_first(spec.tool_call_first)


def commit_form(pane) -> None:
    """Copy the settings forms made so far into the spec; raises ValueError with a message if a value is invalid
    (the spec keeps its last valid values then)."""
    spec, sections = pane.spec, pane.sections
    sampling = pane.sampling if sections.built("sampling") else None
    options = pane.options if sections.built("options") else None
    if sampling is not None:
        params, max_tokens, stops = sampling.read(spec.sampling)
    output_format = options.read() if options is not None else None
    if sampling is not None:
        spec.sampling, spec.max_tokens, spec.stop = params, max_tokens, tuple(stops)
        spec.thinking, spec.thinking_budget = sampling.thinking.read()
        spec.speculative = sampling.speculative_mode()
    if options is not None:
        spec.output_format = output_format
        spec.show_probabilities = options.probabilities.isChecked()
    if sections.built("tools"):
        tools = pane.tools
        spec.tools, spec.tool_choice = tools.values()  # kept as written; a run checks them (session/tools.py)
        spec.mocks, spec.expected_calls = tools.mock_values()  # as written; Continue checks them
        spec.parallel_tool_calls = tools.parallel_value()
        spec.tool_call_first = tools.call_first.isChecked()
    if sampling is not None:
        spec.lora = sampling.adapters.read()
        spec.speculative_kind, spec.draft_model = sampling.draft.read()
    spec.video_fps, spec.video_max_frames = pane.video_fields.read()
