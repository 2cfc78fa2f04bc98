"""llama.cpp's own tools, built from the vendored source by `make llama-server` (scripts/build_llama_server.sh)
into the cache beside llama-server: `llama-quantize` to make the quantizations compared, `llama-perplexity` as
the reference the fidelity figures and their speed are held against. Runs them and reads their printed figures.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import llama_cpp

from app.bench import model_files
from app.engine.native import amx_build


def tool_path(name: str) -> Path:
    """Where the build script leaves `name` (llama-server, llama-perplexity, llama-quantize)."""
    return model_files.CACHE / f"llama-server-{llama_cpp.__version__}" / name


def weight_args() -> list[str]:
    """The flags that load a model into the same weight buffers as the engine: `--no-repack` on an AMX build,
    whose extra buffers segfault at the first decode (see `app.engine.native.model_params`), none elsewhere."""
    return ["--no-repack"] if amx_build() else []


def missing_tools(*names: str) -> list[str]:
    return [name for name in names if not tool_path(name).is_file()]


def quantize(source: Path, target: Path, qtype: str, threads: int = 2) -> Path:
    """`llama-quantize --allow-requantize SOURCE TARGET QTYPE` (a quantized source is requantized)."""
    run = subprocess.run([str(tool_path("llama-quantize")), "--allow-requantize", str(source), str(target), qtype,
                          str(threads)], capture_output=True, text=True, timeout=600)
    if run.returncode != 0 or not target.is_file():
        raise RuntimeError(f"llama-quantize {qtype} failed: {run.stderr[-400:]}")
    return target


def _perplexity(args: list[str], log: Path | None) -> tuple[str, float]:
    started = time.perf_counter()
    run = subprocess.run([str(tool_path("llama-perplexity")), *args, *weight_args()], capture_output=True, text=True,
                         timeout=3600)
    seconds = time.perf_counter() - started
    out = run.stdout + run.stderr
    if log is not None:
        log.write_text(out)
    if run.returncode != 0:
        raise RuntimeError(f"llama-perplexity {' '.join(args)} failed: {out[-400:]}")
    return out, seconds


def _number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    if not match:
        raise RuntimeError(f"llama-perplexity printed no {pattern!r}")
    return float(match.group(1))


def perplexity_of(model: Path, text_file: Path, ctx: int, threads: int, base_file: Path | None = None,
                  log: Path | None = None) -> dict:
    """`llama-perplexity -m MODEL -f FILE -c CTX -t THREADS` (with `--kl-divergence-base BASE`: also writes the
    base log-probabilities a KL run reads). Returns {"ppl", "ppl_unc", "seconds"} (wall time, load included)."""
    args = ["-m", str(model), "-f", str(text_file), "-c", str(ctx), "-t", str(threads)]
    if base_file is not None:
        args += ["--kl-divergence-base", str(base_file)]
    out, seconds = _perplexity(args, log)
    match = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", out)
    if not match:
        raise RuntimeError("llama-perplexity printed no final estimate")
    return {"ppl": float(match.group(1)), "ppl_unc": float(match.group(2)), "seconds": seconds}


def kl_divergence(candidate: Path, text_file: Path, ctx: int, threads: int, base_file: Path,
                  log: Path | None = None) -> dict:
    """`llama-perplexity --kl-divergence` of a candidate against a base file: the final statistics it prints
    (PPL(Q), PPL(base), mean KLD, median, 99 % and 99.9 % KLD, RMS Δp and same top p, in its units)."""
    args = ["-m", str(candidate), "-f", str(text_file), "-c", str(ctx), "-t", str(threads),
            "--kl-divergence-base", str(base_file), "--kl-divergence"]
    out, seconds = _perplexity(args, log)
    num = r"\s*(-?[0-9.]+)"
    return {"ppl": _number(r"Mean PPL\(Q\)\s*:" + num, out),
            "ppl_base": _number(r"Mean PPL\(base\)\s*:" + num, out),
            "kld_mean": _number(r"Mean    KLD:" + num, out),
            "kld_median": _number(r"Median  KLD:" + num, out),
            "kld_p99": _number(r"99\.0%   KLD:" + num, out),
            "kld_p999": _number(r"99\.9%   KLD:" + num, out),
            "rms_dp": _number(r"RMS Δp    :" + num, out),
            "same_top_p": _number(r"Same top p:" + num, out),
            "seconds": seconds}
