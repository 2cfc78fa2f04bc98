"""A pane's tool calls as cards, with Continue and auto-continue: a view over `tool_loop.cards(spec)`.

Each card shows the function, its arguments pretty-printed, whether they validate against the function's
parameters, and the mock result that answers it (the pane's own, else its group's: "group mock result"), or why
none does (app/session/tool_cards.py decides; this view only renders). Continue goes through the controller for the
pane's group (every pane of it waiting with calls), so all their next steps are submitted together; with
auto-continue above 0 the loop goes on by itself for up to that many rounds. The cards are those of the pane's last
calls (answered ones show the result given); the view is hidden while no reply of the conversation called a
function. *Continue all* (also in the Tools menu) does the same for every pane of the session waiting with calls,
whatever its group. The cards scroll past a few, so the note under them (why a pane
could not go on) keeps its lines however many calls there are.

A call to an MCP tool is answered by its server (app/session/mcp_calls.py): its card names the server and says
where the call stands (waiting for approval, running, done, replayed, error, timed out, cancelled, denied). While
it waits for approval the card offers *Approve once*, *Always for this tool* and *Deny*; while it runs, *Cancel*.
Whatever a tool returns is shown as plain text, never rendered.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QSpinBox, QVBoxLayout, QWidget

from app.session import PaneSpec, SessionController, mcp_calls, tool_loop
from app.session.tool_cards import NO_SERVERS, VALID, Card

BAD, GOOD, MONO, WRITING = "#b91c1c", "#047857", "font-family: monospace;", "#6b7280"
CARDS_MAX_HEIGHT, CARDS_MIN_HEIGHT = 240, 110  # px: past the first the cards scroll; at least the second (a card)


SERVER_ACTIONS = {mcp_calls.ASKING: (("Approve once", "approve"), ("Always for this tool", "always"),
                                    ("Deny", "deny")),
                  mcp_calls.RUNNING: (("Cancel", "cancel"),)}
CALL_COLORS = {mcp_calls.DONE: GOOD, mcp_calls.RUNNING: WRITING, mcp_calls.ASKING: "#b45309"}


def plain(text: str, name: str, style: str = "") -> QLabel:
    """A label that shows `text` as it is (a tool's output is never rendered as HTML)."""
    label = QLabel(text, objectName=name, wordWrap=True, textFormat=Qt.PlainText)
    label.setStyleSheet(style)
    return label


def server_status(card: Card) -> str:
    """The server call's state in words: "replayed" for a recorded answer."""
    status = card.call_status or "not sent yet"
    return "replayed" if card.replayed and status == mcp_calls.DONE else status


def server_rows(card: Card, layout: QVBoxLayout, act) -> None:
    """A server call's answer (plain text) and the buttons its state offers; `act(card, action)` runs one."""
    if card.answer is not None:
        label = "replayed" if card.replayed else "error" if card.call_status != mcp_calls.DONE else "result"
        color = GOOD if card.call_status == mcp_calls.DONE else BAD
        layout.addWidget(plain(f"{label}: {card.answer}", "toolCardAnswer", f"color:{color}; {MONO}"))
    elif card.call_status == mcp_calls.ASKING:
        layout.addWidget(plain("Run this call? Check its arguments above.", "toolCardAsk"))
    actions = SERVER_ACTIONS.get(card.call_status, ())
    if actions:
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        for text, action in actions:
            button = QPushButton(text, objectName=f"toolCard_{action}")
            button.clicked.connect(lambda _c=False, a=action: act(card, a))
            row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)


