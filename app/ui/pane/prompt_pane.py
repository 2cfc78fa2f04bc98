"""One prompt pane: a view of its PaneSpec — the conversation, the next message, the sampling settings — and
its run streaming in with its latency figures.

The pane renders its spec and writes the user's edits into it; structural actions and runs go through the
SessionController (app/ui/pane/actions.py). It listens to the spec's events and refreshes at most once per
event-loop turn (app/ui/pane/render.py), so a pump of many steps repaints it once; a pane scrolled out of view
defers streamed changes until it is painted again. It keeps no copy of the run's state: text, state and figures
are read from `spec.result` each time. Once it has a reply, the reply comes first (app/ui/pane/arrangement.py).
"""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.session import PaneSpec, RunState, SessionController
from app.ui.pane.actions import PaneActions
from app.ui.pane.arrangement import PaneArrangement
from app.ui.pane.controls import PaneControls
from app.ui.pane.conversation_view import ConversationView
from app.ui.pane.editor import PromptEditor
from app.ui.pane.group_mocks_editor import GroupMocksEditor
from app.ui.pane.header import PaneHeader
from app.ui.pane.image_strip import ImageStrip
from app.ui.pane.output_options import OutputOptions
from app.ui.pane.render import PaneRendering
from app.ui.pane.sampling_form import SamplingForm
from app.ui.pane.thinking_view import ThinkingView
from app.ui.pane.tool_cards_view import ToolCardsView
from app.ui.pane.tools_options import ToolsOptions
from app.ui.pane.version_bar import VersionBar
from app.ui.widgets.collapsible import collapsible
from app.ui.widgets.status_line import StatusLine
from app.ui.widgets.striped_frame import StripedFrame


class PromptPane(PaneActions, PaneArrangement, PaneRendering, StripedFrame):
    sig_compare_action = Signal(object, str)
    """A compare action for this pane: (pane, "variants" | "compare" | "columns" | "run_group" | "table")."""

    def __init__(self, spec: PaneSpec, controller: SessionController, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("promptPane")
        self.setFrameShape(QFrame.StyledPanel)
        self.spec, self.controller = spec, controller
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
        self.version_bar.sig_problem.connect(self.show_error)
        spec.events.all.connect(self._on_spec_event)

    def detach(self) -> None:
        """The pane leaves the session: stop listening to its spec (the widget is about to be deleted)."""
        self.spec.events.all.disconnect(self._on_spec_event)
        self.group_mocks.detach()
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
