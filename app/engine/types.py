"""The engine's public vocabulary: what callers submit and what comes back.

Plain dataclasses with validation at construction, so a bad value is reported where it was made (a pane's
settings, a CLI flag) instead of deep inside the engine thread.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path

from app.engine import limits
from app.engine.limits import default_threads
from app.engine.request_options import LoraAdapter, Speculation, lora_key
from app.engine.sampling_params import SamplingParams, stop_strings


class RequestState(str, enum.Enum):
    """Where a request is in its life; the UI shows these words."""

    QUEUED = "queued"
    PREFILLING = "prefilling"
    GENERATING = "generating"
    DONE = "done"
    CANCELLED = "cancelled"
    ERROR = "error"


FINISH_REASONS = ("stop", "length", "tool_calls", "cancelled", "error")  # tool_calls: the reply called tools
TOOL_CHOICES = ("auto", "none", "required")  # or the name of one function: that one must be called
# What a local run with tools says once in its pane's status (Completion.note) when its chat template has no call
# format llama.cpp parses (app/engine/chat/parse): its calls, if any, stay in the text.
TOOLS_AS_TEXT = "tool calls are shown as text: this model's chat template has no tool-call format to parse"
CUT_CALL = "the call being written when the reply was cut off was dropped (the complete calls are kept)"


class EngineStopped(RuntimeError):
    """The engine (or backend) takes no more requests: it was closed, or its thread died (the message says why)."""


def final_state(finish_reason: str) -> RequestState:
    """The state a request ends in, given why it ended."""
    return {"cancelled": RequestState.CANCELLED, "error": RequestState.ERROR}.get(finish_reason, RequestState.DONE)


@dataclass(frozen=True)
class GenerationRequest:
    """One generation: chat `messages` (rendered with the model's own template) or a raw `prompt`."""

    messages: list[dict] | None = None
    prompt: str | None = None
    sampling: SamplingParams = field(default_factory=SamplingParams)
    max_tokens: int = limits.MAX_TOKENS.default
    stop: tuple[str, ...] | list[str] = ()
    ignore_eos: bool = False  # generate exactly max_tokens (benchmarks)
    logprobs: int = 0  # report the log-probability of each generated token and this many alternatives
    grammar: str | None = None  # GBNF (root rule "root") the output must match
    json_schema: dict | None = None  # or a JSON schema it must match ({} = any JSON value)
    reply_prefix: str = ""  # text the reply starts with (a branch from a chosen token): generation continues it
    thinking: bool | None = None  # a reasoning model thinks (True) or not (False); None = llama-server's default
    chat_template_kwargs: dict = field(default_factory=dict)  # extra variables for the chat template, as llama-server's
    thinking_budget: int | None = None  # most thinking tokens; then the block is closed and the answer follows
    speculative: Speculation | None = None  # draft and verify several tokens a step (None: off); same tokens
    tools: tuple[dict, ...] = ()  # OpenAI-style function definitions the model may call (app/session/tools.py)
    tool_choice: str = "auto"  # auto, none, required, or the name of one of `tools`
    parallel_tool_calls: bool | None = None  # several calls in one reply (None: the backend's default)
    lora: tuple[LoraAdapter, ...] = ()  # LoRA adapters with their scales (none: the base model)
    # tool_choice required or a name: the reply starts with the call (no text before it, unlike llama-server,
    # whose grammar allows any text up to the first call; docs/tools.md "Constrained calls")
    tool_call_first: bool = False

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("give either messages or prompt, not both or neither")
        if self.messages is not None:
            if not self.messages or not all(isinstance(m, dict) and "role" in m and "content" in m
                                            for m in self.messages):
                raise ValueError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts")
        limits.MAX_TOKENS.check("max_tokens", self.max_tokens)
        limits.LOGPROBS.check("logprobs", self.logprobs)
        if self.grammar is not None and self.json_schema is not None:
            raise ValueError("give a grammar or a JSON schema, not both")
        if self.json_schema is not None and not isinstance(self.json_schema, dict):
            raise ValueError("json_schema must be a JSON object (a dict)")
        if self.thinking not in (None, True, False):
            raise ValueError("thinking must be True, False or None (the template's default)")
        if not isinstance(self.chat_template_kwargs, dict) or not all(
                isinstance(k, str) for k in self.chat_template_kwargs):
            raise ValueError("chat_template_kwargs must be a dict with string keys")
        if self.thinking_budget is not None:
            limits.THINKING_BUDGET.check("thinking_budget", self.thinking_budget)
            if self.grammar is not None or self.json_schema is not None:
                raise ValueError("a thinking budget cannot be combined with a grammar or JSON schema: the forced "
                                 "end of the thinking block would break the constraint")
        if self.speculative is not None and not isinstance(self.speculative, Speculation):
            raise ValueError("speculative must be a Speculation (or None)")
        object.__setattr__(self, "stop", stop_strings(self.stop))
        object.__setattr__(self, "tools", tuple(self.tools or ()))
        names = [t.get("function", {}).get("name") for t in self.tools if isinstance(t, dict)]
        if len(names) != len(self.tools):
            raise ValueError("tools must be {'type': 'function', 'function': {...}} objects")
        if self.tool_choice not in TOOL_CHOICES and self.tool_choice not in names:
            raise ValueError(f"tool_choice must be auto, none, required or the name of a tool, "
                             f"got {self.tool_choice!r}")
        if self.tools and self.messages is None:
            raise ValueError("tools need chat messages: a raw prompt has no template to show them to the model")
        object.__setattr__(self, "lora", tuple(self.lora or ()))
        if not all(isinstance(a, LoraAdapter) for a in self.lora):
            raise ValueError("lora must be a list of LoraAdapter(path, scale)")

    @property
    def lora_key(self) -> tuple[tuple[str, float], ...]:
        return lora_key(self.lora)


@dataclass(frozen=True)
class EngineConfig:
    """How the engine lays out the shared llama_context and paces its steps.

    While sequences are generating, a step carries their decode tokens first and then prompt tokens, paced so
    the step takes at most `mixed_step_factor` x a pure decode step (at least `min_prefill_per_step` tokens, so
    admission never starves). Until the engine has timed both kinds of step it uses `step_budget` tokens per
    step instead. A step with no generating sequence prefills up to `max_batch_tokens`. The defaults come
    from `python -m app bench` (docs/benchmarks.md).
    """

    model_path: str | Path
    n_slots: int = limits.SLOTS.default
    n_ctx_per_slot: int = limits.CONTEXT_PER_SLOT.default
    n_threads: int = field(default_factory=default_threads)
    n_threads_batch: int | None = None
    step_budget: int = 16
    mixed_step_factor: float = limits.PACING[limits.PACING_DEFAULT]  # a named point: limits.PACING
    min_prefill_per_step: int = 4
    max_batch_tokens: int = 128
    chat_format: str = "auto"  # how chat messages become a prompt: auto, gguf, raw or a llama.cpp built-in name
    # How tools are offered: "auto" (the template's own tool-call format, else llama.cpp's generic JSON format),
    # "template" (only the template's own) or "generic" (always the generic JSON format;
    # app/engine/chat/template/generic.py)
    tool_format: str = "auto"
    prompt_cache: bool = True  # reuse prompt KV: slots as a cache, fan-out copies, coalescing (docs/engine.md)
    # Same tokens for a request whatever else runs (docs/engine.md, "Reproducible outputs"): a prompt goes in
    # pieces of at most `prefill_chunk` (< 64) tokens, each its own llama_decode, and a lone token gets a
    # placeholder neighbour, so every token meets the same attention kernel.
    reproducible: bool = limits.REPRODUCIBLE_DEFAULT
    prefill_chunk: int = limits.PREFILL_CHUNK
    kv_type: str = limits.KV_TYPE_DEFAULT  # KV cache elements: f16, q8_0 or q4_0 (quantized V: flash attention)
    # Layers on the GPU: "auto" (as many as fit its free memory), -1 all, 0 none, N; None = llama.cpp's default
    # (all). A CPU build offloads nothing whatever this says (app/engine/devices.py).
    n_gpu_layers: int | str | None = limits.GPU_LAYERS_DEFAULT
    # How a reasoning model's thinking is reported: "deepseek" splits `<think>…</think>` from the answer
    # (Completion.reasoning_text), "none" leaves it in the text (llama-server's --reasoning-format).
    reasoning_format: str = limits.REASONING_FORMAT_DEFAULT
    # The vision projector (an mmproj GGUF) paired with the model: with it, chat messages may carry image parts
    # (docs/images.md); None = a text-only model, which refuses images.
    mmproj: str | None = None
    # The draft model of requests with speculative kind "draft" that name none
    # (app/engine/speculative/draft_model.py): a small GGUF sharing the model's vocabulary, loaded on first use;
    # None = such requests must name their own.
    draft_model: str | Path | None = None
    # Reproducible mode: prompt pieces of several sequences share one llama_decode where llama.cpp's ubatch cut
    # keeps every token on the per-row kernel and saves a pass (app/engine/reproducible/packing.py); off: each
    # piece alone.
    pack_pieces: bool = True
    # Reproducible mode where a token's bits do not depend on its ubatch at all (the context runs ggml's per-row
    # kernels, every layer matrix is row-invariant, no LoRA in the step: reproducible/row_kernels.py): each step's
    # decode tokens, drafts and prompt tokens of every sequence go into ONE llama_decode, as in the default mode; off
    # (or where that does not hold): separate decodes and pieces as above (docs/engine.md, "One decode a step").
    one_decode: bool = True
    # An image piece beside generating sequences takes at most this x their decode step (vision/step.py), and so
    # does the text of a prompt with images (scheduler.py): below
    # `mixed_step_factor`, so a step slowed by another process's burst (up to ~1 decode step on a shared
    # 2-core host) still keeps the streams' gap within 3x steady (docs/benchmarks.md, "Images").
    image_step_factor: float = 2.0

    def __post_init__(self) -> None:
        limits.SLOTS.check("n_slots", self.n_slots)
        limits.CONTEXT_PER_SLOT.check("n_ctx_per_slot", self.n_ctx_per_slot)
        limits.THREADS.check("n_threads", self.n_threads)
        if self.reasoning_format not in limits.REASONING_FORMATS:
            raise ValueError(f"reasoning_format must be one of {', '.join(limits.REASONING_FORMATS)}, "
                             f"got {self.reasoning_format!r}")
        if self.kv_type not in limits.KV_TYPES:
            raise ValueError(f"kv_type must be one of {', '.join(limits.KV_TYPES)}, got {self.kv_type!r}")
        layers = self.n_gpu_layers
        if layers is not None and layers != limits.GPU_LAYERS_AUTO:
            if isinstance(layers, bool) or not isinstance(layers, int):
                raise ValueError(f"n_gpu_layers must be 'auto', None or a number of layers, got {layers!r}")
            limits.GPU_LAYERS.check("n_gpu_layers", layers)
        checks = [
            (self.step_budget >= 1, f"step_budget must be >= 1, got {self.step_budget}"),
            (self.min_prefill_per_step >= 1, f"min_prefill_per_step must be >= 1, got {self.min_prefill_per_step}"),
            (self.mixed_step_factor > 1.0, f"mixed_step_factor must be > 1, got {self.mixed_step_factor}"),
            (self.image_step_factor > 1.0, f"image_step_factor must be > 1, got {self.image_step_factor}"),
            (self.max_batch_tokens >= 8, f"max_batch_tokens must be >= 8, got {self.max_batch_tokens}"),
            (1 <= self.prefill_chunk <= 63,
             f"prefill_chunk must be in [1, 63] (below ggml's 64-token attention tile), got {self.prefill_chunk}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    @property
    def batch_capacity(self) -> int:
        """llama_n_batch: big enough for every slot's decode token plus the guaranteed prefill share, and with a
        projector for an image that must go into one decode whole (non-causal: Gemma 3's 256 rows)."""
        vision = limits.VISION_BATCH if self.mmproj else 0
        return max(self.max_batch_tokens, self.step_budget, self.n_slots + self.min_prefill_per_step, vision)


@dataclass(frozen=True)
class Completion:
    """How a request ended. Timings are seconds; decode_tps is this request's own generation rate."""

    request_id: int
    text: str
    token_ids: list[int]
    finish_reason: str
    error: str | None
    prompt_tokens: int
    generated_tokens: int
    queue_wait_s: float | None
    ttft_s: float | None
    decode_tps: float | None
    error_kind: str | None = None  # "context" (prompt too long for a slot), "prompt", "decode", "adapter", "internal"
    cached_tokens: int = 0  # prompt tokens not prefilled: their KV came from the prompt cache or another slot
    token_logprobs: list | None = None  # one TokenLogprob per generated token when the request asked for them
    note: str = ""  # settings the backend could not apply (a server that ignores some), for the user
    unapplied: tuple[str, ...] = ()  # their keys ("top_k", "grammar", "json_schema"...; server_params.in_use)
    reasoning_text: str = ""  # a reasoning model's thinking, apart from the answer (`text` is the answer)
    reasoning_tokens: int = 0  # generated tokens that were thinking (the <think> tags included)
    answer_ttft_s: float | None = None  # submit -> first text of the answer, after any thinking
    drafted_tokens: int = 0  # speculative decoding: tokens drafted and verified for this request
    accepted_tokens: int = 0  # of those, the ones that became output (each saved a step)
    tool_calls: tuple[dict, ...] = ()  # the reply's calls, each {id, name, arguments (a JSON string)}


@dataclass(frozen=True)
class StepEvent:
    """Everything one engine step changed: text per request, new states, and the requests that ended.

    `tokens` is the running count of generated tokens for each request that produced one this step."""

    step: int
    deltas: dict[int, str]
    states: dict[int, RequestState]
    finished: list[Completion]
    tokens: dict[int, int] = field(default_factory=dict)
    time: float = 0.0  # time.perf_counter() when the step ended (the clock of RequestHandle.t_submit)
    logprobs: dict[int, list] = field(default_factory=dict)  # new TokenLogprob entries per request (if asked)
    reasoning: dict[int, str] = field(default_factory=dict)  # thinking text per request (`deltas` is the answer)
    since: dict[int, dict] = field(default_factory=dict)  # per request: each state it entered this step -> when
    tool_calls: dict[int, tuple] = field(default_factory=dict)  # per request whose calls grew: all its calls so far


@dataclass(frozen=True)
class StatsSnapshot:
    """What a backend is doing and has done (docs/engine.md, "Statistics", defines every figure).

    Two kinds of rate, each with one meaning for every backend: `decode_tps` / `prefill_tps` are means since
    the last reset over the time spent on that work (the engine: llama_decode time; a server: time with a reply
    streaming), `recent_decode_tps` / `recent_prefill_tps` are tokens in the trailing `limits.RATE_WINDOW_S` of
    wall clock per second (app/engine/rates.py), what a live plot shows. None = not measured."""

    n_slots: int
    active: int
    queued: int
    decode_tps: float | None
    prefill_tps: float | None
    avg_concurrent: float | None
    steps: int
    decode_tokens: int
    decode_time_s: float
    prefill_tokens: int
    prefill_time_s: float
    prompt_tokens_total: int
    generated_tokens_total: int
    completed: int
    slot_context_used: list[int]
    n_ctx_per_slot: int
    prompt_tokens_cached: int = 0  # prompt tokens reused instead of prefilled (cache, fan-out, coalescing)
    coalesced: int = 0  # requests served by another identical request's decode
    server: dict | None = None  # a remote backend's own figures from its /metrics (None: not a server)
    reproducible: bool | None = None  # outputs repeat whatever else runs (None: unknown, e.g. a server)
    gpu_layers: int = 0  # layers on a GPU (-1 all): the reproducible guarantee was measured on CPU kernels only
    recent_decode_tps: float | None = None  # generated tokens in the trailing window of wall clock, per second
    recent_prefill_tps: float | None = None  # prompt tokens prefilled in that window, per second (None: unknown)
    slots_busy: int | None = None  # slots holding a request now (coalesced followers hold none); None: unknown
    prefilling: int | None = None  # of `active`, requests whose prompt is being decoded; None: unknown
    generating: int | None = None  # of `active`, requests decoding their reply; None: unknown
    recent_avg_concurrent: float | None = None  # decode tokens per decode step in the trailing window (None: none)
    drafted_tokens: int = 0  # speculative decoding since the last reset: tokens drafted and verified
    accepted_tokens: int = 0  # of those, the ones that became output
    # the last verified drafting runs, oldest first, as (drafted, accepted): how the draft length adapts
    recent_draft_runs: tuple[tuple[int, int], ...] = ()
    images_encoded: int = 0  # images the vision projector encoded since the last reset
    images_reused: int = 0  # images in prompts that were not encoded again (a kept encoding, cached or copied KV)
    clips_encoded: int = 0  # audio windows (up to 30 s of a clip each) the audio projector encoded since the last reset
    clips_reused: int = 0  # audio windows in prompts that were not encoded again
    image_rows_prefilled: int = 0  # image embeddings decoded into a slot's KV (not copied from another slot's)
    clip_rows_prefilled: int = 0  # audio windows' embeddings decoded so: 8 panes on one clip prefill its rows once
    packed_pieces: int = 0  # reproducible mode: prompt pieces that shared a llama_decode with other sequences' pieces
    packed_decodes: int = 0  # the llama_decodes those pieces went into
    placeholders: int = 0  # reproducible mode: placeholder tokens decoded beside a lone token (reproducible/step.py)
    decodes: int = 0  # llama_decode calls (a step is one, or several in reproducible mode's split steps)

    @property
    def cache_hit_rate(self) -> float | None:
        """Share of all prompt tokens that were reused instead of prefilled (None before any prompt)."""
        total = self.prompt_tokens_cached + self.prompt_tokens_total
        return self.prompt_tokens_cached / total if total else None
