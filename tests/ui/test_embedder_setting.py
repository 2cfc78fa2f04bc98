"""The embedder setting: declared once (defaults from app.backends.embedding and app.session.stability), edited
in the Settings dialog, saved without reloading the engine; a blank field means the default (the main model, a
weak embedder)."""

from app.backends.embedding import DEFAULT_EMBEDDER
from app.session.stability import CLUSTER_DISTANCE
from app.ui import settings as keys
from app.ui.models.settings_dialog import SettingsDialog


def test_embedder_is_saved_from_the_dialog_without_an_engine_reload(qtbot, settings):
    assert settings.get(keys.EMBEDDER) == DEFAULT_EMBEDDER == "local"
    assert settings.get(keys.CLUSTER_DISTANCE) == CLUSTER_DISTANCE.default
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    assert dialog.embedder.text() == "local" and "weak embedder" in dialog.embedder.toolTip()
    dialog.embedder.setText("  http://127.0.0.1:8080/v1 ")
    dialog.accept()
    assert settings.get(keys.EMBEDDER) == "http://127.0.0.1:8080/v1" and not dialog.engine_changed
    again = SettingsDialog(settings)
    qtbot.addWidget(again)
    assert again.embedder.text() == "http://127.0.0.1:8080/v1"
    again.embedder.setText("")
    again.accept()
    assert settings.get(keys.EMBEDDER) == "local"


def test_a_hand_edited_cluster_distance_is_clamped(settings):
    settings.set(keys.CLUSTER_DISTANCE, 7)
    assert settings.get(keys.CLUSTER_DISTANCE) == CLUSTER_DISTANCE.high


def test_the_embedder_is_chosen_by_kind_and_the_main_model_is_called_weak(qtbot, settings, tmp_path):
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    field = dialog.embedder_field
    assert field.kind.currentData() == "local" and field.embedder.isReadOnly()
    assert "weak embedder" in field.note.text()
    for said in (field.note.text(), field.embedder.toolTip()):  # it read "The main model is the main model is…"
        assert said.lower().count("the main model is") == 1, said
    assert field.note.text().startswith("The main model is a generative model")
    field.kind.setCurrentIndex(1)  # an embedding GGUF: typed (or browsed)
    assert not field.embedder.isReadOnly() and field.browse.isVisibleTo(dialog) and field.embedder.text() == ""
    qtbot.keyClicks(field.embedder, str(tmp_path / "bge-small.gguf"))
    field.kind.setCurrentIndex(2)  # a server; then back: the typed path is kept
    qtbot.keyClicks(field.embedder, "http://127.0.0.1:8080/v1")
    assert "--embeddings" in field.note.text()
    field.kind.setCurrentIndex(1)
    assert field.embedder.text() == str(tmp_path / "bge-small.gguf")
    dialog.cluster_distance.setValue(0.3)
    dialog.accept()
    assert settings.get(keys.EMBEDDER) == str(tmp_path / "bge-small.gguf")
    assert settings.get(keys.CLUSTER_DISTANCE) == 0.3 and not dialog.engine_changed
    again = SettingsDialog(settings)
    qtbot.addWidget(again)
    assert again.embedder_field.kind.currentData() == "gguf" and again.cluster_distance.value() == 0.3
