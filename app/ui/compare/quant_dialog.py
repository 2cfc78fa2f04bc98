"""Compare quantizations…: choose the reference file and the candidates of one model.

The reference starts as the model the pane runs on; the candidates are the other quantizations of that model that
discovery finds (`app.models.quants.same_model`: the scan cache at once, then a scan of the apps' folders, the
user's model folders and the reference's own folder, off the GUI thread), all ticked. "Add a file…" adds any
other GGUF. Each file is checked as it is chosen: a missing file, or a candidate whose vocabulary differs from
the reference's, is named in one sentence under the list and OK stays disabled, so nothing runs on a comparison
that cannot be made.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.models import ModelEntry, ScanCache, discover, model_name
from app.models.fit import size_label
from app.models.quants import same_model

log = logging.getLogger("chorus.ui.quants")
FILTER = "GGUF models (*.gguf);;All files (*)"


def _label(path: str, entries: dict[str, ModelEntry]) -> str:
    entry = entries.get(os.path.realpath(path))
    size = size_label(entry.size_bytes) if entry else (size_label(Path(path).stat().st_size)
                                                       if Path(path).is_file() else "missing")
    known = entry is not None and entry.quantization not in ("", "?")
    quant = f" · {entry.quantization}" if known and entry.quantization.lower() not in model_name(path).lower() else ""
    return f"{model_name(path)}{quant} · {size}"


class QuantDialog(QDialog):
    def __init__(self, reference: str, check: Callable[[str, str], str | None], parent: QWidget | None = None, *,
                 folders: list[str] = (), scan: Callable[..., list[ModelEntry]] = discover,
                 scan_kwargs: dict | None = None, cache: ScanCache | None = None, choose_file=None,
                 group_size: int = 0):
        """`reference`: the pane's model file. `check(reference, candidate)` says why a candidate cannot be
        compared with the reference (a missing file, another vocabulary) or None. `scan(**scan_kwargs)`
        finds the models on this machine (discovery); `choose_file(title)` asks for a file (a file dialog);
        `group_size`: how many panes of the pane's group can run (with more than one, "every pane of its group"
        is offered)."""
        super().__init__(parent)
        self.setWindowTitle(f"Compare quantizations of {model_name(reference)}")
        self.resize(620, 420)
        self._check, self._scan = check, scan
        self._choose = choose_file or (lambda title: QFileDialog.getOpenFileName(self, title, str(Path(reference)
                                                                                           .parent), FILTER)[0])
        self.cache = cache or ScanCache.default()
        self._scan_kwargs = {"folders": tuple(dict.fromkeys([*folders, str(Path(reference).parent)])),
                             "own": (reference,), "cache": self.cache, **(scan_kwargs or {})}
        self.entries: dict[str, ModelEntry] = {}  # by real path: what discovery knows of each file
        self.reference = QComboBox(objectName="quantReference")
        self.reference.setAccessibleName("Reference model file")
        self.reference.addItem(model_name(reference), reference)
        other_ref = QPushButton("Other file…", clicked=self.choose_reference)
        self.candidates = QListWidget(objectName="quantCandidates")
        self.candidates.setAccessibleName("Candidate model files")
        add = QPushButton("Add a file…", clicked=self.add_file)
        self.whole_group = QCheckBox(f"Every pane of its group ({group_size} prompts), not only this one",
                                     visible=group_size > 1, objectName="quantWholeGroup")
        self.status = QLabel("Looking for other quantizations of this model…", wordWrap=True)
        self.problem = QLabel(wordWrap=True, objectName="quantProblem")
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.button(QDialogButtonBox.Ok).setText("Compare")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout()
        row = QHBoxLayout()
        row.addWidget(self.reference, 1)
        row.addWidget(other_ref)
        form.addRow("Reference", row)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(QLabel("Candidates (each runs the pane's prompt as a pane of its own, and is measured "
                                "against the reference on the reference's greedy reply):", wordWrap=True))
        layout.addWidget(self.candidates, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(add)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        layout.addWidget(self.whole_group)
        layout.addWidget(self.status)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        self.reference.currentIndexChanged.connect(self._on_reference)
        self.candidates.itemChanged.connect(lambda _item: self.update_problem())
        try:
            cached = [ModelEntry.from_dict(d) for d in self.cache.last_entries]
        except (KeyError, TypeError, ValueError, AttributeError):  # a cache from another version
            cached = []
        self.show_found(cached, final=False)
        self.scanning = asyncio.ensure_future(self._scan_off_thread())

    async def _scan_off_thread(self) -> None:
        try:
            entries = await asyncio.to_thread(self._scan, **self._scan_kwargs)
        except Exception as exc:  # a scan must never take the window down: the list keeps what it has
            log.exception("model scan failed")
            self.status.setText(f"The scan failed ({exc}): add the files you want to compare.")
            return
        self.show_found(entries)

    # --- what is chosen ---------------------------------------------------------------------------------------
    def reference_path(self) -> str:
        return self.reference.currentData()

    def candidate_paths(self) -> list[str]:
        return [self.candidates.item(i).data(Qt.UserRole) for i in range(self.candidates.count())
                if self.candidates.item(i).checkState() == Qt.Checked]

    def _paths(self) -> list[str]:
        return [self.candidates.item(i).data(Qt.UserRole) for i in range(self.candidates.count())]

    def add_candidate(self, path: str, checked: bool = True) -> None:
        """List a file as a candidate (once; the reference is never its own candidate)."""
        real = os.path.realpath(path)
        if real == os.path.realpath(self.reference_path()) or real in {os.path.realpath(p) for p in self._paths()}:
            return
        item = QListWidgetItem(_label(path, self.entries))
        item.setData(Qt.UserRole, path)
        item.setToolTip(path)
        item.setFlags(item.flags() | Qt.ItemIsUserCheckable)
        item.setCheckState(Qt.Checked if checked else Qt.Unchecked)
        self.candidates.addItem(item)
        self.update_problem()

    def show_found(self, entries: list[ModelEntry], final: bool = True) -> None:
        """Discovery's entries: the reference's other quantizations join the candidates (and the reference's
        choices)."""
        for entry in entries:
            self.entries.setdefault(os.path.realpath(entry.path), entry)
        found = same_model(self.reference_path(), self.entries.values())
        for entry in found:
            self.add_candidate(entry.path)
            if self.reference.findData(entry.path) < 0:
                self.reference.addItem(_label(entry.path, self.entries), entry.path)
        self.reference.setItemText(0, _label(self.reference.itemData(0), self.entries))
        if final:
            self.status.setText(f"Found {len(found)} other quantization(s) of {model_name(self.reference_path())} "
                                "on this computer." if found else
                                "No other quantization of this model was found on this computer: add a file.")
        self.update_problem()

    def _on_reference(self) -> None:
        """Another reference: it leaves the candidates, the one it replaces joins them (unticked)."""
        real = os.path.realpath(self.reference_path())
        for i in reversed(range(self.candidates.count())):
            if os.path.realpath(self.candidates.item(i).data(Qt.UserRole)) == real:
                self.candidates.takeItem(i)
        for i in range(self.reference.count()):
            path = self.reference.itemData(i)
            if os.path.realpath(path) != real:
                self.add_candidate(path, checked=False)
        self.update_problem()

    def choose_reference(self) -> None:
        path = self._choose("Choose the reference model")
        if path:
            if self.reference.findData(path) < 0:
                self.reference.addItem(_label(path, self.entries), path)
            self.reference.setCurrentIndex(self.reference.findData(path))

    def add_file(self) -> None:
        path = self._choose("Add a candidate model")
        if path:
            self.add_candidate(path)

    # --- checks -----------------------------------------------------------------------------------------------
    def problems(self) -> list[str]:
        """Why the comparison cannot run as chosen, one sentence each (empty: it can)."""
        chosen = self.candidate_paths()
        out = [problem for path in [self.reference_path(), *chosen]
               if (problem := self._check(self.reference_path(), path))]
        if not chosen:
            out.append("Tick at least one candidate, or add a file.")
        return list(dict.fromkeys(out))

    def update_problem(self) -> None:
        problems = self.problems()
        self.problem.setText("\n".join(f"⚠ {p}" for p in problems))
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(not problems)

    def accept(self) -> None:
        if not self.problems():
            super().accept()
