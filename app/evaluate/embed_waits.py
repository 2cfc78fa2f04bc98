"""What an evaluation in the window waits for while its embeddings are computed on the embedder's own thread.

A mixin of `EvaluationRunner` (it uses `embed`, `cancelled`, `_grade`, `_reset`, `_top_up`, `_check_done`).
When `embed` can prefetch (app.session.meaning.Meaning), a cell whose `similar` texts are not embedded yet is
graded only once they are: `prefetch` answers on the owner's thread, so grading never embeds there. A cell that
waits keeps the run from being done; a cancel resets it to pending and its late answer changes nothing.
Without `prefetch` (the CLI's synchronous embedder) nothing waits. Qt-free.
"""

from __future__ import annotations

from app.evaluate.similarity import similar_texts
from app.session.evaluation import CellResult


class EmbedWaits:
    _waiting: dict[int, CellResult]

    def _awaits_vectors(self, cell: CellResult) -> bool:
        """True when the cell's `similar` texts are being embedded: it is graded when they arrive."""
        if getattr(self.embed, "prefetch", None) is None:
            return False
        texts = similar_texts(self.evaluation.cases[cell.case], cell.output)
        if not texts or not self.embed.will_wait(texts):
            return False  # embedded already, or the embedder failed: graded now (a failure fails `similar`)
        self._waiting[id(cell)] = cell
        self.embed.prefetch(texts, lambda: self._vectors_arrived(cell))
        return True

    def _vectors_arrived(self, cell: CellResult) -> None:
        if self._waiting.pop(id(cell), None) is None:
            return  # cancelled meanwhile (or already graded)
        if self.cancelled:
            self._reset(cell)
            return self._check_done()
        self._grade(cell)
        self._top_up()

    def _cancel_waits(self) -> None:
        waiting, self._waiting = self._waiting, {}
        for cell in waiting.values():
            self._reset(cell)
