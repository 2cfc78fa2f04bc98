"""What sets panes apart: each pane's settings as short labels, and the ones where it differs from the rest.

Used for pane headers, the Markdown report and exports, so a grid of variants reads at a glance ("T 0.7 ·
seed 3") instead of "Pane 5 (copy of 3)".
"""

from __future__ import annotations

from collections import Counter

from app.session.model import PaneSpec

# (label, how to read it from a pane), in the order they are shown.
FIELDS = (
    ("system", lambda p: short(p.system) if p.system.strip() else "none"),
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


def short(text: str, width: int = 24) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def settings_of(pane: PaneSpec) -> dict[str, str]:
    return {label: read(pane) for label, read in FIELDS}


def differences(panes: list[PaneSpec]) -> list[dict[str, str]]:
    """For each pane, the settings whose value is not the most common one among `panes` (none, if alone)."""
    return differing([settings_of(p) for p in panes])


def differences_in_groups(panes: list[PaneSpec]) -> list[dict[str, str]]:
    """For each pane, how it differs within its group (every varying setting: a sweep's coordinates) or, for
    ungrouped panes, from the other ungrouped ones; a grid of variants reads at a glance beside unrelated panes."""
    groups: dict[str | None, list[int]] = {}
    for index, pane in enumerate(panes):
        groups.setdefault(pane.group, []).append(index)
    result: list[dict[str, str]] = [{} for _ in panes]
    for group, members in groups.items():
        values = [settings_of(panes[i]) for i in members]
        # In a group (a sweep) every pane shows its value on every axis that varies: its coordinates.
        diffs = differing(values) if group is None else coordinates(values)
        for index, diff in zip(members, diffs, strict=True):
            result[index] = diff
    return result


def coordinates(values: list[dict[str, str]]) -> list[dict[str, str]]:
    """Each entry's values on the labels that vary among `values` (none, if alone)."""
    varying = [k for k in values[0] if len({v.get(k) for v in values}) > 1] if len(values) > 1 else []
    return [{k: v[k] for k in varying} for v in values]


def differing(values: list[dict[str, str]]) -> list[dict[str, str]]:
    """`differences` over settings already read (a pane's, or a request's with the same labels)."""
    if len(values) < 2:
        return [{} for _ in values]
    labels = [label for label in values[0] if all(label in v for v in values)]
    common = {label: Counter(v[label] for v in values).most_common(1)[0][0] for label in labels}
    varying = {label for label in labels if len({v[label] for v in values}) > 1}
    return [{k: v[k] for k in labels if k in varying and (v[k] != common[k] or _all_differ(values, k))}
            for v in values]


def _all_differ(values: list[dict[str, str]], label: str) -> bool:
    """When every pane has its own value (a seed sweep), each shows it, the most common one included."""
    return len({v[label] for v in values}) == len(values)


def label(diff: dict[str, str]) -> str:
    return " · ".join(f"{k} {v}" for k, v in diff.items())
