"""Tools → Scaling test: ramp 1, 2, 4, ... N concurrent requests on the current model, chart them live, name the
knee and offer to apply it as the slot count.

The measurement needs the machine to itself (ggml's threads spin; two engines decoding at once collapse each
other), so the window's engine is stopped for the test and the model reloaded after it. The work is
`app.backends.scaling`, the same as `python -m app bench --scale`. A failure is the dialog's last word: it is
never replaced by the summary of levels that were not measured.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPushButton, QSpinBox, QVBoxLayout, QWidget

from app.backends.scaling import Level, describe, find_knee, run_scaling, table
from app.engine import ModelInfo, limits
from app.ui import settings as keys
from app.ui.settings import Settings
from app.ui.stats.scaling_plot import draw


class ScalingDialog(QDialog):
    sig_level = Signal(object)
    """A level was measured (emitted from the measuring thread; Qt queues it to the GUI thread)."""

    def __init__(self, model_info: Callable[[], ModelInfo | None], unload: Callable[[], Awaitable[None]],
                 settings: Settings, stop_all, load_model, confirm_interrupt, apply_settings,
                 parent: QWidget | None = None):
        """`model_info()` is the window's model (None: none loaded), `unload()` (a coroutine) frees it;
        `stop_all()` stops the panes; `load_model(path)` (a coroutine) reloads the window's model with its
        settings; `confirm_interrupt(what)` asks before stopping runs; `apply_settings()` reloads with new ones."""
        super().__init__(parent)
        self._model_info, self._unload, self.settings = model_info, unload, settings
        self._stop_all, self._load_model = stop_all, load_model
        self._confirm, self._apply_settings = confirm_interrupt, apply_settings
        self.setWindowTitle("Scaling test")
        self.resize(760, 560)
        self.max_box = QSpinBox(minimum=2, maximum=int(limits.SLOTS.high), value=16,
                                toolTip="The most concurrent requests to try (1, 2, 4, ... up to this)")
        self.start_button = QPushButton("Start")
        self.stop_button = QPushButton("Stop", enabled=False)
        self.apply_button = QPushButton("Apply", enabled=False, toolTip="Use the knee as the number of slots")
        top = QHBoxLayout()
        for widget in (QLabel("Up to"), self.max_box, QLabel("concurrent requests"), self.start_button,
                       self.stop_button):
            top.addWidget(widget)
        top.addStretch(1)
        top.addWidget(self.apply_button)
        self.plot = pg.PlotWidget(background="w")
        self.summary = QLabel("The window's engine is stopped during the test and reloaded after it.",
                              wordWrap=True, objectName="scalingSummary")
        self.table = QLabel(objectName="scalingTable")
        self.table.setStyleSheet("font-family: monospace")
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.table)
        layout.addWidget(self.summary)
        self.levels: list[Level] = []
        self.knee = None
        self._stop = False
        self.task: asyncio.Future | None = None
        self.start_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)
        self.apply_button.clicked.connect(self.apply)
        self.sig_level.connect(self._add_level)

    def start(self) -> asyncio.Future | None:
        model = self._model_info()
        if model is None:
            self.summary.setText("Load a model first.")
            return None
        if not self._confirm("The scaling test"):
            return None
        self.task = asyncio.ensure_future(self._run(model.path, self.max_box.value()))
        return self.task

    async def _run(self, model_path: str, max_concurrent: int) -> None:
        self.levels, self.knee, self._stop = [], None, False
        self.start_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.apply_button.setEnabled(False)
        self.summary.setText("Measuring…")
        failure = None
        try:
            self._stop_all()
            await self._unload()
            threads = self.settings.get(keys.THREADS)
            await asyncio.to_thread(run_scaling, model_path, max_concurrent, threads, self.sig_level.emit,
                                    lambda: self._stop)
        except Exception as exc:  # a model that fails to load, memory: say it, keep the window usable
            failure = f"The scaling test failed: {exc}"
        finally:
            self.start_button.setEnabled(True)
            self.stop_button.setEnabled(False)
            await self._load_model(model_path)  # the window's engine again, with its settings
        self.knee = find_knee(self.levels)
        if failure is not None:
            self.summary.setText(failure + (f" (measured before it: {describe(self.knee, self.levels)})"
                                            if self.levels else ""))
            self.apply_button.setEnabled(False)
            return
        self.summary.setText(describe(self.knee, self.levels))
        self.apply_button.setEnabled(self.knee is not None)
        if self.knee is not None:
            self.apply_button.setText(f"Apply {self.knee.concurrent} slots")

    def _add_level(self, level: Level) -> None:
        self.levels.append(level)
        draw(self.plot, self.levels, find_knee(self.levels) if len(self.levels) > 1 else None)
        self.table.setText(table(self.levels))

    def stop(self) -> None:
        self._stop = True  # the level being measured finishes first
        self.summary.setText("Stopping after this level…")

    def apply(self):
        self.settings.set(keys.SLOTS, self.knee.concurrent)
        return self._apply_settings()
