"""Which quantization to keep: one comparison of a reference model file against candidate files, as the window
runs it, and the ranking table's rows. Qt-free.

`QuantComparison` is the state the views render: the files, the panes each file's reply is in (by pane id, so
a pane removed since is noticed), where the fidelity run is (`stage`, `progress`), and its report (the
teacher-forced figures, app.quant's FidelityReport). It emits `changed` on every change; views never keep a copy.

`rank(comparison, session, memory)` reads the rows from it: file size, the memory estimate, the decode rate of
the file's own pane, the fidelity summary (mean and 99 % KLD, same top token, RMS Δp, PPL ratio) and where the
candidate's greedy reply first leaves the reference's (free generation, from the two panes' tokens). The
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
    panes: dict[str, str] = field(default_factory=dict)  # model file -> the id of the pane its reply is in
    stage: str = "panes"
    progress: tuple[int, int, str] = (0, 0, "")  # done, total, what it is doing
    report: Any = None  # app.quant FidelityReport, once measured
    error: str = ""
    pieces: list[str] = field(default_factory=list)  # the text of each token `token_kld` gives
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

    def token_kld(self, path: str) -> tuple[list[int], list[float]] | None:
        """The reference's reply tokens as the candidate read them, teacher-forced, with the candidate's KLD at
        each (the first scored sequence: the pane's prompt); None before the run measured it."""
        found = self.fidelity(path)
        if found is None or not found.figures or not self.report.sequences:
            return None
        return ([int(t) for t in self.report.sequences[0].scored_tokens], [float(k) for k in found.figures[0].kld])


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
    first_divergence: int | None = None  # reply token index; None: identical or not known (see `diverged`)
    diverged: bool | None = None  # None: not known yet (a reply missing or running)
    pane_id: str | None = None


def _free_generation(session, pane_id: str | None, reference_id: str | None) -> tuple[int | None, bool | None]:
    pane, ref = session.pane_by_id(pane_id or ""), session.pane_by_id(reference_id or "")
    if pane is None or ref is None or pane.result.busy or ref.result.busy \
            or not pane.result.token_ids or not ref.result.token_ids:
        return None, None
    index = diff.first_divergence(ref.result.token_ids, pane.result.token_ids)
    return index, index is not None


def rank(comparison: QuantComparison, session, memory: Callable[[str], int | None]) -> list[RankRow]:
    """The reference's row, then the candidates' by mean KLD (lowest first). `memory(path)`: the estimate."""
    rows = []
    ref_pane = comparison.panes.get(comparison.reference)
    for path in comparison.files:
        pane = session.pane_by_id(comparison.panes.get(path, ""))
        rate = pane.result.decode_tps if pane is not None and pane.result.decode_tps else None
        size = Path(path).stat().st_size if Path(path).is_file() else 0
        row = dict(path=path, name=model_name(path), reference=path == comparison.reference, size_bytes=size,
                   memory_bytes=memory(path), decode_tps=rate, pane_id=pane.id if pane is not None else None)
        found = comparison.fidelity(path) if path != comparison.reference else None
        if found is not None:
            s = found.summary
            row.update(kld_mean=s.kld_mean, kld_p99=s.kld_p99, same_top_p=s.same_top_p, rms_dp=s.rms_dp,
                       ppl_ratio=s.ppl_ratio)
        if path != comparison.reference:
            row["first_divergence"], row["diverged"] = _free_generation(session, row["pane_id"], ref_pane)
        rows.append(RankRow(**row))
    head, rest = rows[:1], rows[1:]
    return head + sorted(rest, key=lambda r: (r.kld_mean is None, r.kld_mean or 0.0, r.name.lower()))
