"""The scrollable grid of prompt panes: add, duplicate, remove, and re-flow into 1–4 columns."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QGridLayout, QScrollArea, QWidget

from app.ui.prompt_pane import PromptPane
from app.ui.settings import COLUMNS_LIMIT


class PaneGrid(QScrollArea):
    sig_pane_added = Signal(object)
    """A pane was created (the coordinator connects to its run/stop requests)."""
    sig_pane_removed = Signal(object)
    """A pane is being removed (the coordinator cancels its generation first)."""

    def __init__(self, columns: int = COLUMNS_LIMIT.default, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setObjectName("paneGrid")
        self._container = QWidget()
        self._container.setObjectName("paneContainer")
        self._layout = QGridLayout(self._container)
        self._layout.setContentsMargins(8, 8, 8, 8)
        self._layout.setSpacing(8)
        self.setWidget(self._container)
        self.panes: list[PromptPane] = []
        self.columns = COLUMNS_LIMIT.clamp(columns)
        self._next_number = 1

    def add_pane(self, contents: dict | None = None, after: PromptPane | None = None) -> PromptPane:
        pane = PromptPane(self._next_number)
        self._next_number += 1
        if contents:
            pane.restore(contents)
        pane.sig_duplicate_requested.connect(self.duplicate_pane)
        pane.sig_remove_requested.connect(self.remove_pane)
        index = self.panes.index(after) + 1 if after in self.panes else len(self.panes)
        self.panes.insert(index, pane)
        self._reflow()
        self.sig_pane_added.emit(pane)
        self.ensureWidgetVisible(pane)
        pane.prompt.setFocus()
        return pane

    def duplicate_pane(self, pane: PromptPane) -> PromptPane:
        copy = self.add_pane(pane.contents(), after=pane)
        copy.title.setText(f"Pane {copy.number} (copy of {pane.number})")
        return copy

    def remove_pane(self, pane: PromptPane) -> None:
        if pane not in self.panes:
            return
        self.sig_pane_removed.emit(pane)
        index = self.panes.index(pane)
        self.panes.remove(pane)
        self._layout.removeWidget(pane)
        pane.setParent(None)
        pane.deleteLater()
        self._reflow()
        if self.panes:
            self.panes[min(index, len(self.panes) - 1)].prompt.setFocus()

    def set_columns(self, columns: int) -> None:
        self.columns = COLUMNS_LIMIT.clamp(columns)
        self._reflow()

    def _reflow(self) -> None:
        for pane in self.panes:
            self._layout.removeWidget(pane)
        for i, pane in enumerate(self.panes):
            row, col = divmod(i, self.columns)
            self._layout.addWidget(pane, row, col)
        for col in range(int(COLUMNS_LIMIT.high)):
            self._layout.setColumnStretch(col, 1 if col < self.columns else 0)
        rows = (len(self.panes) + self.columns - 1) // self.columns
        for row in range(rows + 1):
            self._layout.setRowStretch(row, 0)
        self._layout.setRowStretch(rows, 1)  # leftover space below the panes, not inside them
