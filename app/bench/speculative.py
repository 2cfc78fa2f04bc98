"""`bench --spec`: what speculative decoding (n-gram drafts) buys, as pairs with the same engine without it.

Workloads: copy-heavy (rewrite a ~300-token passage with one change; extract fields from a document) and free
generation at N = 1, and 8 copy requests at once (N = 8), greedy, in the engine's default (reproducible) mode,
so both runs of a pair generate the same tokens. Each run clears the prompt cache first and is timed from
submission to the last completion (prefill included, which speculation does not speed up). Each repetition
runs the pair back to back, order alternating (pairs.py); a figure is the median of the pair ratios.
"""

from __future__ import annotations

import time

from app.bench.pairs import figure, reference_first
from app.engine import Engine, EngineConfig, GenerationRequest, SamplingParams, Speculation

SENTENCES = [
    "The river bends twice before it reaches the old mill at the edge of town.",
    "Every spring the orchard fills with bees and the farmers count the blossoms.",
    "A lighthouse keeper writes down the colour of the sea each morning.",
    "The library keeps maps of coastlines that have since moved inland.",
    "Glaciers carve valleys so slowly that nobody alive has seen one move.",
    "Market traders argue about the price of saffron and the weather.",
    "The baker opens before dawn, and the smell of bread fills the square.",
    "Children race paper boats along the canal after the summer storms.",
]
RECORD = ("Customer record\nName: Margaret Ellison\nDate of birth: 14 March 1961\nAddress: 27 Harbour Lane, "
          "Port Wenlow, PW3 8QT\nPhone: 01632 960 417\nAccount number: 4410-2298-7731\nPlan: Premium Family, "
          "renewed 2 February 2024\nNotes: prefers contact by letter; two outstanding invoices (INV-20931, "
          "INV-21077) for the boiler repair at the Harbour Lane address.\n")
GREEDY = SamplingParams(temperature=0.0)


def passage(start: int, sentences: int = 16) -> str:
    """About 300 tokens of prose (16 sentences), a different rotation for each `start`."""
    return " ".join(SENTENCES[(start + i) % len(SENTENCES)] for i in range(sentences))


def copy_request(start: int, spec: Speculation | None) -> GenerationRequest:
    text = (f"Rewrite the following passage exactly as it is, word for word, except that 'river' becomes "
            f"'stream':\n\n{passage(start)}")
    return GenerationRequest(messages=[{"role": "user", "content": text}], max_tokens=400, sampling=GREEDY,
                             speculative=spec)


def extract_request(spec: Speculation | None) -> GenerationRequest:
    text = (f"{RECORD * 3}\nFrom the record above, list the name, address, phone, account number, plan and the "
            "invoice numbers, one per line as 'field: value', copying each value exactly.")
    return GenerationRequest(messages=[{"role": "user", "content": text}], max_tokens=200, sampling=GREEDY,
                             speculative=spec)


def free_request(spec: Speculation | None) -> GenerationRequest:
    text = "Write a short story about a lighthouse keeper who finds a message in a bottle."
    return GenerationRequest(messages=[{"role": "user", "content": text}], max_tokens=200, sampling=GREEDY,
                             speculative=spec)


WORKLOADS = {  # name -> requests for a Speculation (or None)
    "copy N=1": lambda spec: [copy_request(0, spec)],
    "extract N=1": lambda spec: [extract_request(spec)],
    "free N=1": lambda spec: [free_request(spec)],
    "copy N=8": lambda spec: [copy_request(i, spec) for i in range(8)],
}


def timed(engine: Engine, requests: list[GenerationRequest]) -> dict:
    """One run from a cold prompt cache: generated tokens per second of wall time, and the drafts."""
    engine.clear_prompt_cache()
    engine.wait_idle(60)
    started = time.perf_counter()
    results = [h.result(timeout=900) for h in [engine.submit(r) for r in requests]]
    wall = time.perf_counter() - started
    tokens = sum(r.generated_tokens for r in results)
    decode_s = wall - min(r.ttft_s or 0.0 for r in results)  # from the first token on: what drafts can speed up
    return {"tps": tokens / wall, "tokens": tokens, "decode_tps": (tokens - len(results)) / decode_s,
            "ttft_s": min(r.ttft_s or 0.0 for r in results),
            "drafted": sum(r.drafted_tokens for r in results),
            "accepted": sum(r.accepted_tokens for r in results), "notes": sorted({r.note for r in results} - {""})}


def spec_bench(model_path, threads: int, repetitions: int = 3, on_run=None) -> dict:
    """Per workload and mode ("auto" and "on"): the pairs spec ÷ plain and the figure, with the runs' details.
    `on_run(label)` is called before each run (progress)."""
    out = {}
    with Engine(EngineConfig(model_path=model_path, n_slots=8, n_threads=threads)) as engine:
        for name, make in WORKLOADS.items():
            for mode in ("auto", "on"):
                runs, ratios, decode = [], [], []
                for rep in range(1, repetitions + 1):
                    order = [("plain", None), ("spec", Speculation(mode=mode))]
                    pair = {}
                    for kind, spec in order[::-1] if reference_first(rep) else order:
                        if on_run:
                            on_run(f"{name} {mode} rep {rep}: {kind}")
                        pair[kind] = timed(engine, make(spec))
                    ratios.append(pair["spec"]["tps"] / pair["plain"]["tps"])
                    decode.append(pair["spec"]["decode_tps"] / pair["plain"]["decode_tps"])
                    runs.append(pair)
                out[f"{name} {mode}"] = {**figure(ratios), "decode": figure(decode), "runs": runs}
    return out


def format_spec(result: dict) -> str:
    lines = ["Speculative decoding (n-gram drafts), spec ÷ plain tokens per second of wall time (median of pairs):"]
    for name, r in result.items():
        spec = r["runs"][-1]["spec"]
        rate = spec["accepted"] / spec["drafted"] if spec["drafted"] else 0.0
        lines.append(f"  {name:<18} {r['median']:.2f}x  pairs {', '.join(f'{p:.2f}' for p in r['pairs'])}  "
                     f"(decode only {r['decode']['median']:.2f}x)  "
                     f"accepted {spec['accepted']}/{spec['drafted']} ({rate:.0%}) "
                     f"of {spec['tokens']} tokens{'  ' + spec['notes'][0] if spec['notes'] else ''}")
    return "\n".join(lines)
