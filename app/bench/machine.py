"""What a benchmark ran on, and when: the label every results file carries (docs/benchmarks.md labels each run by
its date and machine, never by anything else). Read from /proc/cpuinfo where it exists, else `platform`."""

from __future__ import annotations

import datetime as dt
import os
import platform
from pathlib import Path

_FLAGS = (("avx512f", "AVX-512"), ("amx_tile", "AMX"), ("avx2", "AVX2"))  # widest first


def _cpuinfo() -> tuple[str, set[str]]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine(), set()
    model, flags = "", set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and not model:
            model = " ".join(value.split())
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    return model or platform.machine(), flags


def describe() -> str:
    """E.g. "AMD EPYC 7B13, 2 vCPU, AVX2" — the CPU model, its logical CPUs and the widest vector units it has."""
    model, flags = _cpuinfo()
    units = [name for flag, name in _FLAGS if flag in flags]
    widest = ", ".join(u for u in units if u == "AMX" or u == units[0])  # AVX-512 (and AMX), else AVX2
    return f"{model}, {os.cpu_count() or 1} vCPU" + (f", {widest}" if widest else "")


def label() -> dict:
    """{"date": "2026-11-26", "machine": "..."}: the run's label (UTC date)."""
    return {"date": dt.datetime.now(dt.timezone.utc).date().isoformat(), "machine": describe()}
