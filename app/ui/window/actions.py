"""WindowActions: the main window's actions (each with its shortcuts and status tip), its toolbar and its menus,
part of MainWindow (a mixin: it builds on the window's own components, `self.grid`, `self.controller`,
`self.models`, `self.files`, `self.evals`..., which MainWindow makes before `_build_actions`).

Every action is the window's (a window-wide shortcut); the toolbar's column count follows the session's view, the
one place it is kept. The Compare menu is built with the arena's tools, the Model menu with the prompt formats.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel, QSpinBox

from app.session.state import COLUMNS
from app.ui.arena.tools import ArenaTools
from app.ui.models.format_menu import PromptFormatMenu


class WindowActions:
    def _action(self, text: str, shortcuts, slot, tip: str = "") -> QAction:
        action = QAction(text, self)
        action.setShortcuts([QKeySequence(s) for s in shortcuts])
        action.setShortcutContext(Qt.WindowShortcut)
        action.setStatusTip(tip or text)
        action.triggered.connect(slot)
        self.addAction(action)
        return action

    def _build_actions(self) -> None:
        self.act_add = self._action("Add pane", ["Ctrl+N"], lambda: self.grid.add_pane(), "Add a prompt pane")
        self.act_run_all = self._action("Run all", ["Ctrl+Shift+Return", "Ctrl+Shift+Enter"], self.run_all)
        self.act_stop_all = self._action("Stop all", ["Ctrl+Shift+Escape"], self.controller.stop_all)
        self.act_run = self._action("Run pane", ["Ctrl+Return", "Ctrl+Enter"],
                                    lambda: self._on_current_pane(lambda view: view.run()))
        self.act_stop = self._action("Stop pane", ["Escape"], lambda: self._on_current_pane(lambda view: view.stop()))
        self.act_duplicate = self._action("Duplicate pane", ["Ctrl+D"],
                                          lambda: self._on_current_pane(self.grid.duplicate_pane))
        self.act_remove = self._action("Remove pane", ["Ctrl+W"],
                                       lambda: self._on_current_pane(self.grid.remove_pane))
        self.act_open = self._action("Open model…", ["Ctrl+Shift+O"], self.models.choose_model,
                                     "Load a GGUF model file")
        self.act_settings = self._action("Settings…", ["Ctrl+,"], self.models.open_settings)
        self.act_backends = self._action("Backends…", [], self.models.open_backends,
                                         "Other local models and servers panes can run on")
        self.act_models = self._action("Models on this computer…", [], self.models.open_models,
                                       "Models other apps downloaded")
        self.act_quit = self._action("Quit", ["Ctrl+Q"], self.close)
        self.act_scaling = self._action("Scaling test…", [], self.models.open_scaling,
                                        "How many concurrent requests this machine takes before each gets slow")
        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setMovable(False)
        for action, name in ((self.act_add, "Add a prompt pane"), (self.act_run_all, "Run all panes"),
                             (self.act_stop_all, "Stop all panes and the evaluation")):
            toolbar.addAction(action)
            toolbar.widgetForAction(action).setAccessibleName(name)  # what a screen reader says for the button
        toolbar.addSeparator()
        toolbar.addWidget(QLabel(" Columns "))
        low, high = int(COLUMNS.low), int(COLUMNS.high)
        self.columns_box = QSpinBox(minimum=low, maximum=high, value=self.grid.columns, toolTip="Panes per row")
        self.columns_box.setAccessibleName("Panes per row")
        self.columns_box.valueChanged.connect(self.controller.set_columns)
        toolbar.addWidget(self.columns_box)
        toolbar.addSeparator()
        toolbar.addAction(self.act_open)
        toolbar.addAction(self.act_settings)
        menus = {"&File": [],
                 "&Model": [self.act_open, self.act_models, self.act_backends],
                 "&Pane": [self.act_add, self.act_duplicate, self.act_remove, None, self.act_run, self.act_stop],
                 "&Run": [self.act_run_all, self.act_stop_all],
                 "&Compare": [],
                 "&Tools": [self.act_scaling],
                 "&View": [self.stats_dock.toggleViewAction(), self.eval_dock.toggleViewAction()]}
        for title, actions in menus.items():
            menu = self.menuBar().addMenu(title)
            for action in actions:
                menu.addSeparator() if action is None else menu.addAction(action)
            if title == "&Compare":
                self.compare.build_menu(menu)
                self.arena = ArenaTools(self.session, self.runner, self.current_pane,
                                        lambda: self.bridge.model_info, self, registry=self.bridge.backends)
                self.arena.build_menu(menu)
                self.evals.build_compare_menu(menu)
            if title == "&Model":
                self.format_menu = PromptFormatMenu(self.settings, lambda: self.bridge.model_info,
                                                    lambda: self.bridge.loading, self.load_model,
                                                    self.models.confirm_interrupt, menu, self)
            if title == "&File":
                acts = self.files.build_menu(menu, self._action, [None, self.act_open, self.act_settings, None,
                                                                  self.act_quit])
                self.act_new, self.act_open_session, self.act_save = acts["new"], acts["open"], acts["save"]
                self.act_save_as, self.act_export_md = acts["save_as"], acts["export_md"]
                self.act_export_jsonl = acts["export_jsonl"]
                self.evals.build_file_menu(menu, acts["save"])

    def run_all(self) -> int:
        """Run every pane that can run; the status bar says how many started, each one that could not says why."""
        report = self.controller.run_all()
        for spec, message in report.problems:
            if view := self.grid.view_of(spec):
                view.show_error(message)
        self.statusBar().showMessage(report.note, 5000)
        return report.started

    def _columns_changed(self, columns: int) -> None:
        """The session's view is the one place the column count is kept; the toolbar follows it."""
        if self.columns_box.value() != columns:
            self.columns_box.setValue(columns)
