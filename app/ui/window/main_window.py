"""MainWindow: the pane grid, the stats and evaluation docks, model loading with visible progress, the actions
(each with its shortcuts and status tip), the toolbar and the menus, and the quit.

The window takes its bridge and settings from the caller (app/__main__.py wires them), so tests can give it
a temporary QSettings and drive it like a user would. It owns the one session model, the runner that drives it
(fed by every backend through the bridge, pumped on the GUI thread by RunPump) and the controller every view
calls; each component is handed the pieces it needs, never the window.

Every action is the window's (a window-wide shortcut); the toolbar's column count follows the session's view, the
one place it is kept. The Compare menu is built with the arena's tools, the Model menu with the prompt formats.
The docks share the window as app/ui/window/dock_layout.py says: the statistics become a tab beside the evaluation
while the window is too narrow for both side by side.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSpinBox,
    QWidget,
)

from app.backends import KeyStore
from app.session import PaneSpec, Session, SessionRunner
from app.session.autosave import Autosaver, Restored
from app.session.consent import ConsentLedger
from app.session.shifts import controller_for
from app.session.state import COLUMNS
from app.ui import settings as keys
from app.ui.arena.tools import ArenaTools
from app.ui.bridge import EngineBridge
from app.ui.compare.quant_tools import QuantTools
from app.ui.compare.tools import CompareTools
from app.ui.evaluate.run import EvalRun
from app.ui.evaluate.tools import EvalTools
from app.ui.evaluate.view import EvalView
from app.ui.mcp.tools import McpFeature
from app.ui.models.backend_manager import BackendManager
from app.ui.models.format_menu import PromptFormatMenu
from app.ui.models.shifts import ShiftsStatus
from app.ui.models.status import ModelStatus
from app.ui.pane.grid import PaneGrid
from app.ui.pane.prompt_pane import PromptPane
from app.ui.pane.tools_options import support_text
from app.ui.resources import app_icon
from app.ui.run_pump import RunPump
from app.ui.settings import Settings
from app.ui.stats.panel import StatsPanel
from app.ui.widgets.consent_bar import ConsentBar
from app.ui.widgets.screen_fit import first_geometry
from app.ui.widgets.sliced import run_sliced
from app.ui.window.dock_layout import SEPARATOR_PX, bottom_height, content_of, scrolled, side_crowds
from app.ui.window.examples import ExampleTools
from app.ui.window.meaning_link import MeaningLink
from app.ui.window.model_actions import ModelActions
from app.ui.window.session_files import SessionFiles
from app.ui.window.status_bar import StatusBar
from app.ui.window.theme_menu import ThemeMenu
from app.ui.window.tool_menu import ToolMenu

log = logging.getLogger("chorus.ui")
STARTER_PROMPTS = [
    "Write a haiku about autumn rain.",
    "Explain what a hash table is to a ten-year-old.",
]


class MainWindow(QMainWindow):
    """The window over one session. `session` None starts a fresh one with starter prompts; `autosave_path` (a
    path, or the Autosaver that holds this instance's claimed file) None turns autosave off (tests, the
    self-test)."""

    _side: QDockWidget | None = None  # until _init_dock_layout (the window is resized while it is built)
    _docks_pending = _docks_resized = docks_tabbed = docks_strip = False

    def __init__(self, bridge: EngineBridge, settings: Settings, session: Session | None = None,
                 autosave_path: Path | Autosaver | None = None, key_store: KeyStore | None = None,
                 parent: QWidget | None = None, restored: Restored | None = None):
        """`restored`: what the autosave brought back (its session, the file it belongs to, unsaved or not)."""
        super().__init__(parent)
        self.bridge, self.settings = bridge, settings
        restored = restored or Restored()
        session = session or restored.session
        if session is None:
            session = Session(panes=[PaneSpec(draft=prompt) for prompt in STARTER_PROMPTS])
        self.session = session
        self.pump = RunPump(self)
        self.runner = SessionRunner(bridge.backends, notify=self.pump.notify)
        self.pump.attach(self.runner)
        bridge.add_step_listener(self.runner.feed)
        self.controller = controller_for(session, self.runner, bridge.backends)  # with its models in shifts
        key_store = key_store if key_store is not None else KeyStore()
        self.consent, self.consent_bar = ConsentLedger(), ConsentBar(self)  # asks before a file's servers or code run
        self.mcp = McpFeature(self.controller, key_store, self.consent_bar, self.consent, self)  # before the panes
        self.files = SessionFiles(session, self.controller, settings, autosave_path, self, restored.file,
                                  restored.unsaved)
        self.meaning = MeaningLink(settings, lambda: bridge.model_info.path if bridge.model_info else None,
                                   lambda: self.backends.keys, self)  # embeds on its own thread
        self.files.clusters = self.meaning.clusters  # exports end with the clusters known
        self.setWindowTitle(self.files.title)
        self.setWindowIcon(app_icon())
        self.grid = PaneGrid(session, self.controller, bridge.check_grammar)
        self.setCentralWidget(self.grid)
        self.stats_panel = StatsPanel(lambda: bridge.stats(self.stats_panel.backend),
                                      lambda: bridge.reset_stats(self.stats_panel.backend))
        self.stats_dock = self._dock("Batch statistics", "statsDock", self.stats_panel, Qt.RightDockWidgetArea)
        self.resizeDocks([self.stats_dock], [self.stats_panel.minimumSizeHint().width()], Qt.Horizontal)
        self.setStatusBar(StatusBar(self))
        self._last_pane: PromptPane | None = None
        self._closing = False
        self.messages: list[str] = []  # every message box shown, newest last (tests read it)
        self.compare = CompareTools(self.controller, self.grid, bridge.backend_names, self.current_pane, self,
                                    self.meaning, bridge.backends.model_of)
        self.model_status = ModelStatus(bridge.sig_loading, lambda: bridge.main, self.statusBar())
        self.model_label = self.model_status.label
        self.backends = BackendManager(bridge, settings, key_store, self)
        self.models = ModelActions(bridge, settings, self.runner, self.controller.stop_all, self.backends,
                                   self.model_status, self.show_message, self.messages, self)
        self.shifts = ShiftsStatus(self.controller.loader, lambda: bridge.model_info, bridge.sig_backends_changed,
                                   self.statusBar(), self.model_status,
                                   lambda spec, text: (view := self.grid.view_of(spec)) and view.show_error(text),
                                   self)
        self.quants = QuantTools(self.controller, self.grid, bridge.backends, self.backends.add, settings.engine_fields,
                                 settings.model_folders, self.current_pane, self.compare.open_diff, self)
        self.compare.quants = self.quants  # the sweep grid's quantization axis
        self._build_evaluation(key_store)
        self._init_dock_layout(self.stats_dock, self.eval_dock)
        self._build_actions()
        self.grid.empty_hint.set_actions(self.act_add, self.act_open_session)  # the hint names their keys
        bridge.sig_model_loaded.connect(lambda info: self.format_menu.check(info.path))
        bridge.sig_model_loaded.connect(lambda info: self.grid.set_tool_support(support_text(info.tool_format)))
        bridge.sig_backends_changed.connect(self._backends_changed)
        bridge.sig_model_loaded.connect(self._backends_changed)  # the main model's name, where panes show it
        self.backends.sig_status.connect(lambda text: self.statusBar().showMessage(text, 6000))
        self.runner.events.idle.connect(lambda: self.statusBar().showMessage("All panes finished", 5000))
        QApplication.instance().focusChanged.connect(self._track_focus)
        self.files.sig_status.connect(self._on_files_status)
        self.files.sig_message.connect(lambda title, text: self.show_message(title, text, QMessageBox.Warning))
        session.view.events.columns.connect(self._columns_changed)
        self._restore_geometry()
        self.evals.show_if_any()
        self.evals.sig_status.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.act_stop_all.triggered.connect(self.evals.stop)

    def _dock(self, title: str, name: str, widget: QWidget, area) -> QDockWidget:
        """A dock whose content scrolls when the window is too small for it (dock_layout.py)."""
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(scrolled(widget))
        self.addDockWidget(area, dock)
        return dock

    def _build_evaluation(self, key_store) -> None:
        """The Evaluation dock under the panes (hidden until there is an evaluation), its run and its menus."""
        view = EvalView()
        self.setCorner(Qt.BottomRightCorner, Qt.RightDockWidgetArea)
        self.eval_dock = self._dock("Evaluation", "evalDock", view, Qt.BottomDockWidgetArea)
        self.eval_dock.hide()
        run = EvalRun(self.runner, self.bridge, self.settings, lambda: self.backends.keys, view, self.show_message,
                      self, self.meaning)
        self.evals = EvalTools(self.controller, view, run, self.grid, self.show_message, self.consent_bar,
                               self.consent, self)
        self.evals.sig_show.connect(self._show_evaluation)

    def _show_evaluation(self, visible: bool, new: bool) -> None:
        self.eval_dock.setVisible(visible)
        if new:
            self.resizeDocks([self.eval_dock], [bottom_height(self.height())], Qt.Vertical)

    # --- actions, toolbar and menus --------------------------------------------------------------------------
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
        self.columns_box = QSpinBox(minimum=low, maximum=high, value=self.grid.columns,
                                    toolTip="Panes per row (fewer while the window is too narrow for them)")
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
                 "&View": [self.stats_dock.toggleViewAction(), self.eval_dock.toggleViewAction()], "&Help": []}
        for title, actions in menus.items():
            menu = self.menuBar().addMenu(title)
            for action in actions:
                menu.addSeparator() if action is None else menu.addAction(action)
            if title == "&Compare":
                self.compare.build_menu(menu)
                self.quants.build_menu(menu)
                self.arena = ArenaTools(self.session, self.runner, self.current_pane,
                                        lambda: self.bridge.model_info, self, registry=self.bridge.backends)
                self.arena.build_menu(menu)
                self.evals.build_compare_menu(menu)
            if title == "&Help":
                self.examples = ExampleTools(self.files, self.controller, self.run_all, self.evals, self.arena,
                                             self.settings, lambda text: self.statusBar().showMessage(text, 20000),
                                             self.models.load_asked, lambda: self.bridge.loading,
                                             self.bridge.sig_model_loaded, self)
                self.examples.build_menu(menu)
            if title == "&Tools":
                self.tool_menu = ToolMenu(self.grid, self.current_pane, self.statusBar(), self)
                self.tool_menu.build_menu(menu)
                self.mcp.build_menu(menu)
                self.addToolBarBreak()
                self.addToolBar(self.consent_bar)  # asks before a file's MCP servers start or its code runs
            if title == "&View":
                self.theme_menu = ThemeMenu(self.settings, menu, self)
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
        """Run every pane that can run; the status bar says how many started, each one that could not says why.
        A few panes start per event-loop turn (hundreds never stall the window), as one run group."""
        report = run_sliced(self.grid.rendering(self.controller.run_all_steps()))
        for spec, message in report.problems:
            if view := self.grid.view_of(spec):
                view.show_error(message)
        self.statusBar().showMessage(report.note, 5000)
        return report.started

    def _columns_changed(self, columns: int) -> None:
        """The session's view is the one place the column count is kept; the toolbar follows it."""
        if self.columns_box.value() != columns:
            self.columns_box.setValue(columns)

    # --- the docks (app/ui/window/dock_layout.py) ------------------------------------------------------------
    def _init_dock_layout(self, side: QDockWidget, bottom: QDockWidget, side_area=Qt.RightDockWidgetArea) -> None:
        self._side, self._bottom, self._side_area = side, bottom, side_area
        self.docks_tabbed = False  # the statistics are a tab beside the evaluation because the window is narrow
        self._docks_pending = self._docks_resized = False
        self.docks_strip = False  # the statistics are a strip under the panes, which keep their share of the width
        # the whole panel's width (not the strip's), with room for the scroll bar of a window too low for it
        scroll_bar = side.widget().verticalScrollBar().sizeHint().width()
        self._side_width = content_of(side).minimumSizeHint().width() + scroll_bar
        for dock in (side, bottom):
            dock.toggleViewAction().toggled.connect(self._schedule_docks)
            dock.topLevelChanged.connect(self._schedule_docks)

    def docks_needed_width(self) -> int:
        """The narrowest window that shows both docks side by side at their contents' minimum widths."""
        return (content_of(self._bottom).minimumSizeHint().width()
                + self._side_width + SEPARATOR_PX)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._docks_resized = True
        self._schedule_docks()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._docks_resized = True
        self._schedule_docks()

    def _schedule_docks(self, *_args) -> None:
        """Re-check once control returns to the event loop, when the window's layout has followed its new size (or
        a dock was shown or hidden, floated or docked): docks resized before that are laid out again."""
        if not self._docks_pending:
            self._docks_pending = True
            QTimer.singleShot(0, self, self._apply_docks)

    @staticmethod
    def _shown(dock: QDockWidget) -> bool:
        return dock.toggleViewAction().isChecked() and not dock.isFloating()

    def _apply_docks(self) -> None:
        self._docks_pending = False
        if self._side is None:
            return
        resized, self._docks_resized = self._docks_resized, False
        side, bottom = self._side, self._bottom
        share = bottom_height(self.height())
        both = self._shown(side) and self._shown(bottom)
        crowded = side_crowds(self.width(), self._side_width)
        narrow = self.width() < self.docks_needed_width() or crowded
        if self.docks_strip and (both or not crowded or not self._shown(side)):
            self._set_strip(False)
        elif not self.docks_strip and not both and crowded and self._shown(side) and not self.docks_tabbed:
            self._set_strip(True)
        if both and narrow and not self.docks_tabbed:
            if self.dockWidgetArea(side) == self.dockWidgetArea(bottom):
                return  # the user put them together already
            self.docks_tabbed = True
            self.tabifyDockWidget(bottom, side)
            bottom.raise_()
            self.resizeDocks([bottom], [share], Qt.Vertical)
        elif self.docks_tabbed and (not narrow or not both):
            self.docks_tabbed = False
            self.addDockWidget(self._side_area, side)  # out of the tabs, back to its side
            self.resizeDocks([side], [content_of(side).minimumSizeHint().width()], Qt.Horizontal)
        short = self._side_width - side.widget().width()  # its scroll area's
        if short > 0 and self._shown(side) and not (self.docks_tabbed or self.docks_strip):
            self.resizeDocks([side], [side.width() + short], Qt.Horizontal)  # its figures whole, not scrolled
        below = self.dockWidgetArea(bottom) == Qt.BottomDockWidgetArea
        if resized and below and self._shown(bottom) and bottom.height() > share:
            # a lower window takes its height from the panes first (QMainWindow keeps the docks' sizes): the
            # evaluation gives back what it holds above its share
            self.resizeDocks([bottom], [share], Qt.Vertical)

    def _set_strip(self, strip: bool) -> None:
        """The statistics as a one-line strip under the panes, or back at their side, whole."""
        side = self._side
        self.docks_strip = strip
        content_of(side).set_compact(strip)
        self.addDockWidget(Qt.BottomDockWidgetArea if strip else self._side_area, side)
        if strip:
            self.resizeDocks([side], [content_of(side).minimumSizeHint().height()], Qt.Vertical)
        else:
            self.resizeDocks([side], [self._side_width], Qt.Horizontal)

    # --- the model (ModelActions), as the application and tests call it --------------------------------------
    def load_model(self, path: str):
        """A coroutine: load a model; on failure say why and keep the current one. Returns its info, or None."""
        return self.models.load_model(path)

    def start_initial_load(self, model: str | None = None):
        return self.models.start_initial_load(model)

    def _backends_changed(self) -> None:
        names = self.bridge.backend_names()
        labels = {name: self.bridge.backends.label(name) for name in names}
        self.grid.set_backend_names(names, labels)
        self.stats_panel.set_backends(names, labels)

    def _on_files_status(self, text: str) -> None:
        self.setWindowTitle(self.files.title)
        if not text.endswith("— Chorus"):
            self.statusBar().showMessage(text, 6000)

    # --- the pane with focus ---------------------------------------------------------------------------------
    def _track_focus(self, _old, new) -> None:
        widget = new
        while widget is not None and not isinstance(widget, PromptPane):
            widget = widget.parentWidget()
        if widget is not None:
            self._last_pane = widget

    def current_pane(self) -> PromptPane | None:
        if self._last_pane in self.grid.panes:
            return self._last_pane
        return self.grid.panes[-1] if self.grid.panes else None

    def _on_current_pane(self, action) -> None:
        if pane := self.current_pane():
            action(pane)

    def show_message(self, title: str, text: str, icon=QMessageBox.Information) -> None:
        """Non-blocking message box, so a failure never stalls the event loop (or a test)."""
        self.messages.append(f"{title}: {text}")
        box = QMessageBox(icon, title, text, QMessageBox.Ok, self)
        box.setAttribute(Qt.WA_DeleteOnClose)
        box.open()

    # --- window state ----------------------------------------------------------------------------------------
    def _restore_geometry(self) -> None:
        if not self.restoreGeometry(self.settings.get(keys.GEOMETRY)):
            self.setGeometry(first_geometry(self.screen().availableGeometry()))  # fitted, centred
        self.restoreState(self.settings.get(keys.WINDOW_STATE))

    _closed = False  # the quit finished: the next closeEvent is accepted
    _quit_task: asyncio.Task | None = None

    def closeEvent(self, event) -> None:
        """Quit: autosave (asking only if that fails), then stop every backend. Inside the running event loop
        they stop through `bridge.aclose()` in a task, so the loop never blocks, and the window closes once
        they have stopped; without a running loop (tests, tools) they stop here."""
        if self._closed:
            event.accept()
            return
        if self._closing:  # a quit already on its way closes the window when it is done
            event.ignore()
            return
        if not self.files.on_quit():
            event.ignore()
            return
        self._closing = True
        self.settings.set(keys.GEOMETRY, self.saveGeometry())
        self.settings.set(keys.WINDOW_STATE, self.saveState())
        self.settings.sync()
        self.stats_panel.timer.stop()
        self.meaning.close()
        self.mcp.close()
        self.quants.close()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop runs: stop here (each engine thread ends within ~2 s)
            self.bridge.close()
            self.files.close()
            self._closed = True
            event.accept()
            return
        event.ignore()
        self.setEnabled(False)  # nothing more to click while the backends stop
        self._quit_task = loop.create_task(self._finish_quit())

    async def _finish_quit(self) -> None:
        try:
            await self.bridge.aclose()
            await asyncio.to_thread(self.files.close)
        finally:
            self._closed = True
            self.close()
