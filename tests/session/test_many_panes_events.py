"""At hundreds of panes, a change in one pane reaches the session's listeners with that pane's index without
comparing panes: the session's list finds the pane that spoke by identity. Before, psygnal's list found it with
`list.index`, comparing it field by field with every pane before it, on every streamed token (most of the
window's time while 256 panes streamed)."""

from app.session import PaneSpec, Session
from app.session.state import pane_change


def test_a_change_in_one_of_hundreds_of_panes_reaches_listeners_without_comparing_panes(monkeypatch):
    panes = [PaneSpec(draft=f"Question {i}") for i in range(300)]
    session = Session(panes=panes)
    heard = []
    session.events.all.connect(lambda info: heard.append(pane_change(info)))
    compared = []
    real_eq = PaneSpec.__eq__
    monkeypatch.setattr(PaneSpec, "__eq__", lambda a, b: compared.append(1) or real_eq(a, b))
    for step, index in enumerate((299, 150, 0, 299)):
        panes[index].result.stream(text=f"word {step}")
    assert heard == [(299, "result"), (150, "result"), (0, "result"), (299, "result")]
    assert compared == []


def test_the_index_follows_the_list_as_panes_are_moved_removed_and_inserted():
    panes = [PaneSpec(draft=f"Question {i}") for i in range(5)]
    session = Session(panes=panes)
    heard = []
    session.events.all.connect(lambda info: heard.append(pane_change(info)))
    panes[4].result.stream(text="a")
    session.panes.move(4, 0)  # now first
    del session.panes[2]  # was panes[1]
    session.adopt(PaneSpec(draft="new"), 1)
    heard.clear()
    for pane in (panes[4], panes[0], session.panes[1], session.panes[3], session.panes[4]):
        pane.result.stream(text="b")
    assert heard == [(0, "result"), (2, "result"), (1, "result"), (3, "result"), (4, "result")]
    removed = panes[1]
    removed.result.stream(text="gone")  # no longer in the session: nobody hears it
    assert len(heard) == 5
    assert session.panes.index(session.panes[4]) == 4


def test_a_change_in_one_of_thousands_of_evaluation_cells_is_found_without_scanning_the_cells(monkeypatch, tmp_path):
    """An evaluation's cells stream tokens and change status one by one: each change reaches the session with
    its cell's index (the cell's revision moves on) by identity. Before, psygnal's list scanned the cells before
    it on every event: a 2,000-cell evaluation did O(cells) work per streamed token on the GUI thread."""
    from psygnal.containers import EventedList

    from app.evaluate import read_config

    config = {"prompts": ["Say {{n}}"], "providers": ["echo"], "tests": [{"vars": {"n": i}} for i in range(1000)]}
    evaluation = read_config(config, tmp_path).evaluation()
    cells = evaluation.cells
    cells[999].result.stream(text="warm")  # the first lookup maps the list
    read = []
    real_getitem = EventedList.__getitem__
    monkeypatch.setattr(EventedList, "__getitem__", lambda self, key: read.append(key) or real_getitem(self, key))
    before = [cells[i].revision for i in (999, 500, 0)]
    read.clear()
    for step, index in enumerate((999, 500, 0, 999)):
        cells[index].result.stream(text=f"word {step}")
        cells[index].status = "grading" if step % 2 else "running"
    assert [cells[i].revision - b for i, b in zip((999, 500, 0), before, strict=True)] == [4, 2, 2]
    assert len(read) < 100  # a few reads per event, not the cells before the one that changed
