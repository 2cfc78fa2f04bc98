"""A QSortFilterProxyModel whose filter settings change through `refilter`, on any Qt 6 this app runs on."""

from __future__ import annotations

from PySide6.QtCore import QSortFilterProxyModel


class FilterProxy(QSortFilterProxyModel):
    def refilter(self, change=lambda: None) -> None:
        """Apply `change()` (new filter settings) and filter again."""
        if hasattr(self, "beginFilterChange"):  # Qt 6.10+; invalidateFilter is deprecated there
            self.beginFilterChange()
            change()
            self.endFilterChange()
        else:
            change()
            self.invalidateFilter()
