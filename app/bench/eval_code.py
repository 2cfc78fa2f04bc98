"""`bench --eval --code`: do code checks slow an evaluation? The `bench --eval` suite (CASES test cases × 2
variants on the embedded model, no judge) run plain and with one `javascript` and one `python` assertion on every
cell, alternately on the same engine (plain, code, plain, code…: PAIRS pairs, so drift affects both alike). The
figure is plain wall ÷ code wall per pair and its median (goal ≥ 0.95: the checks cost at most 5 % of the run).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import yaml

from app.backends import LocalBackend
from app.bench.eval_suite import CASES, run_suite, write_suite
from app.engine import EngineConfig, limits
from app.evaluate.code_checks import CodeRunner
from app.models import default_model_path

PAIRS = 3
JS_CHECK = "output.length > 0 && !output.includes('```')"
PY_CHECK = "len(output.split()) >= 1"
GOAL = 0.95


def write_code_suite(folder: Path, model: Path) -> Path:
    """The plain suite with a javascript and a python assertion on every cell (defaultTest)."""
    path = write_suite(folder, model, judged=False)
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["defaultTest"] = {"assert": [{"type": "javascript", "value": JS_CHECK},
                                        {"type": "python", "value": PY_CHECK}]}
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def code_bench(threads: int, n_ctx_per_slot: int = 1024, slots: int | None = None, pairs: int = PAIRS) -> dict:
    slots = slots or limits.SLOTS.default
    model = default_model_path()
    runs: dict[str, list[dict]] = {"plain": [], "code": []}
    with tempfile.TemporaryDirectory() as tmp:
        plain = write_suite(Path(tmp) / "plain", model, judged=False)
        code = write_code_suite(Path(tmp) / "code", model)
        with LocalBackend(EngineConfig(model_path=model, n_slots=slots, n_ctx_per_slot=n_ctx_per_slot,
                                       n_threads=threads)) as backend:
            run_suite(plain, backend, slots)  # warm up: the first decodes are slow
            for _ in range(pairs):
                backend.clear_prompt_cache()
                runs["plain"].append(run_suite(plain, backend, slots))
                backend.clear_prompt_cache()
                runner = CodeRunner(code.parent)
                try:
                    started = time.perf_counter()
                    runs["code"].append(run_suite(code, backend, slots, code=runner))
                    runs["code"][-1]["with_startup_s"] = time.perf_counter() - started
                finally:
                    runner.close()
    ratios = [p["wall_s"] / c["wall_s"] for p, c in zip(runs["plain"], runs["code"], strict=True)]
    return {"runs": runs, "ratios": ratios, "ratio": statistics.median(ratios), "goal": GOAL,
            "setup": {"cases": CASES, "variants": 2, "cells": 2 * CASES, "slots": slots, "pairs": pairs,
                      "checks": {"javascript": JS_CHECK, "python": PY_CHECK}, "threads": threads}}


def format_code_bench(result: dict) -> str:
    lines = [f"Code checks: {result['setup']['cells']} cells, each with one javascript and one python assertion, "
             f"vs none; {result['setup']['pairs']} pairs on one engine"]
    for plain, code, ratio in zip(result["runs"]["plain"], result["runs"]["code"], result["ratios"], strict=True):
        lines.append(f"  plain {plain['wall_s']:.1f} s, with code checks {code['wall_s']:.1f} s "
                     f"({code['passed']} passed, {code['errors']} errors): plain ÷ code {ratio:.3f}")
    lines.append(f"median plain ÷ code {result['ratio']:.3f} (goal ≥ {GOAL})")
    return "\n".join(lines)
