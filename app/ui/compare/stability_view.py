"""The stability view: does a prompt give the same answer every time? Each seed group (panes that differ only
by seed) and each evaluation cell run with repeats, its answers clustered by meaning: the share of the largest
cluster, then every cluster with its size and a representative answer (its medoid), then who gave each answer.

A view of the session and the window's Meaning: the answer sets come from `app.session.stability.answer_sets`, the
clusters from `Meaning.stability` (vectors embedded on the Meaning's worker thread; a set shows "embedding…" until
they are in). It is rebuilt when the session or the Meaning announces a change (at most every
live_refresh.REFRESH_MS), and keeps which rows were open. The cluster distance is Settings' CLUSTER_DISTANCE,
edited here.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.session import PaneSpec, Session
from app.session.stability import AnswerSet, Stability
from app.ui import settings as keys
from app.ui.widgets.live_refresh import follow

PREVIEW = 90  # characters of an answer shown on its row (the tooltip has all of it)


def one_line(text: str, width: int = PREVIEW) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def set_summary(answers: AnswerSet, found: Stability | None, error: str) -> str:
    """What a set's row says after its title: the largest cluster's share, or why there is none yet."""
    if not answers.texts:
        return f"waiting for {answers.waiting} answers" if answers.waiting else "no answers"
    if found is None:
        return f"meaning unavailable: {error}" if error else f"embedding {len(answers.texts)} answers…"
    top = found.clusters[0]
    words = "the same answer every time" if len(found.clusters) == 1 and found.n > 1 else (
        f"{len(found.clusters)} different answers")
    running = f" ({answers.waiting} still running)" if answers.waiting else ""
    return f"largest cluster {top.size}/{found.n} ({found.top_share:.0%}) · {words}{running}"


class StabilityDialog(QDialog):
    sig_pane_selected = Signal(object)
    """An answer of a seed group was selected: its PaneSpec."""

    def __init__(self, session: Session, meaning, focus: PaneSpec | None = None, parent: QWidget | None = None):
        """`meaning` is the window's MeaningLink; `focus`'s seed group is opened and selected."""
        super().__init__(parent)
        self.setWindowTitle("Stability: answers clustered by meaning")
        self.resize(960, 560)
        self.session, self.link, self.focus = session, meaning, focus
        self._open: set[str] = set()
        self._shown: tuple | None = None
        self.tree = QTreeWidget(objectName="stabilityTree")
        self.tree.setHeaderLabels(["Answers that should agree", "Answers", "Share"])
        self.tree.setColumnWidth(0, 700)
        self.note = QLabel(objectName="stabilityNote", wordWrap=True)
        self.distance = QDoubleSpinBox(decimals=2, singleStep=keys.CLUSTER_DISTANCE.limit.step,
                                       minimum=keys.CLUSTER_DISTANCE.limit.low,
                                       maximum=keys.CLUSTER_DISTANCE.limit.high,
                                       value=meaning.settings.get(keys.CLUSTER_DISTANCE))
        self.distance.setToolTip("Two groups of answers join while the mean cosine distance between them is at most "
                                 "this (1 − cosine similarity)")
        self.distance.setAccessibleName("Cluster distance")
        top = QHBoxLayout()
        top.addWidget(self.note, 1)
        top.addWidget(QLabel("Cluster distance"))
        top.addWidget(self.distance)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.tree)
        self.distance.valueChanged.connect(self._distance_changed)
        self.tree.itemExpanded.connect(lambda item: self._open.add(item.data(0, Qt.UserRole + 1)))
        self.tree.itemCollapsed.connect(lambda item: self._open.discard(item.data(0, Qt.UserRole + 1)))
        self.tree.currentItemChanged.connect(self._selected)
        self._timer = follow(self, self.refresh, session, meaning.meaning)
        self.refresh()

    def _distance_changed(self, value: float) -> None:
        self.link.settings.set(keys.CLUSTER_DISTANCE, value)
        self.refresh()

    def sets(self) -> list[tuple[AnswerSet, Stability | None]]:
        """Every answer set with its clusters (None until its answers are embedded), as shown."""
        return list(self.link.clusters(self.session).sets)

    def refresh(self) -> None:
        self._timer.stop()
        sets = self.sets()
        meaning = self.link.meaning
        self.note.setText(self.link.status() + ("" if sets else " · No seed group yet: make one with Compare → "
                                                "Variants (seeds), or run an evaluation with repeats."))
        shown = (tuple((a, None if s is None else (s.clusters, s.threshold)) for a, s in sets), meaning.error)
        if shown == self._shown:
            return
        first = self._shown is None
        self._shown = shown
        self.tree.blockSignals(True)
        self.tree.clear()
        focus_item = None
        for answers, found in sets:
            item = self._add(None, answers.key, [answers.title, str(len(answers.texts)),
                                                 set_summary(answers, found, meaning.error)])
            if found is not None:
                self._clusters(item, answers, found)
            if first and self.focus is not None and self.focus.id in answers.ids:
                self._open.add(answers.key)
                focus_item = item
            item.setExpanded(answers.key in self._open)
        self.tree.blockSignals(False)
        if focus_item is not None:
            self.tree.setCurrentItem(focus_item)

    def _clusters(self, parent: QTreeWidgetItem, answers: AnswerSet, found: Stability) -> None:
        for number, cluster in enumerate(found.clusters, 1):
            text = answers.texts[cluster.representative]
            key = f"{answers.key}/{number}"
            row = self._add(parent, key, [f"{number}. \u201c{one_line(text)}\u201d", str(cluster.size),
                                          f"{cluster.size / found.n:.0%}"])
            row.setToolTip(0, f"Representative answer ({answers.labels[cluster.representative]}):\n\n{text}")
            for member in cluster.members:
                child = self._add(row, f"{key}/{member}", [f"{answers.labels[member]}: "
                                                           f"{one_line(answers.texts[member], PREVIEW - 20)}", "", ""])
                child.setToolTip(0, answers.texts[member])
                if member < len(answers.ids):
                    child.setData(0, Qt.UserRole, answers.ids[member])
            row.setExpanded(key in self._open)

    def _add(self, parent: QTreeWidgetItem | None, key: str, columns: list[str]) -> QTreeWidgetItem:
        item = QTreeWidgetItem(columns)
        item.setData(0, Qt.UserRole + 1, key)
        if parent is None:
            self.tree.addTopLevelItem(item)
        else:
            parent.addChild(item)
        return item

    def _selected(self, item: QTreeWidgetItem | None, _previous) -> None:
        spec = self.session.pane_by_id(item.data(0, Qt.UserRole) or "") if item is not None else None
        if spec is not None:
            self.sig_pane_selected.emit(spec)