def card_widget(card: Card, act=lambda card, action: None) -> QFrame:
    frame = QFrame(objectName="toolCard", frameShape=QFrame.StyledPanel)
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(6, 4, 6, 4)
    layout.setSpacing(2)
    mark = f"<span style='color:{GOOD}'>✓ valid</span>" if card.status == VALID \
        else f"<span style='color:{WRITING}'>… writing the arguments</span>" if card.streaming \
        else f"<span style='color:{BAD}'>✗ {escape(card.status)}</span>"
    if card.server and not card.streaming:
        status = server_status(card)
        color = CALL_COLORS.get(card.call_status, BAD if card.call_status else WRITING)
        mark += f" &nbsp; <span style='color:{color}'>● {escape(status)}</span>"
    name = escape(card.name or "(no name)")
    via = f" <span style='color:{WRITING}'>(MCP: {escape(card.server)})</span>" if card.server else ""
    layout.addWidget(QLabel(f"<b>{name}</b>{via} &nbsp; {mark}", objectName="toolCardTitle"))
    layout.addWidget(plain(card.pretty, "toolCardArguments", MONO))
    if card.streaming:
        return frame
    if card.server:
        server_rows(card, layout, act)
        return frame
    if card.answer is not None:
        given = "group mock result" if card.from_group else "mock result"
        text = f"{'answered' if card.answered else given}: {card.answer}"
        answer = plain(text, "toolCardAnswer", f"color:{GOOD}; {MONO}")
    else:
        answer = plain(f"⚠ not answered: {card.problem}", "toolCardProblem", f"color:{BAD}")
    layout.addWidget(answer)
    return frame


