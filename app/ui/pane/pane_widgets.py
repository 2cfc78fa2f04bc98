"""What a prompt pane is made of: its widgets, their layout and tab order, and their signals wired to the pane's
actions. Built once per pane, when the pane is first needed (prompt_pane.py: on screen, focused, or asked for a
part), so a session of hundreds of panes builds only those a user looks at."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from app.ui.pane.controls import PaneControls
from app.ui.pane.conversation_view import ConversationView
from app.ui.pane.editor import PromptEditor
from app.ui.pane.header import PaneHeader
from app.ui.pane.image_strip import ImageStrip
from app.ui.pane.settings_sections import PaneSections
from app.ui.pane.thinking_view import ThinkingView
from app.ui.pane.tool_cards_view import ToolCardsView
from app.ui.pane.version_bar import VersionBar
from app.ui.pane.video_fields import VideoFields
from app.ui.widgets.collapsible import collapsible
from app.ui.widgets.status_line import StatusLine

PARTS = frozenset({"header", "title", "conversation_button", "conversation_menu", "compare_button",
                   "duplicate_button", "remove_button", "system_prompt", "sections", "_toggles", "edit_banner",
                   "cancel_edit_button", "prompt", "images", "controls", "run_button", "stop_button", "drop_button",
                   "rating", "copy_action", "output", "thinking_view", "tool_cards", "status", "version_bar",
                   "video_fields"})
"""The attributes `build` gives a pane: reading one of a pane not built yet builds it (PromptPane.__getattr__).
The settings sections' forms come later, when first wanted (settings_sections.PARTS)."""


def build(pane) -> None:
    """Give `pane` (a PromptPane with its spec and controller) its widgets, in its layout, wired to its actions."""
    spec, controller = pane.spec, pane.controller
    pane.header = h = PaneHeader(pane)
    pane.title, pane.conversation_button, pane.conversation_menu = h.title, h.conversation_button, h.conversation_menu
    pane.compare_button, pane.duplicate_button, pane.remove_button = h.compare_button, h.duplicate_button, \
        h.remove_button

    pane.system_prompt = QPlainTextEdit(placeholderText="System prompt (optional)", tabChangesFocus=True)
    pane.system_prompt.setFixedHeight(54)
    system_toggle, _ = collapsible("System prompt", pane.system_prompt, expanded=False)
    pane.sections = lazy = PaneSections(pane)  # Sampling, Output, Tools: their forms made when first opened
    sampling_toggle, options_toggle, tools_toggle = (lazy.toggle(name) for name in ("sampling", "options", "tools"))
    pane._toggles = (system_toggle, sampling_toggle, options_toggle, tools_toggle)
    pane.edit_banner = QLabel(objectName="editBanner", wordWrap=True)
    pane.cancel_edit_button = QPushButton("Cancel edit")
    banner = QHBoxLayout()
    banner.addWidget(pane.edit_banner, 1)
    banner.addWidget(pane.cancel_edit_button)
    pane.prompt = PromptEditor("Ask something…  (Ctrl+Enter runs this pane)")
    pane.images = ImageStrip(spec, controller)
    pane.video_fields = VideoFields()  # the videos' rate and frame budget, while the pane has one
    pane.video_fields.hide()

    pane.controls = c = PaneControls([("System prompt", system_toggle), ("Sampling", sampling_toggle),
                                      ("Output", options_toggle), ("Tools", tools_toggle)])
    pane.run_button, pane.stop_button, pane.drop_button, pane.rating = c.run_button, c.stop_button, \
        c.drop_button, c.rating
    pane.copy_action = c.copy_action
    pane.output = ConversationView()
    pane.output.setTabChangesFocus(True)
    pane.thinking_view = ThinkingView()
    pane.tool_cards = ToolCardsView(spec, controller)
    pane.status = StatusLine("idle", background=QPalette.Base)  # the pane's own background (style.qss)
    pane.status.setObjectName("paneStatus")

    layout = QVBoxLayout(pane)
    layout.setContentsMargins(10, 8, 10, 8)
    layout.setSpacing(4)
    for widget in (pane.header, system_toggle, pane.system_prompt, sampling_toggle):
        layout.addWidget(widget)
    layout.addLayout(lazy.slots["sampling"])
    sections = QHBoxLayout()  # Output and Tools share a row: a pane gets no taller for the Tools section
    sections.setContentsMargins(0, 0, 0, 0)
    for toggle in (options_toggle, tools_toggle):
        sections.addWidget(toggle)
    sections.addStretch(1)
    layout.addLayout(sections)
    for name in ("options", "tools"):
        layout.addLayout(lazy.slots[name])
    layout.addLayout(banner)
    layout.addWidget(pane.images)
    layout.addWidget(pane.video_fields)
    layout.addWidget(pane.prompt)
    layout.addWidget(pane.controls)
    layout.addWidget(pane.thinking_view)
    pane.version_bar = VersionBar(spec, controller)  # "‹ version 2 of 3 ›", Branch
    layout.addWidget(pane.version_bar)
    layout.addWidget(pane.output, 1)
    layout.addWidget(pane.tool_cards)
    layout.addLayout(lazy.slots["legend"])  # the Output section's legend of the token probabilities
    layout.addWidget(pane.status)
    chain = [pane.cancel_edit_button, pane.prompt, *c.focus_chain(), pane.thinking_view.toggle,
             pane.thinking_view.text, pane.output]  # editor -> Run -> Stop -> rating -> menu -> reply
    for first, second in zip(chain, chain[1:], strict=False):
        QWidget.setTabOrder(first, second)
    place_in_focus_chain(pane)
    _connect(pane)


