"""What sets panes apart: each pane's settings as short labels, and the ones where it differs from the rest.

Used for pane headers, the Markdown report and exports, so a grid of variants reads at a glance ("T 0.7 ·
seed 3") instead of "Pane 5 (copy of 3)".
"""

from __future__ import annotations

from collections import Counter

from app.session.model import PaneSpec

# (label, how to read it from a pane), in the order they are shown.
FIELDS = (
    ("system", lambda p: _short(p.system) if p.system.strip() else "none"),
    ("T", lambda p: f"{p.sampling.temperature:g}"),
    ("top-k", lambda p: str(p.sampling.top_k)),
    ("top-p", lambda p: f"{p.sampling.top_p:g}"),
    ("min-p", lambda p: f"{p.sampling.min_p:g}"),
    ("rep", lambda p: f"{p.sampling.repeat_penalty:g}"),
    ("seed", lambda p: "random" if p.sampling.seed is None else str(p.sampling.seed)),
    ("max", lambda p: str(p.max_tokens)),
    ("stop", lambda p: ", ".join(repr(s) for s in p.stop) or "none"),
    ("format", lambda p: p.output_format.label),
    ("backend", lambda p: p.backend),
)


def _short(text: str, width: int = 24) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def settings_of(pane: PaneSpec) -> dict[str, str]:
    return {label: read(pane) for label, read in FIELDS}


def differences(panes: list[PaneSpec]) -> list[dict[str, str]]:
    """For each pane, the settings whose value is not the most common one among `panes` (all, if alone)."""
    values = [settings_of(p) for p in panes]
    if len(panes) < 2:
        return [{} for _ in panes]
    common = {label: Counter(v[label] for v in values).most_common(1)[0][0] for label, _ in FIELDS}
    varying = {label for label, _ in FIELDS if len({v[label] for v in values}) > 1}
    return [{k: v[k] for k, _ in FIELDS if k in varying and (v[k] != common[k] or _all_differ(values, k))}
            for v in values]


def _all_differ(values: list[dict[str, str]], label: str) -> bool:
    """When every pane has its own value (a seed sweep), each shows it, the most common one included."""
    return len({v[label] for v in values}) == len(values)


def label(diff: dict[str, str]) -> str:
    return " · ".join(f"{k} {v}" for k, v in diff.items())
