"""One prompt pane: a view of its PaneSpec — the conversation, the next message, the sampling settings — and
its run streaming in with its latency figures.

The pane edits its spec (app.session) and renders its result; it knows nothing about the engine. It asks for a
run through `sig_run_requested` and is told by the run coordinator when the spec's result changed.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.session import PaneSpec, RunState, conversation
from app.ui.collapsible import collapsible
from app.ui.conversation_view import ConversationView
from app.ui.output_options import OutputOptions
from app.ui.pane_header import PaneHeader
from app.ui.rating_bar import RatingBar
from app.ui.sampling_form import SamplingForm
from app.ui.status_line import StatusLine
from app.ui.striped_frame import StripedFrame


class PromptPane(StripedFrame):
    sig_run_requested = Signal(object)
    """The user asked to run this pane (the pane is the argument)."""
    sig_rerun_requested = Signal(object)
    """Regenerate the last reply, leaving any draft in the editor alone."""
    sig_stop_requested = Signal(object)
    """The user asked to stop this pane's generation."""
    sig_duplicate_requested = Signal(object)
    """Make a copy of this pane (conversation and settings, not the result)."""
    sig_remove_requested = Signal(object)
    """Close this pane."""
    sig_changed = Signal(object)
    """The user edited the pane's message, system prompt, settings or conversation (the session changed)."""
    sig_compare_action = Signal(object, str)
    """A compare action for this pane: (pane, "variants" | "compare" | "columns" | "run_group" | "table")."""
    sig_branch_requested = Signal(object, int, str)
    """Branch from another token of the last reply: (pane, token index, the alternative's text)."""

    def __init__(self, spec: PaneSpec, number: int, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("promptPane")
        self.setFrameShape(QFrame.StyledPanel)
        self.spec, self.number = spec, number
        self.request_id: int | None = None
        self._draft_before_edit = ""
        self._notice = False  # an error shown outside a run (no model, invalid setting): red stripe until next run

        self.header = PaneHeader(self, number)
        h = self.header
        self.title, self.conversation_button, self.conversation_menu = h.title, h.conversation_button, \
            h.conversation_menu
        self.compare_button, self.duplicate_button, self.remove_button = h.compare_button, h.duplicate_button, \
            h.remove_button

        self.system_prompt = QPlainTextEdit(placeholderText="System prompt (optional)")
        self.system_prompt.setFixedHeight(54)
        system_toggle, _ = collapsible("System prompt", self.system_prompt, expanded=False)
        self._system_toggle = system_toggle
        self.edit_banner = QLabel(objectName="editBanner", wordWrap=True)
        self.cancel_edit_button = QPushButton("Cancel edit")
        banner = QHBoxLayout()
        banner.addWidget(self.edit_banner, 1)
        banner.addWidget(self.cancel_edit_button)
        self.prompt = QPlainTextEdit(placeholderText="Ask something…  (Ctrl+Enter runs this pane)")
        self.prompt.setFixedHeight(72)
        self.sampling = SamplingForm()
        sampling_toggle, _ = collapsible("Sampling", self.sampling, expanded=False)
        self.options = OutputOptions()
        options_toggle, _ = collapsible("Output", self.options, expanded=False)
        self._editors = [system_toggle, self.prompt, sampling_toggle, options_toggle,  # hidden when compact
                         self.conversation_button, self.duplicate_button, self.remove_button]

        self.run_button = QPushButton("Run", toolTip="Send the message, or regenerate the last reply (Ctrl+Enter)")
        self.run_button.setObjectName("runButton")
        self.stop_button = QPushButton("Stop", toolTip="Stop this pane (Esc)")
        self.copy_button = QPushButton("Copy", toolTip="Copy the last reply")
        self.drop_button = QPushButton("Drop oldest exchange && retry",
                                       toolTip="Remove the oldest question and its answer, then run again")
        self.stop_button.setEnabled(False)
        buttons = QHBoxLayout()
        for b in (self.run_button, self.stop_button, self.copy_button, self.drop_button):
            buttons.addWidget(b)
        buttons.addStretch(1)

        self.output = ConversationView()
        self.rating = RatingBar()
        self.status = StatusLine("idle", background=QPalette.Base)  # the pane's own background (style.qss)
        self.status.setObjectName("paneStatus")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(4)
        layout.addWidget(self.header)
        layout.addWidget(system_toggle)
        layout.addWidget(self.system_prompt)
        layout.addLayout(banner)
        for widget in (self.prompt, sampling_toggle, self.sampling, options_toggle, self.options):
            layout.addWidget(widget)
        layout.addLayout(buttons)
        layout.addWidget(self.output, 1)
        layout.addWidget(self.options.legend)
        layout.addWidget(self.rating)
        layout.addWidget(self.status)
        self.setMinimumWidth(180)
        self.load_spec()

        self.run_button.clicked.connect(lambda: self.sig_run_requested.emit(self))
        self.stop_button.clicked.connect(lambda: self.sig_stop_requested.emit(self))
        self.duplicate_button.clicked.connect(lambda: self.sig_duplicate_requested.emit(self))
        self.remove_button.clicked.connect(lambda: self.sig_remove_requested.emit(self))
        self.copy_button.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.reply_text()))
        self.drop_button.clicked.connect(self.drop_oldest_and_retry)
        self.cancel_edit_button.clicked.connect(self.cancel_edit)
        self.prompt.textChanged.connect(self._draft_edited)
        self.system_prompt.textChanged.connect(self._system_edited)
        self.sampling.sig_changed.connect(self._sampling_edited)
        self.options.sig_changed.connect(self._sampling_edited)
        self.rating.sig_changed.connect(self._rating_edited)
        self.output.sig_branch_requested.connect(lambda index, text: self.sig_branch_requested.emit(self, index, text))
        self.header.sig_compare_action.connect(lambda key: self.sig_compare_action.emit(self, key))
        self.header.sig_backend_chosen.connect(lambda _name: self.sig_changed.emit(self))

    # --- spec <-> editors -------------------------------------------------------------------------------------
    def load_spec(self) -> None:
        """Show everything the spec holds (after a restore, a duplicate or a run)."""
        spec = self.spec
        for editor, text in ((self.system_prompt, spec.system), (self.prompt, spec.draft)):
            if editor.toPlainText() != text:
                editor.blockSignals(True)
                editor.setPlainText(text)
                editor.blockSignals(False)
        self.sampling.load(spec.sampling, spec.max_tokens, spec.stop)
        self.options.load(spec.show_probabilities, spec.output_format)
        self.rating.load(spec.rating, spec.note)
        self._show_edit_banner()
        self.output.render(spec)
        self.show_state()

    def commit_form(self) -> None:
        """Copy the sampling form into the spec; raises ValueError with a message if a value is invalid."""
        params, max_tokens, stops = self.sampling.read()
        output_format = self.options.read()
        self.spec.sampling, self.spec.max_tokens, self.spec.stop = params, max_tokens, tuple(stops)
        self.spec.output_format = output_format
        if self.spec.show_probabilities != self.options.probabilities.isChecked():
            self.spec.show_probabilities = self.options.probabilities.isChecked()
            self.output.render(self.spec)

    def _draft_edited(self) -> None:
        self.spec.draft = self.prompt.toPlainText()
        self.sig_changed.emit(self)

    def _system_edited(self) -> None:
        self.spec.system = self.system_prompt.toPlainText()
        self.sig_changed.emit(self)

    def _sampling_edited(self) -> None:
        try:
            self.commit_form()
        except ValueError:
            return  # shown when the user runs the pane; the spec keeps its last valid values
        self.sig_changed.emit(self)

    def _rating_edited(self) -> None:
        self.spec.rating, self.spec.note = self.rating.rating, self.rating.note.text()
        self.sig_changed.emit(self)

    def set_compact(self, compact: bool) -> None:
        """Columns mode: editors folded away (their sections closed) so the outputs get the height."""
        for widget in self._editors:
            if compact and isinstance(widget, QToolButton) and widget.isChecked():
                widget.setChecked(False)  # closes its section
            widget.setVisible(not compact)

    # --- conversation actions ---------------------------------------------------------------------------------
    def start_edit(self, index: int) -> None:
        self._draft_before_edit = self.spec.draft
        conversation.start_edit(self.spec, index)
        self.load_spec()
        self.prompt.setFocus()
        self.sig_changed.emit(self)

    def cancel_edit(self) -> None:
        conversation.cancel_edit(self.spec)
        self.spec.draft = self._draft_before_edit
        self.load_spec()
        self.sig_changed.emit(self)

    def _show_edit_banner(self) -> None:
        editing = self.spec.editing is not None
        if editing:
            self.edit_banner.setText(f"Editing message {self.spec.editing // 2 + 1}: Run replaces it and "
                                     "everything after it.")
        self.edit_banner.setVisible(editing)
        self.cancel_edit_button.setVisible(editing)

    def drop_oldest(self) -> None:
        conversation.drop_oldest_exchange(self.spec)
        self.load_spec()
        self.sig_changed.emit(self)

    def drop_oldest_and_retry(self) -> None:
        self.drop_oldest()
        self.sig_run_requested.emit(self)

    def clear_conversation(self) -> None:
        conversation.clear(self.spec)
        self.load_spec()
        self.sig_changed.emit(self)

    # --- what the run coordinator calls -----------------------------------------------------------------------
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
        self.output.catch_up()
        return self.spec.result.text

    def started(self, request_id: int) -> None:
        """A run was submitted: the draft became a turn, and the reply starts empty."""
        self.request_id = request_id
        self.load_spec()

    def append_text(self, delta: str) -> None:
        self.output.append(delta)

    def finished(self) -> None:
        self.request_id = None
        self.output.catch_up()
        self.output.render(self.spec)
        self.show_state()

    def show_state(self) -> None:
        self._notice = False
        busy = self.busy
        self.run_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        self.drop_button.setVisible(self.spec.result.error_kind == "context" and not busy)
        self._update_stripe()
        self.refresh_status()

    def show_error(self, message: str) -> None:
        """A problem before or outside a run (empty message, invalid setting, no model): nothing else changes."""
        self._notice = True
        self._update_stripe()
        self.status.setText(f"⚠ {message}")

    def tick(self) -> None:
        """Refresh the live figures (called a few times a second while busy)."""
        if self.busy:
            self.refresh_status()

    def refresh_status(self) -> None:
        self.status.setText(self.spec.result.summary(time.perf_counter()))
