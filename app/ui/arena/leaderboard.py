"""The arena's leaderboard: the session's votes as a Bradley–Terry board (app.arena.board), with its
95 % intervals, ranks that admit ties, which variants the votes cannot separate, the win-rate matrix, human and
judge votes apart with their agreement rate, and the scores with error bars (ArenaPlot).

A view of `session.votes`: it recomputes the board whenever the votes change and keeps nothing else.
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QComboBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.arena import Board, board, display_names
from app.session import SessionModel
from app.ui.arena.plot import ArenaPlot

COLUMNS = ("Rank", "Variant", "Score", "95 % interval", "Votes", "W / T / L", "Both bad", "Cannot separate from")
SCOPES = (("All votes", None), ("Human votes", "human"), ("Judge votes", "judge"))


def score_text(x: float) -> str:
    return "∞" if x == math.inf else "−∞" if x == -math.inf else f"{x:.0f}"


class LeaderboardDialog(QDialog):
    def __init__(self, session: SessionModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Arena leaderboard")
        self.resize(1100, 720)
        self.session = session
        self.board: Board | None = None
        self.scope = QComboBox(toolTip="Which votes the board is fitted on")
        for text, source in SCOPES:
            self.scope.addItem(text, source)
        self.scope.currentIndexChanged.connect(self.refresh)
        self.summary = QLabel(wordWrap=True, objectName="leaderboardSummary")
        self.sources = QLabel(wordWrap=True, objectName="leaderboardSources")
        self.table = QTableWidget(0, len(COLUMNS), editTriggers=QTableWidget.NoEditTriggers,
                                  selectionBehavior=QTableWidget.SelectRows)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.Stretch)
        header.setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.Stretch)
        self.matrix = QTableWidget(0, 0, editTriggers=QTableWidget.NoEditTriggers,
                                   sizeAdjustPolicy=QAbstractScrollArea.AdjustToContents)
        self.matrix.setToolTip("Win rate of the row's variant over the column's (a tie or both bad counts as half; "
                               "– where they never met)")
        self.plot = ArenaPlot()
        top = QHBoxLayout()
        top.addWidget(QLabel("Fitted on:"))
        top.addWidget(self.scope)
        top.addWidget(self.summary, 1)
        self.matrix.setSizePolicy(QSizePolicy.Maximum, QSizePolicy.Maximum)
        lower = QHBoxLayout()
        matrix_box = QVBoxLayout()
        matrix_box.addWidget(QLabel("<b>Win rate</b> of the row over the column"))
        matrix_box.addWidget(self.matrix)
        matrix_box.addWidget(self.sources)
        matrix_box.addStretch(1)
        lower.addWidget(self.plot, 3)
        lower.addLayout(matrix_box, 2)
        self.sources.setMaximumWidth(460)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.table)
        layout.addLayout(lower, 1)
        session.events.votes.connect(self.refresh)
        self.refresh()

    def refresh(self, *_args) -> None:
        votes = list(self.session.votes)
        self.board = board(votes, source=self.scope.currentData())
        standings = self.board.standings
        names = display_names(standings)
        self.summary.setText(self._summary(len(votes)))
        self.table.setRowCount(len(standings))
        for row, s in enumerate(standings):
            apart = [names[o.variant] for o in standings if o.variant != s.variant
                     and self.board.cannot_separate(s.variant, o.variant)]
            cells = (s.rank_text, names[s.variant], score_text(s.score),
                     f"{score_text(s.ci_low)} – {score_text(s.ci_high)}", str(s.votes),
                     f"{s.wins} / {s.ties} / {s.losses}", str(s.both_bad), ", ".join(apart) or "—")
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if column not in (1, len(COLUMNS) - 1):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                if column == 1:
                    item.setToolTip(f"variant key {s.variant}")
                if column == len(COLUMNS) - 1 and apart:
                    item.setToolTip("Their 95 % intervals overlap: these votes cannot order them.")
                self.table.setItem(row, column, item)
        self._fit_table()
        self._fill_matrix([names[s.variant] for s in standings])
        self.plot.set_standings(standings, names)
        self.sources.setText(self._sources_text())

    def done(self, code: int) -> None:
        self.session.events.votes.disconnect(self.refresh)
        super().done(code)

    def _fit_table(self) -> None:
        """As tall as its rows (up to ten; it scrolls beyond), so the plot gets the rest."""
        rows = min(self.table.rowCount(), 10)
        height = self.table.horizontalHeader().height() + 2 * self.table.frameWidth() + 2
        self.table.setFixedHeight(height + sum(self.table.rowHeight(r) for r in range(rows))
                                  + (0 if rows else self.table.verticalHeader().defaultSectionSize()))

    def _summary(self, total: int) -> str:
        if not total:
            return "No votes yet: vote in the arena (Compare → Arena…)."
        shown = sum(s.votes for s in self.board.standings) // 2
        return (f"{shown} votes · Bradley–Terry scores (Elo-like scale, mean 1000), 95 % bootstrap intervals · "
                f"a rank range such as 2–3: the votes cannot order those variants")

    def _fill_matrix(self, names: list[str]) -> None:
        rates = self.board.win_rates()
        self.matrix.setRowCount(len(names))
        self.matrix.setColumnCount(len(names))
        self.matrix.setHorizontalHeaderLabels([str(i + 1) for i in range(len(names))])
        self.matrix.setVerticalHeaderLabels([f"{i + 1}. {name}" for i, name in enumerate(names)])
        for i, row in enumerate(rates):
            for j, rate in enumerate(row):
                item = QTableWidgetItem("" if i == j else "–" if rate is None else f"{rate * 100:.0f} %")
                item.setTextAlignment(Qt.AlignCenter)
                if rate is not None:
                    green, red = QColor(34, 197, 94), QColor(239, 68, 68)
                    color = green if rate >= 0.5 else red
                    color.setAlpha(int(40 + 150 * abs(rate - 0.5) * 2))
                    item.setBackground(QBrush(color))
                    item.setToolTip(f"{names[i]} over {names[j]}: {rate * 100:.0f} %")
                elif i == j:
                    item.setBackground(QBrush(QColor(128, 128, 128, 60)))
                self.matrix.setItem(i, j, item)
        self.matrix.resizeColumnsToContents()

    def _sources_text(self) -> str:
        s = self.board.sources
        judges = ", ".join(f"{n} by {name}" for name, n in s.judges.items())
        parts = [f"<b>Votes:</b> {s.human} human, {s.judge} judge" + (f" ({judges})" if judges else "") + "."]
        if s.agreement is None:
            parts.append("<b>Agreement</b> of judge and human: – (no pair and case voted on by both).")
        else:
            parts.append(f"<b>Agreement</b> of judge and human: {s.agreement * 100:.0f} % ({s.agreed} of "
                         f"{s.compared} comparisons of the same pair and case).")
        return "<br>".join(parts)
