"""Panes on real servers in the window (`make test-servers`): llama-server with --metrics beside the local model,
its own running/waiting figures in the stats panel; llama-cpp-python's server, which has no /metrics."""

import pytest

from app.session import MAIN, BackendSpec, RunState
from tests.fixtures.servers import python_server, start_llama_server  # noqa: F401  (fixtures)
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare

pytestmark = pytest.mark.servers


def run_on(window, loop, spec, prompts, on_server, max_tokens=24, api_key=None):
    """Add the server, put the prompts on it or on the local model, run them; returns (views, its name)."""
    assert loop.run_until_complete(window.backends.add(spec, api_key)) is None
    name = window.backends.last_added
    assert name.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")  # the server's default model, resolved by name
    views = prepare(window, prompts, max_tokens=max_tokens)
    for view, remote in zip(views, on_server, strict=True):
        index = view.header.backend.findData(name if remote else MAIN)
        view.header.backend.setCurrentIndex(index)
        view.header.backend.activated.emit(index)
    assert all(view.run() for view in views)
    return views, name


def test_panes_on_llama_server_and_the_local_model_with_the_servers_metrics(loaded_window, loop, tmp_path,
                                                                           start_llama_server):  # noqa: F811
    server = start_llama_server()
    spec = BackendSpec(kind="server", url=server.url)
    views, name = run_on(loaded_window, loop, spec, ["Name a river.", "Name a city.", "Name a tree."],
                         [True, True, False], api_key="sk-never-written")
    panel = loaded_window.stats_panel
    panel.backend_box.setCurrentText(name)
    wait_until(loop, lambda: all(v.state == RunState.DONE for v in views), timeout=180)
    assert all(v.spec.result.text for v in views)
    assert [v.spec.backend for v in views] == [name, name, MAIN]
    wait_until(loop, lambda: panel.server.available is True, timeout=30)  # polled once a second
    assert panel.server.isVisibleTo(panel) and panel.server.plot.isVisibleTo(panel)
    assert "running" in panel.server.note.text() and "waiting" in panel.server.note.text()
    remote = loaded_window.bridge.backends.get(name)
    assert remote.stats().generated_tokens_total == sum(v.tokens for v in views[:2])
    assert loaded_window.bridge.stats().generated_tokens_total == views[2].tokens
    loaded_window.settings.sync()
    loaded_window.grid.session.save(tmp_path / "s.chorus.json")
    for written in (loaded_window.settings.store.fileName(), tmp_path / "s.chorus.json"):
        text = open(written, encoding="utf-8").read()
        assert f"127.0.0.1:{server.port}" in text and "sk-never-written" not in text  # saved; its key is not


def test_a_server_without_metrics_says_so_and_shows_the_client_view(loaded_window, loop, python_server):  # noqa: F811
    spec = BackendSpec(kind="server", url=python_server.url)
    views, name = run_on(loaded_window, loop, spec, ["Name a bird."], [True])
    panel = loaded_window.stats_panel
    panel.backend_box.setCurrentText(name)
    wait_until(loop, lambda: views[0].state == RunState.DONE, timeout=180)
    assert views[0].spec.result.text
    wait_until(loop, lambda: panel.server.available is False, timeout=30)
    assert "no Prometheus /metrics" in panel.server.note.text() and not panel.server.plot.isVisibleTo(panel)
    panel.update_once()
    assert panel.readouts["generated_total"].text() != "0"  # the client's own count


def test_a_server_killed_mid_stream_is_that_panes_error_and_the_local_pane_finishes(loaded_window, loop,
                                                                                   start_llama_server):  # noqa: F811
    server = start_llama_server()
    spec = BackendSpec(kind="server", url=server.url)
    views, name = run_on(loaded_window, loop, spec, ["Count from one to two hundred in words.",
                                                     "Count from one to fifty in words."], [True, False],
                         max_tokens=400)
    wait_until(loop, lambda: views[0].spec.result.text, timeout=60)  # the server is streaming
    server.kill()
    wait_until(loop, lambda: not any(v.busy for v in views), timeout=120)
    assert views[0].state == RunState.ERROR
    assert server.url in views[0].status.text()  # names the server, and the cause after it
    assert views[1].state == RunState.DONE and views[1].spec.result.text  # the local pane is unaffected
    assert loaded_window.isVisible() and loaded_window.bridge.backends.get(name) is not None
