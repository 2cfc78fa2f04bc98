"""The scrollable grid of pane views over the session's panes: add, duplicate, remove, re-flow into columns.

The grid keeps `session.panes` and its views in the same order; every structural change goes through it.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QGridLayout, QScrollArea, QWidget

from app.session import MAIN, PaneSpec, Session
from app.session.compare import differences_in_groups
from app.ui.prompt_pane import PromptPane
from app.ui.scroll_sync import ScrollSync
from app.ui.settings import COLUMNS_LIMIT

MIN_COLUMN_WIDTH = 180  # columns mode: 8 variants fit side by side on a 1600 px screen, more scroll sideways
PANE_MIN_WIDTH = 300
QWIDGETSIZE_MAX = (1 << 24) - 1


class PaneGrid(QScrollArea):
    sig_pane_added = Signal(object)
    """A pane view was created (the coordinator connects to its run/stop requests)."""
    sig_pane_removed = Signal(object)
    """A pane view is being removed (the coordinator cancels its generation first)."""
    sig_changed = Signal()
    """The session changed: a pane was added or removed, or one was edited."""

    def __init__(self, session: Session | None = None, columns: int = COLUMNS_LIMIT.default,
                 parent: QWidget | None = None):
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
        self.column_group: str | None = None  # columns mode: only this group, one fixed-width column each
        self._scroll_sync = ScrollSync()
        self._next_number = 1
        self.backend_names = [MAIN]  # what each pane's header offers
        self.session = Session()
        self.set_session(session or Session())

    def set_session(self, session: Session) -> None:
        """Show another session: every current view goes, one view per pane of `session` comes."""
        for pane in list(self.panes):
            self._drop_view(pane)
        self.session = session
        self._next_number = 1
        for spec in session.panes:
            self._insert_view(spec, len(self.panes))
        self._reflow()

    def add_pane(self, spec: PaneSpec | None = None, after: PromptPane | None = None) -> PromptPane:
        spec = spec or PaneSpec()
        index = self.panes.index(after) + 1 if after in self.panes else len(self.panes)
        self.session.panes.insert(index, spec)
        pane = self._insert_view(spec, index)
        self._reflow()
        self.ensureWidgetVisible(pane)
        pane.prompt.setFocus()
        self.sig_changed.emit()
        return pane

    def _insert_view(self, spec: PaneSpec, index: int) -> PromptPane:
        pane = PromptPane(spec, self._next_number)
        self._next_number += 1
        pane.header.set_backends(self.backend_names)
        pane.sig_duplicate_requested.connect(self.duplicate_pane)
        pane.sig_remove_requested.connect(self.remove_pane)
        pane.sig_changed.connect(self._pane_changed)
        self.panes.insert(index, pane)
        self.sig_pane_added.emit(pane)
        return pane

    def _pane_changed(self, _pane: PromptPane) -> None:
        self.refresh_titles()
        self.sig_changed.emit()

    def duplicate_pane(self, pane: PromptPane) -> PromptPane:
        """A copy with the same conversation and settings, next to the original."""
        return self.add_pane(pane.spec.copy(title=""), after=pane)

    def remove_pane(self, pane: PromptPane) -> None:
        if pane not in self.panes:
            return
        index = self.panes.index(pane)
        self.session.panes.remove(pane.spec)
        self._drop_view(pane)
        self._reflow()
        if self.panes:
            self.panes[min(index, len(self.panes) - 1)].prompt.setFocus()
        self.sig_changed.emit()

    def _drop_view(self, pane: PromptPane) -> None:
        self.sig_pane_removed.emit(pane)
        self.panes.remove(pane)
        self._layout.removeWidget(pane)
        pane.setParent(None)
        pane.deleteLater()

    def set_backend_names(self, names: list[str]) -> None:
        """The backends panes can choose changed (one was added or removed)."""
        self.backend_names = list(names)
        for pane in self.panes:
            pane.header.set_backends(self.backend_names)
        self.refresh_titles()  # the backend shows in the header's chooser now, or in its title again

    def set_columns(self, columns: int) -> None:
        self.columns = COLUMNS_LIMIT.clamp(columns)
        self._reflow()

    def show_group_in_columns(self, group: str | None) -> None:
        """Columns mode for one group (None: back to the grid): its panes side by side at a fixed width with
        a horizontal scroll, editors folded, outputs scrolled together; other panes wait out of sight."""
        self.column_group = group if any(p.spec.group == group for p in self.panes) else None
        self._reflow()

    def _reflow(self) -> None:
        for pane in self.panes:
            self._layout.removeWidget(pane)
        grouped = [p for p in self.panes if self.column_group and p.spec.group == self.column_group]
        if grouped:
            self._columns_layout(grouped)
            return
        self.column_group = None
        self._scroll_sync.clear()
        for i, pane in enumerate(self.panes):
            row, col = divmod(i, self.columns)
            pane.setMinimumWidth(PANE_MIN_WIDTH)
            pane.setMaximumWidth(QWIDGETSIZE_MAX)
            pane.set_compact(False)
            self._layout.addWidget(pane, row, col)  # parented first: a parentless widget shown is a window
            pane.show()
        for col in range(max(self._layout.columnCount(), int(COLUMNS_LIMIT.high))):
            self._layout.setColumnStretch(col, 1 if col < self.columns else 0)
        rows = (len(self.panes) + self.columns - 1) // self.columns
        for row in range(self._layout.rowCount()):
            self._layout.setRowStretch(row, 1 if row < rows else 0)  # panes share the height: more conversation
        self.refresh_titles()

    def _columns_layout(self, grouped: list[PromptPane]) -> None:
        width = self._column_width(len(grouped))
        for col, pane in enumerate(grouped):
            pane.setFixedWidth(width)
            pane.set_compact(True)
            self._layout.addWidget(pane, 0, col)
        for pane in self.panes:  # after every view is parented (a parentless widget shown is a window)
            pane.setVisible(pane in grouped)
        for col in range(max(self._layout.columnCount(), len(grouped))):
            self._layout.setColumnStretch(col, 0)
        for row in range(self._layout.rowCount()):
            self._layout.setRowStretch(row, 1 if row == 0 else 0)
        self._scroll_sync.set_views([p.output for p in grouped])
        self.refresh_titles()

    def _column_width(self, n: int) -> int:
        """Columns share the visible width, down to MIN_COLUMN_WIDTH (then the grid scrolls sideways)."""
        margins = self._layout.contentsMargins()
        room = self.viewport().width() - margins.left() - margins.right() - self._layout.spacing() * (n - 1)
        return max(MIN_COLUMN_WIDTH, room // max(n, 1))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.column_group:
            grouped = [p for p in self.panes if p.spec.group == self.column_group]
            width = self._column_width(len(grouped))
            for pane in grouped:
                pane.setFixedWidth(width)

    def refresh_titles(self) -> None:
        """Each header names the settings where its pane differs from the others (e.g. "T 0.7 · seed 3")."""
        for pane, diff in zip(self.panes, differences_in_groups(self.session.panes), strict=True):
            pane.header.set_differences(diff)
