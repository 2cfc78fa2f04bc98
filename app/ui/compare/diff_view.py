"""Two panes' replies side by side with their differences highlighted, live while they stream. Each side can
show its pane's shown reply, its previous version or any version (`versions.pick`), of the same pane or another.

Words only in the left reply are struck through in red, words only in the right one are green; the first token
where the two diverge is marked, with both panes' probabilities there when they were asked for. The figures
come from `app.session.diff`; the dialog re-reads the two panes whenever the session announces a change. Beside
the word similarity is the meaning similarity of the two finished replies (the window's Meaning, embedded on its
worker thread; it is read again when the vectors arrive). Under them, the word error rate of the right reply
with the left as its reference, and of each against its pane's reference text when it has one
(`word_errors_text`).

Opened from a quantization comparison (`kld`: the comparison and a candidate file), the right side can show the
reference's reply as the candidate read it, teacher-forced, each token tinted by the candidate's KL divergence
from the reference there (a legend under it), with the token where the candidate's own reply first left the
reference's marked; "Tint by KLD" switches between that and the word diff.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

from PySide6.QtCore import QEvent
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QCheckBox, QComboBox, QDialog, QGridLayout, QLabel, QTextBrowser, QWidget

from app.session import PaneSpec, Session, compare, diff, versions
from app.session.tool_cards import reply_text
from app.session.word_errors import shown as shown_rate
from app.session.word_errors import word_errors
from app.ui.theme import blend
from app.ui.widgets.live_refresh import follow
from app.ui.widgets.token_tint import kld_color, kld_legend_html, shown

# (hue, how far the text area's base moves towards it): tints that keep the text readable in either theme
DELETED, INSERTED = ("#ef4444", 0.35), ("#22c55e", 0.35)


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
    return result_divergence(pane_a.result, pane_b.result)


def result_divergence(ra, rb) -> str:
    """`divergence_note` for two replies (PaneResults: shown ones or versions)."""
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


def word_errors_text(a: PaneSpec, b: PaneSpec, ra, rb) -> str:
    """"Word error rate, right against left: 20.0 % (1 error in 5 words: 1 substituted)", then each side's
    rate against its pane's reference text when one has it. `ra`, `rb`: the replies shown (PaneResults)."""
    found = word_errors(ra.text, rb.text)
    text = f"Word error rate, right against left: {shown_rate(found.rate)} ({found.describe()})"
    own = [f"{side} {shown_rate(word_errors(pane.reference, result.text).rate)}"
           for side, pane, result in (("left", a, ra), ("right", b, rb)) if pane.reference.strip()]
    return text + (f" · against the reference text: {', '.join(own)}" if own else "")


def kld_html(pieces: list[str], kld: list[float], divergence: int | None, base: QColor) -> str:
    """The teacher-forced reply, each token on its KLD's tint (its value in a tooltip-like title), the token at
    `divergence` bold and underlined with a ▶ before it."""
    out = []
    for index, (piece, value) in enumerate(zip(pieces, kld, strict=False)):
        style = f"background:{kld_color(value, base).name()}"
        text = html.escape(piece)
        if index == divergence:
            style += ";font-weight:bold;text-decoration:underline"
            text = "▶" + text
        out.append(f"<span style='{style}' title='KLD {value:.4f}'>{text}</span>")
    return "<div style='white-space:pre-wrap'>{}</div>".format("".join(out))


