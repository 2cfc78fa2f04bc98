"""MainWindow: the pane grid, the stats and evaluation docks, model loading with visible progress, and the quit;
its actions, toolbar and menus are window_actions.py's.

The window takes its bridge and settings from the caller (app/__main__.py wires them), so tests can give it
a temporary QSettings and drive it like a user would. It owns the one session model, the runner that drives it
(fed by every backend through the bridge, pumped on the GUI thread by RunPump) and the controller every view
calls; each component is handed the pieces it needs, never the window.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QMainWindow,
    QMessageBox,
    QWidget,
)

from app.backends import KeyStore
from app.session import PaneSpec, Session, SessionRunner
from app.session.autosave import Autosaver, Restored
from app.session.turn_loader import controller_for
from app.ui import settings as keys
from app.ui.bridge import EngineBridge
from app.ui.compare.tools import CompareTools
from app.ui.evaluate.run import EvalRun
from app.ui.evaluate.tools import EvalTools
from app.ui.evaluate.view import EvalView
from app.ui.models.backend_manager import BackendManager
from app.ui.models.shifts import TurnsStatus
from app.ui.models.status import ModelStatus
from app.ui.pane.grid import PaneGrid
from app.ui.pane.prompt_pane import PromptPane
from app.ui.resources import app_icon
from app.ui.run_pump import RunPump
from app.ui.settings import Settings
from app.ui.stats.panel import StatsPanel
from app.ui.window.actions import WindowActions
from app.ui.window.dock_layout import DockLayout, bottom_height, scrolled
from app.ui.window.meaning_link import MeaningLink
from app.ui.window.models import ModelActions
from app.ui.window.screen_fit import first_geometry
from app.ui.window.session_files import SessionFiles
from app.ui.window.status_bar import StatusBar

log = logging.getLogger("chorus.ui")
STARTER_PROMPTS = [
    "Write a haiku about autumn rain.",
    "Explain what a hash table is to a ten-year-old.",
]


class MainWindow(WindowActions, DockLayout, QMainWindow):
    """The window over one session. `session` None starts a fresh one with starter prompts; `autosave_path` (a
    path, or the Autosaver that holds this instance's claimed file) None turns autosave off (tests, the
    self-test)."""

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
        self.controller = controller_for(session, self.runner, bridge.backends)  # with its models in turn
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
                                    self.meaning)
        self.model_status = ModelStatus(bridge.sig_loading, lambda: bridge.main, self.statusBar())
        self.model_label = self.model_status.label
        self.backends = BackendManager(bridge, settings, key_store, self)
        self.models = ModelActions(bridge, settings, self.runner, self.controller.stop_all, self.backends,
                                   self.model_status, self.show_message, self.messages, self)
        self.turns = TurnsStatus(self.controller.loader, lambda: bridge.model_info, bridge.sig_backends_changed,
                                 self.statusBar(), self.model_status,
                                 lambda spec, text: (view := self.grid.view_of(spec)) and view.show_error(text), self)
        self._build_evaluation(key_store)
        self._init_dock_layout(self.stats_dock, self.eval_dock)
        self._build_actions()
        bridge.sig_model_loaded.connect(lambda info: self.format_menu.check(info.path))
        bridge.sig_backends_changed.connect(self._backends_changed)
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
        self.evals = EvalTools(self.controller, view, run, self.grid, self.show_message, self)
        self.evals.sig_show.connect(self._show_evaluation)

    def _show_evaluation(self, visible: bool, new: bool) -> None:
        self.eval_dock.setVisible(visible)
        if new:
            self.resizeDocks([self.eval_dock], [bottom_height(self.height())], Qt.Vertical)

    # --- the model (ModelActions), as the application and tests call it --------------------------------------
    def load_model(self, path: str):
        """A coroutine: load a model; on failure say why and keep the current one. Returns its info, or None."""
        return self.models.load_model(path)

    def start_initial_load(self, model: str | None = None):
        return self.models.start_initial_load(model)

    def _backends_changed(self) -> None:
        names = self.bridge.backend_names()
        self.grid.set_backend_names(names)
        self.stats_panel.set_backends(names)

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
