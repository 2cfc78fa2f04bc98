"""`bench --tools`: tool panes' throughput ÷ free text at N = 8, as pairs within one engine.

SmolLM2 has no tool template, so the model is a copy of it carrying Qwen2.5's template (llama.cpp's
models/templates, `model_files`), whose calls are Hermes-style `<tool_call>` blocks. Tool panes: 8 requests
("What is the weather in <city>?") with one get_weather function and `tool_choice` "required", greedy, so the
lazy-grammar constrained calls (app/engine/chat/grammar/tool_choice.py) and the call parser run on every
token. Free text:
the same 8 requests, tools shown but `tool_choice` "none" (the prompt is token for token the same), each with
`ignore_eos` and `max_tokens` set to the number of tokens its tool pane generated, so both runs generate the
same tokens per request. A first tool run (not timed) fixes those counts. Each repetition runs the pair back to
back, order alternating; the figure is the median of the pair ratios (pairs.py). The parser's own CPU cost per
token (tool_parse.py, no model) is reported beside it.
"""

from __future__ import annotations

from pathlib import Path

from app.bench.model_files import llama_cpp_templates, write_variant
from app.bench.pairs import figure, run_pairs
from app.bench.speculative import GREEDY, timed
from app.bench.tool_parse import parser_cost_us
from app.engine import Engine, EngineConfig, GenerationRequest

N = 8
TEMPLATE = "Qwen-Qwen2.5-7B-Instruct"  # a Hermes-style tool template llama.cpp ships
CITIES = ("Paris", "Rome", "Oslo", "Lima", "Cairo", "Delhi", "Quito", "Perth")
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                   "required": ["city", "unit"]}}}


def tool_model(model_path: Path, directory: Path) -> Path:
    """A copy of `model_path` in `directory` carrying Qwen2.5's chat template (raises if llama.cpp's templates
    are not in the cache: `make llama-source` puts them there)."""
    template = llama_cpp_templates().get(TEMPLATE)
    if template is None:
        raise RuntimeError(f"llama.cpp's {TEMPLATE} template is not in the cache: run `make llama-source` first "
                           "(or set CHORUS_LLAMA_CPP_SOURCE to a llama.cpp tree)")
    return write_variant(model_path, directory / "tool-model.gguf", template)


def requests(tools: bool, lengths: list[int] | None = None, max_tokens: int = 160) -> list[GenerationRequest]:
    """The N requests: tool panes (`tools` True), or free text with the given per-request token counts."""
    return [GenerationRequest(messages=[{"role": "user", "content": f"What is the weather in {CITIES[i]}?"}],
                              sampling=GREEDY, tools=(WEATHER,), tool_choice="required" if tools else "none",
                              tool_call_first=tools,  # the reply is the call (no text first)
                              parallel_tool_calls=False,  # one call, as in earlier runs (unset: several may follow)
                              max_tokens=lengths[i] if lengths else max_tokens, ignore_eos=lengths is not None)
            for i in range(N)]


def tools_bench(model_path: Path, directory: Path, threads: int, repetitions: int = 3, max_tokens: int = 160,
                on_run=None) -> dict:
    """The figure tool ÷ free (median of pairs) with its runs, the tokens each request generates, and the
    parser's cost per token. `on_run(label)` is called before each run (progress)."""
    variant = tool_model(model_path, directory)
    with Engine(EngineConfig(model_path=variant, n_slots=N, n_threads=threads)) as engine:
        if on_run:
            on_run("tool panes: token counts (not timed)")
        engine.clear_prompt_cache()
        first = [h.result(timeout=900) for h in [engine.submit(r) for r in requests(True, max_tokens=max_tokens)]]
        lengths = [c.generated_tokens for c in first]
        order = [("free", requests(False, lengths)), ("tool", requests(True, max_tokens=max_tokens))]
        runs = run_pairs(order, repetitions, lambda reqs: timed(engine, reqs), on_run)
        ratios = [pair["tool"]["tps"] / pair["free"]["tps"] for pair in runs]
    return {**figure(ratios), "runs": runs, "tokens_per_request": lengths,
            "calls": sum(1 for c in first if c.tool_calls),
            "first_call": dict(first[0].tool_calls[0]) if first[0].tool_calls else None,
            "parser_us_per_token": parser_cost_us()}


def format_tools(result: dict) -> str:
    parse = result["parser_us_per_token"]
    pairs = ", ".join(f"{p:.2f}" for p in result["pairs"])
    return "\n".join([
        f"Tool panes ÷ free text at N = {N}, tokens per second of wall time (median of pairs; goal ≥ 0.9):",
        f"  tool calls (required, constrained)  {result['median']:.2f}x  pairs {pairs}  "
        f"({result['calls']}/{N} replies called, {sum(result['tokens_per_request'])} tokens a run)",
        f"  call parser, no model: {parse['plain']:.1f} µs a token (plain reply), {parse['call']:.1f} µs (a call)"])
