"""`bench --tools`, MCP part: do panes waiting on a slow MCP tool hold back the panes that decode?

Eight panes on the embedded model, N = 8 slots. Four decode a long free-text reply (greedy, `ignore_eos`, the same
tokens every run). The other four have just made a tool call, as a pane does when its reply ends with one: each
call goes to a real MCP server (app/bench/mcp_server.py, over stdio) whose tool answers after WAIT_S seconds,
and once its answer is in, the pane's next turn (a few tokens) is submitted, as auto-continue submits it. The
reference is the four decoding panes alone. Each repetition runs the pair back to back, order alternating; the
figure is the median of the pair ratios of the decoding panes' decode rate (their mean `decode_tps`), with
waiters ÷ without (pairs.py). Goal: ≥ 0.9 (a waiting pane holds no slot and no step).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from app.bench.pairs import figure, run_pairs
from app.bench.speculative import GREEDY
from app.engine import Engine, EngineConfig, GenerationRequest
from app.mcp import McpHub, ReplayStore, parse_config

N, DECODING, WAITING = 8, 4, 4
WAIT_S = 2.0
DECODE_TOKENS = 192
TOPICS = ("the sea", "a city at night", "an old library", "the mountains")
CITIES = ("Paris", "Rome", "Oslo", "Lima")


def decoding_requests() -> list[GenerationRequest]:
    return [GenerationRequest(messages=[{"role": "user", "content": f"Write a long story about {TOPICS[i]}."}],
                              sampling=GREEDY, max_tokens=DECODE_TOKENS, ignore_eos=True) for i in range(DECODING)]


def next_turn(i: int, answer: str) -> GenerationRequest:
    """A waiting pane's turn after its tool answered: the call, the result, a few tokens more."""
    call = {"id": f"call_{i}", "type": "function", "function": {"name": "wait", "arguments": '{"seconds": 2}'}}
    return GenerationRequest(messages=[{"role": "user", "content": f"Check the weather in {CITIES[i]}."},
                                       {"role": "assistant", "content": "", "tool_calls": [call]},
                                       {"role": "tool", "content": answer, "tool_call_id": f"call_{i}"}],
                             sampling=GREEDY, max_tokens=8)


def run_once(engine: Engine, store: ReplayStore | None) -> dict:
    """The decoding panes, with the waiting ones beside them when `store` is given; their mean decode rate."""
    engine.clear_prompt_cache()
    engine.wait_idle(60)
    started = time.perf_counter()
    decoding = [engine.submit(r) for r in decoding_requests()]
    followers, waits = [], []
    if store is not None:
        waits = [(i, store.call("bench", "wait", {"seconds": WAIT_S}, f"call_{i}")) for i in range(WAITING)]
    while waits:  # each waiting pane goes on as soon as its answer is in
        done = [(i, f) for i, f in waits if f.done()]
        for i, future in done:
            followers.append(engine.submit(next_turn(i, future.result().content)))
        waits = [w for w in waits if w not in done]
        time.sleep(0.01)
    results = [h.result(timeout=900) for h in decoding]
    after = [h.result(timeout=900) for h in followers]
    return {"decode_tps": sum(r.decode_tps or 0.0 for r in results) / len(results),
            "tokens": sum(r.generated_tokens for r in results), "wall_s": time.perf_counter() - started,
            "waiters_answered": len(after)}


def mcp_wait_bench(model_path: Path, threads: int, repetitions: int = 3, on_run=None) -> dict:
    """The figure (decode rate with waiters ÷ without, median of pairs) and its runs."""
    hub = McpHub(parse_config({"mcpServers": {"bench": {"command": sys.executable,
                                                        "args": ["-m", "app.bench.mcp_server"]}}}))
    try:
        (state,) = hub.start_all(timeout=120)
        if not state.running:
            raise RuntimeError(f"{state.message} {state.stderr_tail}")
        with Engine(EngineConfig(model_path=model_path, n_slots=N, n_threads=threads)) as engine:
            order = [("alone", None), ("waiters", ReplayStore(hub, live=True))]
            runs = run_pairs(order, repetitions, lambda store: run_once(engine, store), on_run)
            ratios = [pair["waiters"]["decode_tps"] / pair["alone"]["decode_tps"] for pair in runs]
    finally:
        hub.close()
    return {**figure(ratios), "runs": runs, "wait_s": WAIT_S, "decoding": DECODING, "waiting": WAITING}


def format_mcp_wait(result: dict) -> str:
    pairs = ", ".join(f"{p:.2f}" for p in result["pairs"])
    return (f"Panes waiting on an MCP tool ({result['waiting']} waiting {result['wait_s']:g} s) beside "
            f"{result['decoding']} decoding: their decode rate with ÷ without the waiters {result['median']:.2f}x  "
            f"pairs {pairs}  (goal ≥ 0.9)")
