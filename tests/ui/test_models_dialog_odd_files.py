"""The Models dialog with odd files in a models folder: a GGUF holding a string where an
integer belongs and a FIFO named like a model are rows marked broken with their reason; every other model is
still listed."""

from __future__ import annotations

import os

import gguf

from app.models import ScanCache
from app.ui.models.dialog import ModelsDialog
from app.ui.models.table import COLUMNS
from tests.fixtures.app_trees import write_gguf


def test_odd_files_are_rows_that_say_why_they_cannot_load_and_the_rest_still_shows(qtbot, settings, tmp_path):
    folder = tmp_path / "llama.cpp"
    write_gguf(folder / "fine.gguf")
    write_gguf(folder / "odd.gguf", meta={"llama.context_length": ("4k", gguf.GGUFValueType.STRING)})
    os.mkfifo(folder / "x.gguf")
    dialog = ModelsDialog(settings, cache=ScanCache(tmp_path / "scan.json"),
                          scan_kwargs={"home": tmp_path / "home", "env": {"LLAMA_CACHE": str(folder)},
                                       "platform": "linux"})
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.sig_scanned, timeout=60000) as scanned:
        pass
    assert scanned.args[0] == 3 and sorted(dialog.visible_names()) == ["fine", "odd", "x"]
    prompt = list(COLUMNS).index("Prompt format")
    rows = {dialog.model.item(r, 0).text(): dialog.model.item(r, prompt) for r in range(dialog.model.rowCount())}
    assert rows["odd"].text() == "cannot load: metadata key 'llama.context_length' is a string where an integer belongs"
    assert rows["x"].text() == "cannot load: not a regular file (a FIFO)"
    assert "it is skipped without being opened" in rows["x"].toolTip()
    assert not rows["fine"].text().startswith("cannot load")
    assert dialog.select_row("odd") and not dialog.load_button.isEnabled()
    assert dialog.select_row("fine") and dialog.load_button.isEnabled()
