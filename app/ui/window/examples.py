"""Help → Examples…: the ready sessions of app/session/examples.py, listed with their one-line descriptions, and
opened in the window on the loaded model.

Choosing one and *Open* is the user's consent to open it: it replaces the session as File → New does (asking
first when the session has changes saved nowhere: SessionFiles.replace_with), then starts what the example shows,
and nothing else: its panes' runs on the loaded model, its evaluation, or the arena over its panes. No file is
read, no process started. Where the embedded model is too weak to make a feature convincing, the dialog says so
and offers the one curated small model (examples.CURATED) from the Hugging Face hub, with its size and whether it
fits in memory; one click downloads it in the hub dialog (app/ui/models/hub.py), a second loads it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.models import hub
from app.models.fit import available_ram, size_label
from app.session import PaneSpec, SessionController
from app.session.examples import EXAMPLES, TOOL_ROUNDS, Example, HubModel, example
from app.ui.models.hub import HubDialog
from app.ui.settings import Settings


def offer_text(model: HubModel, memory: int) -> str:
    """The offer's button: the model, its size and whether it fits in `memory` bytes."""
    need = hub.needed(hub.HubFile(model.repo_id, (model.filename,), model.size, ""))
    fits = "fits in memory" if need <= memory else f"too big for the {size_label(memory)} of memory free"
    return f"Download {model.name} · {size_label(model.size)} · {fits}"


