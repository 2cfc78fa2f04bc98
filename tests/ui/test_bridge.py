"""The bridge's lifecycle: a window closed while its model loads leaks no engine; the format is shown."""

import asyncio
import threading

from app.ui.bridge import EngineBridge
from tests.conftest import TEST_THREADS


def engine_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "chorus-engine"]


def test_closing_while_a_model_loads_closes_the_engine_being_loaded(loop, model_path):
    before = engine_threads()
    bridge = EngineBridge()
    built = threading.Event()
    real_build = bridge._build

    def build_then_signal(config):
        try:
            return real_build(config)
        finally:
            built.set()

    bridge._build = build_then_signal
    task = asyncio.ensure_future(bridge.load_model(model_path, n_slots=2, n_ctx_per_slot=256, n_threads=TEST_THREADS),
                                 loop=loop)
    loop.run_until_complete(asyncio.sleep(0))  # the load is under way in its worker thread
    assert bridge.loading
    bridge.close()  # the window closes now
    loop.run_until_complete(asyncio.wait([task]))
    assert built.is_set()
    assert "closed while the model was loading" in str(task.exception())
    assert bridge.main is None
    for thread in engine_threads():
        if thread not in before:
            thread.join(10)
    assert [t for t in engine_threads() if t not in before] == []  # the engine that finished loading is gone


def test_the_status_bar_shows_the_prompt_format(loaded_window):
    assert "prompt: template from the GGUF" in loaded_window.model_label.text()
    checked = [a.data() for a in loaded_window.format_menu.actions.actions() if a.isChecked()]
    assert checked == ["auto"]


def test_overriding_the_prompt_format_reloads_and_is_remembered_per_model(loaded_window, loop, settings):
    from tests.ui.conftest import wait_until

    path = loaded_window.bridge.model_info.path
    raw = next(a for a in loaded_window.format_menu.actions.actions() if a.data() == "raw")
    raw.trigger()  # Model → Prompt format → Raw
    wait_until(loop, lambda: "prompt: raw: no template" in loaded_window.model_label.text())
    assert loaded_window.bridge.model_info.chat_format == "raw: no template"
    assert settings.chat_format(path) == "raw" and settings.chat_format("/elsewhere/other.gguf") == "auto"
    assert raw.isChecked()
