"""The window's model and backend actions: the first load, Open model…, Models on this computer…, Settings,
the scaling test, Backends…, the question before anything that stops running generations, and the notice (with
a reload) when the main model's engine has died.

Given what it needs — the bridge (it loads and reloads the main model), the settings, the runner (what a reload
would stop), the backend manager, the model readout and a way to show a message — and nothing else of the window;
`parent` only parents its dialogs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from app.backends.registry import BackendSpec
from app.engine import ModelInfo
from app.models import ModelNotFoundError, default_model_path, model_name, projectors
from app.session import SessionRunner
from app.ui import settings as keys
from app.ui.bridge import EngineBridge, ModelLoadError
from app.ui.models.backend_manager import BackendManager
from app.ui.models.backends_dialog import BackendsDialog
from app.ui.models.dialog import ModelsDialog
from app.ui.models.fit_prompt import confirm_fit
from app.ui.models.settings_dialog import SettingsDialog
from app.ui.models.status import ModelStatus
from app.ui.settings import Settings
from app.ui.stats.scaling_dialog import ScalingDialog


class ModelActions(QObject):
    def __init__(self, bridge: EngineBridge, settings: Settings, runner: SessionRunner, stop_all: Callable[[], None],
                 backends: BackendManager, model_status: ModelStatus, show_message: Callable[..., None],
                 messages: list[str], parent: QWidget):
        """`stop_all()` stops every pane (before the scaling test); `show_message(title, text, icon)` shows a
        non-blocking message; `messages` is the list of messages shown, which the engine's death notice joins."""
        super().__init__(parent)
        self.bridge, self.settings, self.runner, self.backends = bridge, settings, runner, backends
        self.model_status, self.show_message, self.messages = model_status, show_message, messages
        self._stop_all, self.parent_widget = stop_all, parent
        self._reported_dead = None  # the main backend whose dead engine was already reported
        self._restoring: asyncio.Future | None = None
        self.models_dialog: ModelsDialog | None = None  # the Models dialog, once opened
        runner.events.ended.connect(lambda _pane, _result: self._watch_main_model())
        bridge.sig_model_loaded.connect(self._on_model_loaded)

    def _watch_main_model(self) -> None:
        """A run ended: if the main model's engine has died (Engine.failure), say so once and offer a reload."""
        main = self.bridge.main
        if main is None or main.failure is None or main is self._reported_dead:
            return
        self._reported_dead = main
        path = main.model_info.path
        text = (f"The model stopped: {main.failure}.\n\nIts running panes ended with an error; nothing else was "
                "lost. Reload it to go on.")
        self.messages.append(f"The model stopped: {text}")
        self.model_status.label.setText(f"{model_name(path)} stopped — Model → reload")
        box = QMessageBox(QMessageBox.Critical, "The model stopped", text, QMessageBox.Close, self.parent_widget)
        self.reload_button = box.addButton("Reload the model", QMessageBox.AcceptRole)
        self.reload_button.clicked.connect(lambda: asyncio.ensure_future(self.load_model(path)))
        box.setAttribute(Qt.WA_DeleteOnClose)
        box.open()

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

    async def load_model(self, path: str, mmproj: str | None = None) -> ModelInfo | None:
        """Load a model (with `mmproj`, else the projector paired with it: `projector_for`); on failure say why
        and keep the current one. Returns its info, or None."""
        try:
            return await self.bridge.load_model(path, **self.settings.engine_fields(),
                                                chat_format=self.settings.chat_format(str(Path(path).resolve())),
                                                tool_format=self.settings.tool_format(str(Path(path).resolve())),
                                                mmproj=mmproj or self.projector_for(path))
        except ModelLoadError as exc:
            if self.bridge.closed:
                return None
            still = f"\n\n{model_name(self.bridge.model_info.path)} is still loaded." if self.bridge.model_info else ""
            self.show_message("Could not load the model", f"{exc}{still}", QMessageBox.Warning)
            return None
        finally:
            self.model_status.progress.hide()

    def choose_model(self) -> None:
        start = str(Path(self.settings.get(keys.LAST_MODEL) or Path.home()).parent)
        path, _ = QFileDialog.getOpenFileName(self.parent_widget, "Open a GGUF model", start,
                                              "GGUF models (*.gguf);;All files (*)")
        if path:  # the projector question only for a model whose GGUF says it reads images
            self.load_asked(path, self.projector_for(path) or (self.ask_projector(path)
                                                              if projectors.takes_images(path) else None))

    def projector_for(self, path: str) -> str | None:
        """The vision projector paired with a model: the one discovery found for it (Models dialog), else one
        beside the file (app/models/projectors.py); None for a text-only model."""
        entries = self.models_dialog.entries if self.models_dialog is not None else []
        paired = next((e.mmproj for e in entries if e.path == path and e.mmproj), None)
        found = paired or projectors.beside(path)
        return str(found) if found else None

    def ask_projector(self, path: str) -> str | None:
        """*Open model…* opened a model that reads images (its GGUF says so) with no projector beside the file:
        offer to choose one (text works without)."""
        answer = QMessageBox.question(
            self.parent_widget, "No vision projector",
            f"{Path(path).name} reads images, but no vision projector (mmproj) was found beside it.\n\nChoose one "
            "to give it images? Without one it answers text only.", QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        if answer != QMessageBox.Yes:
            return None
        chosen, _ = QFileDialog.getOpenFileName(self.parent_widget, "Choose the model's projector (mmproj)",
                                                str(Path(path).parent), "GGUF projectors (*.gguf);;All files (*)")
        return chosen or None

    def load_asked(self, path: str, mmproj: str | None = None) -> None:
        """Load after asking about memory (when it will not fit) and about running generations."""
        if confirm_fit(self.parent_widget, path, self.settings.engine_fields()) \
                and self.confirm_interrupt("Loading another model"):
            asyncio.ensure_future(self.load_model(path, mmproj))

    def open_models(self) -> ModelsDialog:
        try:
            builtin = str(default_model_path())
        except ModelNotFoundError:  # not installed: the dialog says how to add a model
            builtin = None
        info = self.bridge.model_info
        self.models_dialog = ModelsDialog(self.settings, self.parent_widget, loaded=info.path if info else None,
                                          builtin=builtin)
        self.models_dialog.sig_load.connect(self.load_asked)
        self.models_dialog.sig_add_backend.connect(  # one that does not fit beside the loaded ones waits on standby
            lambda path: asyncio.ensure_future(self.backends.add(BackendSpec(kind="local", path=path,
                                                                             mmproj=self.projector_for(path)))))
        self.models_dialog.show()
        return self.models_dialog

    def open_settings(self) -> None:
        info = self.bridge.model_info
        dialog = SettingsDialog(self.settings, self.parent_widget, info.path if info else None)
        if dialog.exec() and dialog.engine_changed:
            self.apply_engine_settings()

    def apply_engine_settings(self) -> asyncio.Future | None:
        """Reload the current model with the stored engine settings (asks first if generations run)."""
        if self.bridge.model_info and not self.bridge.loading \
                and self.confirm_interrupt("Applying the new engine settings"):
            return asyncio.ensure_future(self.load_model(self.bridge.model_info.path))
        return None

    def open_scaling(self) -> ScalingDialog:
        self.scaling_dialog = ScalingDialog(lambda: self.bridge.model_info, self.bridge.unload, self.settings,
                                            self._stop_all, self.load_model, self.confirm_interrupt,
                                            self.apply_engine_settings, self.parent_widget)
        self.scaling_dialog.show()
        return self.scaling_dialog

    def confirm_interrupt(self, what: str) -> bool:
        """Ask before an action that stops running generations; True when nothing runs."""
        if not self.bridge.busy():
            return True
        answer = QMessageBox.question(self.parent_widget, "Generations are running",
                                      f"{what} stops {self.runner.active} running generation(s). Continue?")
        return answer == QMessageBox.Yes

    def _on_model_loaded(self, info: ModelInfo) -> None:
        self.settings.set(keys.LAST_MODEL, info.path)
        self.model_status.loaded(info)

    def open_backends(self) -> BackendsDialog:
        self.backends_dialog = BackendsDialog(self.backends, self.parent_widget)
        self.backends_dialog.show()
        return self.backends_dialog
