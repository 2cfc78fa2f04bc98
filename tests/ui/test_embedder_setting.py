"""The embedder setting: declared once (default from app.engine.limits), edited in the Settings dialog, saved
without reloading the engine; a blank field means the default (the main model, a weak embedder)."""

from app.engine import limits
from app.ui import settings as keys
from app.ui.settings_dialog import SettingsDialog


def test_embedder_is_saved_from_the_dialog_without_an_engine_reload(qtbot, settings):
    assert settings.get(keys.EMBEDDER) == limits.EMBEDDER_DEFAULT == "local"
    assert settings.get(keys.CLUSTER_DISTANCE) == limits.CLUSTER_DISTANCE.default
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
    assert settings.get(keys.CLUSTER_DISTANCE) == limits.CLUSTER_DISTANCE.high