class DiffDialog(QDialog):
    """Non-modal; shows two panes of `session` (chosen by id, so a pane removed since is noticed)."""

    def __init__(self, session: Session, left: PaneSpec | None = None, right: PaneSpec | None = None,
                 parent: QWidget | None = None, meaning=None, kld=None):
        """`meaning`: the window's MeaningLink (None: no meaning similarity); `kld`: (QuantComparison, candidate
        file) when the two panes are a quantization comparison's reference and candidate."""
        super().__init__(parent)
        self.link, self.kld = meaning, kld
        self.tint_kld = QCheckBox("Tint by KLD", checked=kld is not None, visible=kld is not None,
                                  objectName="diffTintKld")
        self.kld_legend = QLabel(objectName="diffKldLegend")
        self.setWindowTitle("Compare two replies")
        self.resize(1000, 640)
        self.session = session
        self._last = None
        self.left_box, self.right_box = QComboBox(), QComboBox()
        self.left_version, self.right_version = QComboBox(), QComboBox()  # the shown reply, previous, version k
        self.left_version.setAccessibleName("Version of the left reply")
        self.right_version.setAccessibleName("Version of the right reply")
        self.left_view, self.right_view = QTextBrowser(), QTextBrowser()
        self.similarity = QLabel(objectName="diffSimilarity")
        self.divergence = QLabel(objectName="diffDivergence")
        self.word_errors = QLabel(objectName="diffWordErrors", wordWrap=True)
        layout = QGridLayout(self)
        layout.addWidget(self.left_box, 0, 0)
        layout.addWidget(self.right_box, 0, 1)
        layout.addWidget(self.left_version, 1, 0)
        layout.addWidget(self.right_version, 1, 1)
        layout.addWidget(self.left_view, 2, 0)
        layout.addWidget(self.right_view, 2, 1)
        layout.addWidget(self.similarity, 3, 0)
        layout.addWidget(self.divergence, 3, 1)
        layout.addWidget(self.tint_kld, 4, 0)
        layout.addWidget(self.kld_legend, 4, 1)
        layout.addWidget(self.word_errors, 5, 0, 1, 2)
        self.tint_kld.toggled.connect(lambda _on: (setattr(self, "_last", None), self.refresh()))
        if kld is not None:
            kld[0].changed.connect(self._kld_changed)
            self.finished.connect(lambda _r: kld[0].changed.disconnect(self._kld_changed))
        self.fill_choices(left, right)
        self.fill_versions()
        self.left_box.currentIndexChanged.connect(lambda: (self.fill_versions(), self.refresh()))
        self.right_box.currentIndexChanged.connect(lambda: (self.fill_versions(), self.refresh()))
        self.left_version.currentIndexChanged.connect(self.refresh)
        self.right_version.currentIndexChanged.connect(self.refresh)
        self.timer = follow(self, self.refresh, session, self.link.meaning if self.link is not None else None)
        self.refresh()

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

    def fill_versions(self) -> None:
        """Each side's versions: its pane's shown reply (the default), its previous version, any version."""
        for box, pane in zip((self.left_version, self.right_version), self.chosen(), strict=True):
            found = versions.choices(pane) if pane is not None else [("shown reply", None)]
            keep = box.currentData()
            values = [value for _text, value in found]
            box.blockSignals(True)
            box.clear()
            for text, value in found:
                box.addItem(text, value)
            box.setCurrentIndex(values.index(keep) if keep in values else 0)
            box.setVisible(len(found) > 1)
            box.blockSignals(False)

    def pick_version(self, side: str, which: int | str | None) -> None:
        """Show `which` of the left or right pane's replies (`versions.pick`'s argument)."""
        box = self.left_version if side == "left" else self.right_version
        box.setCurrentIndex(max(0, box.findData(which)))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.PaletteChange:  # light <-> dark: the tints follow the new base colour
            self.refresh()

    def chosen(self) -> tuple[PaneSpec | None, PaneSpec | None]:
        """The two panes chosen (None for one that was removed since)."""
        return (self.session.pane_by_id(self.left_box.currentData() or ""),
                self.session.pane_by_id(self.right_box.currentData() or ""))

    def similarity_text(self, ra, rb) -> str:
        """"Similarity: words 42 % · meaning 91 %" of two results (PaneResult): difflib's word ratio, and the
        embedders' cosine once both replies are finished and embedded ("meaning …" while they are embedded)."""
        ta, tb = ra.text, rb.text
        busy = ra.busy or rb.busy
        text = f"Similarity: words {diff.similarity(ta, tb) * 100:.0f} %"
        if self.link is not None and not busy and ta and tb:
            meaning = self.link.sync()
            value = meaning.similarity(ta, tb)
            shown = f"{value * 100:.0f} %" if value is not None else "–" if meaning.error else "…"
            text += f" · meaning {shown}"
            self.similarity.setToolTip(self.link.status())
        return text + (" · streaming…" if busy else "")

    def _kld_changed(self) -> None:
        self._last = None
        self.refresh()

    def kld_side(self, b: PaneSpec, ra, rb) -> str | None:
        """The right side tinted by KLD, when asked, measured, and the right pane is the candidate's (None: the
        word diff)."""
        comparison, path = self.kld or (None, "")
        prompt = comparison.prompt_of(b.id) if comparison is not None else None
        if prompt is None or not self.tint_kld.isChecked() or b.id not in comparison.panes.get(path, []):
            self.kld_legend.setText("")
            return None
        measured = comparison.token_kld(path, prompt)
        if measured is None:
            self.kld_legend.setText("KLD per token: not measured yet" if comparison.running else
                                    "KLD per token: not measured")
            return None
        self.kld_legend.setText(kld_legend_html(self.palette()))
        reference = self.session.pane_by_id(comparison.pane_for(comparison.reference, prompt) or "")
        ref = reference.result if reference is not None else ra
        divergence = diff.first_divergence(ref.token_ids, rb.token_ids) if not (ref.busy or rb.busy) else None
        head = (f"<p style='color:gray'>The reference's reply as {html.escape(Path(path).stem)} read it; "
                "▶ where its own reply first left it</p>")
        return head + kld_html(*measured, divergence, self.palette().color(QPalette.Base))

    def refresh(self) -> None:
        a, b = self.chosen()
        if a is None or b is None:
            self.similarity.setText("Choose two panes")
            return
        if self.left_version.count() != versions.choice_count(a) or self.right_version.count() != (
                versions.choice_count(b)):
            self.fill_versions()  # a run added a version since
        ra = versions.pick(a, self.left_version.currentData()) or a.result
        rb = versions.pick(b, self.right_version.currentData()) or b.result
        ta, tb = reply_text(ra), reply_text(rb)  # tool calls as calls: name(arguments)
        self.similarity.setText(self.similarity_text(ra, rb))
        self.word_errors.setText(word_errors_text(a, b, ra, rb))
        key = (a.id, b.id, ta, tb, ra.busy, rb.busy, self.palette().color(QPalette.Base).rgba())
        if key == self._last:
            return  # nothing changed since the last look
        self._last = key
        left, right = side_by_side(ta, tb, self.palette().color(QPalette.Base))
        tinted = self.kld_side(b, ra, rb)
        if tinted:  # the right side is the reference's reply itself: the left shows it plain, not diffed
            left, right = f"<div style='white-space:pre-wrap'>{html.escape(ta)}</div>", tinted
        for view, content in ((self.left_view, left), (self.right_view, right)):
            if view.property("shown") != content:  # unchanged text: no re-layout, the scroll position stays
                view.setHtml(content)
                view.setProperty("shown", content)
        self.divergence.setText(result_divergence(ra, rb))
