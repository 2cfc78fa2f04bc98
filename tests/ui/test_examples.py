"""Help → Examples: every example opens in the window on the real embedded model and shows what it is for; opening
one never loses unsaved work; the curated model it offers downloads from the hub (a stand-in on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QMessageBox

from app.session import tool_loop
from app.session.examples import CURATED, EXAMPLES, PERSON_SCHEMA, SWEEP_SYSTEMS
from app.session.tool_cards import VALID, cards_for
from app.ui.window.examples import ExamplesDialog
from tests.fixtures.hub_standin import HubStandIn
from tests.ui.conftest import wait_until

ENDED = ("stop", "length", "tool_calls")


def ended(pane) -> bool:
    return pane.result.finish_reason in ENDED and not pane.result.busy


def replied(pane) -> bool:
    return ended(pane) and bool(pane.result.text.strip() or pane.result.tool_calls)


def fan_out(win, loop, qtbot, panes):
    assert len(panes) == 4 and len({(p.sampling.temperature, p.sampling.seed) for p in panes}) == 4
    wait_until(loop, lambda: all(replied(p) for p in panes), 180)


def sweep(win, loop, qtbot, panes):
    assert [p.system for p in panes] == list(SWEEP_SYSTEMS.values())  # the swept setting differs
    assert win.session.view.column_group == panes[0].group  # the group side by side in columns
    wait_until(loop, lambda: all(replied(p) for p in panes), 180)


def json_schema(win, loop, qtbot, panes):
    wait_until(loop, lambda: all(ended(p) for p in panes), 180)
    schema_panes = [p for p in panes if p.output_format.kind == "schema"]
    assert len(schema_panes) == 2
    for pane in schema_panes:
        jsonschema.validate(json.loads(pane.result.text), PERSON_SCHEMA)


def tools(win, loop, qtbot, panes):
    wait_until(loop, lambda: win.examples.loop.done, 240)
    for pane in panes:
        group = win.controller.group_mocks(pane)
        assert [t["role"] for t in pane.turns][:3] == ["user", "assistant", "tool"]  # a call, answered by the mock
        calls = pane.turns[1]["tool_calls"]
        assert calls and all(c.status == VALID for c in cards_for(calls, pane.tools, pane.mocks, group))
        assert pane.turns[2]["tool_call_id"] == calls[0]["id"] and "light rain" in pane.turns[2]["content"]
        assert ended(pane) and len(pane.versions) == 2  # ... and the continued turn, generated
        shown = tool_loop.cards(pane, group)  # the cards of its last reply's calls
        assert shown and all(c.status == VALID and c.answer is not None for c in shown)
    view = win.grid.view_of(panes[0])
    qtbot.waitUntil(lambda: bool(view.findChildren(QFrame, "toolCard")), timeout=5000)  # shown as cards


def versions(win, loop, qtbot, panes):
    pane = panes[0]
    wait_until(loop, lambda: len(pane.versions) == 2 and ended(pane), 180)
    assert all(v.result.finish_reason in ENDED and v.result.text for v in pane.versions)
    assert pane.turns[0]["content"].startswith("My name is Ada")  # the conversation it continues


def evaluation(win, loop, qtbot, panes):
    cells = win.session.evaluation.cells
    assert win.eval_dock.isVisible()
    wait_until(loop, lambda: all(c.finished for c in cells) and not win.evals.running, 300)
    assert win.session.evaluation.calibrations  # the judge answered its calibration set first
    model = win.evals.view.model
    headers = [str(model.headerData(i, Qt.Horizontal)) for i in range(1, model.columnCount())]
    assert headers and all("calibration" in h for h in headers)  # ... and each column says how it did


def arena(win, loop, qtbot, panes):
    view = win.examples.arena.arena
    assert view is not None and view.isVisible()
    wait_until(loop, view.votable, 180)
    assert all(b.isEnabled() for b in view.vote_buttons.values())  # a pair ready to vote
    assert win.examples.open("arena")  # again, its arena still open: a fresh one over the new panes
    fresh = win.examples.arena.arena
    assert fresh is not view and not view.isVisible()
    assert all(any(p is q for q in win.session.panes) for p in fresh.sets[0][1])
    wait_until(loop, fresh.votable, 180)
    fresh.close()


CHECKS = {"fan-out": fan_out, "sweep": sweep, "json-schema": json_schema, "tools": tools, "versions": versions,
          "evaluation": evaluation, "arena": arena}


def test_every_example_opens_and_shows_its_feature(loaded_window, loop, qtbot, monkeypatch):
    win = loaded_window
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.Discard)  # between examples
    menu = next(a.menu() for a in win.menuBar().actions() if a.text() == "&Help")
    assert win.menuBar().actions()[-1].menu() is menu  # the Help menu comes last
    assert [a.text() for a in menu.actions()] == ["Examples…"]
    dialog = win.examples.open_dialog()
    assert dialog.list.count() == len(EXAMPLES)
    for row, item in enumerate(EXAMPLES):  # each with its one-line description
        assert dialog.list.item(row).text() == f"{item.title}\n{item.description}"
    assert set(CHECKS) == {item.key for item in EXAMPLES}  # every example is checked
    for item in EXAMPLES:
        dialog = win.examples.open_dialog()
        dialog.select(item.key)
        dialog.open_button.click()  # the user's consent: open it
        assert win.statusBar().currentMessage() == f"Example: {item.title} — look at {item.look}"
        CHECKS[item.key](win, loop, qtbot, list(win.session.panes))


def test_opening_an_example_asks_before_replacing_unsaved_work(window, monkeypatch):
    pane = window.session.panes[0]
    pane.draft = "my unsaved prompt"
    answers = iter([QMessageBox.Cancel, QMessageBox.Discard])
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or next(answers))
    assert not window.examples.open("arena")  # cancelled: nothing changed, nothing opened
    assert window.session.panes[0] is pane and pane.draft == "my unsaved prompt"
    assert window.examples.arena.arena is None and "example" in asked[0]
    assert window.examples.open("fan-out")  # discarded: the example replaces it
    assert [p.title for p in window.session.panes][0] == "greedy" and len(asked) == 2


@pytest.fixture
def hub(tmp_path, model_path, monkeypatch):
    with HubStandIn({CURATED.repo_id: {CURATED.filename: model_path}}) as standin:  # the file: the embedded model
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        yield standin


def test_an_example_offers_the_curated_model_with_its_size_and_fit_and_downloads_it(window, qtbot, hub):
    dialog = window.examples.open_dialog()
    dialog.select("fan-out")
    assert dialog.model_button.isHidden()  # the embedded model shows fan-out well: nothing offered
    dialog.select("evaluation")
    assert "poor judge" in dialog.detail.text() and "unreliable" in dialog.detail.text()
    dialog._memory = lambda: 64 * 1024**3
    dialog.select("tools")
    assert dialog.model_button.text() == f"Download {CURATED.name} · 940 MiB · fits in memory"
    dialog.select("evaluation")
    small = ExamplesDialog(memory=lambda: 100 * 1024**2)
    qtbot.addWidget(small)
    small.select("tools")
    assert "too big for the 100 MiB of memory free" in small.model_button.text()
    loads = []
    dialog.sig_load.connect(loads.append)
    dialog.model_button.click()  # one click: the hub dialog downloads it
    hub_dialog = window.examples.hub_dialog
    qtbot.waitUntil(lambda: dialog.model_button.text().startswith("Load "), timeout=60000)
    assert ("GET", f"/{CURATED.repo_id}/resolve/main/{CURATED.filename}", None) in hub.requests
    assert "Downloaded to" in hub_dialog.status.text()
    dialog.model_button.click()  # a second click loads it
    assert loads and loads[0].endswith(CURATED.filename)


def test_an_example_opened_while_the_model_loads_starts_once_it_has_loaded(window, loop, model_path, settings):
    from app.ui import settings as keys

    settings.set(keys.SLOTS, 4)
    settings.set(keys.CONTEXT_PER_SLOT, 512)
    load = asyncio.ensure_future(window.load_model(str(model_path)))
    wait_until(loop, lambda: window.bridge.loading, 30)
    assert window.examples.open("fan-out")
    assert "once the model has loaded" in window.statusBar().currentMessage()
    panes = list(window.session.panes)
    assert not any(p.result.busy or p.versions for p in panes)  # nothing was tried on no model
    wait_until(loop, load.done, 120)
    wait_until(loop, lambda: all(replied(p) for p in panes), 180)
