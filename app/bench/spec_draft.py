"""`bench --spec`, the draft-model row: speculative decoding with a draft model (kind "draft") as pairs with the same
engine without it, on the copy and free workloads of speculative.py at N = 1, greedy, reproducible mode.

The draft model is the target itself (SmolLM2-135M drafting for SmolLM2-135M): the only model at hand that shares
its vocabulary. It shows the mechanism (drafts batched, verified, nearly all accepted) and its overhead, not the
speed-up a draft model several times smaller than its target gives: here a draft token costs about what the target
token it may save costs, so the figure is expected below 1. The result names both files.
"""

from __future__ import annotations

from app.bench.pairs import figure, reference_first
from app.bench.speculative import copy_request, free_request, timed
from app.engine import Engine, EngineConfig, Speculation

WORKLOADS = {"copy N=1": lambda spec: [copy_request(0, spec)], "free N=1": lambda spec: [free_request(spec)]}


def draft_bench(model_path, threads: int, repetitions: int = 3, on_run=None, draft_model=None) -> dict:
    """Per workload: the pairs (draft-model spec ÷ plain) and the figure, with the runs' details and the files."""
    draft_model = str(draft_model or model_path)
    spec = Speculation(mode="on", kind="draft", draft_model=draft_model)
    out = {"target": str(model_path), "draft_model": draft_model, "workloads": {}}
    with Engine(EngineConfig(model_path=model_path, n_slots=8, n_threads=threads)) as engine:
        engine.submit(copy_request(1, spec)).result(900)  # loads the draft model outside the timed runs
        for name, make in WORKLOADS.items():
            runs, ratios = [], []
            for rep in range(1, repetitions + 1):
                order = [("plain", None), ("spec", spec)]
                pair = {}
                for kind, settings in order[::-1] if reference_first(rep) else order:
                    if on_run:
                        on_run(f"draft model {name} rep {rep}: {kind}")
                    pair[kind] = timed(engine, make(settings))
                ratios.append(pair["spec"]["tps"] / pair["plain"]["tps"])
                runs.append(pair)
            out["workloads"][name] = {**figure(ratios), "runs": runs}
    return out


def format_draft(result: dict) -> str:
    same = result["draft_model"] == result["target"]
    lines = ["Speculative decoding with a draft model"
             + (" (the target drafting for itself: same vocabulary; a smaller draft would be faster)" if same
                else f" ({result['draft_model']})") + ", spec ÷ plain tokens per second of wall time:"]
    for name, r in result["workloads"].items():
        spec = r["runs"][-1]["spec"]
        rate = spec["accepted"] / spec["drafted"] if spec["drafted"] else 0.0
        lines.append(f"  {name:<18} {r['median']:.2f}x  pairs {', '.join(f'{p:.2f}' for p in r['pairs'])}  "
                     f"accepted {spec['accepted']}/{spec['drafted']} ({rate:.0%}) of {spec['tokens']} tokens")
    return "\n".join(lines)
