"""Model → Models on this computer… on a machine where no app has a model yet (every app's folder laid out as it
writes it, empty): the dialog lists Chorus's own model, says where it looked, and how to add one — never
"0 models found." over a blank table."""

from __future__ import annotations

from PySide6.QtGui import QFont

from app.models import ScanCache
from app.ui.models.dialog import ModelsDialog
from app.ui.models.table import COLUMNS

EMPTY_APP_FOLDERS = (".lmstudio/models", ".ollama/models/manifests", ".ollama/models/blobs",
                     ".local/share/nomic.ai/GPT4All", ".cache/huggingface/hub", ".cache/llama.cpp",
                     ".local/share/Jan/data/llamacpp/models")


def empty_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    for folder in EMPTY_APP_FOLDERS:
        (home / folder).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE",
                 "HUGGINGFACE_HUB_CACHE", "LLAMA_CACHE", "LOCALAPPDATA", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    return home


def cell(dialog, row: int, column: str):
    return dialog.model.item(row, list(COLUMNS).index(column))


def test_with_no_app_s_models_the_window_s_dialog_shows_the_built_in_model_where_it_looked_and_how_to_add_one(
        qtbot, window, tmp_path, monkeypatch):
    home = empty_home(tmp_path, monkeypatch)
    dialog = window.models.open_models()
    with qtbot.waitSignal(dialog.sig_scanned, timeout=30000) as scanned:
        pass
    assert scanned.args[0] == 1 and dialog.visible_names() == ["SmolLM2-135M-Instruct.Q4_1"]
    assert cell(dialog, 0, "Source").text() == "Chorus" and cell(dialog, 0, "Architecture").text() == "llama"
    status = dialog.status.text()
    assert "0 models" not in status and status.startswith("No models in other apps' folders")
    assert dialog.help.isVisible()
    text = dialog.help.text()
    for folder in (".lmstudio/models", ".ollama/models", ".local/share/nomic.ai/GPT4All", ".cache/huggingface/hub",
                   ".cache/llama.cpp", ".local/share/Jan/data"):
        assert f"~/{folder} <i>(no models)</i>" in text, folder
    assert "~/.cache/lm-studio/models <i>(not there)</i>" in text  # looked for, absent
    for link in ('href="open">open a GGUF file', 'href="folder">add a folder', 'href="hub">download one from Hugging'):
        assert link in text
    assert str(home / ".cache/llama.cpp") not in dialog.status.toolTip()  # paths under home read ~/…
    assert "~/.cache/llama.cpp (no models)" in dialog.status.toolTip()
    dialog.resize(1100, 560)
    dialog.grab().save(str(tmp_path / "models-empty.png"))


def test_the_loaded_model_is_listed_in_bold_and_the_links_do_what_they_say(qtbot, settings, tmp_path, monkeypatch,
                                                                           model_path):
    empty_home(tmp_path, monkeypatch)
    opened = []
    dialog = ModelsDialog(settings, cache=ScanCache(tmp_path / "scan.json"), loaded=str(model_path),
                          builtin=str(model_path), hub_dialog=lambda parent: opened.append(parent) or _Dialog())
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.sig_scanned, timeout=30000):
        pass
    assert dialog.model.rowCount() == 1  # the same file once
    assert all(cell(dialog, 0, c).font().weight() == QFont.Bold for c in COLUMNS)
    assert cell(dialog, 0, "Name").toolTip().startswith("Loaded now")
    dialog.help.linkActivated.emit("hub")
    assert opened == [dialog]


class _Dialog:
    """Stands in for the Download dialog (the links test needs only that it opens)."""

    class _Signal:
        def connect(self, _slot):
            pass

    finished = _Signal()

    def show(self):
        pass
