"""KV positions of a sequence whose prompt holds images, for M-RoPE models (Qwen2-VL style).

The engine counts a sequence's KV in tokens (`Sequence.n_past`: cells used, the index into prompt + reply); with
plain positions a token's position is its index. With M-RoPE (libmtmd's `mtmd_decode_use_mrope`) an image of
`n_tokens` rows on an nx x ny grid takes `n_pos` = max(nx, ny) positions: its rows are at (t, y, x) = (p, p + row,
p + col) from its first position p, and the text after it starts at p + n_pos, so every later token's position is
its index minus what the images before it saved (n_tokens - n_pos each), as llama-server counts them
(`server_tokens::pos_next`). Text tokens of an M-RoPE model take one position (llama.cpp repeats it in every
section), and llama.cpp keeps the t section as a KV cell's position: all rows of one image share it, so KV cannot
be cut inside an image, only before it (`boundary`). No llama.cpp here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ImageSpan:
    start: int  # index of the image's first row in the prompt
    n_tokens: int
    n_pos: int  # positions it takes (mtmd_input_chunk_get_n_pos)

    @property
    def end(self) -> int:
        return self.start + self.n_tokens


class PositionMap:
    """Token index -> KV position for one prompt with M-RoPE images (and the reply after it)."""

    def __init__(self, spans: list[ImageSpan]):
        self.spans = sorted(spans, key=lambda s: s.start)

    @classmethod
    def of_prompt(cls, prompt: np.ndarray, image_of, geometry) -> PositionMap | None:
        """The map of `prompt` (placeholders as vision.py makes them: `image_of(token)` -> (serial, row)), with
        `geometry(serial)` -> (n_tokens, n_pos); None when no image saves a position (plain positions)."""
        spans, index = [], 0
        prompt = np.asarray(prompt)
        for first in np.flatnonzero(prompt < 0):
            if first < index:
                continue
            serial, row = image_of(prompt[first])
            n_tokens, n_pos = geometry(serial)
            spans.append(ImageSpan(int(first) - row, n_tokens, n_pos))
            index = int(first) - row + n_tokens
        if all(s.n_tokens == s.n_pos for s in spans):
            return None
        return cls(spans)

    def position(self, index: int) -> int:
        """The position of the token at `index` (a row inside an image: that image's first position, t)."""
        saved = 0
        for span in self.spans:
            if index >= span.end:
                saved += span.n_tokens - span.n_pos
            elif index > span.start:
                return span.start - saved
            else:
                break
        return index - saved

    def boundary(self, index: int) -> int:
        """`index`, or the first row of the image it falls inside: where this sequence's KV can be cut."""
        for span in self.spans:
            if span.start < index < span.end:
                return span.start
        return index

    def kv_end(self, n: int) -> int:
        """What llama.cpp reports as the next position (its largest + 1) once the first `n` tokens are in KV."""
        if n <= 0:
            return 0
        for span in self.spans:
            if span.start <= n - 1 < span.end:
                return self.position(span.start) + 1
        return self.position(n)


def position(positions: PositionMap | None, index: int) -> int:
    """`index` through a sequence's map (None: plain positions, the index itself)."""
    return index if positions is None else positions.position(index)
