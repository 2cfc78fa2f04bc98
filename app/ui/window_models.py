"""The window's model and backend actions: the first load, Open model…, Models on this computer…, Settings,
the scaling test, Backends…, the question before anything that stops running generations, and the notice (with
a reload) when the main model's engine has died.

A mixin of MainWindow (it uses the window's bridge, settings, controller, runner and status widgets), kept apart
so the window's layout and its model handling each stay one concern.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox

from app.backends.registry import BackendSpec
from app.engine import ModelInfo
from app.models import ModelNotFoundError, default_model_path
from app.ui import settings as keys
from app.ui.backends_dialog import BackendsDialog
from app.ui.bridge import ModelLoadError
from app.ui.fit_prompt import confirm_fit
from app.ui.models_dialog import ModelsDialog
from app.ui.scaling_dialog import ScalingDialog
from app.ui.settings_dialog import SettingsDialog


class ModelActions:
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
        self.model_status.label.setText(f"{Path(path).name} stopped — Model → reload")
        box = QMessageBox(QMessageBox.Critical, "The model stopped", text, QMessageBox.Close, self)
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
        self.models_dialog.sig_add_backend.connect(  # one that does not fit beside the loaded ones waits on standby
            lambda path: asyncio.ensure_future(self.backends.add(BackendSpec(kind="local", path=path))))
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
        self.scaling_dialog = ScalingDialog(self.bridge, self.settings, self.controller.stop_all, self.load_model,
                                            self.confirm_interrupt, self.apply_engine_settings, self)
        self.scaling_dialog.show()
        return self.scaling_dialog

    def confirm_interrupt(self, what: str) -> bool:
        """Ask before an action that stops running generations; True when nothing runs."""
        if not self.bridge.busy():
            return True
        answer = QMessageBox.question(self, "Generations are running",
                                      f"{what} stops {self.runner.active} running generation(s). Continue?")
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
