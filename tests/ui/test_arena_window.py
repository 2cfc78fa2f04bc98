"""The arena in the window, on the real embedded model: blind pairs (nothing names a variant before the vote,
both sides stream in lockstep), keys 1–4, the reveal, the next pair, a 3-variant leaderboard, and votes that
survive SIGKILL of the real app."""

import json
import subprocess
import sys

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractButton, QComboBox, QLabel, QLineEdit, QWidget

from app.arena import Vote
from app.engine import SamplingParams
from app.session import PaneSpec, Session
from app.session.autosave import AUTOSAVE_NAME
from tests.ui.conftest import wait_until
from tests.ui.test_crash_recovery import ROOT, app_env, kill_when

PROMPT = "Name a fruit and say why you like it."
VARIANTS = ((0.0, 1), (0.9, 2), (1.3, 3))  # (temperature, seed) of the three variants
KEYS = {Qt.Key_1: "a", Qt.Key_2: "b", Qt.Key_3: "tie", Qt.Key_4: "both_bad"}


def three_variants(window, max_tokens=16) -> list[PaneSpec]:
    """A group of three panes on one prompt, differing in temperature and seed (the starter panes stay)."""
    (t0, s0), *rest = VARIANTS
    source = window.controller.add_pane(PaneSpec(draft=PROMPT, sampling=SamplingParams(temperature=t0, seed=s0),
                                                 max_tokens=max_tokens))
    copies = [source.copy(sampling=SamplingParams(temperature=t, seed=s)) for t, s in rest]
    return [source, *window.controller.add_variants(source, copies, run=False)]


def open_arena(window, loop, panes):
    window._last_pane = window.grid.view_of(panes[0])  # the current pane: the arena starts on its group
    compare_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Compare")
    next(a for a in compare_menu.actions() if a.text() == "Arena…").trigger()
    view = window.arena.arena
    view.activateWindow()
    assert {c.pane.id for c in view.arena.contenders} == {p.id for p in panes}
    return view


def wait_ready(loop, view, watch_lockstep=None):
    def ready():
        if watch_lockstep is not None and not view.ready():
            watch_lockstep.append(tuple(len(s.text.toPlainText()) for s in view.sides.values()))
        return view.ready()

    wait_until(loop, ready, timeout=120)


def visible_strings(view) -> list[str]:
    """Every text, tooltip, placeholder and title the arena view's widgets carry, outputs apart."""
    out = [view.windowTitle(), view.toolTip()]
    for widget in view.findChildren(QWidget):
        out += [widget.toolTip(), widget.statusTip(), widget.whatsThis(), widget.accessibleName()]
        if isinstance(widget, QLabel | QAbstractButton):
            out.append(widget.text())
        if isinstance(widget, QLineEdit):
            out += [widget.text(), widget.placeholderText()]
        if isinstance(widget, QComboBox):
            out += [widget.itemText(i) for i in range(widget.count())]
    return [s for s in out if s]


def test_nothing_names_a_variant_before_the_vote_and_the_vote_reveals_the_pair(loaded_window, loop):
    panes = three_variants(loaded_window)
    view = open_arena(loaded_window, loop, panes)
    lockstep: list[tuple[int, int]] = []
    wait_ready(loop, view, lockstep)
    assert lockstep and all(a == b for a, b in lockstep)  # while generating, neither side is ahead
    contenders = view.arena.contenders
    giveaways = [c.key for c in contenders] + [c.label for c in contenders] + [p.label for p in panes]
    giveaways += [f"T {t:g}" for t, _ in VARIANTS] + [f"seed {s}" for _, s in VARIANTS]
    giveaways += ["temperature", "tok/s", " tok", "TTFT", "wait "]
    strings = visible_strings(view)
    assert any("Which is better?" in s for s in strings)
    for s in strings:
        assert not any(g in s for g in giveaways), f"{s!r} gives a variant away"
    outputs = [side.text.toPlainText() for side in view.sides.values()]
    assert all(outputs) and not any(c.key in o for c in contenders for o in outputs)
    assert all(side.reveal.isHidden() for side in view.sides.values())

    m = view.matchup
    view.note.setText("A is more concrete")
    vote = view.vote("a")
    assert loaded_window.session.votes == [vote]
    assert (vote.a, vote.b, vote.winner, vote.source, vote.note) == (m.a, m.b, "a", "human", "A is more concrete")
    assert vote.case_text == PROMPT and {vote.a_label, vote.b_label} <= {c.label for c in contenders}
    for name, key in (("a", m.a), ("b", m.b)):
        side = view.sides[name]
        assert side.reveal.isVisible() and view.arena.contender(key).label in side.reveal.text()
        assert "tok" in side.reveal.text()  # the timings are shown now
    assert view.vote("b") is None  # one vote per pair
    assert not any(b.isEnabled() for b in view.vote_buttons.values())
    # a pane's settings changed between pairs: the next pair plays the variant it is now, under its own key
    before = set(view.arena.keys)
    panes[2].sampling = SamplingParams(temperature=0.5, seed=3)
    assert view.next_pair() is not None
    assert len(set(view.arena.keys) - before) == 1 and len(view.arena.keys) == 3
    view.close()


