"""A pane's conversation: user and assistant turns told apart, the reply streaming in at the end.

The view renders its pane's spec and keeps no text of its own: while a reply streams it remembers only how much
of `result.text` it has shown, and `sync` inserts the rest at the end (one insert per pump); the whole
conversation is re-rendered only when its turns change. While the view is scrolled out of sight nothing is
inserted — the next sync once it is seen, or the end of the run, catches up: with 16 panes streaming, laying
out text nobody can see cost the model CPU time.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, Signal
from PySide6.QtGui import QColor, QFont, QPalette, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QMenu, QPlainTextEdit, QSizePolicy, QToolTip, QWidget

from app.session import PaneSpec, RunState
from app.session.tool_cards import turn_text
from app.ui.theme import readable
from app.ui.widgets.token_tint import alternatives_html, color_for, token_spans

ROLE_LABELS = {"user": "You", "assistant": "Assistant", "tool": "Tool result"}
ROLE_COLORS = {"user": QColor("#2563eb"), "assistant": QColor("#059669"),  # hues, fitted to the palette
               "tool": QColor("#b45309")}


def mcp_note(record: dict | None) -> str:
    """A tool turn a server answered: which server, and whether the answer was replayed or an error."""
    if not record:
        return ""
    how = " · replayed" if record.get("replayed") else ""
    return f"  (MCP: {record.get('server', '')}{how}{' · error' if record.get('is_error') else ''})"


def _header_format(role: str, base: QColor) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setFontWeight(QFont.Bold)
    fmt.setForeground(readable(ROLE_COLORS[role], base))
    return fmt


class ConversationView(QPlainTextEdit):
    sig_branch_requested = Signal(int, str)
    """Continue the reply from another token: (token index, the alternative's text)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, readOnly=True)
        self.viewport().setMouseTracking(True)  # hover over a token shows its alternatives
        self.token_spans: list[tuple[int, int, int]] = []  # (start, end, token index) in the document
        self._entries: list = []
        self.setObjectName("paneOutput")
        self.setPlaceholderText("The conversation appears here; replies stream in as they are generated.")
        self.setMinimumHeight(140)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)
        self._plain = QTextCharFormat()
        self._streaming: object | None = None  # the result whose text ends the document, while it streams
        self._shown = 0  # how many characters of that result's text the document holds
        self._spec: PaneSpec | None = None  # the pane last rendered (rendered again when the theme changes)
        self._tint()

    def _tint(self) -> None:
        """The text area on AlternateBase, the role headers fitted to it. Through the palette, not a style sheet:
        a style sheet would make the text area transparent, and then every streamed chunk repainted the whole
        pane frame beneath it as well."""
        tinted = self.palette()
        self._tinted_for = tinted.color(QPalette.Window)
        tinted.setColor(QPalette.Base, tinted.color(QPalette.AlternateBase))
        self.setPalette(tinted)
        self._headers = {role: _header_format(role, tinted.color(QPalette.Base)) for role in ROLE_LABELS}

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.PaletteChange and self.palette().color(QPalette.Window) != self._tinted_for:
            self.setPalette(QPalette())  # light <-> dark: inherit the new palette, then tint it again
            self._tint()
            if self._spec is not None:
                self.render(self._spec)

    def render(self, spec: PaneSpec) -> None:
        """Show every turn, then the reply in progress (or one that never became a turn)."""
        self._streaming, self._shown, self._spec = None, 0, spec
        self.clear()
        cursor = QTextCursor(self.document())
        first = True
        result = spec.result
        answered = bool(spec.turns) and spec.turns[-1]["role"] == "assistant"
        tinted = spec.show_probabilities and bool(result.token_logprobs) and not result.busy
        turns = spec.turns[:-1] if tinted and answered and spec.turns[-1]["content"] == result.text else spec.turns
        for turn in turns:
            shown = turn.get("images", ())  # named in the header; the thumbnails are the draft's (image_strip.py)
            note = "".join(f"  {mark} " + ", ".join(r.label for r in refs) for mark, refs in (
                ("🖼", [r for r in shown if not (r.is_audio or r.is_video)]), ("♪", [r for r in shown if r.is_audio]),
                ("▶", [r for r in shown if r.is_video])) if refs)
            note += mcp_note(turn.get("mcp"))
            self._block(cursor, turn["role"], turn_text(turn), first, note)
            first = False
        self.token_spans, self._entries = [], []
        if tinted and (turns is not spec.turns or not answered):
            self._tinted_block(cursor, spec, first)
        elif result.busy or (result.text and not answered) or (result.state == RunState.INTERRUPTED and not answered):
            note = "" if result.busy else f" ({result.state.value})"
            if result.state == RunState.INTERRUPTED and not result.text:  # queued or prefilling when Chorus stopped
                note = " (interrupted before any text arrived: Run asks again)"
            self._block(cursor, "assistant", result.text, first, note)
            if result.busy:
                self._streaming, self._shown = result, len(result.text)
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def _tinted_block(self, cursor: QTextCursor, spec: PaneSpec, first: bool) -> None:
        """The last reply with each token's background showing its probability; spans kept for hover/click."""
        result = spec.result
        self._block(cursor, "assistant", "", first)
        start = cursor.position()
        spans = token_spans(result.text, result.reply_prefix, result.token_logprobs)
        done = 0
        for begin, end, index in spans:
            if begin > done:
                cursor.insertText(result.text[done:begin], self._plain)
            fmt = QTextCharFormat()
            fmt.setBackground(color_for(math.exp(result.token_logprobs[index].logprob),
                                        self.palette().color(QPalette.Base)))
            cursor.insertText(result.text[begin:end], fmt)
            self.token_spans.append((start + begin, start + end, index))
            done = end
        cursor.insertText(result.text[done:], self._plain)
        self._entries = result.token_logprobs

    def entry_at(self, position: int) -> tuple[int, object] | None:
        """(token index, TokenLogprob) of the tinted token at a document position, if any."""
        for begin, end, index in self.token_spans:
            if begin <= position < end:
                return index, self._entries[index]
        return None

    def mouseMoveEvent(self, event) -> None:
        super().mouseMoveEvent(event)
        if self.token_spans:
            hit = self.entry_at(self.cursorForPosition(event.position().toPoint()).position())
            if hit:
                QToolTip.showText(event.globalPosition().toPoint(), alternatives_html(hit[1]), self)
            else:
                QToolTip.hideText()

    def mouseReleaseEvent(self, event) -> None:
        super().mouseReleaseEvent(event)
        if self.token_spans and not self.textCursor().hasSelection():
            hit = self.entry_at(self.cursorForPosition(event.position().toPoint()).position())
            if hit:
                self.branch_menu(*hit).popup(event.globalPosition().toPoint())

    def branch_menu(self, index: int, entry) -> QMenu:
        """Branch from any alternative at token `index`: a new pane continues from it."""
        menu = QMenu(self)
        menu.setToolTipsVisible(True)
        for _token, text, logprob in entry.top:
            action = menu.addAction(f"Branch from “{text.replace(chr(10), '⏎')}”  ({math.exp(logprob) * 100:.1f} %)")
            action.triggered.connect(lambda _=False, t=text: self.sig_branch_requested.emit(index, t))
        return menu

    def _block(self, cursor: QTextCursor, role: str, text: str, first: bool, note: str = "") -> None:
        if not first:
            cursor.insertText("\n\n", self._plain)
        cursor.insertText(ROLE_LABELS[role] + note, self._headers[role])
        cursor.insertText("\n" + text, self._plain)

    def sync(self, spec: PaneSpec) -> None:
        """The result changed: append what streamed in since the last look, or re-render when it is not a
        continuation (a new run, a run that ended)."""
        result = spec.result
        if self._streaming is not result or not result.busy or len(result.text) < self._shown:
            self.render(spec)
            return
        if len(result.text) == self._shown or self.visibleRegion().isEmpty():
            return  # nothing new, or nobody can see it: the next sync (or the end of the run) catches up
        bar = self.verticalScrollBar()
        follow = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.End)
        cursor.insertText(result.text[self._shown:], self._plain)
        self._shown = len(result.text)
        if follow:
            bar.setValue(bar.maximum())