class CardsArea(QScrollArea):
    """The cards, scrolling past CARDS_MAX_HEIGHT: as tall as they are up to that, and shrinking to a card's
    title when the pane is short, so the note and the status under them always keep their lines."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, widgetResizable=True, frameShape=QFrame.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setWidget(QWidget())
        self.box = QVBoxLayout(self.widget())
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.setSpacing(3)

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), min(self.widget().sizeHint().height(), CARDS_MAX_HEIGHT))

    def minimumSizeHint(self) -> QSize:
        return QSize(0, min(self.widget().sizeHint().height(), CARDS_MIN_HEIGHT))


class ToolCardsView(QWidget):
    def __init__(self, spec: PaneSpec, controller: SessionController, parent: QWidget | None = None):
        super().__init__(parent)
        self.spec, self.controller = spec, controller
        self.cards_area = CardsArea()
        self.cards_box = self.cards_area.box
        self.continue_button = QPushButton("Continue", toolTip="Answer the calls with the mock results and "
                                           "generate the next turn (every pane of the group waiting with calls)")
        self.continue_all_button = QPushButton("Continue all", toolTip="Answer the calls of every pane waiting "
                                               "with calls, in any group, and generate their next turns together")
        self.auto_steps = QSpinBox(toolTip="Auto-continue: go on by itself for up to this many rounds (off: "
                                   "once, by hand)", specialValueText="off", suffix=" steps")
        limit = tool_loop.AUTO_STEPS
        self.auto_steps.setRange(int(limit.low), int(limit.high))
        self.auto_steps.setValue(int(limit.default))
        self.note = QLabel(objectName="toolLoopNote", wordWrap=True)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.continue_button)
        row.addWidget(self.continue_all_button)
        row.addWidget(QLabel("auto"))
        row.addWidget(self.auto_steps)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        layout.addWidget(self.cards_area)
        layout.addLayout(row)
        layout.addWidget(self.note)
        self.continue_button.clicked.connect(lambda: self.continue_calls())
        self.continue_all_button.clicked.connect(lambda: self.continue_calls(everywhere=True))
        self._loop: tool_loop.AutoLoop | None = None
        if controller.mcp_calls is not None:
            controller.mcp_calls.changed.connect(self._link_changed)
        controller.session.events.group_mocks.connect(self._group_mocks_changed)  # its group's answer its calls
        self.sync()

    def detach(self) -> None:
        """The pane leaves the session: stop listening to its server calls and its group's mock results."""
        self.controller.session.events.group_mocks.disconnect(self._group_mocks_changed)
        if self.controller.mcp_calls is not None:
            self.controller.mcp_calls.changed.disconnect(self._link_changed)

    def sync(self) -> None:
        """Render the cards of the pane's last reply (hidden when it made no call); a no-op while nothing they
        show has changed (a streamed token does not rebuild them)."""
        spec = self.spec
        group = self.controller.session.group_mocks.get(spec.group, "") if spec.group is not None else ""
        calls = self.controller.mcp_calls
        servers = calls.answers(spec) if calls is not None else NO_SERVERS
        shown = (id(spec.result), tuple(map(str, spec.result.tool_calls)), spec.result.busy, spec.tools, spec.mocks,
                 len(spec.turns), group, tuple(servers.servers.items()), tuple(servers.states.items()))
        if shown == getattr(self, "_shown", None):
            return
        self._shown = shown
        while self.cards_box.count():
            item = self.cards_box.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        cards = tool_loop.cards(spec, self.controller.group_mocks(spec), servers)
        self.setVisible(bool(cards))
        for card in cards:
            self.cards_box.addWidget(card_widget(card, self.act))
        self.cards_box.activate()  # the new cards' height, before the area says how tall it wants to be
        self.cards_area.setMinimumHeight(self.cards_area.minimumSizeHint().height())  # a streaming card too
        self.cards_area.updateGeometry()
        self.continue_button.setEnabled(bool(tool_loop.pending_calls(spec)) and not spec.result.busy)

    def act(self, card: Card, action: str) -> None:
        """A server call's button: approve (once or always), deny, cancel (McpLink does it)."""
        link = self.controller.mcp_calls
        if link is None:
            return
        if action in ("approve", "always"):
            link.approve(self.spec, card.id, always=action == "always")
        elif action == "deny":
            link.deny(self.spec, card.id)
        elif action == "cancel":
            link.cancel(self.spec, card.id)

    def _group_mocks_changed(self, _new, _old) -> None:
        self.sync()

    def _link_changed(self, pane_id: str) -> None:
        if pane_id in ("", self.spec.id):
            self.sync()

    def group(self) -> list[PaneSpec]:
        return self.controller.session.group(self.spec.group) or [self.spec]

    def continue_calls(self, everywhere: bool = False) -> str:
        """Continue the group, or every pane waiting with calls (`everywhere`), auto-continuing when steps are
        set; their next turns are submitted together. Problems are shown, never raised. Returns what was done."""
        panes = list(self.controller.session.panes) if everywhere else self.group()
        steps = self.auto_steps.value()
        calls, mcp = self.controller.mcp_calls, self.controller.mcp
        if calls is not None and any(mcp.routes(p) for p in panes):  # servers answer: their loop goes on
            steps = max(1, steps)
            self._loop = loop = calls.continue_panes(panes, steps)
            if loop.done:
                return self._loop_ended(loop)
            loop.finished.connect(self._loop_ended)
            return self._show_problems([], f"asked the MCP servers; then up to {steps} round(s)")
        if steps:
            waiting = sum(bool(tool_loop.pending_calls(p)) for p in panes)
            self._loop = loop = self.controller.auto_continue(panes, steps)
            if loop.done:  # nothing could go on
                return self._loop_ended(loop)
            loop.finished.connect(self._loop_ended)
            return self._show_problems([], f"auto-continue: up to {steps} rounds for {waiting} pane(s)")
        report = self.controller.continue_tools(panes)
        return self._show_problems(report.problems, f"continued {report.started} pane(s)")

    def _loop_ended(self, loop: tool_loop.AutoLoop) -> str:
        stopped = [(p, loop.stopped[p.id]) for p in loop.panes if p.id in loop.stopped]
        return self._show_problems(stopped, f"auto-continue ended after {loop.rounds} round(s)")

    def _show_problems(self, problems, done: str) -> str:
        lines = [done] + [f"{p.label}: {why}" for p, why in problems]
        self.note.setText("\n".join(lines))
        self.note.setStyleSheet(f"color:{BAD}" if problems else "")
        return self.note.text()