def test_keys_1_to_4_cast_the_right_votes_and_n_draws_the_next_pair(loaded_window, loop):
    panes = three_variants(loaded_window)
    view = open_arena(loaded_window, loop, panes)
    pairs = []
    for key, winner in KEYS.items():
        wait_ready(loop, view)
        m = view.matchup
        QTest.keyClick(view, key)
        votes = loaded_window.session.votes
        assert len(votes) == len(pairs) + 1, f"key {winner} cast no vote"
        assert (votes[-1].a, votes[-1].b, votes[-1].winner) == (m.a, m.b, winner)
        pairs.append(frozenset((m.a, m.b)))
        QTest.keyClick(view, Qt.Key_1)  # a second key press before the next pair casts nothing
        assert len(loaded_window.session.votes) == len(pairs)
        QTest.keyClick(view, Qt.Key_N)
        assert view.voted is None and view.matchup is not None
    assert pairs[1] != pairs[0]  # a pair with a vote is less uncertain than one with none
    view.close()


def test_a_three_variant_arena_gives_a_three_row_leaderboard_with_judge_votes_apart(loaded_window, loop):
    panes = three_variants(loaded_window)
    view = open_arena(loaded_window, loop, panes)
    for i, winner in enumerate(("a", "b", "tie", "a")):
        view.judge_box.setChecked(i == 0)  # the judge (the main model) votes on the first pair, in both orders
        wait_ready(loop, view)
        assert view.vote(winner) is not None
        view.next_pair()
    session = loaded_window.session
    wait_until(loop, lambda: sum(v.source == "judge" for v in session.votes) == 2, timeout=180)
    judged = [v for v in session.votes if v.source == "judge"]
    first = session.votes[0]
    assert {(v.a, v.b) for v in judged} == {(first.a, first.b), (first.b, first.a)}  # both orders
    assert all(v.case_id == first.case_id and v.judge for v in judged)
    view.close()
    compare_menu = next(a.menu() for a in loaded_window.menuBar().actions() if a.text() == "&Compare")
    entry = next(a for a in compare_menu.actions() if a.text() == "Arena leaderboard…")
    entry.trigger()
    dialog = loaded_window.arena.leaderboard
    assert dialog is not None and dialog.isVisible()
    assert dialog.table.rowCount() == 3 and dialog.matrix.rowCount() == 3
    assert len(dialog.plot.row_labels) == 3
    labels = {dialog.table.item(r, 1).text() for r in range(3)}
    assert labels == {c.label for c in view.arena.contenders}
    text = dialog.sources.text()
    assert "4 human, 2 judge" in text and "of 2 comparisons of the same pair and case" in text
    dialog.scope.setCurrentIndex(2)  # judge votes only: the third variant has none
    assert dialog.table.rowCount() == 2
    # the board follows the session's votes
    dialog.scope.setCurrentIndex(1)
    a, b = view.arena.keys[:2]
    session.votes = [*session.votes, Vote(a=a, b=b, winner="a")]
    assert sum(int(dialog.table.item(r, 4).text()) for r in range(3)) == 2 * 5
    dialog.close()


def test_votes_cast_in_the_window_survive_sigkill(tmp_path):
    session = Session(panes=[PaneSpec(draft=PROMPT, sampling=SamplingParams(temperature=t, seed=s), max_tokens=12,
                                      group="g") for t, s in VARIANTS])
    start = tmp_path / "start.chorus.json"
    session.save(start)
    autosave = tmp_path / "data" / AUTOSAVE_NAME
    env = app_env(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "tests.fixtures.arena_driver", str(start), "3"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    before = kill_when(autosave, proc, lambda data: len(data.get("votes", [])) >= 3, timeout=180)
    again = subprocess.run([sys.executable, "-m", "app", "--print-restored"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    restored = json.loads(again.stdout.strip().splitlines()[-1])
    assert restored["message"] is None
    assert restored["votes"] == [v["id"] for v in before["votes"]]
    assert [v["winner"] for v in before["votes"][:3]] == ["a", "b", "tie"]
