"""What a GGUF header says about a model, in the terms the Models dialog and the memory estimate use.

`ModelFacts` is plain data (JSON round-trip for the scan cache). It is built from the headers of every shard of
a split model: the metadata comes from the first shard, the tensor table from all of them. Every key read here
is type-checked (`_Meta`): a value of the wrong GGUF type raises GGUFError naming the key, as llama.cpp's loader
would refuse the file, so a scan lists such a file as broken with that reason.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields

from app.models.gguf_header import FILE_TYPES, GGML_TYPES, GGUFError, GGUFHeader, describe

# A quantization name in a file name: Q4_K_M, IQ2_XXS, F16, BF16, Q8_0, MXFP4...
_QUANT_IN_NAME = re.compile(r"(?<![A-Za-z0-9])(I?Q\d_[A-Z0-9_]*?|[BF]F?16|F32|MXFP4|TQ\d_\d)(?=[.\-_]|$)", re.I)
_LAYER = re.compile(r"^blk\.(\d+)\.")
# Chat template markers -> the prompt format family they belong to (first match wins).
_FORMATS = (("<|channel|>", "Harmony"), ("<|im_start|>", "ChatML"), ("<start_of_turn>", "Gemma"),
            ("<|start_header_id|>", "Llama 3"), ("[INST]", "Mistral"), ("<|user|>", "Zephyr/Phi"),
            ("<｜User｜>", "DeepSeek"), ("<|User|>", "DeepSeek"))
# (period, dense first) of llama.cpp's load_swa_pattern calls, for the architectures that have one.
_SWA_PERIODS = {"gemma2": (2, False), "gemma3": (6, False), "gemma3n": (5, False), "gemma-embedding": (6, False),
                "cohere2": (4, False), "gpt-oss": (2, False), "olmo2": (4, False), "exaone4": (4, False),
                "llama4": (4, False), "smallthinker": (4, True)}
_THINKING = ("enable_thinking", "<think>", "reasoning_content", "<|channel|>", "thinking")


def quant_from_name(filename: str) -> str:
    """The quantization a file name states ("" if none), e.g. "Qwen3-0.6B-Q4_K_M.gguf" -> "Q4_K_M"."""
    found = _QUANT_IN_NAME.findall(filename.rsplit("/", 1)[-1].removesuffix(".gguf"))
    return found[-1].upper() if found else ""


_WHOLE_QUANT = re.compile(r"(?<![A-Za-z0-9])(I?Q\d(?:_[A-Z0-9]+)*|[BF]F?16|F32|MXFP4|TQ\d_\d)(?![A-Za-z0-9])", re.I)


def without_quant(name: str) -> str:
    """`name` with every quantization it states blanked out, suffixes and all ("M.Q4_K_M" -> "M. ")."""
    return _WHOLE_QUANT.sub(" ", name)


@dataclass
class ModelFacts:
    """One model (all its shards). Sizes in bytes. Per-layer lists are indexed by layer."""

    architecture: str = "?"
    name: str = ""
    n_params: int = 0
    quantization: str = "?"
    n_ctx_train: int = 0
    has_chat_template: bool = False
    prompt_format: str = ""  # the template's family ("ChatML"), "template", or "" without one
    thinking: bool = False  # the template has a thinking switch or <think> markers
    weights_bytes: int = 0
    layer_bytes: list[int] = field(default_factory=list)
    output_bytes: int = 0  # output.weight (+ norm): offloaded with "all" layers
    n_layer: int = 0
    n_embd: int = 0
    n_vocab: int = 0
    head_dim_k: int = 0
    head_dim_v: int = 0
    n_head: list[int] = field(default_factory=list)
    n_head_kv: list[int] = field(default_factory=list)
    n_ff: int = 0
    sliding_window: int = 0
    swa_layers: list[bool] = field(default_factory=list)  # True: the layer attends a sliding window only
    recurrent: bool = False  # state-space / linear-attention layers: the KV estimate does not cover them

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelFacts:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @property
    def prompt_label(self) -> str:
        if not self.has_chat_template:
            return "no template (raw)"
        return (self.prompt_format or "template") + (" · thinking" if self.thinking else "")


MAX_COUNT = 1 << 31  # a count (heads, context, widths) above this is a corrupt header, not a model
MAX_LAYERS = 1 << 16  # likewise for the layer count (per-layer lists are built from it)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Meta:
    """Typed reads of header metadata. A key that is absent gives the default; a key of the wrong GGUF type
    (or a count out of range) raises GGUFError naming the key and what it holds."""

    def __init__(self, meta: dict):
        self.meta = meta

    def _wrong(self, key: str, want: str) -> GGUFError:
        return GGUFError(f"metadata key {key!r} is {describe(self.meta[key])} where {want} belongs")

    def text(self, key: str) -> str:
        value = self.meta.get(key)
        if key in self.meta and not isinstance(value, str):
            raise self._wrong(key, "a string")
        return value or ""

    def count(self, key: str, limit: int = MAX_COUNT) -> int:
        value = self.meta.get(key)
        if key not in self.meta:
            return 0
        if not _is_int(value):
            raise self._wrong(key, "an integer")
        if not 0 <= value <= limit:
            raise GGUFError(f"metadata key {key!r} is {value}, out of range (0 to {limit}): a corrupt header")
        return value

    def counts(self, key: str) -> int | list[int] | None:
        """A count, or one per layer (an array of counts); None when absent."""
        value = self.meta.get(key)
        if isinstance(value, list) and all(_is_int(v) and 0 <= v <= MAX_COUNT for v in value):
            return value
        return self.count(key) if key in self.meta else None

    def array_length(self, key: str) -> int:
        if key in self.meta and key + "#len" not in self.meta:
            raise self._wrong(key, "an array")
        return self.meta.get(key + "#len", 0)


def _per_layer(value, n_layer: int) -> list[int]:
    if isinstance(value, list):
        return value[:n_layer] + [value[-1] if value else 0] * max(0, n_layer - len(value))
    return [value or 0] * n_layer


def _swa_layers(arch: str, meta: _Meta, n_layer: int, window: int) -> list[bool]:
    """Which layers attend a sliding window only, as llama.cpp's load_swa_pattern decides (src/models/*.cpp):
    the GGUF's own pattern (a per-layer array or a period), else the architecture's period."""
    key = f"{arch}.attention.sliding_window_pattern"
    pattern = meta.meta.get(key)
    if isinstance(pattern, list) and all(isinstance(p, int) for p in pattern):
        return [bool(p) for p in pattern[:n_layer]] + [False] * max(0, n_layer - len(pattern))
    if not window:
        return []
    period, dense_first = _SWA_PERIODS.get(arch, (0, False))
    if key in meta.meta:
        period = meta.count(key)
    if not period:
        return []
    if dense_first:
        return [il % period != 0 for il in range(n_layer)]
    return [il % period < period - 1 for il in range(n_layer)]


def facts_from_headers(headers: list[GGUFHeader], filename: str = "") -> ModelFacts:
    """Summarise a model from its shards' headers (first shard first). Raises GGUFError for a key of the
    wrong type."""
    raw = headers[0].meta
    meta = _Meta(raw)
    arch = meta.text("general.architecture") or "?"
    tensors = [t for h in headers for t in h.tensors]
    n_layer = meta.count(f"{arch}.block_count", MAX_LAYERS)
    layer_bytes = [0] * n_layer
    output_bytes = 0
    for t in tensors:
        match = _LAYER.match(t.name)
        if match and int(match.group(1)) < n_layer:
            layer_bytes[int(match.group(1))] += t.nbytes
        elif t.name.startswith("output"):
            output_bytes += t.nbytes
    n_embd = meta.count(f"{arch}.embedding_length")
    heads = meta.counts(f"{arch}.attention.head_count")
    n_head = _per_layer(heads, n_layer)
    head_kv = meta.counts(f"{arch}.attention.head_count_kv")
    n_head_kv = _per_layer(head_kv if head_kv is not None else heads, n_layer)
    default_dim = n_embd // max(n_head) if n_head and max(n_head) else 0
    template = meta.text("tokenizer.chat_template")
    window = meta.count(f"{arch}.attention.sliding_window")
    ff = meta.counts(f"{arch}.feed_forward_length") or 0
    return ModelFacts(
        architecture=arch,
        name=meta.text("general.name"),
        n_params=sum(t.n_elements for t in tensors),
        quantization=_quantization(meta, tensors, filename),
        n_ctx_train=meta.count(f"{arch}.context_length"),
        has_chat_template=bool(template),
        prompt_format=next((name for marker, name in _FORMATS if marker in template), ""),
        thinking=any(marker in template for marker in _THINKING),
        weights_bytes=sum(t.nbytes for t in tensors),
        layer_bytes=layer_bytes,
        output_bytes=output_bytes,
        n_layer=n_layer,
        n_embd=n_embd,
        n_vocab=meta.array_length("tokenizer.ggml.tokens"),
        head_dim_k=meta.count(f"{arch}.attention.key_length") or default_dim,
        head_dim_v=meta.count(f"{arch}.attention.value_length") or default_dim,
        n_head=n_head,
        n_head_kv=n_head_kv,
        n_ff=max(ff, default=0) if isinstance(ff, list) else ff,
        sliding_window=window,
        swa_layers=_swa_layers(arch, meta, n_layer, window),
        recurrent=any(k.startswith(f"{arch}.ssm.") for k in raw),
    )


def _quantization(meta: _Meta, tensors, filename: str) -> str:
    """general.file_type's name; else the file name's; else the ggml type holding most bytes."""
    file_type = meta.count("general.file_type") if "general.file_type" in meta.meta else None
    if file_type in FILE_TYPES:
        return FILE_TYPES[file_type]
    named = quant_from_name(filename)
    if named:
        return named
    by_type: dict[int, int] = {}
    for t in tensors:
        by_type[t.ggml_type] = by_type.get(t.ggml_type, 0) + t.nbytes
    names = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 8: "Q8_0", 12: "Q4_K", 14: "Q6_K", 30: "BF16"}
    top = max(by_type, key=by_type.get) if by_type else None
    return names.get(top, f"ggml type {top}") if top is not None and top in GGML_TYPES else "?"
