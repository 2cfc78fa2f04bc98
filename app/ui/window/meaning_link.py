"""MeaningLink: the window's Meaning (app/session/meaning.py) — its worker wakes the GUI thread through a queued
signal, and the GUI thread pumps the finished vectors into it; the embedder is Settings → Embedder, on the main
model's file when that says "local".

`sync()` re-reads the settings and the main model (after the Settings dialog, after a model loads, before a view
asks); nothing is opened until a view asks for a similarity or clusters. Views read `meaning` and listen to
`meaning.events.changed`; none of them ever embeds.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.evaluate.routes import api_key
from app.session.evaluation import BackendTarget
from app.session.meaning import Meaning
from app.session.stability import answer_sets
from app.session.stability_report import Clusters, from_vectors
from app.ui import settings as keys


class MeaningLink(QObject):
    _sig_wake = Signal()
    """Emitted from the worker thread when vectors wait; queued to the GUI thread."""

    def __init__(self, settings, main_model, key_store=None, parent: QObject | None = None):
        """`main_model()` is the main model's path (None while none is loaded); `key_store()` the API keys."""
        super().__init__(parent)
        self.settings, self._main_model, self._key_store = settings, main_model, key_store
        self.meaning = Meaning(notify=self._sig_wake.emit)
        self._sig_wake.connect(self.meaning.pump)

    def sync(self) -> Meaning:
        """The embedder and cluster distance of the settings now (vectors are kept while they stay the same)."""
        spec = self.settings.get(keys.EMBEDDER)
        key = None
        if spec.startswith(("http://", "https://")) and self._key_store is not None:
            key = api_key(BackendTarget(kind="server", url=spec.rstrip("/"), api_key_env="CHORUS_API_KEY"),
                          self._key_store())
        self.meaning.threshold = self.settings.get(keys.CLUSTER_DISTANCE)
        self.meaning.configure(spec, self._main_model(), api_key=key, n_threads=self.settings.get(keys.THREADS))
        return self.meaning

    def status(self) -> str:
        """One line on the embedder: which, weak or not, working or failed."""
        m = self.meaning
        if m.error:
            return f"Meaning: {m.error}"
        text = f"Meaning by {m.name}" + (" — a weak embedder: it separates topics, not answers" if m.weak else "")
        return text + (f" · embedding {m.pending} answers…" if m.pending else "")

    def clusters(self, session) -> Clusters:
        """The session's answer sets (seed groups, repeated cells) clustered from the vectors known now; what is
        not embedded yet is asked for and is None meanwhile (so exports never wait, and never embed here)."""
        meaning = self.sync()
        note = meaning.error or (meaning.note if meaning.weak else "")
        return from_vectors(answer_sets(list(session.panes), session.evaluation), meaning.stability, meaning.name,
                            note)

    def close(self) -> None:
        self.meaning.close()
