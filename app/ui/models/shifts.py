"""The status bar's readout of local models running in shifts: "Running models in shifts: 1 of 2 (SmolLM2), 3 of
8 panes, ETA 40 s", a bar over the panes, and Stop.

It only shows the session's ModelShifts (app.session.shifts), which the controller owns (`controller_for`) and
hands any run whose model is on standby: without this readout, models still run in shifts. Panes that cannot start
say why in their status line; the main model's readout says when a plan has unloaded it and shows it again when
it is back.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, SignalInstance
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QStatusBar, QWidget

from app.backends.shifts import Plan
from app.engine import ModelInfo
from app.models import model_name
from app.session import MAIN
from app.session.shifts import ModelShifts, Progress
from app.ui.models.status import ModelStatus
from app.ui.widgets.elided_label import ElidedLabel

UNLOADED = "unloaded while other models run in shifts"  # the main model's readout while a plan has unloaded it


class ShiftsStatus(QWidget):
    def __init__(self, shifts: ModelShifts, model_info: Callable[[], ModelInfo | None],
                 backends_changed: SignalInstance, status_bar: QStatusBar, model_status: ModelStatus,
                 show_problem: Callable[[object, str], None], parent: QObject | None = None):
        """`model_info()`: the main model's, None while none is loaded; `backends_changed`: the signal a model
        loading or unloading emits; `show_problem(pane, message)`: a pane that could not start says why."""
        super().__init__(parent)
        self.setObjectName("shiftsStatus")
        self.shifts, self.registry, self._model_info = shifts, shifts.registry, model_info
        self.status_bar, self.model_status = status_bar, model_status
        self._show_problem = show_problem
        self.label = ElidedLabel(objectName="shiftsLabel")
        self.bar = QProgressBar(maximumWidth=140, textVisible=False)
        self.stop_button = QPushButton("Stop", toolTip="Stop these panes and load no further model")
        self.stop_button.clicked.connect(lambda: (self.shifts.cancel(), self.stop_button.setEnabled(False)))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget in (self.label, self.bar, self.stop_button):
            layout.addWidget(widget)
        self.hide()
        status_bar.addPermanentWidget(self)
        self.last: Progress | None = None  # the last progress shown (tests read it)
        self.shifts.events.started.connect(self._started)
        self.shifts.events.progress.connect(self._progress)
        self.shifts.events.problems.connect(self._problems)
        self.shifts.events.finished.connect(self._finished)
        backends_changed.connect(self._main_model)

    def _started(self, plan: Plan) -> None:
        if plan.shifts:
            self.label.setText(plan.describe())
            self.label.setToolTip(plan.describe())
            self.bar.setRange(0, sum(len(s.panes) for s in plan.shifts))
            self.bar.setValue(0)
            self.stop_button.setEnabled(True)
            self.show()
        if plan.refused:
            self.status_bar.showMessage(f"{len(plan.refused)} pane(s) cannot run: their model does not fit in "
                                        "memory even alone (see the pane)", 8000)

    def _progress(self, progress: Progress) -> None:
        self.last = progress
        if progress.stage in ("loading", "unloading", "restoring"):
            self.status_bar.clearMessage()  # e.g. "All panes finished" from the shift before: not yet
        self.label.setText(progress.describe())
        self.bar.setMaximum(max(1, progress.panes_total))
        self.bar.setValue(progress.panes_done)

    def _problems(self, problems) -> None:
        for pane, message in problems:
            self._show_problem(pane, message)

    def _finished(self, progress: Progress) -> None:
        self.last = progress
        self.hide()
        failed = "\n".join(progress.failed)
        self.status_bar.showMessage(progress.describe() + (f" — {progress.failed[0]}" if failed else ""), 8000)
        self._main_model()

    def _main_model(self) -> None:
        """The main model's readout follows a plan that unloads it and loads it again."""
        info = self._model_info()
        if info is None and self.registry.on_standby(MAIN):
            name = model_name(self.registry.config(MAIN).model_path)
            self.model_status.label.setText(f"{name} {UNLOADED}")
        elif info is not None and self.model_status.label.text().endswith(UNLOADED):
            self.model_status.loaded(info)
