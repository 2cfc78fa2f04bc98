"""An EventedList that finds its items by identity, in constant time.

psygnal's EventedList relays each event of an item (a pane's streamed token, a cell's result) with the item's
index, found by `list.index`: a scan comparing items with `==`. For panes, dataclasses compared field by field,
that was 256 comparisons of every field per token event at 256 panes, most of the window's time while they
streamed. Here an item's position comes from a map of ids, checked against the list (so it is never stale) and
made again only after the list's order changed; an item that is not there falls back to the equality scan.

An item whose signals can rest (app/session/resting.py: an evaluation's cells) is relayed by a standing
listener, so the list does not make its group to connect to it, and hears it again whenever it wakes.
"""

from __future__ import annotations

from psygnal.containers import EventedList

from app.session import resting


class IdentityEventedList(EventedList):
    _positions: dict[int, int] | None = None  # id(item) -> its first index, as the list was when made

    def index(self, value, start: int = 0, stop: int | None = None) -> int:
        if start == 0 and stop is None:
            position = self._position(value)
            if position is not None:
                return position
        return super().index(value, start, stop) if stop is not None else super().index(value, start)

    def __contains__(self, value) -> bool:
        return self._position(value) is not None or super().__contains__(value)

    def _connect_child_emitters(self, child) -> None:
        if resting.resting(child):
            resting.stand(child, self._reemit_child_event)
        else:
            super()._connect_child_emitters(child)

    def _disconnect_child_emitters(self, child) -> None:
        if resting.resting(child):
            resting.unstand(child, self._reemit_child_event)
        else:
            super()._disconnect_child_emitters(child)

    def _position(self, value) -> int | None:
        positions = self._positions
        position = positions.get(id(value)) if positions is not None else None
        if position is None or position >= len(self) or self[position] is not value:  # moved, or new: map again
            self._positions = positions = {id(item): i for i, item in reversed(list(enumerate(self)))}
            position = positions.get(id(value))
        return position
