"""Several backends in one window, on the real model: a second local engine beside the main one, panes that
choose their backend, a sweep across backends, the Backends dialog, and backends remembered across restarts.
Servers in the window are tested with real servers in tests/ui/test_server_backends.py (`make test-servers`)."""

import socket

from PySide6.QtWidgets import QDialogButtonBox

from app.models import model_name
from app.session import MAIN, BackendSpec, RunState
from app.ui.compare.variants_dialog import VariantsDialog
from app.ui.models.backends_dialog import BackendsDialog
from app.ui.models.server_form import ServerForm
from app.ui.pane.header import NOT_CONNECTED
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare


def add_second_model(window, loop, model_path) -> str:
    spec = BackendSpec(kind="local", path=str(model_path))
    assert loop.run_until_complete(window.backends.add(spec)) is None
    return spec.name


def test_panes_run_on_two_local_models_at_once(loaded_window, loop, model_path, settings):
    second = add_second_model(loaded_window, loop, model_path)
    views = prepare(loaded_window, ["Name a colour.", "Name a fruit."], max_tokens=16)
    chooser = views[0].header.backend
    assert [chooser.itemData(i) for i in range(chooser.count())] == [MAIN, second]
    assert [chooser.itemText(i) for i in range(chooser.count())] == [f"main · {model_name(model_path)}", second]
    assert views[0].header.backend.isVisible()
    views[1].header.backend.setCurrentIndex(1)
    views[1].header.backend.activated.emit(1)  # what a user's pick sends
    assert views[1].spec.backend == second and views[0].spec.backend == MAIN
    assert views[1].title.toolTip() == f"backend {second}"  # the header says what differs
    assert loaded_window.run_all() == 2
    wait_until(loop, lambda: all(v.state == RunState.DONE for v in views), timeout=120)
    other = loaded_window.bridge.backends.get(second)
    assert other.stats().generated_tokens_total == views[1].tokens > 0  # that pane ran on the second engine
    assert loaded_window.bridge.stats().generated_tokens_total == views[0].tokens > 0
    panel = loaded_window.stats_panel
    assert panel.backend_box.isVisible()
    panel.backend_box.setCurrentText(second)
    panel.update_once()
    assert int(panel.readouts["generated_total"].text().replace(",", "")) == views[1].tokens
    assert [s.name for s in settings.backend_specs()] == [second]  # remembered for the next start


def test_a_sweep_fans_one_prompt_out_across_backends(loaded_window, loop, model_path):
    second = add_second_model(loaded_window, loop, model_path)
    source = prepare(loaded_window, ["Say hello."], max_tokens=8)[0]
    dialog = VariantsDialog(source.spec, loaded_window, loaded_window.bridge.backend_names())
    dialog.tabs.setCurrentIndex(1)
    for box in dialog.backends.values():
        box.setChecked(True)
    assert dialog.summary.text().startswith("Creates 2 pane(s)")
    views = loaded_window.compare.add_variants(source, dialog.panes(), run=True)
    assert [v.spec.backend for v in views] == [MAIN, second]
    wait_until(loop, lambda: all(v.state == RunState.DONE for v in views), timeout=120)
    assert views[0].spec.result.text == views[1].spec.result.text  # the same file, greedy: the same reply


def test_a_pane_on_a_backend_that_is_not_connected_says_what_to_do(loaded_window, loop):
    view = prepare(loaded_window, ["Hi"], max_tokens=4)[0]
    view.spec.backend = "10.1.2.3:8000 · big-model"
    loaded_window.grid.set_backend_names(loaded_window.bridge.backend_names())
    assert view.header.backend.currentText() == "10.1.2.3:8000 · big-model" + NOT_CONNECTED
    assert not view.run()
    assert "not connected" in view.status.text() and "Backends" in view.status.text()
    assert view.spec.backend == "10.1.2.3:8000 · big-model"  # nothing changed behind the user's back


def test_a_saved_backend_that_cannot_open_stays_listed_with_its_reason(window, loop, settings, tmp_path):
    missing = BackendSpec(kind="local", path=str(tmp_path / "moved.gguf"))
    settings.set_backend_specs([missing])
    loop.run_until_complete(window.backends.restore())
    assert missing.name in window.backends.unavailable
    dialog = BackendsDialog(window.backends, window)
    rows = {row[0]: row for row in dialog.rows()}
    assert rows[missing.name][3].startswith("not connected: model file not found")
    assert [s.name for s in settings.backend_specs()] == [missing.name]  # not forgotten
    dialog.table.selectRow(1)
    assert dialog.remove_button.isEnabled() and dialog.reconnect_button.isEnabled()
    loop.run_until_complete(dialog._remove())
    assert settings.backend_specs() == [] and len(dialog.rows()) == 1
    dialog.close()


def test_adding_a_bad_local_model_reports_and_changes_nothing(window, loop, tmp_path):
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"GGUF but not really")
    dialog = BackendsDialog(window.backends, window)
    reason = loop.run_until_complete(dialog.add(BackendSpec(kind="local", path=str(bad))))
    assert reason and dialog.status.text().startswith("⚠ Could not open")
    assert window.bridge.backend_names() == [MAIN] and window.settings.backend_specs() == []
    dialog.close()


def test_the_server_form_checks_the_url_and_reports_an_unreachable_server(window, loop):
    form = ServerForm(window.backends.keys, window)
    ok = form.buttons.button(QDialogButtonBox.Ok)
    form.url.setText("ftp://example.com")
    assert not ok.isEnabled() and "http://" in form.result.text()
    form.url.setText("http://gpu-box.lan:8000/v1")
    assert ok.isEnabled() and form.warning.isVisibleTo(form) and "plain http" in form.warning.text()
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    form.url.setText(f"http://127.0.0.1:{port}/v1")
    assert not form.warning.isVisibleTo(form)  # this machine: no warning
    assert loop.run_until_complete(form.test_connection()) is None
    assert form.result.text().startswith("⚠ cannot reach http://127.0.0.1:")
    assert form.spec().url == f"http://127.0.0.1:{port}/v1" and form.spec().model is None
    form.close()