def _connect(pane) -> None:
    spec, controller = pane.spec, pane.controller
    pane.run_button.clicked.connect(lambda: pane.run())
    pane.stop_button.clicked.connect(pane.stop)
    pane.duplicate_button.clicked.connect(lambda: controller.duplicate(pane.spec))
    pane.remove_button.clicked.connect(lambda: controller.remove(pane.spec))
    pane.copy_action.triggered.connect(lambda: QGuiApplication.clipboard().setText(pane.reply_text()))
    for toggle in pane._toggles:
        toggle.toggled.connect(pane.arrange)
    pane.drop_button.clicked.connect(pane.drop_oldest_and_retry)
    pane.cancel_edit_button.clicked.connect(pane.cancel_edit)
    pane.prompt.textChanged.connect(lambda: setattr(pane.spec, "draft", pane.prompt.toPlainText()))
    pane.system_prompt.textChanged.connect(lambda: setattr(pane.spec, "system", pane.system_prompt.toPlainText()))
    pane.video_fields.sig_changed.connect(pane.form_edited)
    pane.rating.sig_changed.connect(lambda: controller.rate(pane.spec, pane.rating.rating, pane.rating.note.text()))
    pane.output.sig_branch_requested.connect(pane.branch)
    pane.prompt.sig_images.connect(pane.images.incoming)
    pane.images.sig_problem.connect(pane.show_error)
    pane.header.sig_compare_action.connect(lambda key: pane.sig_compare_action.emit(pane, key))
    pane.header.sig_backend_chosen.connect(lambda name: setattr(pane.spec, "backend", name))
    pane.header.sig_backend_chosen.connect(lambda _name: pane.show_tool_support())
    pane.version_bar.sig_problem.connect(pane.show_error)
    pane.version_bar.sig_diff_previous.connect(lambda: pane.sig_compare_action.emit(pane, "diff_previous"))
    spec.events.all.connect(pane.on_spec_event)


def show_parts(pane) -> None:
    """Show the pane's widgets now (those not hidden on purpose): widgets put into a layout that is already shown
    show only on the next event-loop turn, and the pane is usually built because something wants them now."""
    if not pane.isVisible():
        return  # they show with the pane
    for child in pane.findChildren(QWidget, options=Qt.FindDirectChildrenOnly):
        if not (child.testAttribute(Qt.WA_WState_ExplicitShowHide) and child.testAttribute(Qt.WA_WState_Hidden)):
            child.show()


def place_in_focus_chain(pane) -> None:
    """Widgets made inside a pane already shown join the end of the window's tab order: move them (in their own
    order) to right after the pane, so Tab goes from one pane to the next as they are laid out."""
    window = pane.window()
    if window is pane:
        return
    ours, widget = [], window.previousInFocusChain()
    while widget is not window and widget is not pane and pane.isAncestorOf(widget):
        if widget.focusPolicy() != Qt.NoFocus:  # (setTabOrder leaves the others where they are)
            ours.append(widget)
        widget = widget.previousInFocusChain()
    previous = pane
    for widget in reversed(ours):
        QWidget.setTabOrder(previous, widget)
        previous = widget
