"""A finished result keeps its values, not its signals: a version the pane no longer shows and a cell that is
not running or being graded hold no psygnal signal group (resting.py). Before, every PaneResult kept ~37 KB of
signals for good, and every evaluation cell ~140 KB (its group and its result's, wired to the evaluation): an
hour of regenerating panes and a 2,000-cell evaluation grew by hundreds of MB. The views must still hear every
change, so the second half writes to rested results and cells and checks that the session's listeners hear it.

No model: the runner's writes (`stream`, `finish`) are made by hand, as the session's other event tests do; the
memory figures are tracemalloc's (allocations, not timing; the bounds sit far from both sides)."""

import gc
import tracemalloc
from dataclasses import dataclass

from app.engine.types import Completion
from app.evaluate import read_config
from app.session import PaneResult, PaneSpec, RunState, Session, resting, versions
from app.session.evaluation import GradingResult, cell_change
from app.session.state import pane_change

RUNS = 200
KB = 1024


def completion(text: str) -> Completion:
    return Completion(request_id=0, text=text, token_ids=[1, 2, 3], finish_reason="stop", error=None,
                      prompt_tokens=5, generated_tokens=3, queue_wait_s=0.01, ttft_s=0.1, decode_tps=20.0)


def run(pane: PaneSpec, text: str = "a b c") -> PaneResult:
    """What SessionRunner.run and its pumps do to a pane, without a backend."""
    result = PaneResult(state=RunState.QUEUED, t_submit=0.0)
    versions.begin(pane, [{"role": "user", "content": "q"}], result)
    pane.result = result
    result.stream(text="a", state=RunState.GENERATING, generated_tokens=1)
    result.format_note = ""
    result.finish(completion(text))
    versions.end(pane, result)
    return result


def listened_session(panes: int = 4, evaluation=None) -> tuple[Session, list]:
    """A session with a listener, as the window's autosave and views are; `heard` keeps each event's path (an
    event itself holds the signal that sent it: keeping those would keep the signals)."""
    session = Session(panes=[PaneSpec(draft=f"q{i}") for i in range(panes)])
    session.evaluation = evaluation
    heard = []
    session.events.all.connect(lambda info: heard.append(Heard(info.path)))
    return session, heard


@dataclass(frozen=True)
class Heard:
    path: tuple


def evaluation_of(cells: int, tmp_path):
    config = {"prompts": ["Say {{n}}"], "providers": ["echo"], "tests": [{"vars": {"n": i}} for i in range(cells)]}
    return read_config(config, tmp_path).evaluation()


def run_cell(cell, text: str = "a b c") -> None:
    """What the evaluation's runner does to a cell: a fresh result streamed into, then graded."""
    cell.result, cell.status = PaneResult(), "running"
    cell.result.state, cell.result.t_submit = RunState.QUEUED, 0.0
    cell.result.stream(text="a", state=RunState.GENERATING, generated_tokens=1)
    cell.result.finish(completion(text))
    cell.latency_ms, cell.status = 12.0, "grading"
    cell.grading = GradingResult(passed=True, score=1.0)
    cell.status = "pass"


def retained(work) -> int:
    """Bytes still allocated after `work()` and a collection, the least of three tries, each doing the work anew:
    tracemalloc counts every thread's allocations: a worker an earlier test left in this process allocating
    meanwhile lands in one try, not in all three as a leak does. (A run of the session and UI tests together once
    read 744 bytes a dropped pane, and 0 alone and after those tests in one process; not traced further.)"""
    return min(_retained_once(work) for _ in range(3))


