"""A run's result in the session file (a pane's last run, an evaluation cell's generation), declared by
PaneResult's own fields (`file_structs.dataclass_struct`); the engine clock's marks of a live run are not saved.

A result that was running when the app stopped comes back "interrupted" with the text that had arrived.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET

from app.engine.sampling.logprobs import TokenLogprob
from app.session.file_structs import dataclass_struct, given
from app.session.result import BUSY_STATES, PaneResult, RunState

LIVE_MARKS = frozenset({"t_submit", "t_first", "t_last"})


class Logprob(msgspec.Struct):
    token_id: int
    text: str
    logprob: float
    top: list[tuple[int, str, float]] = []


Result = dataclass_struct(PaneResult, "Result", {"token_logprobs": list[Logprob] | None}, skip=LIVE_MARKS)


def state_from_file(state: RunState | str) -> RunState:
    """A saved run's state as it comes back: one that was running when the app stopped is "interrupted"."""
    state = RunState(state)
    return RunState.INTERRUPTED if state in BUSY_STATES else state


def result_from_file(raw: Result) -> PaneResult:
    fields = given(raw)
    if "state" in fields:  # one that was running when the app stopped keeps what had arrived
        fields["state"] = state_from_file(fields["state"])
    if fields.get("token_logprobs") is not None:
        fields["token_logprobs"] = [TokenLogprob(e.token_id, e.text, e.logprob, tuple(tuple(t) for t in e.top))
                                    for e in fields["token_logprobs"]]
    return PaneResult(**fields)


def result_to_file(result: PaneResult, tokens: bool = True) -> Result:
    """`tokens=False` leaves out the token ids and per-token log-probabilities (an evaluation's cells: hundreds
    of them would make every autosave megabytes larger; the text and the figures are kept)."""
    fields = {name: getattr(result, name) for name in Result.__struct_fields__}
    fields["token_ids"] = list(result.token_ids) if tokens else UNSET
    if not tokens:
        fields["token_logprobs"] = UNSET
    elif result.token_logprobs is not None:
        fields["token_logprobs"] = [Logprob(e.token_id, e.text, e.logprob, [tuple(t) for t in e.top])
                                    for e in result.token_logprobs]
    return Result(**fields)
