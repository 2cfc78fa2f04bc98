"""GGUF headers with values of the wrong type: every metadata key that discovery and the memory estimate read,
set to every GGUF value type (scalars and arrays), written as real files with the `gguf` package. Each file
either reads as a model or is listed as broken with a reason naming the key; the estimate either works or
raises ValueError with that reason. Never a traceback, and the scan always lists every file."""

from __future__ import annotations

import re

import gguf
import pytest

from app.models import ScanCache, discover, estimate_memory, validate_gguf
from app.models.default import InvalidModelError
from tests.fixtures.app_trees import write_gguf

T = gguf.GGUFValueType
# Every key read by app/models/info.py and gguf_header.py (for the llama architecture the files are written as).
KEYS = ["general.architecture", "general.name", "general.alignment", "general.file_type", "llama.block_count",
        "llama.context_length", "llama.embedding_length", "llama.feed_forward_length",
        "llama.attention.head_count", "llama.attention.head_count_kv", "llama.attention.key_length",
        "llama.attention.value_length", "llama.attention.sliding_window", "llama.attention.sliding_window_pattern",
        "tokenizer.chat_template", "tokenizer.ggml.tokens"]
# One value of every GGUF type: name -> (value, type[, element type]).
VALUES = {"uint8": (7, T.UINT8), "int8": (-3, T.INT8), "uint16": (300, T.UINT16), "int16": (-300, T.INT16),
          "uint32": (70000, T.UINT32), "int32": (-70000, T.INT32), "uint64": (2**40, T.UINT64),
          "int64": (-(2**40), T.INT64), "float32": (1.5, T.FLOAT32), "float64": (2.5, T.FLOAT64),
          "bool": (True, T.BOOL), "string": ("abc", T.STRING), "array-string": (["a", "b"], T.ARRAY, T.STRING),
          "array-float32": ([1.0, 2.0], T.ARRAY, T.FLOAT32), "array-int32": ([4, 4], T.ARRAY, T.INT32),
          "array-bool": ([True, False], T.ARRAY, T.BOOL)}
INTEGER_TYPES = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"}
RIGHT = {"general.architecture": {"string"}, "general.name": {"string"}, "tokenizer.chat_template": {"string"},
         "tokenizer.ggml.tokens": {"array-string", "array-float32", "array-int32", "array-bool"},
         "llama.feed_forward_length": INTEGER_TYPES | {"array-int32"},
         "llama.attention.head_count": INTEGER_TYPES | {"array-int32"},
         "llama.attention.head_count_kv": INTEGER_TYPES | {"array-int32"},
         "llama.attention.sliding_window_pattern": INTEGER_TYPES | {"array-int32", "array-bool"}}
CASES = [(key, kind) for key in KEYS for kind in VALUES]
WRONG = [(key, kind) for key, kind in CASES if kind not in RIGHT.get(key, INTEGER_TYPES)]


def test_case_counts():
    assert (len(CASES), len(WRONG)) == (256, 148)


@pytest.fixture(scope="module")
def odd_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("odd")
    for key, kind in CASES:
        write_gguf(folder / f"{key}={kind}.gguf", meta={key: VALUES[kind]})
    return folder


def test_every_wrong_typed_key_is_listed_as_broken_naming_the_key_and_the_scan_lists_every_file(odd_files, tmp_path):
    entries = discover(tmp_path / "nohome", {}, folders=[odd_files], cache=ScanCache(), platform="linux")
    by_case = {tuple(e.name.split("=")): e for e in entries}
    assert set(by_case) == set(CASES)  # nothing lost, nothing raised
    wrong_unflagged = [case for case in WRONG if by_case[case].broken is None]
    # A wrong type is harmless only where nothing reads it: the sliding-window pattern of a model without a
    # sliding window (llama has none), as llama.cpp reads it only when there is a window.
    assert {key for key, _ in wrong_unflagged} <= {"llama.attention.sliding_window_pattern"}
    for key, kind in WRONG:
        broken = by_case[key, kind].broken
        assert broken is None or repr(key) in broken, (key, kind, broken)
    # The right types with plausible values read as models.
    for case in [("llama.block_count", "uint8"), ("llama.attention.head_count", "array-int32"),
                 ("general.name", "string"), ("tokenizer.ggml.tokens", "array-bool")]:
        assert by_case[case].broken is None and by_case[case].facts is not None

    # The memory estimate refuses exactly the broken files, with the same reason; the load check never raises
    # anything but its own clear error (these files are tiny, so it refuses them all).
    for (key, kind), entry in by_case.items():
        path = odd_files / f"{key}={kind}.gguf"
        if entry.broken:
            with pytest.raises(ValueError) as refused:
                estimate_memory(path, n_slots=2, n_ctx_per_slot=512)
            assert str(refused.value) == f"{path.name}: {entry.broken}"
        else:
            assert estimate_memory(path, n_slots=2, n_ctx_per_slot=512).total > 0
        with pytest.raises(InvalidModelError, match=re.escape(path.name)):
            validate_gguf(path)
