"""The arena with panes that cannot give a votable output, on the real embedded model: a pane with an image (the
model has no vision projector) is left out, with a visible line that names it and says why, and the pairs of the
rest generate; a side that writes nothing says so, cannot be voted on (buttons off, keys cast nothing), and N
skips its pair for another one."""

import string

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.session import images
from tests.fixtures.images import png
from tests.ui.conftest import wait_until
from tests.ui.test_arena_window import open_arena, three_variants

EVERYTHING = tuple(string.ascii_letters + string.digits + string.punctuation + " \n")  # stops at the first token


def test_a_pane_with_an_image_the_model_cannot_read_is_left_out_and_says_why(loaded_window, loop):
    panes = three_variants(loaded_window)
    photo = images.add_bytes(png(rgb=(20, 120, 200)), "photo.png")
    source = panes[0]
    [pictured] = loaded_window.controller.add_variants(source, [source.copy(draft_images=(photo,))], run=False)
    loaded_window._last_pane = loaded_window.grid.view_of(source)
    view = loaded_window.arena.open_arena()
    assert {c.pane.id for c in view.arena.contenders} == {p.id for p in panes}  # the image pane is not one
    line = view.left_out
    assert line.isVisible() and not line.toolTip()
    assert pictured.label in line.text() and "without a vision projector" in line.text()
    wait_until(loop, lambda: view.ready() or not view.results, timeout=120)
    assert view.ready(), view.status.text()  # the pair drawn is one the model can run
    assert all(side.text.toPlainText() for side in view.sides.values())
    assert all(button.isEnabled() for button in view.vote_buttons.values())
    assert view.vote("a") is not None
    view.close()


def test_a_side_that_writes_nothing_cannot_be_voted_on_and_its_pair_is_skipped(loaded_window, loop):
    panes = three_variants(loaded_window)
    panes[2].stop = EVERYTHING  # this variant's replies end before their first character
    view = open_arena(loaded_window, loop, panes)
    silent = next(c.key for c in view.arena.contenders if c.pane is panes[2])
    skipped, voted = [], 0
    for _ in range(5):  # until the pairs with the silent variant were drawn, and then one without it
        wait_until(loop, view.ready, timeout=120)
        m = view.matchup
        if silent not in (m.a, m.b):
            if skipped:
                break
            QTest.keyClick(view, Qt.Key_1)  # a pair of two that wrote: voted on as ever
            voted += 1
            assert len(loaded_window.session.votes) == voted
            QTest.keyClick(view, Qt.Key_N)
            continue
        side = "a" if m.a == silent else "b"
        assert view.sides[side].text.toPlainText() == "(no output: the model wrote nothing)"
        assert not any(button.isEnabled() for button in view.vote_buttons.values())
        assert view.vote("tie") is None
        QTest.keyClick(view, Qt.Key_1)
        assert len(loaded_window.session.votes) == voted
        assert "cannot be voted on" in view.status.text() and f"{side.upper()} wrote nothing" in view.status.text()
        assert view.next_button.isEnabled()
        skipped.append(frozenset((m.a, m.b)))
        QTest.keyClick(view, Qt.Key_N)
        assert view.matchup is not None and frozenset((view.matchup.a, view.matchup.b)) not in skipped
    assert skipped and silent not in (view.matchup.a, view.matchup.b)
    assert all(button.isEnabled() for button in view.vote_buttons.values())
    QTest.keyClick(view, Qt.Key_2)
    assert [v.winner for v in loaded_window.session.votes] == ["a"] * voted + ["b"]
    view.close()
