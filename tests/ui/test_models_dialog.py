"""Model → Models on this computer… over a real home folder tree (tests/fixtures/app_trees.py), and the Download
from Hugging Face dialog against the hub stand-in on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLabel

from app.models import ScanCache
from app.ui.models.dialog import ModelsDialog
from app.ui.models.hub import HubDialog
from app.ui.models.table import COLUMNS
from tests.fixtures.app_trees import truncate, write_gguf
from tests.models.test_discover import machine  # noqa: F401  (the fixture)
from tests.models.test_hub import REPO, hub  # noqa: F401  (the fixture)
from tests.ui.conftest import wait_until


def open_dialog(qtbot, settings, home, env, cache_path, **kwargs):
    dialog = ModelsDialog(settings, cache=ScanCache(cache_path), scan_kwargs={"home": home, "env": env,
                                                                              "platform": "linux"}, **kwargs)
    qtbot.addWidget(dialog)
    return dialog


def test_the_table_lists_every_app_s_models_with_what_they_need(qtbot, settings, machine, tmp_path):  # noqa: F811
    home, env, _ = machine
    truncate(write_gguf(home / ".cache" / "llama.cpp" / "cut.gguf"), 5000)
    revealed = []
    dialog = open_dialog(qtbot, settings, home, env, tmp_path / "scan.json", reveal=revealed.append)
    with qtbot.waitSignal(dialog.sig_scanned, timeout=30000) as scanned:
        pass
    count = scanned.args[0]
    assert count == len(dialog.entries) == dialog.proxy.rowCount() > 10
    headers = [dialog.model.headerData(c, Qt.Horizontal) for c in range(dialog.model.columnCount())]
    assert headers == list(COLUMNS)
    row = {dialog.model.headerData(c, Qt.Horizontal): dialog.model.item(0, c).text() for c in range(len(COLUMNS))}
    assert row["Source"] == "LM Studio" and row["Memory needed"].endswith("MiB") and row["Architecture"] == "llama"
    arch = {dialog.model.item(r, 0).text(): dialog.model.item(r, COLUMNS.index("Architecture"))
            for r in range(dialog.model.rowCount())}
    assert arch["Qwen3-0.6B-Q4_K_M"].text() == "llama · vision"  # its LM Studio folder holds its mmproj
    assert "mmproj-Qwen3-F16.gguf" in arch["Qwen3-0.6B-Q4_K_M"].toolTip() and arch["old.Q8_0"].text() == "llama"
    assert "cannot load" in dialog.findChild(QLabel, "scanStatus").text()

    dialog.search.setText("qwen")
    assert sorted(dialog.visible_names()) == ["Qwen3 imported", "Qwen3-0.6B-Q4_K_M"]
    dialog.search.setText("")
    source = dialog.findChild(QComboBox, "sourceFilter")
    source.setCurrentIndex(source.findData("ollama"))
    assert sorted(dialog.visible_names()) == ["hf.co/bartowski/SmolLM2-GGUF:Q4_K_M", "llama3.2:1b"]
    source.setCurrentIndex(0)

    assert dialog.select_row("cut")  # broken: listed, but it cannot be loaded
    assert not dialog.load_button.isEnabled() and dialog.reveal_button.isEnabled()
    assert dialog.select_row("llama3.2:1b")
    with qtbot.waitSignal(dialog.sig_load) as load:
        dialog.load_button.click()
    with qtbot.waitSignal(dialog.sig_add_backend) as add:
        dialog.backend_button.click()
    dialog.reveal_button.click()
    blob = load.args[0]
    assert Path(blob).name.startswith("sha256-") and add.args == [blob] and revealed == [blob]


def test_the_last_scan_shows_at_once_and_a_rescan_reads_no_header(qtbot, settings, machine, tmp_path):  # noqa: F811
    home, env, _ = machine
    first = open_dialog(qtbot, settings, home, env, tmp_path / "scan.json")
    with qtbot.waitSignal(first.sig_scanned, timeout=30000):
        pass
    second = open_dialog(qtbot, settings, home, env, tmp_path / "scan.json")
    assert second.proxy.rowCount() == first.proxy.rowCount()  # before its own scan has finished
    with qtbot.waitSignal(second.sig_scanned, timeout=30000):
        pass
    assert second.cache.reads == 0


def test_download_dialog_marks_the_best_fit_downloads_and_cancels(qtbot, settings, hub, model_path):  # noqa: F811
    dialog = HubDialog(settings, memory=lambda: 600 * 1024**2)
    qtbot.addWidget(dialog)
    dialog.query.setText("smollm2")
    dialog.search()
    qtbot.waitUntil(lambda: dialog.repos.count() == 1, timeout=10000)
    dialog.repos.setCurrentRow(0)
    qtbot.waitUntil(lambda: dialog.table.rowCount() == 3, timeout=10000)
    fits = {dialog.table.item(r, 0).text(): dialog.table.item(r, 3).text() for r in range(3)}
    assert fits["SmolLM2-135M-Instruct-Q4_1.gguf"] == "too big" and list(fits.values()).count("★ best fit") == 1
    big = next(r for r in range(3) if dialog.table.item(r, 0).text() == "SmolLM2-135M-Instruct-Q4_1.gguf")
    dialog.table.selectRow(big)
    dialog.download()
    qtbot.waitUntil(lambda: dialog.progress.value() > 0, timeout=30000)
    dialog.cancel_button.click()
    qtbot.waitUntil(lambda: "Cancelled" in dialog.status.text(), timeout=30000)
    dialog.table.selectRow(big)
    with qtbot.waitSignal(dialog.sig_downloaded, timeout=60000) as done:
        dialog.download()
    assert Path(done.args[0]).read_bytes() == model_path.read_bytes()
    assert any(rng and rng != "bytes=0-" for method, path, rng in hub.requests if path.endswith("Q4_1.gguf"))


def test_the_window_s_model_menu_opens_it_and_adds_a_backend(qtbot, window, loop, model_path, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # the real scan, over an empty home
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    dialog = window.models.open_models()
    assert window.act_models.text() == "Models on this computer…"
    dialog.sig_add_backend.emit(str(model_path))
    wait_until(loop, lambda: any("SmolLM2" in name for name in window.bridge.backend_names()), timeout=60)
