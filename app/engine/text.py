"""Bytes from tokens to text a user can read: whole characters only, and never a piece of a stop string.

A byte-level BPE token can end in the middle of a UTF-8 character, and a stop string can arrive split over
several tokens; both are held back until decided.
"""

from __future__ import annotations

import codecs


class TextStream:
    """Incremental decoder for one sequence. `feed()` returns text safe to show now and whether a stop hit."""

    def __init__(self, stops: tuple[str, ...] = ()):
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stops = tuple(s for s in stops if s)
        self._pending = ""
        self.text = ""  # everything released so far
        self.stopped = False

    def feed(self, data: bytes) -> str:
        if self.stopped:
            return ""
        self._pending += self._utf8.decode(data)
        return self._release(final=False)

    def finish(self) -> str:
        """End of generation: release held text. Bytes of a character that never completed are dropped
        rather than shown as U+FFFD (generation was cut mid-character by a limit or a cancel)."""
        if self.stopped:
            return ""
        self._utf8.reset()
        return self._release(final=True)

    def _release(self, final: bool) -> str:
        pending = self._pending
        cut = len(pending)
        if self._stops:
            hits = [i for i in (pending.find(s) for s in self._stops) if i >= 0]
            if hits:
                self.stopped = True
                cut = min(hits)
            elif not final:
                cut -= self._held_suffix(pending)
        out, self._pending = pending[:cut], ("" if self.stopped else pending[cut:])
        self.text += out
        return out

    def _held_suffix(self, text: str) -> int:
        """Length of the longest tail of `text` that could still grow into a stop string."""
        best = 0
        for stop in self._stops:
            for k in range(min(len(stop) - 1, len(text)), best, -1):
                if text.endswith(stop[:k]):
                    best = k
                    break
        return best
