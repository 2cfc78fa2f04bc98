"""The compare workbench's actions: variants and sweeps, the diff view, the comparison table, a group in
columns, running a group. Reached from the Compare menu (for the current pane) and each pane's Compare button.

Qt-free work (the panes a sweep makes, groups, diffs, table rows) is in app.session; this wires dialogs to the
controller. It is given what it needs — the controller, the grid, the backend names, the current pane — and
reaches into nothing else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QWidget

from app.session import PaneSpec, SessionController, versions
from app.ui.compare.diff_view import DiffDialog
from app.ui.compare.stability_view import StabilityDialog
from app.ui.compare.table import CompareTable
from app.ui.compare.variants_dialog import VariantsDialog
from app.ui.pane.grid import PaneGrid
from app.ui.pane.prompt_pane import PromptPane
from app.ui.widgets.sliced import run_sliced


def _spec(pane: PaneSpec | PromptPane | None) -> PaneSpec | None:
    """A pane given as its spec or as its view."""
    return pane.spec if isinstance(pane, PromptPane) else pane


class CompareTools(QObject):
    def __init__(self, controller: SessionController, grid: PaneGrid, backend_names: Callable[[], list[str]],
                 current_pane: Callable[[], PromptPane | None], parent: QWidget, meaning=None,
                 model_of: Callable[[str], str] | None = None):
        """`meaning`: the window's MeaningLink, for the meaning similarity and the stability view; `model_of`
        names a backend's model (the comparison table's column)."""
        super().__init__(parent)
        self.meaning, self.model_of = meaning, model_of
        self.controller, self.grid = controller, grid
        self.session = controller.session
        self._backend_names, self._current = backend_names, current_pane
        self.parent_widget = parent
        self.dialogs: list[QDialog] = []  # open non-modal views (tests and the monkey read them)
        self.quants = None  # the window's QuantTools: the sweep grid's quantization axis (files and their backends)
        grid.sig_pane_added.connect(self._connect_pane)
        for view in grid.panes:
            self._connect_pane(view)

    def _connect_pane(self, view: PromptPane) -> None:
        view.sig_compare_action.connect(self.on_pane_action)

    def build_menu(self, menu) -> None:
        for text, keys, key in (("Variants and sweeps…", "Ctrl+Shift+V", "variants"),
                                ("Compare two panes…", "Ctrl+Shift+D", "compare"),
                                ("Comparison table…", "Ctrl+Shift+T", "table"),
                                ("Stability: answers clustered by meaning…", "Ctrl+Shift+Y", "stability"),
                                ("Show group in columns", "Ctrl+Shift+C", "columns"),
                                ("Run group", "Ctrl+Shift+R", "run_group")):
            action = QAction(text, self.parent_widget, shortcut=QKeySequence(keys))
            action.triggered.connect(lambda _=False, k=key: self._on_current(k))
            menu.addAction(action)
        back = QAction("Back to the grid", self.parent_widget, shortcut=QKeySequence("Ctrl+Shift+G"))
        back.triggered.connect(lambda: self.controller.show_group_in_columns(None))
        menu.addAction(back)

    def _on_current(self, key: str) -> None:
        if view := self._current():
            self.on_pane_action(view, key)

    def on_pane_action(self, view: PromptPane, key: str) -> None:
        if key == "variants":
            self.variants_dialog(view)
        elif key == "compare":
            others = [p for p in self.session.panes if p is not view.spec]
            self.open_diff(view.spec, others[0] if others else view.spec)
        elif key == "diff_previous":
            self.diff_with_previous(view.spec)
        elif key == "table":
            self.open_table(view.spec)
        elif key == "columns":
            self.show_columns(view)
        elif key == "stability":
            self.open_stability(view.spec)
        elif key == "run_group":
            self.run_group(view)

    # --- actions -----------------------------------------------------------------------------------------
    def variants_dialog(self, view: PromptPane) -> list | None:
        try:
            view.commit_form()
        except ValueError as exc:
            view.show_error(str(exc))
            return None
        files, names = self.quants.quantizations(view.spec) if self.quants is not None else ([], {})
        dialog = VariantsDialog(view.spec, self.parent_widget, self._backend_names(), files, names)
        if dialog.exec() != QDialog.Accepted:
            return None
        specs, again = dialog.panes(), dialog.include_source.isChecked()
        if "quantization" in dialog.axes():  # their models are opened (or put on standby) first
            asyncio.ensure_future(self.quants.open_then(view.spec, dialog.axes()["quantization"],
                                                        lambda: self.add_variants(view, specs, include_source=again)))
            return None
        return self.add_variants(view, specs, include_source=again)

    def add_variants(self, view: PromptPane, specs: list[PaneSpec], run: bool = True,
                     include_source: bool = False) -> list[PromptPane]:
        """Put the variants after the pane in one group with it and run them (the pane too with `include_source`;
        otherwise it keeps its reply). Returns their views."""
        added: list[PaneSpec] = []  # a few panes per event-loop turn: a sweep of hundreds never stalls the window
        run_sliced(added.append(spec) for spec in self.controller.add_variants_steps(view.spec, specs))
        if run and added:
            self._show_problems(self.controller.run_many(([view.spec] if include_source else []) + added))
        return [self.grid.view_of(spec) for spec in added]

    def run_group(self, view: PromptPane) -> int:
        """Run the pane's group; a pane that cannot start shows why."""
        return self._show_problems(self.controller.run_group(view.spec))

    def _show_problems(self, report) -> int:
        """Each pane that could not start shows why; the number that started."""
        for spec, message in report.problems:
            if problem_view := self.grid.view_of(spec):
                problem_view.show_error(message)
        return report.started

    def show_columns(self, view: PromptPane) -> None:
        if view.spec.group is None:
            view.show_error("This pane is in no group: make variants or a sweep first (Compare → Variants).")
            return
        self.controller.show_group_in_columns(view.spec.group)

    def open_diff(self, left: PaneSpec | PromptPane, right: PaneSpec | PromptPane, kld=None) -> DiffDialog:
        """`kld`: (QuantComparison, candidate file) to tint the candidate's side by KLD."""
        dialog = DiffDialog(self.session, _spec(left), _spec(right), self.parent_widget, self.meaning, kld)
        self._show(dialog)
        return dialog

    def diff_with_previous(self, pane: PaneSpec | PromptPane) -> DiffDialog:
        """The diff view on one pane: the version before the shown reply (left) against the shown reply."""
        dialog = self.open_diff(pane, pane)
        dialog.pick_version("left", versions.PREVIOUS)
        return dialog

    def open_table(self, focus: PaneSpec | PromptPane | None = None) -> CompareTable:
        dialog = CompareTable(self.session, _spec(focus), self.parent_widget, self.meaning, self.model_of)
        dialog.sig_pane_selected.connect(self.grid.show_pane)
        self._show(dialog)
        return dialog

    def open_stability(self, focus: PaneSpec | PromptPane | None = None) -> StabilityDialog:
        """Seed groups and repeated evaluation cells, their answers clustered by meaning; `focus`'s group first."""
        dialog = StabilityDialog(self.session, self.meaning, _spec(focus), self.parent_widget)
        dialog.sig_pane_selected.connect(self.grid.show_pane)
        self._show(dialog)
        return dialog

    def _show(self, dialog: QDialog) -> None:
        self.dialogs.append(dialog)
        dialog.finished.connect(lambda _result, d=dialog: self._closed(d))
        dialog.show()

    def _closed(self, dialog: QDialog) -> None:
        if dialog in self.dialogs:
            self.dialogs.remove(dialog)
        dialog.deleteLater()
