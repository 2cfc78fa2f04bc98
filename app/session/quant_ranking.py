"""Which quantization to keep: one comparison of a reference model file against candidate files, as the window
runs it, and the ranking table's rows. Qt-free.

`QuantComparison` is the state the views render: the files, the prompts (one per source pane: a pane, or every
pane of a group), the panes each file's replies are in (by pane id, one per prompt, so a pane removed since is
noticed), where the fidelity run is (`stage`, `progress`), and its report (the teacher-forced figures over every
prompt, app.quant's FidelityReport, whose sequences are labelled by prompt). It emits `changed` on every change;
views never keep a copy.

`rank(comparison, session, memory)` reads the rows from it: file size, the memory estimate, the decode rate of
the file's own panes (their mean), the fidelity summary over every prompt (mean and 99 % KLD, same top token,
RMS Δp, PPL ratio) and where the candidate's greedy replies first leave the reference's (free generation, from
the panes' tokens: the earliest over the prompts, and on how many they differ). The
reference comes first, shown as such; the candidates follow by mean KLD, lowest first (not yet measured last).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from psygnal import Signal

from app.models import model_name
from app.session import diff

STAGES = ("panes", "measuring", "done", "cancelled", "error")


@dataclass
class QuantComparison:
    reference: str
    candidates: list[str]
    panes: dict[str, list[str]] = field(default_factory=dict)  # model file -> its panes' ids, one per prompt
    prompts: list[str] = field(default_factory=list)  # each prompt's label (its source pane's id), in order
    stage: str = "panes"
    progress: tuple[int, int, str] = (0, 0, "")  # done, total, what it is doing
    report: Any = None  # app.quant FidelityReport, once measured
    error: str = ""
    pieces: dict[str, list[str]] = field(default_factory=dict)  # prompt label -> the text of its scored tokens
    changed = Signal()

    def update(self, **changes) -> None:
        for key, value in changes.items():
            setattr(self, key, value)
        self.changed.emit()

    @property
    def files(self) -> list[str]:
        return [self.reference, *self.candidates]

    @property
    def running(self) -> bool:
        return self.stage in ("panes", "measuring")

    def fidelity(self, path: str):
        """The report's entry for a candidate file (app.quant CandidateFidelity), or None."""
        if self.report is None:
            return None
        real = os.path.realpath(path)
        return next((c for c in self.report.candidates if os.path.realpath(c.path) == real), None)

    def prompt_of(self, pane_id: str) -> str | None:
        """The label of the prompt a pane of the comparison answers (None: not one of its panes)."""
        for ids in self.panes.values():
            if pane_id in ids:
                return self.prompts[ids.index(pane_id)]
        return None

    def pane_for(self, path: str, prompt: str) -> str | None:
        """The id of `path`'s pane for one prompt."""
        ids = self.panes.get(path, [])
        index = self.prompts.index(prompt) if prompt in self.prompts else -1
        return ids[index] if 0 <= index < len(ids) else None

    def token_kld(self, path: str, prompt: str) -> tuple[list[str], list[float]] | None:
        """The reference's reply to one prompt as the candidate read it, teacher-forced: each token's text with
        the candidate's KLD there; None before the run measured it (or when the reference gave no reply)."""
        found = self.fidelity(path)
        if found is None:
            return None
        for index, sequence in enumerate(self.report.sequences):
            if sequence.label == prompt and index < len(found.figures):
                return list(self.pieces.get(prompt, [])), [float(k) for k in found.figures[index].kld]
        return None


@dataclass(frozen=True)
class RankRow:
    path: str
    name: str
    reference: bool
    size_bytes: int
    memory_bytes: int | None  # the memory estimate at the window's engine settings (None: unreadable)
    decode_tps: float | None  # the file's pane, its last run
    kld_mean: float | None = None
    kld_p99: float | None = None
    same_top_p: float | None = None  # percent
    rms_dp: float | None = None  # percent
    ppl_ratio: float | None = None
    first_divergence: int | None = None  # reply token index, the earliest over the prompts; None: identical/unknown
    diverged: int | None = None  # on how many prompts the replies differ; None: not known yet (a reply missing)
    prompts: int = 1
    pane_id: str | None = None  # its first pane


def _free_generation(session, ids: list[str], reference_ids: list[str]) -> tuple[int | None, int | None]:
    """The earliest first divergence over the prompts, and on how many the replies differ (None, None while a
    reply is missing or running)."""
    found = []
    for pane_id, ref_id in zip(ids, reference_ids, strict=False):
        pane, ref = session.pane_by_id(pane_id), session.pane_by_id(ref_id)
        if pane is None or ref is None or pane.result.busy or ref.result.busy \
                or not pane.result.token_ids or not ref.result.token_ids:
            return None, None
        found.append(diff.first_divergence(ref.result.token_ids, pane.result.token_ids))
    differ = [i for i in found if i is not None]
    return (min(differ) if differ else None), len(differ)


def rank(comparison: QuantComparison, session, memory: Callable[[str], int | None]) -> list[RankRow]:
    """The reference's row, then the candidates' by mean KLD (lowest first). `memory(path)`: the estimate."""
    rows = []
    ref_panes = comparison.panes.get(comparison.reference, [])
    for path in comparison.files:
        panes = [p for i in comparison.panes.get(path, []) if (p := session.pane_by_id(i)) is not None]
        rates = [p.result.decode_tps for p in panes if p.result.decode_tps]
        size = Path(path).stat().st_size if Path(path).is_file() else 0
        row = dict(path=path, name=model_name(path), reference=path == comparison.reference, size_bytes=size,
                   memory_bytes=memory(path), decode_tps=sum(rates) / len(rates) if rates else None,
                   prompts=max(1, len(comparison.prompts)), pane_id=panes[0].id if panes else None)
        found = comparison.fidelity(path) if path != comparison.reference else None
        if found is not None:
            s = found.summary
            row.update(kld_mean=s.kld_mean, kld_p99=s.kld_p99, same_top_p=s.same_top_p, rms_dp=s.rms_dp,
                       ppl_ratio=s.ppl_ratio)
        if path != comparison.reference:
            row["first_divergence"], row["diverged"] = _free_generation(session, comparison.panes.get(path, []),
                                                                        ref_panes)
        rows.append(RankRow(**row))
    head, rest = rows[:1], rows[1:]
    return head + sorted(rest, key=lambda r: (r.kld_mean is None, r.kld_mean or 0.0, r.name.lower()))
