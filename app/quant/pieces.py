"""The text of each token of a scored sequence, to show per-token figures (a KLD tint) over the words they
belong to. Read with llama.cpp's vocab-only load (no weights); a character split across tokens shows on the token
that completes it, so the pieces join back into the text.
"""

from __future__ import annotations

import codecs
import ctypes
from collections.abc import Iterable
from pathlib import Path

import llama_cpp

from app.quant.forward import vocab_only


def token_texts(path: str | Path, tokens: Iterable[int]) -> list[str]:
    """One string per token (control tokens render empty)."""
    with vocab_only(path) as vocab:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        out = []
        for token in tokens:
            buf = ctypes.create_string_buffer(256)
            n = llama_cpp.llama_token_to_piece(vocab, int(token), buf, len(buf), 0, False)
            if n < 0:
                buf = ctypes.create_string_buffer(-n)
                n = llama_cpp.llama_token_to_piece(vocab, int(token), buf, -n, 0, False)
            out.append(decoder.decode(buf.raw[:max(n, 0)]))
        return out