def _retained_once(work) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        kept = work()
        gc.collect()
        grown = sum(stat.size_diff for stat in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    del kept
    return grown


def test_finished_versions_keep_their_values_not_their_signals():
    session, heard = listened_session()
    for pane in session.panes:
        run(pane)  # warm: the classes' signal groups are built

    def runs():
        for i in range(RUNS):
            run(session.panes[i % len(session.panes)], f"reply {i}")
        return None

    per_version = retained(runs) / RUNS
    assert per_version < 8 * KB, f"{per_version:.0f} bytes per finished version (was ~40 KB with its signals)"
    assert heard  # the session heard the runs
    pane = session.panes[0]
    assert not any(resting.awake(v.result) for v in pane.versions[:-1])  # not shown: no signal group
    assert resting.awake(pane.result)  # shown: the pane relays it


def test_finished_cells_keep_their_values_not_their_signals(tmp_path):
    evaluation_of(2, tmp_path)  # imports what reading a config needs

    def evaluate():
        evaluation = evaluation_of(RUNS, tmp_path)
        kept = listened_session(0, evaluation)
        for cell in evaluation.cells:
            run_cell(cell)
        return kept

    per_cell = retained(evaluate) / RUNS
    assert per_cell < 8 * KB, f"{per_cell:.0f} bytes per finished cell, its case included (was ~90 KB)"


def test_a_shown_version_is_heard_and_so_is_an_old_one_shown_again():
    session, heard = listened_session(2)
    pane = session.panes[1]
    first, second = run(pane, "one"), run(pane, "two")
    heard.clear()
    second.format_note = "checked"  # the shown reply: the pane relays it
    assert [pane_change(info) for info in heard] == [(1, "result")]
    versions.show(pane, 0)  # the first reply rested when the second began; shown again, it is relayed again
    assert pane.result is first and not resting.awake(second) and resting.awake(first)
    heard.clear()
    first.format_note = "checked too"
    second.format_note = "not shown: nobody hears it"
    assert [pane_change(info) for info in heard] == [(1, "result")]
    assert second.format_note == "not shown: nobody hears it"


def test_a_result_someone_listens_to_does_not_rest():
    """The arena connects to a result's own `text` (app/ui/arena/view.py): that result keeps its signals."""
    session, _ = listened_session(1)
    pane = session.panes[0]
    first = run(pane)
    texts = []
    first.events.text.connect(texts.append)
    run(pane)  # the pane lets go of `first`, but its listener stays
    first.stream(text="more")
    assert texts == ["more"]


def test_a_rested_cell_is_heard_when_it_is_graded_again_or_rerun(tmp_path):
    evaluation = evaluation_of(3, tmp_path)
    session, heard = listened_session(0, evaluation)
    for cell in evaluation.cells:
        run_cell(cell)
    cell = evaluation.cells[1]
    assert not resting.awake(cell) and not resting.awake(cell.result)
    heard.clear()
    revision = cell.revision
    cell.grading = GradingResult(passed=False, score=0.0)  # select-best or a max-score merge, after the row ended
    cell.status = "fail"
    assert [cell_change(_evaluation_info(info)) for info in heard] == [1, 1]
    assert cell.revision == revision + 2
    heard.clear()
    cell.result.text = "edited while the cell rests"  # its result wakes the cell, which relays it
    assert [cell_change(_evaluation_info(info)) for info in heard] == [1]
    heard.clear()
    run_cell(evaluation.cells[2])  # a rerun: a new result, streamed, graded
    assert {cell_change(_evaluation_info(info)) for info in heard} == {2} and len(heard) >= 6
    assert not resting.awake(evaluation.cells[2])  # and it rests again


def test_a_cell_with_its_own_listener_does_not_rest(tmp_path):
    evaluation = evaluation_of(1, tmp_path)
    cell = evaluation.cells[0]
    seen = []
    cell.events.status.connect(seen.append)
    run_cell(cell)
    cell.status = "fail"
    assert seen == ["running", "grading", "pass", "fail"]


def _evaluation_info(info: Heard) -> Heard:
    """An event of the session's as the evaluation saw it (its path from `cells`)."""
    assert info.path[0].attr == "evaluation"
    return Heard(info.path[1:])



def test_a_pending_cell_that_never_ran_is_heard_through_its_result(tmp_path):
    """A cell starts at rest (its list a standing listener): a write to its result, before the cell ever ran,
    wakes the cell that relays it."""
    evaluation = evaluation_of(2, tmp_path)
    session, heard = listened_session(0, evaluation)
    evaluation.cells[1].result.stream(text="given")
    assert [cell_change(_evaluation_info(info)) for info in heard] == [1]


def test_a_pane_made_and_dropped_leaves_nothing_behind():
    """A copy, a branch or a sweep's pane, dropped: psygnal's dataclass field signals kept ~58 bytes each for good
    (~2.2 KB a PaneSpec and ~1.5 KB its result, once any pane's events were used, as the window's are)."""
    pane = PaneSpec(draft="q")
    pane.events.draft.connect(lambda *_: None)

    def copies():
        for _ in range(RUNS):
            pane.copy(title="copy")

    per_copy = retained(copies) / RUNS
    assert per_copy < 500, f"{per_copy:.0f} bytes kept per dropped pane (was ~5.9 KB)"


def test_events_all_hears_every_field_without_a_connection_on_each():
    """psygnal's relay connected itself to every field's signal on its first listener: three tracked objects a
    field, ~190 a pane, walked by every full pass of the cyclic collector (the 256-pane open's stall). A field's
    signal now hands its emission to the relay; the views still hear every field, with its path, in order after
    the field's own listeners."""
    session, heard = listened_session(1)
    pane = session.panes[0]
    result = run(pane, "one")
    assert not any(len(pane.events[name]) > (name == "result") for name in pane.events)  # result: the pane's own
    assert not any(len(result.events[name]) for name in result.events)
    order, got = [], []
    pane.events.title.connect(lambda *_: order.append("title's own"))
    session.events.all.connect(lambda info: (order.append("the session's"), got.append((pane_change(info), info.args))))
    pane.title = "renamed"
    result.format_note = "checked"
    assert got == [((0, "title"), ("renamed", "")), ((0, "result"), ("checked", ""))]
    assert order == ["title's own", "the session's", "the session's"]
    session.events.all.disconnect()  # nobody listens now: a write emits nothing, and nothing is left connected
    pane.title = "again"
    assert len(got) == 2 and {name for name in pane.events if len(pane.events[name])} == {"title", "result"}


def test_a_listener_that_writes_another_field_is_heard_in_psygnals_order():
    """A group's signals share one lock and one emission queue (field_events.FieldGroup): a field written by another
    field's listener is emitted at once, as psygnal's default reemission does; a paused field keeps its own
    arguments. `events.all` hears a field after the field's own listeners (psygnal's relay heard it in the order
    it had connected: first here, as the window's listeners connect before a pane's own)."""
    session, _ = listened_session(1)
    pane = session.panes[0]
    got = []
    pane.events.title.connect(lambda new, _old: setattr(pane, "draft", f"from {new}"))
    pane.events.draft.connect(lambda new, _old: got.append(("draft's own", new)))
    session.events.all.connect(lambda info: got.append((pane_change(info)[1], info.args[0])))
    pane.title = "t"
    assert got == [("draft's own", "from t"), ("draft", "from t"), ("title", "t")]
    got.clear()
    with pane.events.title.paused():
        pane.title = "u"
        pane.draft = "v"  # not paused: heard at once
        assert got == [("draft's own", "v"), ("draft", "v")]
    assert got[2:] == [("draft's own", "from u"), ("draft", "from u"), ("title", "u")]


def test_a_rested_group_goes_with_its_last_reference_not_with_the_collector():
    """A dropped group was garbage only a full pass of the cyclic collector frees (psygnal's signals refer to
    themselves through the bound method they run their listeners with, and its relay's weak callbacks to
    themselves): 42,500 objects when a sweep's 256 replies were replaced, freed in the middle of an open (50 ms).
    `rest` lets them go of themselves: a collection after it finds nothing (330 objects a reply before)."""
    session, _ = listened_session(1)
    pane = session.panes[0]
    first = run(pane, "one")
    gc.collect()
    gc.disable()
    try:
        run(pane, "two")  # the pane shows the second reply: the first rests
        assert not resting.awake(first)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_pane_the_window_listens_to_holds_a_few_hundred_tracked_objects():
    """Every full pass of the cyclic collector walks every tracked object: a pane's ~680 (its spec's and its
    reply's signal groups, psygnal's relay connected to each field) made the 256-pane open stall the window 66
    ms. Counted, not timed: a pane with its shown reply and its version, heard by the session's listeners (~310
    now)."""
    session, _ = listened_session(0)
    for _ in range(3):  # warm: the classes' groups
        session.panes.append(PaneSpec(draft="warm"))
        run(session.panes[-1])
    gc.collect()
    before = len(gc.get_objects())
    for i in range(50):
        session.panes.append(PaneSpec(draft=f"q{i}"))
        run(session.panes[-1])
    gc.collect()
    per_pane = (len(gc.get_objects()) - before) / 50
    assert per_pane < 400, f"{per_pane:.0f} tracked objects a pane (~680 before)"
