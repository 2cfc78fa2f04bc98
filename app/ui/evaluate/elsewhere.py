"""The offer to run an evaluation's providers on a model here, when their servers are out of reach.

A promptfoo config's providers often name a server (`openai:chat:gpt-4o-mini`): another computer, or one on this
computer that does not answer (`app.evaluate.routes.elsewhere`). Before such an evaluation runs, `OfferBar`, a bar
in the Evaluation dock, names each of those providers and why, and offers to run them on the loaded model or on a
GGUF file — as `python -m app eval --model` does, through the same `variants.retarget`: each keeps its label and
settings — or to keep them as written. Nothing runs until the user chooses; a choice to run elsewhere runs at once,
"Keep as written" leaves Run to the user. Afterwards the dock's "Where" line (`variants.where_text`) says where each
provider runs. `RunElsewhere` decides when to offer and applies the choice; the evaluation's variants are the only
record of it (saved with the session).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QFileDialog, QFrame, QLabel, QPushButton, QVBoxLayout, QWidget

from app.evaluate import Evaluation
from app.evaluate.routes import Elsewhere, elsewhere
from app.evaluate.variants import retarget, where_text
from app.session.evaluation import BackendTarget
from app.ui.widgets.flow_layout import FlowLayout


class OfferBar(QFrame):
    """"These providers run on another computer…": the providers, why, and three buttons."""

    sig_loaded = Signal()
    sig_gguf = Signal()
    sig_keep = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="evalOffer", frameShape=QFrame.StyledPanel)
        self.text = QLabel(textFormat=Qt.PlainText, wordWrap=True, objectName="evalOfferText")
        self.loaded_button = QPushButton("Run on the loaded model", default=True, autoDefault=True)
        self.gguf_button = QPushButton("Run on a GGUF file…")
        self.keep_button = QPushButton("Keep as written", toolTip="Keep the providers' servers; press Run to run there")
        self.loaded_button.clicked.connect(self.sig_loaded)
        self.gguf_button.clicked.connect(self.sig_gguf)
        self.keep_button.clicked.connect(self.sig_keep)
        buttons = FlowLayout()  # wraps in a narrow dock
        for button in (self.loaded_button, self.gguf_button, self.keep_button):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addWidget(self.text)
        layout.addLayout(buttons)
        self.hide()

    @property
    def pending(self) -> bool:
        """The offer is shown and not answered yet."""
        return not self.isHidden()

    def offer(self, found: list[Elsewhere], main_model: str) -> None:
        one = len(found) == 1
        loaded = f"the loaded model ({main_model})" if main_model else "the loaded model"
        self.text.setText(
            "Out of reach from here:\n" + "\n".join(f"• {f.provider}: {f.why}" for f in found) + "\n"
            f"Run {'it' if one else 'them'} on {loaded} or a GGUF file instead, "
            f"{'with its' if one else 'each with its own'} label and settings (temperature, max tokens…)? "
            "Nothing runs until you choose.")
        self.loaded_button.setToolTip(f"Run on {loaded}, as `python -m app eval --model` does")
        self.show()


class RunElsewhere(QObject):
    sig_status = Signal(str)
    """A short note for the status bar."""

    def __init__(self, view, keys: Callable[[], object], main_model: Callable[[], str], run: Callable[[], object],
                 parent: QWidget):
        """`view` is the EvalView (its `offer` bar and Where line); `keys()` the API key store; `main_model()` the
        loaded model's name ("" when none); `run()` runs the evaluation shown; `parent` parents the file dialog."""
        super().__init__(parent)
        self.view, self.keys, self.main_model, self.run, self.window = view, keys, main_model, run, parent
        self._asked: tuple[Evaluation, list[Elsewhere]] | None = None  # the evaluation the offer is about
        self._answered: Evaluation | None = None  # "Keep as written" was chosen for it: not asked again
        view.offer.sig_loaded.connect(lambda: self.choose(BackendTarget(kind="local")))
        view.offer.sig_gguf.connect(self.pick_gguf)
        view.offer.sig_keep.connect(self.keep)

    def ask(self, evaluation: Evaluation) -> bool:
        """Offer to run elsewhere the providers of `evaluation` that run on servers out of reach (unless kept as
        written already); True while the offer stands: then nothing may run."""
        if self._asked is not None and self._asked[0] is evaluation:
            return True
        found = elsewhere(evaluation, self.keys()) if evaluation is not self._answered else []
        if not found:
            return False
        self._asked = (evaluation, found)
        self.view.offer.offer(found, self.main_model())
        self.view.set_running(False)  # Run waits for the answer
        self.sig_status.emit(f"Evaluation: {len(found)} provider(s) cannot be reached from here: choose where they "
                             "run")
        return True

    def choose(self, target: BackendTarget) -> None:
        """Run the offered providers on `target` (the loaded model, or a GGUF), each keeping its settings; run."""
        if self._asked is None:
            return
        evaluation, found = self._close()
        evaluation.variants = retarget(evaluation.variants, target, {f.variant for f in found})
        self.show_where()
        self.sig_status.emit(f"Evaluation: {', '.join(evaluation.variants[f.variant].label for f in found)} "
                             f"run on {Path(target.path).name if target.path else 'the loaded model'}")
        self.run()

    def pick_gguf(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "A model to run the providers on", str(Path.home()),
                                              "GGUF models (*.gguf);;All files (*)")
        if path:
            self.choose(BackendTarget(kind="local", path=str(Path(path).resolve())))

    def keep(self) -> None:
        """Keep the providers as written (not asked again for this evaluation); Run runs them there."""
        if self._asked is None:
            return
        evaluation, _found = self._close()
        self._answered = evaluation
        self.sig_status.emit("Evaluation: the providers are kept as written; press Run to run them on their servers")

    def _close(self) -> tuple[Evaluation, list[Elsewhere]]:
        asked, self._asked = self._asked, None
        self.view.offer.hide()
        self.view.set_running(False)
        self.show_where()
        return asked

    def reset(self) -> None:
        """Another evaluation is shown: an offer about the old one is withdrawn."""
        self._asked = None
        self.view.offer.hide()

    def show_where(self) -> None:
        """The dock's Where line, for the evaluation shown."""
        evaluation = self.view.model.evaluation
        self.view.set_where(where_text(evaluation.variants, self.main_model()) if evaluation is not None else "")
