"""Scroll several outputs together: moving one moves the others to the same relative position."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractScrollArea


class ScrollSync:
    def __init__(self):
        self._views: list[QAbstractScrollArea] = []
        self._moving = False

    def set_views(self, views: list[QAbstractScrollArea]) -> None:
        self.clear()
        self._views = list(views)
        for view in self._views:
            view.verticalScrollBar().valueChanged.connect(self._follow)

    def clear(self) -> None:
        for view in self._views:
            try:
                view.verticalScrollBar().valueChanged.disconnect(self._follow)
            except (RuntimeError, TypeError):  # a view already deleted, or never connected
                pass
        self._views = []

    def _follow(self, _value: int) -> None:
        if self._moving:
            return
        source = next((v for v in self._views if v.verticalScrollBar().isSliderDown() or v.hasFocus()
                       or v.underMouse()), None)
        if source is None:
            return  # text streaming in moved a bar by itself: each output keeps following its own end
        bar = source.verticalScrollBar()
        fraction = bar.value() / bar.maximum() if bar.maximum() else 0.0
        self._moving = True
        try:
            for view in self._views:
                if view is not source:
                    other = view.verticalScrollBar()
                    other.setValue(round(fraction * other.maximum()))
        finally:
            self._moving = False
