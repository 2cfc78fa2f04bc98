"""What sets panes apart: each pane's settings as short labels, and the ones where it differs from the rest.

Used for pane headers, the Markdown report and exports, so a grid of variants reads at a glance ("T 0.7 ·
seed 3") instead of "Pane 5 (copy of 3)".
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from app.engine import GenerationRequest, SamplingParams
from app.engine.request_options import lora_key
from app.session import tools
from app.session.output_format import OutputFormat
from app.session.state import THINKING_LABELS, PaneSpec


@dataclass(frozen=True)
class Setup:
    """What sets one run apart from another, read from a pane or from a request (so both get the same labels)."""

    system: str
    sampling: SamplingParams
    max_tokens: int
    stop: tuple[str, ...]
    format: str
    backend: str
    thinking: bool | None = None
    tools: tuple[str, ...] = ()  # the names of the functions it may call
    lora: tuple = ()  # GenerationRequest.lora_key: the LoRA adapters in effect, with their scales


# (label, how to read it from a Setup), in the order they are shown.
FIELDS = (
    ("system", lambda s: short(s.system) if s.system.strip() else "none"),
    ("T", lambda s: f"{s.sampling.temperature:g}"),
    ("top-k", lambda s: str(s.sampling.top_k)),
    ("top-p", lambda s: f"{s.sampling.top_p:g}"),
    ("min-p", lambda s: f"{s.sampling.min_p:g}"),
    ("rep", lambda s: f"{s.sampling.repeat_penalty:g}"),
    ("seed", lambda s: "random" if s.sampling.seed is None else str(s.sampling.seed)),
    ("DRY", lambda s: _dry(s.sampling)),
    ("XTC", lambda s: f"{s.sampling.xtc_probability:g} above {s.sampling.xtc_threshold:g}"
     if s.sampling.xtc_probability > 0 and s.sampling.xtc_threshold <= 0.5 else "off"),
    ("typical-p", lambda s: f"{s.sampling.typical_p:g}" if s.sampling.typical_p < 1 else "off"),
    ("mirostat", lambda s: f"{s.sampling.mirostat} τ {s.sampling.mirostat_tau:g} η {s.sampling.mirostat_eta:g}"
     if s.sampling.mirostat else "off"),
    ("top-nσ", lambda s: f"{s.sampling.top_n_sigma:g}" if s.sampling.top_n_sigma > 0 else "off"),
    ("dynatemp", lambda s: _extra(f"±{s.sampling.dynatemp_range:g}", s.sampling, ("dynatemp_exponent", "exp"))
     if s.sampling.dynatemp_range > 0 else "off"),
    ("max", lambda s: str(s.max_tokens)),
    ("stop", lambda s: ", ".join(repr(x) for x in s.stop) or "none"),
    ("format", lambda s: s.format),
    ("backend", lambda s: s.backend),
    ("thinking", lambda s: THINKING_LABELS[s.thinking]),
    ("tools", lambda s: ", ".join(s.tools) or "none"),
    ("adapter", lambda s: " + ".join(Path(p).name + ("" if k == 1 else f" ×{k:g}") for p, k in s.lora) or "none"),
)


def _extra(text: str, sampling: SamplingParams, *fields: tuple[str, str]) -> str:
    """`text`, then each of `fields` (name, short label) whose value is not its default."""
    for name, short_label in fields:
        value = getattr(sampling, name)
        if value != _DEFAULTS[name]:
            shown = " ".join(repr(v) for v in value) if isinstance(value, tuple) else f"{value:g}"
            text += f" {short_label} {shown}"
    return text


def _dry(sampling: SamplingParams) -> str:
    if not sampling.uses_dry:
        return "off"
    return _extra(f"{sampling.dry_multiplier:g}", sampling, ("dry_base", "base"), ("dry_allowed_length", "length"),
                  ("dry_penalty_last_n", "window"), ("dry_sequence_breakers", "breakers"))


_DEFAULTS = {f.name: f.default for f in dataclasses.fields(SamplingParams)}


def setup_of(pane: PaneSpec) -> Setup:
    return _setup(pane.system, lambda name: getattr(pane, name), pane)


def setup_of_version(version, pane: PaneSpec) -> Setup:
    """What a version (app/session/versions.PaneVersion) ran with, read from its settings (the pane's where a
    version from an older file lacks one; the adapters are always the pane's), as `setup_of` reads a pane. No
    pane is built for it: a pane's versions are read on every new version, and a built pane costs its events."""
    return _setup(version.system, lambda name: version.settings.get(name, getattr(pane, name)), pane)


def _setup(system: str, setting, pane: PaneSpec) -> Setup:
    try:
        names = tuple(tools.tool_names(tools.parse_tools(setting("tools"))))
    except tools.ToolsError:
        names = ("(tools that do not check)",)
    return Setup(system, setting("sampling"), setting("max_tokens"), tuple(setting("stop")),
                 setting("output_format").label, setting("backend"), setting("thinking"), names, lora_key(pane.lora))


def setup_of_request(request: GenerationRequest, backend: str) -> Setup:
    system = next((m["content"] for m in request.messages or [] if m.get("role") == "system"), "")
    fmt = OutputFormat.of_request(request.grammar, request.json_schema)
    return Setup(system if isinstance(system, str) else "", request.sampling, request.max_tokens,
                 tuple(request.stop), fmt.label, backend, request.thinking,
                 tuple(tools.tool_names(list(request.tools))), request.lora_key)


def short(text: str, width: int = 24) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def settings_of(pane: PaneSpec) -> dict[str, str]:
    return labels(setup_of(pane))


def labels(setup: Setup) -> dict[str, str]:
    return {label: read(setup) for label, read in FIELDS}


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
    """`differences` over settings already read (a pane's, or a request's with the same labels): each entry's values
    on the labels every entry has and that vary, where it is not the most common value (or every entry has its
    own, as in a seed sweep)."""
    growing = GrowingDiffering()
    for entry in values:
        growing.add(entry)
    return [growing.of(entry) for entry in values]


class GrowingDiffering:
    """What sets each of a list of entries apart, kept for a list that grows at its end (a pane's versions,
    gathered for hours) without reading every entry again on each new one: per label, how often each value
    occurs (the first seen wins a tie). `add` each entry in order; `of(entry)` is that (added) entry's answer."""

    def __init__(self):
        self.count = 0
        self._order: list[str] = []  # the first entry's labels, in its order (`differing` reads values[0]'s)
        self._present: Counter[str] = Counter()  # label -> how many entries have it
        self._values: dict[str, Counter[str]] = {}  # label -> value -> how many entries have it (first seen first)

    def add(self, entry: dict[str, str]) -> None:
        if not self.count:
            self._order = list(entry)
        self.count += 1
        self._present.update(entry.keys())
        values = self._values
        for label, value in entry.items():
            counts = values.get(label)
            if counts is None:  # (setdefault would make a Counter per call: a pane's every version is added)
                counts = values[label] = Counter()
            counts[value] += 1

    def of(self, entry: dict[str, str]) -> dict[str, str]:
        if self.count < 2:
            return {}
        diff = {}
        for label in self._order:
            counts = self._values[label]
            if self._present[label] != self.count or len(counts) < 2:
                continue  # not every entry has it, or it never varies
            if entry[label] != counts.most_common(1)[0][0] or len(counts) == self.count:
                diff[label] = entry[label]
        return diff


def label(diff: dict[str, str]) -> str:
    return " · ".join(f"{k} {v}" for k, v in diff.items())
