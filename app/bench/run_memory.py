"""`bench --run-memory`: `python -m app run` over 10,000 requests against 100, the peak resident memory of each.

Each size is a JSONL of distinct short raw prompts (no two coalesce), `max_tokens` 1, run by `python -m app run
IN --out OUT` in a process of its own on the embedded model; the peak is that process's own maximum resident set
(`os.wait4`'s rusage, the kernel's high-water mark, so no sampling can miss a spike). `run` reads its input
lazily and submits at most a window of requests ahead of the free slots (app/cli/run.py), writing each result as
it ends, so the large run should peak where the small one does: the figure is large ÷ small (goal < 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (100, 10_000)
QUICK_SIZES = (100, 2_000)


def write_requests(path: Path, count: int) -> None:
    """`count` JSONL lines, each a different few-token prompt that generates one token."""
    with path.open("w", encoding="utf-8") as f:
        for i in range(count):
            f.write(json.dumps({"id": f"r{i}", "prompt": f"Item {i}: the number {i * 7919 % 100_003} is",
                                "max_tokens": 1, "sampling": {"temperature": 0}}) + "\n")


def peak_rss_of_run(directory: Path, count: int, slots: int) -> dict:
    """One `run` of `count` requests in a child process: its peak RSS (MB), wall seconds, lines written."""
    source, out = directory / f"in-{count}.jsonl", directory / f"out-{count}.jsonl"
    write_requests(source, count)
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "app", "run", str(source), "--out", str(out),
                              "--slots", str(slots)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    errors = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if child.returncode != 0:
        raise RuntimeError(f"run of {count} requests exited {child.returncode}: {errors[-400:]}")
    with out.open(encoding="utf-8") as f:
        lines = sum(1 for _ in f)
    return {"requests": count, "peak_rss_mb": usage.ru_maxrss / 1024, "wall_s": wall, "lines": lines}


def run_memory_bench(quick: bool = False, slots: int = 8, on_run=None) -> dict:
    """Both sizes, small first; `on_run(label)` before each."""
    small, large = QUICK_SIZES if quick else SIZES
    runs = {}
    with tempfile.TemporaryDirectory(prefix="chorus-run-memory-") as directory:
        for count in (small, large):
            if on_run:
                on_run(f"run of {count:,} requests")
            runs[str(count)] = peak_rss_of_run(Path(directory), count, slots)
    ratio = runs[str(large)]["peak_rss_mb"] / runs[str(small)]["peak_rss_mb"]
    return {"slots": slots, "runs": runs, "peak_rss_large_vs_small": ratio, "goal": 2.0}


def format_run_memory(result: dict) -> str:
    runs = list(result["runs"].values())
    small, large = runs[0], runs[-1]
    verdict = "met" if result["peak_rss_large_vs_small"] < result["goal"] else "missed"
    return (f"`run` peak RSS: {large['requests']:,} requests {large['peak_rss_mb']:.0f} MB "
            f"({large['wall_s']:.0f} s, {large['lines']:,} lines) ÷ {small['requests']:,} requests "
            f"{small['peak_rss_mb']:.0f} MB ({small['wall_s']:.0f} s) = {result['peak_rss_large_vs_small']:.2f} "
            f"(goal < {result['goal']:g}: {verdict})")


def run_memory_command(args) -> int:
    """`bench --run-memory [--quick] [--json PATH]`."""
    from app.bench.table import write_json

    result = {"run_memory": run_memory_bench(quick=args.quick,
                                             on_run=lambda label: print(f"  {label}", file=sys.stderr, flush=True))}
    print(format_run_memory(result["run_memory"]))
    if args.json:
        write_json(args.json, result)
    return 0
