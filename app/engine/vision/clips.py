"""Where a clip sits in a prompt, remembered: a prompt whose clips were all heard before is tokenised without
libmtmd reading them again.

libmtmd runs a clip's preprocessing (the log-mel spectrogram of the whole clip, with 30 s of silence after it)
every time a prompt holding it is tokenised: 40-70 ms of the engine thread for a 10 s clip on 2 cores (measured),
so 8 panes asking about one clip spent 8 times that before their first step. What mtmd_tokenize makes of a prompt
is a concatenation: BOS if the vocabulary adds one, each text segment between media markers tokenised on its own,
for each clip the projector's audio-begin text, the clip's windows and its audio-end text, then EOS if the
vocabulary adds one. A clip's windows depend on the clip alone (its bytes' SHA-256), the begin and end text on
the projector alone. `ClipLayouts` keeps both from full tokenisations (the begin and end text only once they rebuild
one exactly) and builds a later prompt's tokens from them. No llama.cpp here.
"""

from __future__ import annotations

from collections.abc import Callable

from app.engine.vision.media import MARKER

Rows = Callable[[str], "list[int] | None"]  # a window's key -> its placeholder tokens, None if no longer kept


class ClipLayouts:
    """`text_tokens(segment)`: a text segment's tokens as libmtmd makes them (no BOS or EOS); `bos`, `eos`: the
    tokens libmtmd adds around a whole prompt (empty when the vocabulary adds none)."""

    def __init__(self, text_tokens: Callable[[str], list[int]], bos: list[int], eos: list[int]):
        self._text, self._bos, self._eos = text_tokens, list(bos), list(eos)
        self._windows: dict[str, list[str]] = {}  # clip key -> its windows' keys, in order
        self._frame: tuple[list[int], list[int]] | None = None  # the text tokens before and after a clip's windows

    def remember(self, clip: str, windows: list[str]) -> None:
        self._windows[clip] = list(windows)

    def forget(self, window: str) -> None:
        """A window is no longer kept: its clip is tokenised by libmtmd again next time."""
        self._windows.pop(window.rpartition("#")[0], None)

    def build(self, text: str, clips: list[str], rows: Rows) -> list[int] | None:
        """The tokens of `text` (a MARKER for each of `clips`, in order), or None when a clip, a window of it or the
        projector's frame is not known (then libmtmd must tokenise it)."""
        segments = text.split(MARKER)
        if self._frame is None or not clips or len(segments) != len(clips) + 1:
            return None
        return self._assemble(segments, clips, rows, self._frame)

    def learn(self, text: str, clips: list[str], tokens: list[int], rows: Rows) -> None:
        """After libmtmd tokenised `text` with `clips` (and nothing else) into `tokens`: keep the projector's begin
        and end text if, with them, `build` makes exactly `tokens`."""
        segments = text.split(MARKER)
        media = [i for i, t in enumerate(tokens) if t < 0]
        if self._frame is not None or not clips or not media or len(segments) != len(clips) + 1:
            return
        start = len(self._bos) + len(self._text(segments[0]))
        stop = len(tokens) - len(self._text(segments[-1])) - len(self._eos)
        if not start <= media[0] or not media[-1] < stop:
            return
        frame = (tokens[start:media[0]], tokens[media[-1] + 1:stop])
        if self._assemble(segments, clips, rows, frame) == tokens:
            self._frame = frame

    def _assemble(self, segments: list[str], clips: list[str], rows: Rows, frame) -> list[int] | None:
        begin, end = frame
        tokens = self._bos + self._text(segments[0])
        for clip, segment in zip(clips, segments[1:], strict=True):
            windows = self._windows.get(clip)
            if not windows:
                return None
            tokens += begin
            for window in windows:
                placeholders = rows(window)
                if placeholders is None:
                    return None
                tokens += placeholders
            tokens += end + self._text(segment)
        return tokens + self._eos
