"""`bench --tools`, MCP part: do panes waiting on a slow MCP tool hold back the panes that decode?

Eight panes on the embedded model, N = 8 slots. Four decode a long free-text reply (greedy, `ignore_eos`, the same
tokens every run). The other four have just made a tool call, as a pane does when its reply ends with one: each
call goes to a real MCP server (app/bench/mcp_server.py, over stdio) whose tool answers after WAIT_S seconds,
and once its answer is in, the pane's next turn (a few tokens) is submitted, as auto-continue submits it. The
reference is the four decoding panes alone. Each repetition runs the pair back to back, order alternating; the
figure is the median of the pair ratios of the decoding panes' decode rate with waiters ÷ without (pairs.py),
taken over the wait: from the moment every decoding pane has its first token until WAIT_S after the start, when
no answer can be in yet (the same window in both runs). Goal: ≥ 0.9 (a waiting pane holds no slot and no step).
Beside it, the rate over the whole reply (their mean `decode_tps`), which also pays for the waiters' next turns
once their answers are in: their prompts' prefill and a wider batch for a few steps, work of the waiters' own.
"""

from __future__ import annotations

import sys
import threading
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


def _stamp(handle, times: list[float]) -> None:
    """When each of a handle's text deltas arrived (one a token, but for the few a stop string holds back)."""
    for _ in handle.stream(timeout=900):
        times.append(time.perf_counter())


def rate_during_wait(stamps: list[list[float]], started: float) -> float | None:
    """The decoding panes' mean tokens per second from the moment all have their first token until WAIT_S after
    `started`; None when that window is empty."""
    if not all(stamps):
        return None
    begin, end = max(times[0] for times in stamps), started + WAIT_S
    if end <= begin:
        return None
    return sum(sum(begin < t <= end for t in times) for times in stamps) / len(stamps) / (end - begin)


def run_once(engine: Engine, store: ReplayStore | None) -> dict:
    """The decoding panes, with the waiting ones beside them when `store` is given; their mean decode rate,
    during the wait and over the whole reply."""
    engine.clear_prompt_cache()
    engine.wait_idle(60)
    started = time.perf_counter()
    decoding = [engine.submit(r) for r in decoding_requests()]
    stamps: list[list[float]] = [[] for _ in decoding]
    readers = [threading.Thread(target=_stamp, args=(h, times), daemon=True)
               for h, times in zip(decoding, stamps, strict=True)]
    for reader in readers:
        reader.start()
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
    for reader in readers:
        reader.join(timeout=60)
    return {"decode_tps": sum(r.decode_tps or 0.0 for r in results) / len(results),
            "waiting_tps": rate_during_wait(stamps, started), "stamped": sum(map(len, stamps)),
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
    finally:
        hub.close()
    during = [p["waiters"]["waiting_tps"] / p["alone"]["waiting_tps"] for p in runs
              if p["waiters"]["waiting_tps"] and p["alone"]["waiting_tps"]]
    whole = [p["waiters"]["decode_tps"] / p["alone"]["decode_tps"] for p in runs]
    measured = figure(during) if during else {"median": None, "pairs": [], "pairs_for_5pct": None}
    return {**measured, "whole_reply": figure(whole), "runs": runs, "wait_s": WAIT_S, "decoding": DECODING,
            "waiting": WAITING}


def format_mcp_wait(result: dict) -> str:
    def pairs(fig: dict) -> str:
        return ", ".join(f"{p:.2f}" for p in fig["pairs"])
    whole = result["whole_reply"]
    during = (f"{result['median']:.2f}x  pairs {pairs(result)}  (goal ≥ 0.9)" if result["pairs"]
              else "not measured (no token arrived within the wait)")
    return (f"Panes waiting on an MCP tool ({result['waiting']} waiting {result['wait_s']:g} s) beside "
            f"{result['decoding']} decoding: their decode rate with ÷ without the waiters, during the wait "
            f"{during}; over the whole reply, with the waiters' next turns {whole['median']:.2f}x  "
            f"pairs {pairs(whole)}")
