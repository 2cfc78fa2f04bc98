"""The status bar's readout of local models running in turn: "Running models in turn: 1 of 2 (SmolLM2), 3 of 8
panes, ETA 40 s", a bar over the panes, and Stop.

It creates the session's ModelTurns (app.backends.standby), which SessionController hands any run whose model
is on standby, so Run all, Run group, a sweep and a pane's own Run all go through it with nothing else to
change. Panes that cannot start say why in their status line; the main model's readout says when a plan has
unloaded it and shows it again when it is back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QStatusBar, QWidget

from app.backends.standby import Plan
from app.session import MAIN, SessionController
from app.session.in_turn import ModelTurns, Progress
from app.ui.bridge import EngineBridge
from app.ui.model_status import ModelStatus


class TurnsStatus(QWidget):
    def __init__(self, controller: SessionController, bridge: EngineBridge, status_bar: QStatusBar,
                 model_status: ModelStatus, show_problem: Callable[[object, str], None],
                 parent: QObject | None = None):
        """`show_problem(pane, message)`: a pane that could not start says why (the grid's view of it)."""
        super().__init__(parent)
        self.setObjectName("turnsStatus")
        self.bridge, self.status_bar, self.model_status = bridge, status_bar, model_status
        self._show_problem = show_problem
        self.turns = ModelTurns(controller, bridge.backends)
        self.label = QLabel(objectName="turnsLabel")
        self.bar = QProgressBar(maximumWidth=140, textVisible=False)
        self.stop_button = QPushButton("Stop", toolTip="Stop these panes and load no further model")
        self.stop_button.clicked.connect(lambda: (self.turns.cancel(), self.stop_button.setEnabled(False)))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget in (self.label, self.bar, self.stop_button):
            layout.addWidget(widget)
        self.hide()
        status_bar.addPermanentWidget(self)
        self.last: Progress | None = None  # the last progress shown (tests read it)
        self.turns.events.started.connect(self._started)
        self.turns.events.progress.connect(self._progress)
        self.turns.events.problems.connect(self._problems)
        self.turns.events.finished.connect(self._finished)
        bridge.sig_backends_changed.connect(self._main_model)

    def _started(self, plan: Plan) -> None:
        if plan.turns:
            self.label.setText(plan.describe())
            self.label.setToolTip(plan.describe())
            self.bar.setRange(0, sum(len(t.panes) for t in plan.turns))
            self.bar.setValue(0)
            self.stop_button.setEnabled(True)
            self.show()
        if plan.refused:
            self.status_bar.showMessage(f"{len(plan.refused)} pane(s) cannot run: their model does not fit in "
                                        "memory even alone (see the pane)", 8000)

    def _progress(self, progress: Progress) -> None:
        self.last = progress
        if progress.stage in ("loading", "unloading", "restoring"):
            self.status_bar.clearMessage()  # e.g. "All panes finished" from the turn before: not yet
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
        info = self.bridge.model_info
        if info is None and self.bridge.backends.on_standby(MAIN):
            name = Path(self.bridge.backends.config(MAIN).model_path).name
            self.model_status.label.setText(f"{name} unloaded while other models run in turn")
        elif info is not None and self.model_status.label.text().endswith("unloaded while other models run in turn"):
            self.model_status.loaded(info)
