"""The compare workbench's actions: variants and sweeps, the diff view, the comparison table, a group in
columns, running a group. Reached from the Compare menu (for the current pane) and each pane's Compare button.

Qt-free work (the panes a sweep makes, diffs, table rows) is in app.session; this wires it to the window.
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog

from app.session import PaneSpec
from app.ui.compare_table import CompareTable
from app.ui.diff_view import DiffDialog
from app.ui.variants_dialog import VariantsDialog


class CompareTools(QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window, self.grid, self.runs = window, window.grid, window.runs
        self.dialogs: list[QDialog] = []  # open non-modal views (tests and the monkey read them)
        self.grid.sig_pane_added.connect(self._connect_pane)
        for pane in self.grid.panes:
            self._connect_pane(pane)

    def _connect_pane(self, pane) -> None:
        pane.sig_compare_action.connect(self.on_pane_action)

    def build_menu(self, menu) -> None:
        for text, keys, key in (("Variants and sweeps…", "Ctrl+Shift+V", "variants"),
                                ("Compare two panes…", "Ctrl+Shift+D", "compare"),
                                ("Comparison table…", "Ctrl+Shift+T", "table"),
                                ("Show group in columns", "Ctrl+Shift+C", "columns"),
                                ("Run group", "Ctrl+Shift+R", "run_group")):
            action = QAction(text, self.window, shortcut=QKeySequence(keys))
            action.triggered.connect(lambda _=False, k=key: self._on_current(k))
            menu.addAction(action)
        back = QAction("Back to the grid", self.window, shortcut=QKeySequence("Ctrl+Shift+G"))
        back.triggered.connect(lambda: self.grid.show_group_in_columns(None))
        menu.addAction(back)

    def _on_current(self, key: str) -> None:
        if pane := self.window.current_pane():
            self.on_pane_action(pane, key)

    def on_pane_action(self, pane, key: str) -> None:
        if key == "variants":
            self.variants_dialog(pane)
        elif key == "compare":
            others = [p for p in self.grid.panes if p is not pane]
            self.open_diff(pane, others[0] if others else pane)
        elif key == "table":
            self.open_table(pane)
        elif key == "columns":
            self.show_columns(pane)
        elif key == "run_group":
            self.run_group(pane)

    # --- actions -----------------------------------------------------------------------------------------
    def variants_dialog(self, pane) -> list | None:
        try:
            pane.commit_form()
        except ValueError as exc:
            pane.show_error(str(exc))
            return None
        dialog = VariantsDialog(pane.spec, self.window, self.window.bridge.backend_names())
        if dialog.exec() != QDialog.Accepted:
            return None
        return self.add_variants(pane, dialog.panes())

    def add_variants(self, pane, specs: list[PaneSpec], run: bool = True) -> list:
        """Put the variants after `pane` in one group with it; run the whole group."""
        if not specs:
            return []
        pane.spec.group = specs[0].group
        views, after = [], pane
        for spec in specs:
            after = self.grid.add_pane(spec, after=after)
            views.append(after)
        self.grid.refresh_titles()
        self.window.files.changed()
        if run:
            self.run_group(pane)
        return views

    def group_views(self, pane) -> list:
        group = pane.spec.group
        return [p for p in self.grid.panes if group is not None and p.spec.group == group] or [pane]

    def run_group(self, pane) -> int:
        return sum(self.runs.run_pane(view) for view in self.group_views(pane) if not view.busy)

    def show_columns(self, pane) -> None:
        if pane.spec.group is None:
            pane.show_error("This pane is in no group: make variants or a sweep first (Compare → Variants).")
            return
        self.grid.show_group_in_columns(pane.spec.group)

    def open_diff(self, left, right) -> DiffDialog:
        dialog = DiffDialog(lambda: self.grid.panes, left, right, self.window)
        self._show(dialog)
        return dialog

    def open_table(self, focus=None) -> CompareTable:
        dialog = CompareTable(lambda: self.grid.panes, focus, self.window)
        dialog.sig_pane_selected.connect(self.grid.ensureWidgetVisible)
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
