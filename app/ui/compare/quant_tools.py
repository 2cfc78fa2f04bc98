"""Compare quantizations…: a pane's prompt on one model in several quantizations, side by side and measured.

From a pane (its Compare menu, or Compare → Compare quantizations…): the dialog (quant_dialog.py) picks the
reference file and the candidates. Then, in order:
1. every file gets a backend (the main model's file is the main model; another is opened, or waits on standby
   when it does not fit beside the models loaded: `add_local`, the window's backend manager);
2. one pane per file, the pane's prompt run greedily (the "quantization" sweep axis: `app.session.sweep`), in a
   group with the source pane; they run as any panes do, in shifts when the models do not fit together;
3. when they have finished, the fidelity run (app.quant) on a worker thread: the reference's greedy reply to the
   prompt, then every candidate teacher-forced on it (together in memory, or one at a time through a top-k file
   when they do not fit: the report says which), with progress; Cancel stops the panes and the measurement.
The ranking table (quant_view.py) renders the comparison (`app.session.quant_ranking.QuantComparison`), and the
diff view of the reference's pane against a candidate's tints the reference's reply by the candidate's KLD.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

from app.backends.registry import BackendRegistry, BackendSpec
from app.models import ModelEntry, ScanCache, estimate_memory, model_name
from app.models.quants import same_model
from app.quant import fidelity, forward, prompts
from app.quant.pieces import token_texts
from app.quant.types import Cancelled, QuantError
from app.session import PaneSpec, SessionController, conversation, sweep
from app.session.quant_ranking import QuantComparison
from app.ui.compare.quant_dialog import QuantDialog
from app.ui.compare.quant_view import QuantRanking
from app.ui.pane.grid import PaneGrid
from app.ui.pane.prompt_pane import PromptPane

log = logging.getLogger("chorus.ui.quants")


def local_files(registry: BackendRegistry) -> dict[str, str]:
    """Model file -> the backend that runs it, for every local model loaded or on standby (the main one too)."""
    names = [*(n for n in registry.offered() if registry.config(n) is not None)]
    return {registry.config(n).model_path: n for n in reversed(names)}  # the main model wins a shared file


class VocabularyCheck:
    """`check(reference, candidate)`: why the two cannot be compared (a missing file, another vocabulary), in one
    sentence, or None. Each file's vocabulary is read once (llama.cpp's vocab-only load)."""

    def __init__(self):
        self._vocab: dict[str, tuple[str, ...] | str] = {}

    def _read(self, path: str):
        if path not in self._vocab:
            try:
                self._vocab[path] = forward.vocabulary(path)
            except QuantError as exc:
                self._vocab[path] = str(exc)
        return self._vocab[path]

    def __call__(self, reference: str, candidate: str) -> str | None:
        ref, cand = self._read(reference), self._read(candidate)
        if isinstance(cand, str):
            return cand
        if isinstance(ref, str):
            return ref
        if cand != ref:
            return (f"{model_name(candidate)} does not share {model_name(reference)}'s vocabulary, so their "
                    "distributions cannot be compared: choose another quantization of the same model.")
        return None


class QuantTools(QObject):
    def __init__(self, controller: SessionController, grid: PaneGrid, registry: BackendRegistry,
                 add_local: Callable[[BackendSpec], Awaitable[str | None]], engine_fields: Callable[[], dict],
                 model_folders: Callable[[], list[str]], current_pane: Callable[[], PromptPane | None],
                 open_diff: Callable[..., object], parent: QWidget, *, dialog_kwargs: dict | None = None):
        """`add_local(spec)` opens a local model as a backend (or puts it on standby) and returns why it could
        not, or None; `engine_fields()` the engine settings (the memory estimate); `model_folders()` the user's
        model folders (discovery); `open_diff(left, right, kld=comparison)` the diff view."""
        super().__init__(parent)
        self.controller, self.grid, self.registry = controller, grid, registry
        self.session = controller.session
        self._add_local, self._engine_fields, self._folders = add_local, engine_fields, model_folders
        self._current, self._open_diff, self.parent_widget = current_pane, open_diff, parent
        self.dialog_kwargs = dict(dialog_kwargs or {})  # tests: discovery's home and env
        self.check = VocabularyCheck()
        self.scan_cache: ScanCache | None = None  # where the last scan is read (None: the Models dialog's cache)
        self.dialog: QuantDialog | None = None
        self.comparisons: list[QuantComparison] = []
        self.views: list[QuantRanking] = []
        self._cancel: dict[int, threading.Event] = {}
        self._requests: dict[int, tuple] = {}
        grid.sig_pane_added.connect(self._connect_pane)
        for view in grid.panes:
            self._connect_pane(view)
        controller.runner.events.ended.connect(lambda _pane, _result: QTimer.singleShot(0, self._check_panes))
        if controller.loader is not None:
            controller.loader.events.finished.connect(lambda _p: QTimer.singleShot(0, self._check_panes))

    def _connect_pane(self, view: PromptPane) -> None:
        view.sig_compare_action.connect(lambda v, key: self.open_dialog(v) if key == "quants" else None)

    def build_menu(self, menu) -> None:
        action = QAction("Compare quantizations…", self.parent_widget, shortcut=QKeySequence("Ctrl+Shift+Q"))
        action.triggered.connect(lambda: (view := self._current()) and self.open_dialog(view))
        menu.addAction(action)

    # --- choosing ---------------------------------------------------------------------------------------------
    def reference_of(self, spec: PaneSpec) -> str | None:
        config = self.registry.config(spec.backend)
        return config.model_path if config is not None else None

    def open_dialog(self, view: PromptPane) -> QuantDialog | None:
        try:
            view.commit_form()
            conversation.plan_run(view.spec, use_draft=bool(view.spec.draft.strip()))
        except ValueError as exc:  # nothing to run (NothingToRun is one), a bad setting
            view.show_error(str(exc))
            return None
        reference = self.reference_of(view.spec)
        if reference is None:
            view.show_error("Compare quantizations needs a local model file: this pane runs on a server (or no "
                            "model is loaded). Choose a local model in its header first.")
            return None
        group = self.group_sources(view.spec)
        self.dialog = QuantDialog(reference, self.check, self.parent_widget, folders=self._folders(),
                                  group_size=len(group), **self.dialog_kwargs)
        self.dialog.accepted.connect(lambda d=self.dialog, v=view: asyncio.ensure_future(
            self.start(v.spec, d.reference_path(), d.candidate_paths(), group=d.whole_group.isChecked())))
        self.dialog.open()
        return self.dialog

    def group_sources(self, spec: PaneSpec) -> list[PaneSpec]:
        """The panes of the pane's group that have something to run (none for a pane in no group)."""
        return [p for p in self.session.group(spec.group) if conversation.can_run(p)]

    # --- running ----------------------------------------------------------------------------------------------
    async def start(self, source: PaneSpec, reference: str, candidates: list[str],
                    group: bool = False) -> QuantComparison | None:
        """Open the files' backends, add and run their panes (for the pane, or with `group` for every pane of its
        group that can run: one prompt each), and measure once they have finished. A file that cannot be opened
        is named on the source pane and nothing else changes."""
        files = [reference, *candidates]
        problems = [p for path in files if (p := self.check(reference, path))]
        if problems:
            self._show(source, problems[0])
            return None
        if not await self.open_files(source, files):
            return None
        sources = (self.group_sources(source) if group else []) or [source]
        comparison = QuantComparison(reference, list(candidates), {path: [] for path in files},
                                     [s.id for s in sources])
        requests, added = [], []
        for one in sources:
            base = one.copy(sampling=replace(one.sampling, temperature=0.0))
            requests.append(conversation.plan_run(base, use_draft=bool(base.draft.strip()))[0])
            specs = sweep.expand(base, {"quantization": files}, local_files(self.registry))
            for spec, path in zip(specs, files, strict=True):
                spec.title = f"{model_name(path)}" + (" (reference)" if path == reference else "")
                spec.title += f" · {one.label}" if len(sources) > 1 else ""
            for path, spec in zip(files, self.controller.add_variants(one, specs, run=False), strict=True):
                comparison.panes[path].append(spec.id)
                added.append(spec)
        self.comparisons.append(comparison)
        self._requests[id(comparison)] = requests
        report = self.controller.run_many(added)
        for spec, message in report.problems:
            if view := self.grid.view_of(spec):
                view.show_error(message)
        self.open_ranking(comparison)
        QTimer.singleShot(0, self._check_panes)
        return comparison

    async def open_files(self, source: PaneSpec, files: list[str]) -> bool:
        """Give every file a backend (opened, or on standby when it does not fit beside the models loaded); a
        file that cannot be opened is named on the source pane. Whether all have one."""
        for path in files:
            if os.path.realpath(path) not in {os.path.realpath(f) for f in local_files(self.registry)}:
                why = await self._add_local(BackendSpec(kind="local", path=path))
                if why:
                    self._show(source, f"Could not open {model_name(path)}: {why}")
                    return False
        return True

    async def open_then(self, source: PaneSpec, files: list[str], then: Callable[[], object]) -> None:
        """`then()` once every file has a backend (the sweep grid's quantization axis)."""
        if await self.open_files(source, files):
            then()

    def quantizations(self, spec: PaneSpec) -> tuple[list[str], dict[str, str]]:
        """The files of the pane's model in each quantization the last scan of this computer found (the Models
        dialog's; the pane's own file first), and the backends that already run model files."""
        reference = self.reference_of(spec)
        if reference is None:
            return [], {}
        try:
            entries = [ModelEntry.from_dict(d) for d in (self.scan_cache or ScanCache.default()).last_entries]
        except (KeyError, TypeError, ValueError, AttributeError):  # a cache from another version
            entries = []
        return [reference, *(e.path for e in same_model(reference, entries))], local_files(self.registry)

    def _show(self, source: PaneSpec, message: str) -> None:
        if view := self.grid.view_of(source):
            view.show_error(message)

    def _panes_done(self, comparison: QuantComparison) -> bool:
        loader = self.controller.loader
        if loader is not None and loader.current is not None:
            return False
        panes = [self.session.pane_by_id(i) for ids in comparison.panes.values() for i in ids]
        return not any(p is not None and self.controller.busy(p) for p in panes)

    def _check_panes(self) -> None:
        """Start measuring each comparison whose panes have all finished."""
        for comparison in self.comparisons:
            if comparison.stage == "panes" and self._panes_done(comparison):
                self.measure(comparison)

    def measure(self, comparison: QuantComparison) -> None:
        cancel = self._cancel.setdefault(id(comparison), threading.Event())
        requests = self._requests[id(comparison)]
        loop = asyncio.get_event_loop()
        comparison.update(stage="measuring", progress=(0, 0, f"the reference's greedy reply "
                                                             f"({model_name(comparison.reference)})"))

        def progress(done: int, total: int) -> None:
            loop.call_soon_threadsafe(partial(comparison.update, progress=(done, total, "teacher-forced passes")))

        def work():
            replies = prompts.greedy_replies(comparison.reference, requests, comparison.prompts)
            if cancel.is_set():
                raise Cancelled("the run was stopped.")
            if all(r.error for r in replies):
                raise QuantError(f"the reference could not answer: {replies[0].error}")
            sequences = prompts.prompt_sequences(comparison.reference, replies)
            loop.call_soon_threadsafe(partial(comparison.update, progress=(0, 0, "teacher-forced passes")))
            report = fidelity.compare(comparison.reference, comparison.candidates, sequences=sequences,
                                      progress=progress, stop=cancel.is_set)
            return report, {s.label: token_texts(comparison.reference, s.scored_tokens) for s in report.sequences}

        async def run():
            try:
                # the loop captured above, not the running one: a step qasync takes from a Qt event while the
                # loop is between runs (a test driving it in turns) has no running loop, and to_thread needs one
                report, pieces = await loop.run_in_executor(None, work)
            except Cancelled:
                comparison.update(stage="cancelled")
            except Exception as exc:  # the engine's or app.quant's own message: shown, never raised into Qt
                log.warning("fidelity run failed: %s", exc)
                comparison.update(stage="error", error=str(exc) or type(exc).__name__)
            else:
                comparison.update(stage="cancelled" if cancel.is_set() else "done", report=report, pieces=pieces)

        asyncio.ensure_future(run())

    def cancel(self, comparison: QuantComparison) -> None:
        """Stop the comparison's panes (and the rest of their shifts) and its measurement."""
        self._cancel.setdefault(id(comparison), threading.Event()).set()
        if comparison.stage == "panes":
            if self.controller.loader is not None:
                self.controller.loader.cancel()
            for pane_id in (i for ids in comparison.panes.values() for i in ids):
                if pane := self.session.pane_by_id(pane_id):
                    self.controller.stop(pane)
            comparison.update(stage="cancelled")

    def close(self) -> None:
        """The window closes: every comparison still running stops (a measurement at its next check), so quitting
        never waits for one to finish."""
        for comparison in self.comparisons:
            if comparison.running:
                self.cancel(comparison)

    # --- views ------------------------------------------------------------------------------------------------
    def memory(self, path: str) -> int | None:
        fields = self._engine_fields()
        try:
            return estimate_memory(path, fields["n_slots"], fields["n_ctx_per_slot"], fields["kv_type"]).total
        except (ValueError, OSError):
            return None

    def open_ranking(self, comparison: QuantComparison) -> QuantRanking:
        view = QuantRanking(comparison, self.session, self.memory, lambda: self.cancel(comparison),
                            self.parent_widget)
        view.sig_pane_selected.connect(self.grid.show_pane)
        view.sig_show_diff.connect(lambda path, c=comparison: self.show_diff(c, path))
        self.views.append(view)
        view.finished.connect(lambda _r, v=view: self.views.remove(v) if v in self.views else None)
        view.show()
        return view

    def show_diff(self, comparison: QuantComparison, path: str, prompt: str | None = None):
        """The reference's pane against the candidate's, for one prompt (the first by default)."""
        prompt = prompt or comparison.prompts[0]
        left = self.session.pane_by_id(comparison.pane_for(comparison.reference, prompt) or "")
        right = self.session.pane_by_id(comparison.pane_for(path, prompt) or "")
        if left is None or right is None:
            return None
        return self._open_diff(left, right, kld=(comparison, path))
