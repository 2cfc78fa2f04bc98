"""Two panes' replies side by side with their differences highlighted, live while they stream.

Words only in the left reply are struck through in red, words only in the right one are green; the first token
where the two diverge is marked, with both panes' probabilities there when they were asked for. The figures
come from `app.session.diff`; the dialog re-reads the two panes whenever the session announces a change.
"""

from __future__ import annotations

import html
import math

from PySide6.QtCore import QEvent, QTimer
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QComboBox, QDialog, QGridLayout, QLabel, QTextBrowser, QWidget

from app.session import PaneSpec, Session, compare, diff
from app.session.tool_cards import reply_text
from app.ui.theme import blend
from app.ui.token_tint import shown

# (hue, how far the text area's base moves towards it): tints that keep the text readable in either theme
DELETED, INSERTED = ("#ef4444", 0.35), ("#22c55e", 0.35)
REFRESH_MS = 250  # at most this often while replies stream


def _span(text: str, style: str | None) -> str:
    escaped = html.escape(text)
    return f"<span style='{style}'>{escaped}</span>" if style and text else escaped


def side_by_side(a: str, b: str, base: QColor | None = None) -> tuple[str, str]:
    """HTML for the left and right replies, differences highlighted on tints of `base` (the text area's
    background; white if not given)."""
    base = QColor("white") if base is None else base
    deleted = f"background:{blend(base, *DELETED).name()};text-decoration:line-through"
    inserted = f"background:{blend(base, *INSERTED).name()}"
    left, right = [], []
    for op in diff.words(a, b):
        left.append(_span(op.a, None if op.tag == "equal" else deleted))
        right.append(_span(op.b, None if op.tag == "equal" else inserted))
    wrap = "<div style='white-space:pre-wrap'>{}</div>"
    return wrap.format("".join(left)), wrap.format("".join(right))


def divergence_note(pane_a: PaneSpec, pane_b: PaneSpec) -> str:
    """Where the token sequences first differ, with each pane's probability of its own token there."""
    ra, rb = pane_a.result, pane_b.result
    if ra.reply_prefix or rb.reply_prefix:
        return "First divergent token: not comparable (a reply was branched from a chosen token)"
    index = diff.first_divergence(ra.token_ids, rb.token_ids)
    if index is None:
        return "Identical token sequences" if ra.token_ids else "No tokens yet"
    parts = [f"First divergent token: #{index + 1}"]
    for name, result in (("left", ra), ("right", rb)):
        entries = result.token_logprobs or []
        if index < len(entries):
            entry = entries[index]
            parts.append(f"{name} <code>{shown(entry.text)}</code> {math.exp(entry.logprob) * 100:.1f} %")
    return " · ".join(parts)


class DiffDialog(QDialog):
    """Non-modal; shows two panes of `session` (chosen by id, so a pane removed since is noticed)."""

    def __init__(self, session: Session, left: PaneSpec | None = None, right: PaneSpec | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Compare two replies")
        self.resize(1000, 640)
        self.session = session
        self._last = None
        self.left_box, self.right_box = QComboBox(), QComboBox()
        self.left_view, self.right_view = QTextBrowser(), QTextBrowser()
        self.similarity = QLabel(objectName="diffSimilarity")
        self.divergence = QLabel(objectName="diffDivergence")
        layout = QGridLayout(self)
        layout.addWidget(self.left_box, 0, 0)
        layout.addWidget(self.right_box, 0, 1)
        layout.addWidget(self.left_view, 1, 0)
        layout.addWidget(self.right_view, 1, 1)
        layout.addWidget(self.similarity, 2, 0)
        layout.addWidget(self.divergence, 2, 1)
        self.fill_choices(left, right)
        self.left_box.currentIndexChanged.connect(self.refresh)
        self.right_box.currentIndexChanged.connect(self.refresh)
        self.timer = QTimer(self, singleShot=True, interval=REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        session.events.all.connect(self._changed)
        self.finished.connect(lambda _r: session.events.all.disconnect(self._changed))
        self.refresh()

    def _changed(self, _info) -> None:
        if not self.timer.isActive():
            self.timer.start()

    def fill_choices(self, left: PaneSpec | None = None, right: PaneSpec | None = None) -> None:
        panes = list(self.session.panes)
        diffs = compare.differences_in_groups(panes)
        for box, chosen, fallback in ((self.left_box, left, 0), (self.right_box, right, 1)):
            box.blockSignals(True)
            box.clear()
            for pane, difference in zip(panes, diffs, strict=True):
                box.addItem(f"{pane.label}  {compare.label(difference)}".strip(), pane.id)
            index = panes.index(chosen) if chosen in panes else min(fallback, len(panes) - 1)
            box.setCurrentIndex(index)
            box.blockSignals(False)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.PaletteChange:  # light <-> dark: the tints follow the new base colour
            self.refresh()

    def chosen(self) -> tuple[PaneSpec | None, PaneSpec | None]:
        """The two panes chosen (None for one that was removed since)."""
        return (self.session.pane_by_id(self.left_box.currentData() or ""),
                self.session.pane_by_id(self.right_box.currentData() or ""))

    def refresh(self) -> None:
        a, b = self.chosen()
        if a is None or b is None:
            self.similarity.setText("Choose two panes")
            return
        ta, tb = reply_text(a.result), reply_text(b.result)  # tool calls as calls: name(arguments)
        key = (a.id, b.id, ta, tb, a.result.busy, b.result.busy, self.palette().color(QPalette.Base).rgba())
        if key == self._last:
            return  # nothing changed since the last look
        self._last = key
        left, right = side_by_side(ta, tb, self.palette().color(QPalette.Base))
        for view, content in ((self.left_view, left), (self.right_view, right)):
            if view.property("shown") != content:  # unchanged text: no re-layout, the scroll position stays
                view.setHtml(content)
                view.setProperty("shown", content)
        self.similarity.setText(f"Similarity {diff.similarity(ta, tb) * 100:.0f} %"
                                + (" · streaming…" if a.result.busy or b.result.busy else ""))
        self.divergence.setText(divergence_note(a, b))
