"""Real LoRA adapter files for tests, written with the `gguf` package in convert_lora_to_gguf.py's layout (the
writer, `write_lora`, lives in app/bench/model_files.py, which the benchmarks share).

    python -m tests.lora_adapter MODEL.gguf OUT.gguf [--seed N]   # writes one for a model, e.g. for llama-server
"""

from __future__ import annotations

import argparse
from pathlib import Path

from app.bench.model_files import LORA_TARGETS as TARGETS
from app.bench.model_files import write_lora

__all__ = ["TARGETS", "write_lora"]

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(write_lora(args.model, args.out, seed=args.seed))
