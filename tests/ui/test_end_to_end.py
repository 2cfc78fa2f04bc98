"""The window on the real engine: four panes at once, stopping one, a bad model, settings round-trip."""

from PySide6.QtCore import QSettings, Qt

from app.engine import RequestState
from app.ui import settings as keys
from app.ui.settings import Settings
from tests.ui.conftest import wait_until


def prepare(window, prompts, max_tokens=40, temperature=0.0):
    while len(window.grid.panes) < len(prompts):
        window.grid.add_pane()
    for pane, prompt in zip(window.grid.panes, prompts, strict=False):
        pane.prompt.setPlainText(prompt)
        pane.sampling.max_tokens.setValue(max_tokens)
        pane.sampling.temperature.setValue(temperature)
    return window.grid.panes[:len(prompts)]


def test_four_panes_generate_at_once(loaded_window, loop):
    panes = prepare(loaded_window, ["Name a fruit.", "Name a country.", "Name a color.", "Name an animal."])
    all_finished = []
    loaded_window.runner.events.idle.connect(lambda: all_finished.append([p.busy for p in panes]))
    together = []  # per engine step: how many requests got a token in that one llama_decode
    loaded_window.bridge.add_step_listener(lambda event: together.append(len(event.tokens)))
    assert loaded_window.run_all() == 4
    wait_until(loop, lambda: not any(p.busy for p in panes))
    assert max(together) == 4  # all four decoded in the same steps: concurrent, not one after another
    assert all_finished == [[False] * 4]  # once, when the last pane finished
    assert "All panes finished" in loaded_window.statusBar().currentMessage()
    assert all(p.state == RequestState.DONE for p in panes)
    assert all(p.output.toPlainText().strip() and p.tokens > 0 for p in panes)
    assert all("TTFT" in p.status.text() and "finish:" in p.status.text() for p in panes)
    assert loaded_window.stats_panel.readouts["generated_total"].text() != "–"


def test_stopping_one_pane_keeps_its_text_while_others_finish(loaded_window, loop, qtbot):
    panes = prepare(loaded_window, ["Write a long story about a ship.", "Name a color.", "Name a fruit."],
                    max_tokens=48)
    panes[0].sampling.max_tokens.setValue(2000)
    loaded_window.run_all()
    wait_until(loop, lambda: panes[0].tokens >= 5)
    panes[0].prompt.setFocus()
    qtbot.keyClick(panes[0].prompt, Qt.Key_Escape)  # Esc stops the focused pane
    wait_until(loop, lambda: not any(p.busy for p in panes), timeout=240)  # a hang guard: a busy machine is slow
    assert panes[0].state == RequestState.CANCELLED
    assert panes[0].output.toPlainText().strip() and "cancelled" in panes[0].status.text()
    assert all(p.state == RequestState.DONE for p in panes[1:])


def test_ctrl_enter_runs_the_focused_pane(loaded_window, loop, qtbot):
    pane = prepare(loaded_window, ["Say hi."], max_tokens=8)[0]
    pane.prompt.setFocus()
    qtbot.keyClick(pane.prompt, Qt.Key_Return, Qt.ControlModifier)
    assert pane.busy
    wait_until(loop, lambda: not pane.busy)
    assert pane.state == RequestState.DONE and pane.output.toPlainText()


def test_bad_model_shows_a_message_and_keeps_the_old_one(loaded_window, loop, tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"definitely not a model" * 100)
    before = loaded_window.bridge.main
    assert loop.run_until_complete(loaded_window.load_model(str(bad))) is None
    assert "not a GGUF model" in loaded_window.messages[-1] and "still loaded" in loaded_window.messages[-1]
    assert loaded_window.bridge.main is before
    pane = prepare(loaded_window, ["Name a planet."], max_tokens=8)[0]
    pane.run()
    wait_until(loop, lambda: not pane.busy)
    assert pane.state == RequestState.DONE


def test_settings_round_trip_through_qsettings(tmp_path, qapp):
    path = str(tmp_path / "roundtrip.ini")
    first = Settings(QSettings(path, QSettings.IniFormat))
    first.set(keys.SLOTS, 6)
    first.set(keys.CONTEXT_PER_SLOT, 1024)
    first.set(keys.LAST_MODEL, "/models/x.gguf")
    first.set(keys.THREADS, 99999)  # out of range: clamped on read, never crashes start-up
    first.set(keys.REPRODUCIBLE, False)
    first.sync()
    second = Settings(QSettings(path, QSettings.IniFormat))
    assert (second.get(keys.SLOTS), second.get(keys.CONTEXT_PER_SLOT)) == (6, 1024)
    assert second.get(keys.LAST_MODEL) == "/models/x.gguf"
    assert second.get(keys.THREADS) == keys.THREADS.range[1]
    assert second.get(keys.REPRODUCIBLE) is False  # an INI file stores "false", which must not read as True
    second.store.setValue(keys.REPRODUCIBLE.key, "banana")  # hand-edited: the default, never a crash
    assert second.get(keys.REPRODUCIBLE) is keys.REPRODUCIBLE.default


def test_changed_slots_reload_the_engine(loaded_window, loop, monkeypatch):
    from app.ui.models.settings_dialog import SettingsDialog

    dialog = SettingsDialog(loaded_window.settings, loaded_window)
    dialog.boxes[keys.SLOTS.key].setValue(2)
    dialog.accept()
    assert dialog.engine_changed
    loop.run_until_complete(loaded_window.load_model(loaded_window.bridge.model_info.path))
    assert loaded_window.bridge.main.config.n_slots == 2
    assert "2 slots" in loaded_window.model_label.text()


def test_reproducible_outputs_setting_reloads_the_engine_and_the_stats_panel_says_so(loaded_window, loop):
    from app.ui.models.settings_dialog import SettingsDialog

    panel = loaded_window.stats_panel
    panel.update_once()
    assert loaded_window.bridge.main.config.reproducible and panel.readouts["reproducible"].text() == "yes"
    dialog = SettingsDialog(loaded_window.settings, loaded_window)
    assert dialog.reproducible.isChecked()
    dialog.reproducible.setChecked(False)
    dialog.accept()
    assert dialog.engine_changed and loaded_window.settings.get(keys.REPRODUCIBLE) is False
    loop.run_until_complete(loaded_window.load_model(loaded_window.bridge.model_info.path))
    panel.update_once()
    assert loaded_window.bridge.main.config.reproducible is False and panel.readouts["reproducible"].text() == "no"


def test_close_mid_generation_stops_the_engine(loaded_window, loop):
    panes = prepare(loaded_window, ["Write a long essay about rivers."] * 4, max_tokens=2000)
    loaded_window.run_all()
    wait_until(loop, lambda: all(p.tokens > 0 for p in panes))
    thread = loaded_window.bridge.main.engine._thread
    loaded_window.close()  # waits for the engine thread at most its close timeout
    assert not thread.is_alive()  # it had ended by the time close() returned
    assert loaded_window.bridge.main is None
