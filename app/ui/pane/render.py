"""How a pane shows its spec and writes its forms back: a mixin of PromptPane (it uses the pane's `spec`, its
editors and views, `_dirty` and `_refresh`).

Spec -> widgets: every event of the spec marks its field dirty; a field the user or an action changed renders at
once, streamed result changes at most once per event-loop turn (and not while the pane is scrolled out of view).
An editor already showing a value is left alone, so typing is never disturbed by the echo of its own edit.
Widgets -> spec: `commit_form` copies the sampling, output and tools forms into the spec (the tools' texts as
written: a run or Continue checks them).
"""

from __future__ import annotations

_EDITOR_FIELDS = frozenset({"system", "draft", "sampling", "max_tokens", "stop", "show_probabilities",
                            "output_format", "rating", "note", "editing", "backend", "title", "number", "group",
                            "thinking", "thinking_budget", "speculative", "tools", "tool_choice", "mocks",
                            "expected_calls", "lora", "parallel_tool_calls", "speculative_kind",
                            "draft_model", "tool_call_first"})


class PaneRendering:
    def _on_spec_event(self, info) -> None:
        """A change the user made (or an action: run, edit, clear) shows at once; streamed results are
        coalesced into one refresh per event-loop turn."""
        field = info.path[0].attr if info.path and info.path[0].attr else "result"
        if field == "result" and len(info.path) == 1:
            field = "new result"  # a run started or the conversation was cleared: not a streamed change
        self._dirty.add(field)
        if self._dirty - {"result"}:
            self._render()
        elif not self._refresh.isActive():
            self._refresh.start()

    def _render(self) -> None:
        self._refresh.stop()
        if self._dirty == {"result"} and self._scrolled_away():
            return  # only streamed changes, and no one can see them: they show when the pane is painted again
        dirty, self._dirty = self._dirty, set()
        if dirty & _EDITOR_FIELDS:
            self.load_editors(dirty)
        if "draft_images" in dirty:
            self.images.render()
        if dirty & {"turns", "show_probabilities", "editing", "new result"}:
            self.output.render(self.spec)
        elif "result" in dirty:
            self.output.sync(self.spec)
        if dirty & {"result", "new result", "turns", "tools", "mocks", "group"}:
            self.tool_cards.sync()
        if dirty & {"group", "tools"}:
            self.group_mocks.sync()
        if dirty & {"result", "new result", "turns"}:
            self.thinking_view.sync(self.spec)
            self.show_state()
        if dirty & {"new result", "turns", "versions", "current"}:
            self.version_bar.sync()
        if dirty & {"new result", "turns"}:
            self._arrange()
            if "new result" in dirty and self.busy:
                self.prompt.fold()  # the message is sent: its reply gets the room until the user types again

    def load_spec(self) -> None:
        """Show everything the spec holds (after a restore, a duplicate or a run)."""
        self.load_editors()
        self.output.render(self.spec)
        self.thinking_view.sync(self.spec)
        self.show_state()
        self._arrange()

    def load_editors(self, fields=_EDITOR_FIELDS) -> None:
        """Show the spec's values in the editors for `fields` (an editor already showing them is untouched,
        so typing is never disturbed by the echo of its own edit)."""
        spec = self.spec
        for editor, text in ((self.system_prompt, spec.system), (self.prompt, spec.draft)):
            if editor.toPlainText() != text:
                editor.blockSignals(True)
                editor.setPlainText(text)
                editor.blockSignals(False)
        if fields & {"sampling", "max_tokens", "stop"}:
            self.sampling.load(spec.sampling, spec.max_tokens, spec.stop)
        if fields & {"thinking", "thinking_budget"}:
            self.sampling.thinking.load(spec.thinking, spec.thinking_budget)
        if "speculative" in fields:
            self.sampling.load_speculative(spec.speculative)
        if fields & {"show_probabilities", "output_format"}:
            self.options.load(spec.show_probabilities, spec.output_format)
        if fields & {"tools", "tool_choice", "mocks", "expected_calls"}:
            self.tools.load(*(getattr(spec, name) if name in fields else None
                              for name in ("tools", "tool_choice", "mocks", "expected_calls")))
        if "parallel_tool_calls" in fields:
            self.tools.load_parallel(spec.parallel_tool_calls)
        if "tool_call_first" in fields:
            self.tools.load_call_first(spec.tool_call_first)
        if "lora" in fields:
            self.sampling.adapters.load(spec.lora)
        if fields & {"speculative_kind", "draft_model"}:
            self.sampling.draft.load(spec.speculative_kind, spec.draft_model)
        if fields & {"rating", "note"}:
            self.rating.load(spec.rating, spec.note)
        self.header.show_spec()
        if fields & {"title", "number"}:
            self.name_controls()
        editing = spec.editing is not None
        if editing:
            self.edit_banner.setText(f"Editing message {spec.editing // 2 + 1}: Run replaces it and everything "
                                     "after it.")
        self.edit_banner.setVisible(editing)
        self.cancel_edit_button.setVisible(editing)

    def commit_form(self) -> None:
        """Copy the sampling and output forms into the spec; raises ValueError with a message if a value is
        invalid (the spec keeps its last valid values then)."""
        params, max_tokens, stops = self.sampling.read(self.spec.sampling)
        output_format = self.options.read()
        spec = self.spec
        spec.sampling, spec.max_tokens, spec.stop = params, max_tokens, tuple(stops)
        spec.thinking, spec.thinking_budget = self.sampling.thinking.read()
        spec.speculative = self.sampling.speculative_mode()
        spec.output_format = output_format
        spec.show_probabilities = self.options.probabilities.isChecked()
        spec.tools, spec.tool_choice = self.tools.values()  # kept as written; a run checks them (session/tools.py)
        spec.mocks, spec.expected_calls = self.tools.mock_values()  # as written; Continue checks them
        spec.parallel_tool_calls = self.tools.parallel_value()
        spec.tool_call_first = self.tools.call_first.isChecked()
        spec.lora = self.sampling.adapters.read()
        spec.speculative_kind, spec.draft_model = self.sampling.draft.read()

    def _form_edited(self) -> None:
        try:
            self.commit_form()
        except ValueError:
            return  # shown when the user runs the pane
