"""One prompt pane: a view of its PaneSpec — the conversation, the next message, the sampling settings — and
its run streaming in with its latency figures.

The pane renders its spec and writes the user's edits into it; structural actions and runs go through the
SessionController, and a problem is shown in the pane's status line, never raised: a click never ends in a
traceback. It keeps no copy of the run's state: text, state and figures are read from `spec.result` each time.

Spec -> widgets: every event of the spec marks its field dirty; a field the user or an action changed renders at
once, streamed result changes at most once per event-loop turn, so a pump of many steps repaints the pane once,
and not while the pane is scrolled out of view (they show when it is painted again). An editor already showing a
value is left alone, so typing is never disturbed by the echo of its own edit. Widgets -> spec: `commit_form`
copies the sampling, output and tools forms into the spec (the tools' texts as written: a run or Continue checks
them).

Output first: a pane exists to show its reply. Before its first run a pane shows its settings sections and a
full editor; once it has a conversation or a run, the closed sections hide their toggles (the pane's ⚙ menu
opens them), the editor folds to one line until it is focused (app/ui/pane/editor.py) and the rating shows, so
the reply gets most of the pane's height.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.session import MAIN, PaneSpec, RunState, SessionController
from app.ui.pane.controls import PaneControls
from app.ui.pane.conversation_view import ConversationView
from app.ui.pane.editor import PromptEditor
from app.ui.pane.group_mocks_editor import GroupMocksEditor
from app.ui.pane.header import PaneHeader
from app.ui.pane.image_strip import ImageStrip
from app.ui.pane.mcp_picker import McpPicker
from app.ui.pane.output_options import OutputOptions
from app.ui.pane.sampling_form import SamplingForm
from app.ui.pane.thinking_view import ThinkingView
from app.ui.pane.tool_cards_view import ToolCardsView
from app.ui.pane.tools_options import ToolsOptions, server_support_text
from app.ui.pane.version_bar import VersionBar
from app.ui.widgets.collapsible import collapsible
from app.ui.widgets.status_line import StatusLine
from app.ui.widgets.striped_frame import StripedFrame

# The coloured stripe down a pane's left edge that says its state at a glance (red for a message shown outside
# a run, as for an error).
STATE_COLORS = {RunState.QUEUED: QColor("#9ca3af"), RunState.PREFILLING: QColor("#f59e0b"),
                RunState.GENERATING: QColor("#3b82f6"), RunState.DONE: QColor("#10b981"),
                RunState.CANCELLED: QColor("#6b7280"), RunState.ERROR: QColor("#ef4444"),
                RunState.INTERRUPTED: QColor("#a855f7")}
_EDITOR_FIELDS = frozenset({"system", "draft", "sampling", "max_tokens", "stop", "show_probabilities",
                            "output_format", "rating", "note", "editing", "backend", "title", "number", "group",
                            "thinking", "thinking_budget", "speculative", "tools", "tool_choice", "mocks",
                            "expected_calls", "lora", "parallel_tool_calls", "speculative_kind",
                            "draft_model", "tool_call_first"})


class PromptPane(StripedFrame):
    sig_compare_action = Signal(object, str)
    """A compare action for this pane: (pane, "variants" | "compare" | "diff_previous" | "columns" | "run_group" |
    "table")."""
    _draft_before_edit = ""  # the draft an edit replaced, restored by Cancel edit
    _images_before_edit: tuple = ()  # and its images

    def __init__(self, spec: PaneSpec, controller: SessionController, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("promptPane")
        self.setFrameShape(QFrame.StyledPanel)
        self.spec, self.controller = spec, controller
        self._tool_support = ""  # the local model's line for the Tools section (set_tool_support)
        self._notice = False  # an error shown outside a run (no model, invalid setting): red stripe until next run
        self._refresh = QTimer(self, singleShot=True, interval=0)  # one refresh per event-loop turn
        self._refresh.timeout.connect(self._render)
        self._dirty: set[str] = set()

        self.header = PaneHeader(self)
        h = self.header
        self.title, self.conversation_button, self.conversation_menu = h.title, h.conversation_button, \
            h.conversation_menu
        self.compare_button, self.duplicate_button, self.remove_button = h.compare_button, h.duplicate_button, \
            h.remove_button

        self.system_prompt = QPlainTextEdit(placeholderText="System prompt (optional)", tabChangesFocus=True)
        self.system_prompt.setFixedHeight(54)
        system_toggle, _ = collapsible("System prompt", self.system_prompt, expanded=False)
        self.sampling = SamplingForm()
        sampling_toggle, _ = collapsible("Sampling", self.sampling, expanded=False)
        self.options = OutputOptions()
        options_toggle, _ = collapsible("Output", self.options, expanded=False)
        self.tools = ToolsOptions()
        tools_toggle, _ = collapsible("Tools", self.tools, expanded=False)
        self._toggles = (system_toggle, sampling_toggle, options_toggle, tools_toggle)
        self._compact = False
        self.edit_banner = QLabel(objectName="editBanner", wordWrap=True)
        self.cancel_edit_button = QPushButton("Cancel edit")
        banner = QHBoxLayout()
        banner.addWidget(self.edit_banner, 1)
        banner.addWidget(self.cancel_edit_button)
        self.prompt = PromptEditor("Ask something…  (Ctrl+Enter runs this pane)")
        self.images = ImageStrip(spec, controller)

        self.controls = PaneControls([("System prompt", system_toggle), ("Sampling", sampling_toggle),
                                      ("Output", options_toggle), ("Tools", tools_toggle)])
        c = self.controls
        self.run_button, self.stop_button, self.drop_button, self.rating = c.run_button, c.stop_button, \
            c.drop_button, c.rating
        self.copy_action = c.copy_action
        self.output = ConversationView()
        self.output.setTabChangesFocus(True)
        self.thinking_view = ThinkingView()
        self.tool_cards = ToolCardsView(spec, controller)
        self.group_mocks = GroupMocksEditor(spec, controller)  # the group's, shown in every pane of it
        self.tools.add_group_editor(self.group_mocks)
        self.mcp_picker = McpPicker(spec, controller)  # MCP servers' tools beside the JSON-defined ones
        self.tools.add_mcp_picker(self.mcp_picker)
        self.status = StatusLine("idle", background=QPalette.Base)  # the pane's own background (style.qss)
        self.status.setObjectName("paneStatus")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(4)
        for widget in (self.header, system_toggle, self.system_prompt, sampling_toggle, self.sampling):
            layout.addWidget(widget)
        sections = QHBoxLayout()  # Output and Tools share a row: a pane gets no taller for the Tools section
        sections.setContentsMargins(0, 0, 0, 0)
        for toggle in (options_toggle, tools_toggle):
            sections.addWidget(toggle)
        sections.addStretch(1)
        layout.addLayout(sections)
        for widget in (self.options, self.tools):
            layout.addWidget(widget)
        layout.addLayout(banner)
        layout.addWidget(self.images)
        layout.addWidget(self.prompt)
        layout.addWidget(self.controls)
        layout.addWidget(self.thinking_view)
        self.version_bar = VersionBar(spec, controller)  # "‹ version 2 of 3 ›", Branch
        layout.addWidget(self.version_bar)
        layout.addWidget(self.output, 1)
        layout.addWidget(self.tool_cards)
        for widget in (self.options.legend, self.status):
            layout.addWidget(widget)
        self.setMinimumWidth(180)
        chain = [self.cancel_edit_button, self.prompt, *c.focus_chain(), self.thinking_view.toggle,
                 self.thinking_view.text, self.output]  # editor -> Run -> Stop -> rating -> menu -> reply
        for first, second in zip(chain, chain[1:], strict=False):
            QWidget.setTabOrder(first, second)
        self.load_spec()

        self.run_button.clicked.connect(lambda: self.run())
        self.stop_button.clicked.connect(self.stop)
        self.duplicate_button.clicked.connect(lambda: controller.duplicate(self.spec))
        self.remove_button.clicked.connect(lambda: controller.remove(self.spec))
        self.copy_action.triggered.connect(lambda: QGuiApplication.clipboard().setText(self.reply_text()))
        for toggle in self._toggles:
            toggle.toggled.connect(self._arrange)
        self.drop_button.clicked.connect(self.drop_oldest_and_retry)
        self.cancel_edit_button.clicked.connect(self.cancel_edit)
        self.prompt.textChanged.connect(lambda: setattr(self.spec, "draft", self.prompt.toPlainText()))
        self.system_prompt.textChanged.connect(lambda: setattr(self.spec, "system", self.system_prompt.toPlainText()))
        self.sampling.sig_changed.connect(self._form_edited)
        self.options.sig_changed.connect(self._form_edited)
        self.tools.sig_changed.connect(self._form_edited)
        self.group_mocks.sig_changed.connect(self.tool_cards.sync)
        self.rating.sig_changed.connect(lambda: controller.rate(self.spec, self.rating.rating, self.rating.note.text()))
        self.output.sig_branch_requested.connect(self.branch)
        self.prompt.sig_images.connect(self.images.incoming)
        self.images.sig_problem.connect(self.show_error)
        self.header.sig_compare_action.connect(lambda key: self.sig_compare_action.emit(self, key))
        self.header.sig_backend_chosen.connect(lambda name: setattr(self.spec, "backend", name))
        self.header.sig_backend_chosen.connect(lambda _name: self._show_tool_support())
        self.version_bar.sig_problem.connect(self.show_error)
        self.version_bar.sig_diff_previous.connect(lambda: self.sig_compare_action.emit(self, "diff_previous"))
        spec.events.all.connect(self._on_spec_event)

    def detach(self) -> None:
        """The pane leaves the session: stop listening to its spec (the widget is about to be deleted)."""
        self.spec.events.all.disconnect(self._on_spec_event)
        self.group_mocks.detach()
        self.mcp_picker.detach()
        self.tool_cards.detach()
        self._refresh.stop()

    # --- state ----------------------------------------------------------------------------------------------------
    @property
    def number(self) -> int | None:
        return self.spec.number

    @property
    def state(self) -> RunState:
        return self.spec.result.state

    @property
    def busy(self) -> bool:
        return self.spec.result.busy

    @property
    def tokens(self) -> int:
        return self.spec.result.generated_tokens

    def reply_text(self) -> str:
        """The last reply (streaming or finished)."""
        return self.spec.result.text

    def show_state(self) -> None:
        self._notice = False
        busy = self.busy
        self.run_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        drop = self.spec.result.error_kind == "context" and not busy
        if self.drop_button.isHidden() == drop:
            self.drop_button.setVisible(drop)
            self.controls.place_rating()
        self._update_stripe()
        self.version_bar.sync()
        self.refresh_status()

    def show_error(self, message: str) -> None:
        """A problem before or outside a run (empty message, invalid setting, no model): nothing else changes."""
        self._notice = True
        self._update_stripe()
        self.status.setText(f"⚠ {message}")

    def _stripe_color(self) -> QColor | None:
        return STATE_COLORS[RunState.ERROR] if self._notice else STATE_COLORS.get(self.spec.result.state)

    def tick(self) -> None:
        """Refresh the live figures (called a few times a second while busy)."""
        if self.busy and not self._scrolled_away():
            self.refresh_status()

    def _scrolled_away(self) -> bool:
        """Shown, but no part of it on screen (scrolled out of the grid's view)."""
        return self.isVisible() and self.visibleRegion().isEmpty()

    def paintEvent(self, event) -> None:
        if self._dirty and not self._refresh.isActive():
            self._refresh.start()  # back in view with streamed changes pending: show them (not while painting)
        super().paintEvent(event)

    def refresh_status(self) -> None:
        self.status.setText(self.spec.result.summary(time.perf_counter()))

    # --- actions, through the SessionController -------------------------------------------------------------------
    def run(self, use_draft: bool = True) -> bool:
        """Run this pane (a message, or regenerate the last reply); a problem is shown, never raised."""
        if self.busy:
            return False
        try:
            self.commit_form()
            self.controller.run(self.spec, use_draft=use_draft)
        except (ValueError, RuntimeError) as exc:
            self.show_error(str(exc))
            return False
        return True

    def stop(self) -> None:
        self.controller.stop(self.spec)

    def branch(self, token_index: int, token_text: str) -> PaneSpec | None:
        try:
            return self.controller.branch(self.spec, token_index, token_text)
        except (ValueError, RuntimeError) as exc:
            self.show_error(str(exc))
            return None

    def start_edit(self, index: int) -> None:
        self._draft_before_edit = self.spec.draft
        self._images_before_edit = self.spec.draft_images
        self.controller.start_edit(self.spec, index)
        self.prompt.setFocus()

    def cancel_edit(self) -> None:
        self.controller.cancel_edit(self.spec, self._draft_before_edit, self._images_before_edit)

    def drop_oldest(self) -> None:
        self.controller.drop_oldest(self.spec)

    def drop_oldest_and_retry(self) -> None:
        self.drop_oldest()
        self.run()

    def clear_conversation(self) -> None:
        self.controller.clear(self.spec)

    # --- arrangement ----------------------------------------------------------------------------------------------
    def set_tool_support(self, text: str) -> None:
        """How the local model takes tools, in words: the Tools section says it when the pane runs there."""
        self._tool_support = text
        self._show_tool_support()

    def _show_tool_support(self) -> None:
        backend = self.spec.backend or MAIN
        self.tools.set_support(self._tool_support if backend == MAIN else server_support_text(backend))

    def set_compact(self, compact: bool) -> None:
        """Columns mode: settings and editor folded away (their sections closed) so the outputs get the height."""
        self._compact = compact
        if compact:
            for toggle in self._toggles:
                toggle.setChecked(False)  # closes its section
        self.controls.set_sections_enabled(not compact)
        self._arrange()
        self.header.set_compact(compact)

    def settings_width(self) -> int:
        """The width the settings sections open in this pane need to show whole (0 with none open)."""
        margins = self.layout().contentsMargins()
        return max([0, *(section.minimumSizeHint().width() + margins.left() + margins.right()
                         for section in (self.sampling, self.options, self.tools) if section.isVisibleTo(self))])

    def has_reply(self) -> bool:
        """The pane has a conversation or a run (streaming or ended): its reply comes first."""
        return bool(self.spec.turns) or self.spec.result.state is not RunState.IDLE

    def _arrange(self) -> None:
        """Output first: once there is a reply, closed settings sections hide their toggles (the ⚙ menu opens
        them), the editor folds to a line until focused, and the rating shows."""
        reply = self.has_reply()
        for toggle in self._toggles:
            toggle.setVisible(not self._compact and (not reply or toggle.isChecked()))
        self.prompt.setVisible(not self._compact)
        self.prompt.set_foldable(reply)
        self.rating.setVisible(reply)

    def name_controls(self) -> None:
        """Accessible names that say which pane each control belongs to."""
        label = self.spec.label
        self.setAccessibleName(label)
        self.prompt.setAccessibleName(f"Message for {label}")
        self.system_prompt.setAccessibleName(f"System prompt of {label}")
        self.output.setAccessibleName(f"Conversation of {label}")
        self.status.setAccessibleName(f"Status of {label}")
        self.controls.name_for(label)

    # --- spec -> widgets, widgets -> spec -------------------------------------------------------------------------
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
        elif dirty & {"backend", "turns"}:
            self.images.check()  # another backend, or images in the conversation: can they still be read?
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

    def open_tools(self) -> None:
        """Open the Tools section with its editor focused (Tools → Add tools to this pane…); a pane without tools
        gets the example tool and a mock result for it, ready to run."""
        if not self.spec.tools.strip():
            self.tools.load_example()
            self.commit_form()
        self._toggles[3].setChecked(True)
        self.tools.editor.setFocus()

    def _form_edited(self) -> None:
        try:
            self.commit_form()
        except ValueError:
            return  # shown when the user runs the pane
