"""Replay greedy traces through a draft policy with measured step costs: what a draft-length rule would buy on
`bench --spec`'s workloads without running the model again.

Backs docs/investigations/2026-11-26-speculative-verify-cost.md, "The verify step's cost and the draft
rule" (the replayed traces).
A dated probe: it ran against the code of its date and may reach internals that have moved since.

`--capture FILE` (loads the model) runs the copy, extract and free requests greedily
on the engine and saves each request's prompt tokens, output tokens and the vocabulary's pieces. `--replay FILE`
(no model) replays each trace step by step through `SpecState` (speculation.py) as the engine would: a step
decodes the pending token and the draft, keeps the draft's longest prefix the trace agrees with, and costs
`base + row * len(draft)` ms (`--base`, `--row`: a one-token step and a drafted row,
scripts/probes/2026-11-26-spec-verify.py).
Prints decode-time ratios plain ÷ spec per workload and mode.

    python scripts/probes/2026-11-26-spec-policy.py --capture /tmp/spec-traces.json
    python scripts/probes/2026-11-26-spec-policy.py --replay /tmp/spec-traces.json [--base 10] [--row 5]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.engine.request_options import Speculation  # noqa: E402
from app.engine.speculative.drafts import DraftVocab, SpecState  # noqa: E402

PREFILL_CHUNK = 48


def capture(path: str) -> None:
    from app.bench.speculative import copy_request, extract_request, free_request
    from app.engine import Engine, EngineConfig
    from app.engine.speculative import drafts as speculation
    from app.models import default_model_path

    prompts = []
    original = speculation.SpecState.__init__

    def init(self, settings, prompt, vocab=None):
        prompts.append([int(t) for t in prompt])
        original(self, settings, prompt, vocab)

    speculation.SpecState.__init__ = init
    traces = {}
    with Engine(EngineConfig(model_path=default_model_path(), n_slots=8, n_threads=2)) as engine:
        makes = {"copy": functools.partial(copy_request, 0), "extract": extract_request, "free": free_request}
        makes.update({f"copy{i}": functools.partial(copy_request, i) for i in range(1, 8)})
        for name, make in makes.items():
            prompts.clear()
            result = engine.submit(make(Speculation(mode="on"))).result(600)
            traces[name] = {"prompt": prompts[0], "output": list(result.token_ids), "max_tokens": make(None).max_tokens,
                            "finish": result.finish_reason}
            print(name, len(prompts[0]), "prompt tokens,", len(result.token_ids), "output", result.finish_reason,
                  flush=True)
        pieces = [engine._model.piece_text(t) for t in range(engine._model.n_vocab)]
    speculation.SpecState.__init__ = original
    Path(path).write_text(json.dumps({"pieces": pieces, "traces": traces}))


class CostState(SpecState):
    """Candidate policy: per match length, the conditional acceptance p (accepted ÷ accepted + rejections, with a
    prior, decayed); the length maximising expected tokens per time (1 + p + .. + p^k) ÷ (1 + c k)."""

    PRIOR = (3.0, 1.0)
    DECAY = 0.9
    COST = 0.5
    MIN_N = 2

    def __init__(self, settings, prompt, vocab=None):
        super().__init__(settings, prompt, vocab)
        self.odds = {n: list(self.PRIOR) for n in range(2, 5)}
        self._last_n = 0

    def draft(self, generated, limit, batched):
        if not self.active or limit <= 0:
            return []
        self.sync(generated)
        draft, n = self.drafter.match(min(limit, self.settings.max_draft))
        if n < self.MIN_N:
            return []
        a, r = self.odds[n]
        k = best_length(a / (a + r), len(draft), self.COST)
        if self.settings.mode == "on":
            k = max(k, min(2, len(draft)))
        self._last_n = n
        return draft[:k]

    def record(self, drafted, accepted):
        super().record(drafted, accepted)
        if drafted and self._last_n:
            odds = self.odds[self._last_n]
            odds[0] = odds[0] * self.DECAY ** drafted + accepted
            odds[1] = odds[1] * self.DECAY ** drafted + (accepted < drafted)

    def review(self):
        pass


def best_length(p: float, limit: int, cost: float) -> int:
    best, best_rate, expected, q = 0, 1.0, 0.0, 1.0
    for k in range(1, limit + 1):
        q *= p
        expected += q
        rate = (1 + expected) / (1 + cost * k)
        if rate > best_rate:
            best, best_rate = k, rate
    return best


POLICIES = {"current": SpecState, "cost": CostState}


def replay_one(trace: dict, vocab: DraftVocab, mode: str, base: float, row: float, policy=SpecState) -> dict:
    output, max_tokens = trace["output"], trace["max_tokens"]
    state = policy(Speculation(mode=mode), trace["prompt"], vocab)
    i, spent, steps, drafted, accepted = 0, 0.0, 0, 0, 0
    ended = trace["finish"] == "stop"  # the last step samples the end-of-generation token
    while i < len(output) - (0 if ended else 1):
        generated = output[:i + 1]
        limit = min(max_tokens - len(generated) - 1, PREFILL_CHUNK - 1)
        draft = state.draft(generated, limit, batched=1) if limit > 0 else []
        hit = 0
        while hit < len(draft) and i + 1 + hit < len(output) and draft[hit] == output[i + 1 + hit]:
            hit += 1
        state.record(len(draft), hit)
        state.review()
        spent += base + row * len(draft)
        steps += 1
        drafted, accepted = drafted + len(draft), accepted + hit
        i += 1 + hit
    plain = base * (len(output) - (0 if ended else 1))
    return {"speedup": plain / spent, "steps": steps, "drafted": drafted, "accepted": accepted,
            "tokens": len(output)}


def replay(path: str, base: float, row: float, policies: list[str]) -> None:
    data = json.loads(Path(path).read_text())
    vocab = DraftVocab(data["pieces"])
    for name, trace in data["traces"].items():
        for mode in ("auto", "on"):
            for policy in policies:
                r = replay_one(trace, vocab, mode, base, row, POLICIES[policy])
                print(f"{name:8} {mode:4} {policy:8}: decode spec/plain {r['speedup']:.3f}  steps {r['steps']:3}  "
                      f"accepted {r['accepted']}/{r['drafted']} of {r['tokens']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--capture")
    parser.add_argument("--replay")
    parser.add_argument("--base", type=float, default=10.0)
    parser.add_argument("--row", type=float, default=5.0)
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    args = parser.parse_args()
    if args.capture:
        capture(args.capture)
    if args.replay:
        replay(args.replay, args.base, args.row, args.policies)



class LineStartState(SpecState):
    """Candidate: a draft that starts a line (the history's last token ends one) is cut to LINE_START tokens."""

    LINE_START = 2

    def draft(self, generated, limit, batched):
        draft = super().draft(generated, limit, batched)
        vocab = self.drafter._vocab
        if draft and vocab is not None and vocab.line_ends[self.drafter.tokens[-1]]:
            return draft[:self.LINE_START]
        return draft


def _variant(base, name, **attrs):
    cls = type(name, (base,), attrs)
    POLICIES[name] = cls
    return cls


for _k in (0, 1, 2, 4):
    _variant(LineStartState, f"line{_k}", LINE_START=_k)



class WeakCapState(SpecState):
    """Candidate: a draft from a short match (n <= WEAK_N) is cut to WEAK_CAP tokens."""

    WEAK_N = 2
    WEAK_CAP = 4

    def draft(self, generated, limit, batched):
        if not self.active or limit <= 0:
            return []
        if self.settings.mode == "auto" and batched > 2:
            return []
        self.sync(generated)
        draft, n = self.drafter.match(min(limit, self.length))
        return draft[:self.WEAK_CAP] if n <= self.WEAK_N else draft


for _n in (2, 3):
    for _cap in (1, 2, 3, 4, 6, 8):
        _variant(WeakCapState, f"weak{_n}cap{_cap}", WEAK_N=_n, WEAK_CAP=_cap)


if __name__ == "__main__":
    main()
