"""What an evaluation in the window waits for while its embeddings are computed on the embedder's own thread.

When `embed` can prefetch (app.session.meaning.Meaning), a cell whose `similar` texts are not embedded yet is
graded only once they are: `prefetch` answers on the owner's thread, so grading never embeds there.
`EmbedWaits(embed, arrived)` keeps the cells that wait and calls `arrived(cell)` when a cell's vectors are in;
a cell that waits keeps the EvaluationRunner from being done; `cancel` hands the waiting cells back (the runner
resets them to pending) and their late answers change nothing. Without `prefetch` (the CLI's synchronous
embedder) nothing waits. Qt-free.
"""

from __future__ import annotations

from collections.abc import Callable

from app.evaluate.similarity import similar_texts
from app.session.evaluation import CellResult, EvalCase


class EmbedWaits:
    def __init__(self, embed, arrived: Callable[[CellResult], None]):
        self.embed, self._arrived = embed, arrived
        self._waiting: dict[int, CellResult] = {}

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def awaits(self, case: EvalCase, cell: CellResult) -> bool:
        """True when the cell's `similar` texts are being embedded: `arrived(cell)` is called when they are in."""
        if getattr(self.embed, "prefetch", None) is None:
            return False
        texts = similar_texts(case, cell.output)
        if not texts or not self.embed.will_wait(texts):
            return False  # embedded already, or the embedder failed: graded now (a failure fails `similar`)
        self._waiting[id(cell)] = cell
        self.embed.prefetch(texts, lambda: self._vectors_arrived(cell))
        return True

    def _vectors_arrived(self, cell: CellResult) -> None:
        if self._waiting.pop(id(cell), None) is not None:  # else cancelled meanwhile (or already graded)
            self._arrived(cell)

    def cancel(self) -> list[CellResult]:
        """Stop waiting: the cells that waited."""
        waiting, self._waiting = self._waiting, {}
        return list(waiting.values())
