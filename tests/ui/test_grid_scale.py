"""A sweep of many panes in one action: the panes it adds are placed together, each once (placing each at once
moved every pane after it again each time, which made a 256-pane sweep quadratic), and the grid ends laid out as
a full reflow would lay it out."""

from app.session import sweep
from app.ui.widgets import sliced


def placements(grid) -> list:
    """Every view the grid's layout is given from now on."""
    placed = []
    real = grid._layout.addWidget
    grid._layout.addWidget = lambda widget, *args: placed.append(widget) or real(widget, *args)
    return placed


def test_a_sweep_places_each_new_pane_once_and_lays_the_grid_out_whole(window, qtbot, monkeypatch):
    monkeypatch.setattr(sliced, "SLICE_S", 60)  # the sweep in one slice, however slow the machine
    window.columns_box.setValue(4)
    source = window.grid.panes[0] if window.grid.panes else window.grid.add_pane()
    qtbot.waitUntil(lambda: window.grid._laid_out >= 1)
    columns = window.grid._laid_out
    placed = placements(window.grid)
    specs = sweep.expand(source.spec, {"temperature": [0.2, 0.5, 0.8, 1.1], "seed": [1, 2, 3, 4]})
    after = len(window.grid.panes) - 1 - window.grid.panes.index(source)  # panes after the source move along
    views = window.compare.add_variants(source, specs, run=False)
    window.grid.settle()  # as the next event-loop turn does
    assert len(views) == 16 and len(placed) == 16 + after  # placed one by one: 16 * (1 + after)
    layout = window.grid._layout
    for i, view in enumerate(window.grid.panes):
        assert layout.getItemPosition(layout.indexOf(view))[:2] == divmod(i, columns)
        assert view.isVisibleTo(window.grid)
    assert [v.header.title.parts[1] for v in views[:2]] == ["T 0.2 · seed 1", "T 0.2 · seed 2"]
    # a pane inserted in the middle moves only the panes after it
    placed.clear()
    middle = window.grid.duplicate_pane(window.grid.panes[5])
    window.grid.settle()
    assert window.grid.panes.index(middle) == 6 and len(placed) == len(window.grid.panes) - 6
    for i, view in enumerate(window.grid.panes):
        assert layout.getItemPosition(layout.indexOf(view))[:2] == divmod(i, columns)


def test_closing_a_session_of_many_panes_places_no_pane_twice(window, qtbot):
    source = window.grid.panes[0] if window.grid.panes else window.grid.add_pane()
    window.compare.add_variants(source, sweep.expand(source.spec, {"seed": list(range(1, 13))}), run=False)
    placed = placements(window.grid)
    window.controller.session.panes.clear()  # as New and Open do, one removal at a time, from the end
    window.grid.settle()
    assert placed == [window.grid.empty_hint] and window.grid.panes == []  # was 12 + 11 + … + 1 = 78 panes