class ExamplesDialog(QDialog):
    sig_open = Signal(str)
    """Open the example with this key."""
    sig_fetch = Signal(object)
    """Download this HubModel."""
    sig_load = Signal(str)
    """Load the model downloaded at this path."""

    def __init__(self, examples: tuple[Example, ...] = EXAMPLES, memory: Callable[[], int] = available_ram,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Examples")
        self.examples, self._memory = examples, memory
        self.downloaded: dict[HubModel, str] = {}  # model -> its local path, once downloaded
        self.list = QListWidget(objectName="examplesList", wordWrap=True)
        self.list.setStyleSheet("QListWidget::item { padding: 5px 2px; }")
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # the lines wrap
        for item in examples:
            entry = QListWidgetItem(f"{item.title}\n{item.description}")
            entry.setToolTip(item.description)
            self.list.addItem(entry)
        self.detail = QLabel(objectName="exampleDetail", wordWrap=True, textFormat=Qt.RichText)
        self.detail.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.model_button = QPushButton(objectName="exampleModel")
        self.model_button.clicked.connect(self._model_clicked)
        self.open_button = QPushButton("Open example", default=True)
        self.open_button.clicked.connect(self._open)
        self.list.itemActivated.connect(lambda _item: self._open())
        self.list.currentRowChanged.connect(self._show)
        right = QVBoxLayout()
        right.addWidget(self.detail, 1)
        right.addWidget(self.model_button)
        body = QHBoxLayout()
        body.addWidget(self.list, 3)
        body.addLayout(right, 2)
        buttons = QHBoxLayout()
        buttons.addWidget(QLabel("Opening an example replaces this session (you are asked first if it has unsaved "
                                 "changes); it runs on the loaded model and downloads nothing.", wordWrap=True), 1)
        buttons.addWidget(self.open_button)
        buttons.addWidget(QPushButton("Close", clicked=self.reject, autoDefault=False))
        layout = QVBoxLayout(self)
        layout.addLayout(body, 1)
        layout.addLayout(buttons)
        self.resize(820, 460)
        self.list.setCurrentRow(0)

    @property
    def current(self) -> Example:
        return self.examples[max(self.list.currentRow(), 0)]

    def select(self, key: str) -> None:
        self.list.setCurrentRow(next(i for i, item in enumerate(self.examples) if item.key == key))

    def _show(self, _row: int = 0) -> None:
        item = self.current
        text = f"<b>{item.title}</b><p>{item.description}</p><p><i>Look at:</i> {item.look}.</p>"
        if item.stronger:
            text += f"<p><b>With a stronger model.</b> {item.stronger}</p>"
        self.detail.setText(text)
        model = item.model
        self.model_button.setVisible(model is not None)
        if model is not None:
            path = self.downloaded.get(model)
            self.model_button.setText(f"Load {model.name} now" if path else offer_text(model, self._memory()))
            self.model_button.setToolTip(f"{model.repo_id} · {model.filename}")

    def _model_clicked(self) -> None:
        model = self.current.model
        if model in self.downloaded:
            self.sig_load.emit(self.downloaded[model])
        elif model is not None:
            self.sig_fetch.emit(model)

    def downloaded_to(self, model: HubModel, path: str) -> None:
        self.downloaded[model] = path
        self._show()

    def _open(self) -> None:
        self.sig_open.emit(self.current.key)
        self.accept()


class ExampleTools(QObject):
    """The Help menu's Examples… and what opening one does. Given the pieces it needs: the session files (to
    replace the session as New does), the controller, the window's Run all, the evaluation's and the arena's
    tools, the status bar's `say(text)`, `load(path)` for a downloaded model, whether the model is `loading()`
    and the signal that says it has loaded (an example opened meanwhile starts then)."""

    def __init__(self, files, controller: SessionController, run_all: Callable[[], int], evals, arena,
                 settings: Settings, say: Callable[[str], None], load: Callable[[str], None],
                 loading: Callable[[], bool], model_loaded, parent: QWidget):
        super().__init__(parent)
        self.loading, self.model_loaded = loading, model_loaded
        self._pending: Callable | None = None  # an example's start, waiting for the model
        self.files, self.controller, self.run_all = files, controller, run_all
        self.evals, self.arena, self.settings, self.say, self.load = evals, arena, settings, say, load
        self.parent_widget = parent
        self.dialog: ExamplesDialog | None = None
        self.hub_dialog: HubDialog | None = None
        self.loop = None  # the tools example's auto-continue
        self._rerun: Callable | None = None  # the versions example's wait for its first replies

    def build_menu(self, menu) -> QAction:
        self.act_examples = QAction("Examples…", self.parent_widget,
                                    statusTip="Ready sessions that show each feature on the loaded model")
        self.act_examples.triggered.connect(lambda: self.open_dialog())
        menu.addAction(self.act_examples)
        return self.act_examples

    def open_dialog(self) -> ExamplesDialog:
        if self.dialog is None:
            self.dialog = ExamplesDialog(parent=self.parent_widget)
            self.dialog.sig_open.connect(self.open)
            self.dialog.sig_fetch.connect(self.fetch)
            self.dialog.sig_load.connect(self.load)
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    def fetch(self, model: HubModel) -> HubDialog:
        """Download the offered model in the hub dialog (progress, Cancel, resume); the offer then loads it."""
        self.hub_dialog = HubDialog(self.settings, self.parent_widget)
        self.hub_dialog.sig_downloaded.connect(lambda path: self.dialog and self.dialog.downloaded_to(model, path))
        self.hub_dialog.show()
        self.hub_dialog.fetch(model.repo_id, model.filename)
        return self.hub_dialog

    def open(self, key: str) -> bool:
        """Open the example `key` in place of the session (asking first about unsaved changes) and start it."""
        item = example(key)
        self.evals.stop()
        self._stop_waiting()
        if not self.files.replace_with(item.session(), f"Opening the example “{item.title}”"):
            return False
        panes = list(self.controller.session.panes)
        if self.loading():
            self.say(f"Example: {item.title} — it starts once the model has loaded")
            self._pending = lambda _info: self._start(item, panes)
            self.model_loaded.connect(self._pending)
            return True
        self._start(item, panes)
        return True

    def _start(self, item: Example, panes: list[PaneSpec]) -> None:
        self._stop_waiting()
        if item.start == "evaluate":
            self.evals.run()
        elif item.start == "arena":
            if self.arena.arena is not None:  # one open over other panes: the example's own instead
                self.arena.arena.close()
            self.arena.open_arena()
        else:
            self.run_all()
        if item.start == "tools":
            self.loop = self.controller.auto_continue(panes, TOOL_ROUNDS)
            self.loop.finished.connect(lambda loop: self.say(
                f"Example: {item.title} — the calls were answered with the mock result and the model went on "
                f"({loop.rounds} round{'s' * (loop.rounds != 1)} of auto-continue); its cards are in each pane"))
        elif item.start == "versions":
            self._regenerate_once(panes)
        self.say(f"Example: {item.title} — look at {item.look}")  # after Run all's own note

    def _regenerate_once(self, panes: list[PaneSpec]) -> None:
        """When each pane's first reply has ended, regenerate it once: the pane then holds two versions."""
        waiting = {pane.id for pane in panes}

        def ended(pane: PaneSpec, result) -> None:
            if pane.id in waiting:
                waiting.discard(pane.id)
                if result.finish_reason in ("stop", "length"):
                    QTimer.singleShot(0, self, lambda: self._rerun_pane(pane))
            if not waiting:
                self._stop_waiting()

        self._rerun = ended
        self.controller.runner.events.ended.connect(ended)

    def _rerun_pane(self, pane: PaneSpec) -> None:
        try:
            self.controller.rerun(pane)
        except (ValueError, RuntimeError) as exc:  # the model went away meanwhile: the pane says why
            self.say(f"{pane.label}: {exc}")

    def _stop_waiting(self) -> None:
        if self._pending is not None:
            self.model_loaded.disconnect(self._pending)
            self._pending = None
        if self._rerun is not None:
            self.controller.runner.events.ended.disconnect(self._rerun)
            self._rerun = None
