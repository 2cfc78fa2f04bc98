"""The plain evaluation suite of `bench --eval` on Chorus only, with reproducible mode's one llama_decode a step
(`EngineConfig.one_decode`) on and off, in pairs whose order alternates: each run's wall, its ratio to the
engine's own N = slots rate (measured around it on the same engine, as `bench --eval` does) and what the engine
prefilled, reused and decoded (docs/investigations/2026-11-26-evaluation-and-window-time.md).

    python scripts/pair_eval_one_decode.py [--pairs 2] [--judged]
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app.bench import eval_suite  # noqa: E402
from app.engine import EngineConfig, limits  # noqa: E402
from app.models import default_model_path  # noqa: E402


def run(one_decode: bool, configs: dict[str, Path], threads: int) -> dict:
    eval_suite.EngineConfig = functools.partial(EngineConfig, one_decode=one_decode)
    try:
        return eval_suite._chorus(default_model_path(), threads, limits.SLOTS.default, 1024, configs)
    finally:
        eval_suite.EngineConfig = EngineConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--judged", action="store_true", help="the judged suite too")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    names = ("plain", "judged") if args.judged else ("plain",)
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        configs = {n: eval_suite.write_suite(Path(tmp) / n, default_model_path(), judged=n == "judged")
                   for n in names}
        for pair in range(args.pairs):
            order = (True, False) if pair % 2 == 0 else (False, True)
            walls = {}
            for one_decode in order:
                out = run(one_decode, configs, args.threads)
                for name in names:
                    r = out[name]
                    walls[(name, one_decode)] = r["wall_s"]
                    print(json.dumps({"pair": pair, "one_decode": one_decode, "suite": name,
                                      **{k: r[k] for k in ("wall_s", "ratio_vs_engine", "engine_tps",
                                                           "generated_tokens", "prompt_tokens",
                                                           "prompt_tokens_cached")}}), flush=True)
            for name in names:
                ratios.setdefault(name, []).append(walls[(name, True)] / walls[(name, False)])
    for name, values in ratios.items():
        print(f"{name}: wall one decode / split, median of {len(values)} pairs: {statistics.median(values):.3f} "
              f"({', '.join(f'{v:.3f}' for v in values)})")


if __name__ == "__main__":
    main()
