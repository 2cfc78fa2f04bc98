"""What ggml's per-row CPU kernels (`use_ref`, app/engine/reproducible/row_kernels.py) cost, and what one
llama_decode a step saves in reproducible mode (docs/engine.md, "One decode a step").

Backs docs/engine.md, "Reproducible outputs" ("One decode a step"), and
docs/investigations/2026-11-26-evaluation-and-window-time.md.
A dated probe: it ran against the code of its date and may reach internals that have moved since.

Contexts like the engine's (n slots, kv_unified off, flash attention on, n_batch = n_ubatch = 128), one with
ggml's default kernels and one with `use_ref`, measured in pairs whose order alternates:
- steady decode at N = 1, 4, 8: N streams on `--prompt`-token prompts, `--steps` steps of one token each;
- a 1,500-token prefill, in 128-token chunks (one stream, nothing else running);
- a mixed step on the `use_ref` context: 7 of 8 slots decoding at ~`--prompt` cells and a `--piece`-token prompt
  piece in slot 3, as one llama_decode vs the split path's two (decode tokens, then the piece).

    python scripts/probes/2026-11-26-use-ref-cost.py [--pairs 3] [--prompt 500] [--steps 48] [--piece 16]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

import llama_cpp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.engine.context import TokenBatch  # noqa: E402
from app.engine.native import LlamaModel, init_backend  # noqa: E402
from app.models import default_model_path  # noqa: E402

# the lone-token probe's helpers: same folder, loaded by path (a dated file name is not a module name)
_spec = importlib.util.spec_from_file_location("lone_token", Path(__file__).with_name("2026-11-26-lone-token.py"))
lone_token = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lone_token)
decode, make_context = lone_token.decode, lone_token.make_context

SLOTS, CELLS = 8, 2048


def clear(ctx) -> None:
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)


def prefill(ctx, batch, slot: int, tokens: list[int], chunk: int = 128) -> float:
    spent = 0.0
    for start in range(0, len(tokens), chunk):
        piece = tokens[start:start + chunk]
        spent += decode(ctx, batch, [(piece, start, slot, start + chunk >= len(tokens))])
    return spent


def fill(ctx, batch, prompt: list[int]) -> None:
    """Every slot holds `prompt` (slots 0..N-1 are the streams of `steady`)."""
    clear(ctx)
    for slot in range(SLOTS):
        prefill(ctx, batch, slot, prompt)


def steady(ctx, batch, n: int, prompt: list[int], steps: int) -> float:
    """Decode tokens per second of N streams after their prompts (token ids fixed: the cost, not the text);
    their decoded tokens are trimmed after, so the slots hold `prompt` again."""
    spent = 0.0
    for step in range(steps):
        spent += decode(ctx, batch, [([prompt[step % 50]], len(prompt) + step, slot, True) for slot in range(n)])
    mem = llama_cpp.llama_get_memory(ctx)
    for slot in range(n):
        llama_cpp.llama_memory_seq_rm(mem, slot, len(prompt), -1)
    return n * steps / spent


def mixed(ctx, batch, prompt: list[int], piece: int) -> tuple[float, float]:
    """Seconds of a step of 7 decode tokens (slots 0-2, 4-7) and a `piece`-token prompt piece in slot 3: one
    llama_decode, and split (the decode tokens, then the piece); medians of 9."""
    mem = llama_cpp.llama_get_memory(ctx)

    def reset() -> None:  # slot 3 holds the piece's 16-token prefix, the others `prompt`
        for slot in range(SLOTS):
            llama_cpp.llama_memory_seq_rm(mem, slot, 16 if slot == 3 else len(prompt), -1)

    reset()
    one, split = [], []
    for i in range(9):
        decoders = [([prompt[i]], len(prompt), slot, True) for slot in range(SLOTS) if slot != 3]
        run = (prompt[16:16 + piece], 16, 3, False)
        for way in ("one", "split") if i % 2 else ("split", "one"):
            if way == "one":
                one.append(decode(ctx, batch, decoders + [run]))
            else:
                split.append(decode(ctx, batch, decoders) + decode(ctx, batch, [run]))
            reset()
    llama_cpp.llama_memory_seq_rm(mem, 3, 0, -1)
    prefill(ctx, batch, 3, prompt)  # slot 3 holds `prompt` again
    return statistics.median(one), statistics.median(split)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--prompt", type=int, default=500)
    parser.add_argument("--steps", type=int, default=48)
    parser.add_argument("--piece", type=int, default=16)
    args = parser.parse_args()
    init_backend()
    model = LlamaModel(default_model_path())
    text = "The river bends twice before it reaches the old mill at the edge of town. " * 200
    tokens = model.tokenize(text, add_special=True)
    prompt, long = tokens[:args.prompt], tokens[:1500]
    contexts = {ref: make_context(model, "on", ref, slots=SLOTS, cells=CELLS) for ref in (False, True)}
    batch = TokenBatch(128)
    for ctx in contexts.values():
        fill(ctx, batch, prompt)
    ratios: dict[str, list[float]] = {}
    for pair in range(args.pairs):
        order = [False, True] if pair % 2 == 0 else [True, False]
        row = {}
        for use_ref in order:
            ctx = contexts[use_ref]
            for n in (1, 4, 8):
                row[(f"N={n} t/s", use_ref)] = steady(ctx, batch, n, prompt, args.steps)
            mem = llama_cpp.llama_get_memory(ctx)
            llama_cpp.llama_memory_seq_rm(mem, SLOTS - 1, 0, -1)
            row[("prefill 1500 t/s", use_ref)] = 1500 / prefill(ctx, batch, SLOTS - 1, long)
            llama_cpp.llama_memory_seq_rm(mem, SLOTS - 1, 0, -1)
            prefill(ctx, batch, SLOTS - 1, prompt)
        for name in dict.fromkeys(k for k, _ in row):
            ref, default = row[(name, True)], row[(name, False)]
            ratios.setdefault(name, []).append(ref / default)
            print(f"pair {pair} {name}: default {default:.3f}, use_ref {ref:.3f}, use_ref/default {ref / default:.3f}",
                  flush=True)
        one, split = mixed(contexts[True], batch, prompt, args.piece)
        ratios.setdefault("mixed one/split", []).append(one / split)
        print(f"pair {pair} mixed step (use_ref, 7 decoding + {args.piece}-token piece): one decode {one * 1e3:.1f} ms,"
              f" split {split * 1e3:.1f} ms", flush=True)
    for name, values in ratios.items():
        print(f"median {name} ratio: {statistics.median(values):.3f} ({', '.join(f'{v:.3f}' for v in values)})")


if __name__ == "__main__":
    main()
