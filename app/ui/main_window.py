"""MainWindow: toolbar and menus, the pane grid, the stats dock, and model loading with visible progress.

The window takes its bridge and settings from the caller (app/__main__.py wires them), so tests can give it
a temporary QSettings and drive it like a user would.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSpinBox,
    QWidget,
)

from app.backends import KeyStore
from app.engine import ModelInfo
from app.models import ModelNotFoundError, default_model_path
from app.session import PaneSpec, Session
from app.session.backends import BackendSpec
from app.ui import settings as keys
from app.ui.backend_manager import BackendManager
from app.ui.backends_dialog import BackendsDialog
from app.ui.bridge import EngineBridge, ModelLoadError
from app.ui.compare_tools import CompareTools
from app.ui.fit_prompt import confirm_fit
from app.ui.format_menu import PromptFormatMenu
from app.ui.model_status import ModelStatus
from app.ui.models_dialog import ModelsDialog
from app.ui.pane_grid import PaneGrid
from app.ui.prompt_pane import PromptPane
from app.ui.resources import app_icon
from app.ui.runs import RunCoordinator
from app.ui.scaling_dialog import ScalingDialog
from app.ui.session_files import SessionFiles
from app.ui.settings import Settings
from app.ui.settings_dialog import SettingsDialog
from app.ui.stats_panel import StatsPanel

log = logging.getLogger("chorus.ui")
STARTER_PROMPTS = [
    "Write a haiku about autumn rain.",
    "Explain what a hash table is to a ten-year-old.",
]


class MainWindow(QMainWindow):
    """The window over one session. `session` None starts a fresh one with starter prompts; `autosave_path`
    None turns autosave off (tests, the self-test)."""

    def __init__(self, bridge: EngineBridge, settings: Settings, session: Session | None = None,
                 autosave_path: Path | None = None, key_store: KeyStore | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.bridge, self.settings = bridge, settings
        if session is None:
            session = Session(panes=[PaneSpec(draft=prompt) for prompt in STARTER_PROMPTS])
        self.files = SessionFiles(self, settings, session, autosave_path)
        self.setWindowTitle(self.files.title)
        self.setWindowIcon(app_icon())
        self.grid = PaneGrid(session, columns=session.view.get("columns", settings.get(keys.COLUMNS)))
        self.setCentralWidget(self.grid)
        self.runs = RunCoordinator(bridge, self.grid, self)
        self.stats_panel = StatsPanel(lambda: bridge.stats(self.stats_panel.backend),
                                      lambda: bridge.reset_stats(self.stats_panel.backend))
        self.stats_dock = QDockWidget("Batch statistics", self)
        self.stats_dock.setObjectName("statsDock")
        self.stats_dock.setWidget(self.stats_panel)
        self.addDockWidget(Qt.RightDockWidgetArea, self.stats_dock)
        self.resizeDocks([self.stats_dock], [360], Qt.Horizontal)
        self._last_pane: PromptPane | None = None
        self._closing = False
        self.messages: list[str] = []  # every message box shown, newest last (tests read it)
        self.compare = CompareTools(self)
        self._build_actions()
        self.model_status = ModelStatus(bridge, self.statusBar())
        self.model_label = self.model_status.label
        self.backends = BackendManager(bridge, settings, key_store, self)
        bridge.sig_model_loaded.connect(self._on_model_loaded)
        bridge.sig_backends_changed.connect(self._backends_changed)
        self.backends.sig_status.connect(lambda text: self.statusBar().showMessage(text, 6000))
        self.runs.sig_message.connect(lambda text: self.statusBar().showMessage(text, 5000))
        self.runs.sig_all_finished.connect(lambda: self.statusBar().showMessage("All panes finished", 5000))
        QApplication.instance().focusChanged.connect(self._track_focus)
        self.grid.sig_changed.connect(self.files.changed)
        self.runs.sig_session_changed.connect(self.files.changed)
        self.files.sig_replaced.connect(self._show_session)
        self.files.sig_status.connect(self._on_files_status)
        self._restore_geometry()

    # --- actions -------------------------------------------------------------------------------------------
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
        self.act_run_all = self._action("Run all", ["Ctrl+Shift+Return", "Ctrl+Shift+Enter"], self.runs.run_all)
        self.act_stop_all = self._action("Stop all", ["Ctrl+Shift+Escape"], self.runs.stop_all)
        self.act_run = self._action("Run pane", ["Ctrl+Return", "Ctrl+Enter"],
                                    lambda: self._on_current_pane(self.runs.run_pane))
        self.act_stop = self._action("Stop pane", ["Escape"], lambda: self._on_current_pane(self.runs.stop_pane))
        self.act_duplicate = self._action("Duplicate pane", ["Ctrl+D"],
                                          lambda: self._on_current_pane(self.grid.duplicate_pane))
        self.act_remove = self._action("Remove pane", ["Ctrl+W"],
                                       lambda: self._on_current_pane(self.grid.remove_pane))
        self.act_open = self._action("Open model…", ["Ctrl+Shift+O"], self.choose_model, "Load a GGUF model file")
        self.act_settings = self._action("Settings…", ["Ctrl+,"], self.open_settings)
        self.act_backends = self._action("Backends…", [], self.open_backends,
                                         "Other local models and servers panes can run on")
        self.act_models = self._action("Models on this computer…", [], self.open_models, "Models other apps downloaded")
        self.act_quit = self._action("Quit", ["Ctrl+Q"], self.close)
        self.act_scaling = self._action("Scaling test…", [], self.open_scaling,
                                        "How many concurrent requests this machine takes before each gets slow")
        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setMovable(False)
        for action in (self.act_add, self.act_run_all, self.act_stop_all):
            toolbar.addAction(action)
        toolbar.addSeparator()
        toolbar.addWidget(QLabel(" Columns "))
        low, high = keys.COLUMNS.range
        self.columns_box = QSpinBox(minimum=low, maximum=high, value=self.grid.columns, toolTip="Panes per row")
        self.columns_box.valueChanged.connect(self._set_columns)
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
                 "&View": [self.stats_dock.toggleViewAction()]}
        for title, actions in menus.items():
            menu = self.menuBar().addMenu(title)
            for action in actions:
                menu.addSeparator() if action is None else menu.addAction(action)
            if title == "&Compare":
                self.compare.build_menu(menu)
            if title == "&Model":
                self.format_menu = PromptFormatMenu(self, menu)
            if title == "&File":
                self.files.build_menu(menu, self._action, [None, self.act_open, self.act_settings, None,
                                                           self.act_quit])

    def _show_session(self, session: Session) -> None:
        """Another session replaces this one: its runs stop, its views go, the new one's come."""
        self.runs.stop_all()
        self.runs.use_session(session)
        self.grid.set_session(session)
        self.columns_box.setValue(session.view.get("columns", self.grid.columns))

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

    def _set_columns(self, columns: int) -> None:
        self.grid.set_columns(columns)
        self.settings.set(keys.COLUMNS, columns)
        if self.grid.session.view.get("columns") != columns:
            self.grid.session.view["columns"] = columns
            self.files.changed()

    # --- models ----------------------------------------------------------------------------------------------
    def start_initial_load(self, model: str | None = None) -> asyncio.Task | None:
        """Load the model given on the command line, else the last one used, else the embedded default."""
        candidates = [model] if model else [self.settings.get(keys.LAST_MODEL) or None]
        try:
            candidates.append(str(default_model_path()))
        except ModelNotFoundError as exc:
            self.show_message("No default model", str(exc), QMessageBox.Warning)
        candidates = [c for c in dict.fromkeys(candidates) if c]
        self._restoring = asyncio.ensure_future(self.backends.restore())  # saved servers and models, meanwhile
        return asyncio.ensure_future(self._load_first_working(candidates)) if candidates else None

    async def _load_first_working(self, paths: list[str]) -> ModelInfo | None:
        for path in paths:
            info = await self.load_model(path)
            if info is not None:
                return info
        return None

    async def load_model(self, path: str) -> ModelInfo | None:
        """Load a model; on failure say why and keep the current one. Returns its info, or None."""
        try:
            return await self.bridge.load_model(path, **self.settings.engine_fields(),
                                                chat_format=self.settings.chat_format(str(Path(path).resolve())))
        except ModelLoadError as exc:
            if self._closing:
                return None
            still = f"\n\n{self.bridge.model_info.name} is still loaded." if self.bridge.model_info else ""
            self.show_message("Could not load the model", f"{exc}{still}", QMessageBox.Warning)
            return None
        finally:
            self.model_status.progress.hide()

    def choose_model(self) -> None:
        start = str(Path(self.settings.get(keys.LAST_MODEL) or Path.home()).parent)
        path, _ = QFileDialog.getOpenFileName(self, "Open a GGUF model", start, "GGUF models (*.gguf);;All files (*)")
        if path:
            self.load_asked(path)

    def load_asked(self, path: str) -> None:
        """Load after asking about memory (when it will not fit) and about running generations."""
        if confirm_fit(self, path, self.settings.engine_fields()) and self.confirm_interrupt("Loading another model"):
            asyncio.ensure_future(self.load_model(path))

    def open_models(self) -> ModelsDialog:
        self.models_dialog = ModelsDialog(self.settings, self)
        self.models_dialog.sig_load.connect(self.load_asked)
        self.models_dialog.sig_add_backend.connect(
            lambda path: confirm_fit(self, path, self.settings.engine_fields())
            and asyncio.ensure_future(self.backends.add(BackendSpec(kind="local", path=path))))
        self.models_dialog.show()
        return self.models_dialog

    def open_settings(self) -> None:
        dialog = SettingsDialog(self.settings, self, self.bridge.model_info.path if self.bridge.model_info else None)
        if dialog.exec() and dialog.engine_changed:
            self.apply_engine_settings()

    def apply_engine_settings(self) -> asyncio.Future | None:
        """Reload the current model with the stored engine settings (asks first if generations run)."""
        if self.bridge.model_info and not self.bridge.loading \
                and self.confirm_interrupt("Applying the new engine settings"):
            return asyncio.ensure_future(self.load_model(self.bridge.model_info.path))
        return None

    def open_scaling(self) -> ScalingDialog:
        self.scaling_dialog = ScalingDialog(self)
        self.scaling_dialog.show()
        return self.scaling_dialog

    def confirm_interrupt(self, what: str) -> bool:
        """Ask before an action that stops running generations; True when nothing runs."""
        if not self.bridge.busy():
            return True
        answer = QMessageBox.question(self, "Generations are running",
                                      f"{what} stops {self.runs.active_runs} running generation(s). Continue?")
        return answer == QMessageBox.Yes

    def _on_model_loaded(self, info: ModelInfo) -> None:
        self.settings.set(keys.LAST_MODEL, info.path)
        self.model_status.loaded(info)
        self.format_menu.check(info.path)

    def _backends_changed(self) -> None:
        names = self.bridge.backend_names()
        self.grid.set_backend_names(names)
        self.stats_panel.set_backends(names)

    def open_backends(self) -> BackendsDialog:
        self.backends_dialog = BackendsDialog(self.backends, self)
        self.backends_dialog.show()
        return self.backends_dialog

    def show_message(self, title: str, text: str, icon=QMessageBox.Information) -> None:
        """Non-blocking message box, so a failure never stalls the event loop (or a test)."""
        self.messages.append(f"{title}: {text}")
        box = QMessageBox(icon, title, text, QMessageBox.Ok, self)
        box.setAttribute(Qt.WA_DeleteOnClose)
        box.open()

    # --- window state ----------------------------------------------------------------------------------------
    def _restore_geometry(self) -> None:
        if not self.restoreGeometry(self.settings.get(keys.GEOMETRY)):
            self.resize(1400, 860)
        self.restoreState(self.settings.get(keys.WINDOW_STATE))

    def closeEvent(self, event) -> None:
        if not self.files.on_quit():
            event.ignore()
            return
        self._closing = True
        self.settings.set(keys.GEOMETRY, self.saveGeometry())
        self.settings.set(keys.WINDOW_STATE, self.saveState())
        self.settings.sync()
        self.stats_panel.timer.stop()
        self.bridge.close()  # cancels running generations; the engine thread ends within ~2 s
        event.accept()
