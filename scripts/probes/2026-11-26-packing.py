"""Do prompt pieces of several sequences packed into one llama_decode keep their bits? (evidence for docs/engine.md)

Backs docs/engine.md, "Reproducible outputs" (prompt pieces packed into one llama_decode), and
docs/investigations/2026-11-26-evaluation-and-window-time.md.
A dated probe: it ran against the code of its date and may reach internals that have moved since.

Two identical contexts (the engine's own LlamaContext, 8 slots) get the same prompts in every slot. Then a round of
prompt pieces, one per listed slot: in context A each piece is a llama_decode of its own (a one-token piece beside a
placeholder in a neighbouring slot, as reproducible mode did before packing), in context B all pieces go into ONE
llama_decode. Every token is an output; the logits of every piece token, and of one more decoded token per slot
afterwards (so the KV written by the round is compared too), must be bit-identical. Also prints llama.cpp's ubatch
cut (app/engine/reproducible/packing.py's model of `split_equal`) and the seconds each way.

    python scripts/probes/2026-11-26-packing.py [--model PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.engine.context import LlamaContext  # noqa: E402
from app.engine.native import LlamaModel, init_backend  # noqa: E402
from app.engine.reproducible.packing import ubatches  # noqa: E402
from app.engine.types import EngineConfig  # noqa: E402
from app.models import default_model_path  # noqa: E402

REPEAT = 5
# (name, slot -> tokens already in the slot, slot -> piece length, pad slot for a lone one-token piece in A)
SCENARIOS = [
    ("8 consecutive slots, unequal pieces 9-16", {s: 40 + 7 * s for s in range(8)},
     {0: 9, 1: 16, 2: 12, 3: 11, 4: 14, 5: 10, 6: 13, 7: 15}),
    ("non-consecutive slots 0, 2, 5, 7 (7 holds 600 tokens)", {0: 30, 2: 80, 5: 120, 7: 600},
     {0: 9, 2: 16, 5: 12, 7: 3}),
    ("a one-token piece beside a neighbour's piece", {3: 50, 4: 700}, {3: 1, 4: 10}),
    ("two 63-token pieces (126 of n_batch 128)", {0: 20, 1: 600}, {0: 63, 1: 63}),
    ("7 followers' tails beside a long prompt's piece", {s: 95 for s in range(1, 8)} | {0: 900},
     {0: 40, 1: 12, 2: 9, 3: 14, 4: 11, 5: 16, 6: 10, 7: 13}),
    ("best case: 8 equal 12-token pieces, one ubatch", {s: 95 for s in range(8)}, {s: 12 for s in range(8)}),
    ("best case: 8 equal 2-token pieces, one ubatch", {s: 95 for s in range(8)}, {s: 2 for s in range(8)}),
    ("HAZARD: 5 + 4 tokens, slot 0 holds 600: its last token is alone in a ubatch", {0: 600, 1: 40}, {0: 5, 1: 4}),
]


def tokens_for(model: LlamaModel, n: int, salt: int) -> list[int]:
    text = " ".join(f"Line {salt}.{i}: rivers, mountains and the sea." for i in range(n))
    out = model.tokenize(text, False)
    assert len(out) >= n
    return out[:n]


def decode(ctx: LlamaContext, runs, every: bool = True) -> float:
    """runs: (slot, tokens, first position); every token an output (else each run's last). Returns seconds."""
    ctx.batch.clear()
    for slot, toks, pos in sorted(runs, key=lambda r: r[0]):
        ctx.batch.add(toks, pos, slot, True, output_all=every)
    started = time.perf_counter()
    rc = ctx.decode()
    assert rc == 0, rc
    return time.perf_counter() - started


def logits_rows(ctx: LlamaContext, n: int) -> np.ndarray:
    return np.stack([ctx.output_logits(i) for i in range(n)])


def run(model: LlamaModel, config: EngineConfig, held: dict, pieces: dict) -> tuple[bool, bool, float, float]:
    ctxs = [LlamaContext(model, config) for _ in range(2)]
    try:
        for ctx in ctxs:  # the same history in both: 48-token pieces, each alone
            for slot, n in held.items():
                toks = tokens_for(model, n, slot)
                for start in range(0, n, 48):
                    decode(ctx, [(slot, toks[start:start + 48], start)])
        round_tokens = {s: tokens_for(model, n, 100 + s) for s, n in pieces.items()}
        a_rows, t_a = [], 0.0
        for slot, toks in sorted(round_tokens.items()):
            runs = [(slot, toks, held[slot])]
            pad = None
            if len(toks) == 1:
                pad = next(s for s in (slot + 1, slot - 1) if 0 <= s < config.n_slots and s not in pieces)
                runs.append((pad, toks, ctxs[0].next_position(pad)))
            t_a += decode(ctxs[0], runs)
            rows = logits_rows(ctxs[0], len(toks) + (pad is not None))
            a_rows.append(rows[:len(toks)] if pad is None or pad > slot else rows[1:])
            if pad is not None:
                ctxs[0].trim(pad, runs[1][2])
        t_b = decode(ctxs[1], [(s, toks, held[s]) for s, toks in round_tokens.items()])
        b_all = logits_rows(ctxs[1], sum(pieces.values()))
        same_round = np.array_equal(np.concatenate(a_rows), b_all)
        after = []
        for ctx in ctxs:  # one more token per slot, each alone with a neighbour: reads the round's KV
            rows = []
            for slot in sorted(pieces):
                pad = slot + 1 if slot + 1 < config.n_slots else slot - 1
                pos = held[slot] + pieces[slot]
                decode(ctx, [(slot, [42], pos), (pad, [42], ctx.next_position(pad))])
                rows.append(ctx.output_logits(0 if slot < pad else 1))
                ctx.trim(pad, ctx.next_position(pad) - 1)
            after.append(np.stack(rows))
        for ctx in ctxs:
            for slot in pieces:
                ctx.trim(slot, held[slot])
        times_a, times_b = [], []
        for _ in range(REPEAT):  # timing only: the round again, alternating, its KV dropped after each
            for ctx, times in ((ctxs[0], times_a), (ctxs[1], times_b)):
                if times is times_a:
                    times.append(sum(decode(ctx, [(s, toks, held[s])], False) for s, toks in round_tokens.items()))
                else:
                    times.append(decode(ctx, [(s, toks, held[s]) for s, toks in round_tokens.items()], False))
                for slot in pieces:
                    ctx.trim(slot, held[slot])
        if times_a:
            t_a, t_b = float(np.median(times_a)), float(np.median(times_b))
        return same_round, bool(np.array_equal(*after)), t_a, t_b
    finally:
        for ctx in ctxs:
            ctx.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5, help="timing repetitions (medians are printed)")
    args = parser.parse_args()
    global REPEAT
    REPEAT = args.repeat
    init_backend()
    model = LlamaModel(args.model or default_model_path())
    config = EngineConfig(model_path="unused", n_slots=8, n_threads=args.threads, reproducible=True)
    for name, held, pieces in SCENARIOS:
        held = {s: held.get(s, 0) for s in range(config.n_slots)}
        cut = ubatches(sorted(pieces.items()))
        same_round, same_after, t_a, t_b = run(model, config, held, pieces)
        print(f"{name}:\n  ubatches {cut}\n  piece logits identical: {same_round}; next token after: {same_after}; "
              f"{len(pieces)} decodes {1000 * t_a:.1f} ms, packed {1000 * t_b:.1f} ms (medians, last tokens only)")


if __name__ == "__main__":
    main()
