"""Two runs of an evaluation compared cell by cell: which cells flipped, and whether a variant changed.

Runs are read from results.json files in promptfoo's v3 layout (Chorus's own or promptfoo's). A cell of one run
is paired with the cell of the other that has the same variant (provider label or id, and prompt label) and the
same test case (its vars and description; the k-th repeat of a case pairs with the k-th). Only paired cells are
compared, and a pair in which either verdict rests on a judge that failed its calibration (Chorus's
`unreliableVerdict`) is counted apart, not compared. Per variant, the change in pass rate is tested with the
exact McNemar test on the discordant pairs (a two-sided binomial test of pass→fail against fail→pass at
p = 0.5, scipy): with no discordant pair, or p at or above `alpha`, the test cannot tell, and the comparison
says "no detectable change". An errored cell counts as not passed, as promptfoo's `success` says.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from scipy.stats import binomtest

ALPHA = 0.05  # each variant's McNemar test is significant below this p (eval-compare --alpha's default)
LABEL_CHARS = 60  # a case's label is cut to this many characters


class _Provider(msgspec.Struct, frozen=True):
    id: str = ""
    label: str | None = None


class _Prompt(msgspec.Struct, frozen=True):
    label: str = ""
    raw: str = ""


class _Case(msgspec.Struct, frozen=True):
    description: str | None = None


class _Grading(msgspec.Struct, frozen=True):
    reason: str | None = None


class _Cell(msgspec.Struct):
    promptIdx: int  # noqa: N815 (promptfoo's key)
    testIdx: int  # noqa: N815
    success: bool
    vars: dict[str, Any] = {}
    provider: _Provider | str = ""
    prompt: _Prompt = _Prompt()
    testCase: _Case = _Case()  # noqa: N815
    error: str | None = None
    gradingResult: _Grading | None = None  # noqa: N815
    unreliableVerdict: bool = False  # noqa: N815 (Chorus: the verdict rests on a judge that failed calibration)


class _Column(msgspec.Struct, frozen=True):
    label: str = ""
    provider: str = ""


class _Table(msgspec.Struct):
    results: list[_Cell]
    prompts: list[_Column] = []
    timestamp: str | None = None


class _ResultsFile(msgspec.Struct):
    results: _Table


class ResultsFileError(ValueError):
    """A results file that cannot be read or is not promptfoo's v3 layout; the message names the file."""


@dataclass(frozen=True)
class Cell:
    variant: str
    case: str
    passed: bool
    reason: str
    label: str  # the case as a person reads it: its description, else its vars
    unreliable: bool = False  # its verdict rests on an uncalibrated judge: neither a pass nor a fail


@dataclass(frozen=True)
class Run:
    path: Path
    cells: dict[tuple[str, str], Cell]  # (variant, case key) -> cell
    timestamp: str | None = None


def load_run(path: str | Path) -> Run:
    """Read a results.json; ResultsFileError names the file and what is wrong with it."""
    path = Path(path)
    try:
        data = msgspec.json.decode(path.read_bytes(), type=_ResultsFile)
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
    except msgspec.ValidationError as exc:
        raise ResultsFileError(f"{path}: not a results file in promptfoo's v3 layout: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise ResultsFileError(f"{path}: not JSON: {exc}") from exc
    table = data.results
    seen: Counter = Counter()
    cells: dict[tuple[str, str], Cell] = {}
    for cell in sorted(table.results, key=lambda c: (c.promptIdx, c.testIdx)):
        variant = _variant(cell, table.prompts)
        base = json.dumps([cell.vars, cell.testCase.description], sort_keys=True, default=str)
        seen[(variant, base)] += 1  # the k-th cell with these vars in this variant: repeats pair in order
        case = f"{base}#{seen[(variant, base)]}"
        reason = cell.error or (cell.gradingResult.reason if cell.gradingResult else None) or ""
        cells[(variant, case)] = Cell(variant, case, cell.success, reason, _label(cell, seen[(variant, base)]),
                                      cell.unreliableVerdict)
    return Run(path, cells, table.timestamp)


def _variant(cell: _Cell, columns: list[_Column]) -> str:
    """`[provider] prompt label`, from the column when the file lists it, else from the cell."""
    if 0 <= cell.promptIdx < len(columns) and (columns[cell.promptIdx].provider or columns[cell.promptIdx].label):
        column = columns[cell.promptIdx]
        return f"[{column.provider}] {column.label}"
    provider = cell.provider if isinstance(cell.provider, str) else (cell.provider.label or cell.provider.id)
    return f"[{provider}] {cell.prompt.label}"


def _label(cell: _Cell, occurrence: int) -> str:
    text = cell.testCase.description or ", ".join(f"{k}={v}" for k, v in cell.vars.items()) or f"test {cell.testIdx}"
    text = " ".join(str(text).split())
    text = text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"
    return text + (f" (repeat {occurrence})" if occurrence > 1 else "")


def mcnemar_exact(worse: int, better: int) -> float:
    """Two-sided exact McNemar p for `worse` pass→fail and `better` fail→pass pairs (1.0 when there are none)."""
    n = worse + better
    return 1.0 if n == 0 else float(binomtest(better, n, 0.5).pvalue)


@dataclass
class VariantChange:
    variant: str
    paired: int = 0
    old_passed: int = 0
    new_passed: int = 0
    worse: list[tuple[Cell, Cell]] = field(default_factory=list)  # (old, new): pass -> fail
    better: list[tuple[Cell, Cell]] = field(default_factory=list)  # fail -> pass
    p_value: float = 1.0
    unreliable: int = 0  # pairs left out: a verdict on either side rests on an unreliable judge

    def verdict(self, alpha: float) -> str:
        if self.p_value >= alpha:
            return "no detectable change"
        return "significantly worse" if len(self.worse) > len(self.better) else "significantly better"


@dataclass
class Comparison:
    old: Run
    new: Run
    alpha: float
    variants: list[VariantChange]
    only_old: int  # cells with no partner in the new run (a case or variant it lacks)
    only_new: int

    @property
    def regressed(self) -> list[VariantChange]:
        return [v for v in self.variants if v.verdict(self.alpha) == "significantly worse"]


def compare(old: Run, new: Run, alpha: float = ALPHA) -> Comparison:
    """Pair the two runs' cells and test each variant that has paired cells (in the old run's order)."""
    changes: dict[str, VariantChange] = {}
    for key, before in old.cells.items():
        after = new.cells.get(key)
        if after is None:
            continue
        change = changes.setdefault(before.variant, VariantChange(before.variant))
        if before.unreliable or after.unreliable:
            change.unreliable += 1
            continue
        change.paired += 1
        change.old_passed += before.passed
        change.new_passed += after.passed
        if before.passed != after.passed:
            (change.worse if before.passed else change.better).append((before, after))
    for change in changes.values():
        change.p_value = mcnemar_exact(len(change.worse), len(change.better))
    paired = sum(c.paired + c.unreliable for c in changes.values())
    return Comparison(old, new, alpha, list(changes.values()), len(old.cells) - paired, len(new.cells) - paired)
