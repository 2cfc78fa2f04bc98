"""Speculation's draft rule before and after a change, in one engine: `bench --spec`'s N = 1 workloads, greedy,
plain and auto mode with the current rule and with the previous one (`--old`: module attributes and their old
values, e.g. WEAK_MATCH_DRAFT=1000000 AUTO_PROBE=16 AUTO_PROBE_RUNS=1), runs in rotating order, wall tokens per
second; the figures are medians of the per-repetition ratios to plain
(docs/investigations/2026-11-26-speculative-verify-cost.md).

Backs docs/investigations/2026-11-26-speculative-verify-cost.md, "The verify step's cost and the draft
rule" (the draft rule's pairs).
A dated probe: it ran against the code of its date and may reach internals that have moved since.

    python scripts/probes/2026-11-26-spec-pairs.py [--reps 3] [--old WEAK_MATCH_DRAFT=1000000 AUTO_PROBE=16]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.bench.speculative import WORKLOADS, timed  # noqa: E402
from app.engine import Engine, EngineConfig, Speculation, speculation  # noqa: E402
from app.models import default_model_path  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--workloads", nargs="+", default=["copy N=1", "extract N=1", "free N=1"])
    parser.add_argument("--old", nargs="*", default=["WEAK_MATCH_DRAFT=1000000", "AUTO_PROBE=16", "AUTO_PROBE_RUNS=1"])
    parser.add_argument("--mode", default="auto")
    args = parser.parse_args()
    old = {k: int(v) for k, v in (item.split("=") for item in args.old)}
    new = {k: getattr(speculation, k) for k in old}
    with Engine(EngineConfig(model_path=default_model_path(), n_slots=8, n_threads=2)) as engine:
        for name in args.workloads:
            ratios: dict[str, list[float]] = {"new": [], "old": []}
            kinds = ["plain", "new", "old"]
            for rep in range(args.reps):
                order = kinds[rep % 3:] + kinds[:rep % 3]
                row = {}
                for kind in order:
                    for key, value in (old if kind == "old" else new).items():
                        setattr(speculation, key, value)
                    spec = None if kind == "plain" else Speculation(mode=args.mode)
                    row[kind] = timed(engine, WORKLOADS[name](spec))
                for key, value in new.items():
                    setattr(speculation, key, value)
                for kind in ("new", "old"):
                    ratios[kind].append(row[kind]["tps"] / row["plain"]["tps"])
                print(f"{name} rep {rep}: " + ", ".join(
                    f"{k} {r['tps']:.1f} t/s (decode {r['decode_tps']:.1f}, {r['accepted']}/{r['drafted']})"
                    for k, r in row.items()), flush=True)
            print(f"{name} {args.mode}: new/plain median {statistics.median(ratios['new']):.3f} "
                  f"({', '.join(f'{r:.3f}' for r in ratios['new'])}); old/plain median "
                  f"{statistics.median(ratios['old']):.3f} ({', '.join(f'{r:.3f}' for r in ratios['old'])})",
                  flush=True)


if __name__ == "__main__":
    main()
