"""The reasoning workload: N requests that think for their whole length (a reply prefix opens `<think>`, end of
generation is banned), decoded with the engine's thinking splitter on and off (`EngineConfig.reasoning_format`
"deepseek" against "none"). The two runs are back to back, their order alternating between repetitions, so the
ratio compares runs seconds apart.
"""

from __future__ import annotations

THINKING_PREFIX = "<think>\n"


def reasoning_tps(model_path, prompts: list[str], max_tokens: int, threads: int, n_ctx: int,
                  off_first: bool = False) -> dict[str, float]:
    """Steady decode t/s of the same N thinking requests with the splitter on and off."""
    from app.bench.scenarios import engine_decode_tps

    args = (model_path, prompts, max_tokens, threads, n_ctx)
    fields = {"reply_prefix": THINKING_PREFIX}
    order = ("none", "deepseek") if off_first else ("deepseek", "none")
    rates = {fmt: engine_decode_tps(*args, request_fields=fields, reasoning_format=fmt) for fmt in order}
    return {"on": rates["deepseek"], "off": rates["none"]}
