"""How a new prompt shares steps with running panes: one setting (app/ui/settings.py), picked in the Settings
dialog, reaching the engine's pacing (EngineConfig.mixed_step_factor) when the model reloads."""

from app.engine import EngineConfig, limits
from app.ui import settings as keys
from app.ui.models.settings_dialog import PACING_CHOICES, SettingsDialog


def test_the_pacing_choice_reaches_the_engine_on_reload(loaded_window, loop):
    settings = loaded_window.settings
    assert settings.get(keys.PACING) == limits.PACING_DEFAULT
    assert loaded_window.bridge.main.config.mixed_step_factor == EngineConfig(model_path="-").mixed_step_factor
    dialog = SettingsDialog(settings, loaded_window)
    assert [dialog.pacing.itemData(i) for i in range(dialog.pacing.count())] == list(limits.PACING)
    assert set(PACING_CHOICES) == set(limits.PACING)
    dialog.pacing.setCurrentIndex(dialog.pacing.findData("fast"))
    dialog.accept()
    assert dialog.engine_changed and settings.get(keys.PACING) == "fast"
    loop.run_until_complete(loaded_window.load_model(loaded_window.bridge.model_info.path))
    assert loaded_window.bridge.main.config.mixed_step_factor == limits.PACING["fast"]
    settings.store.setValue(keys.PACING.key, "banana")  # hand-edited: the default pacing, never a crash
    assert settings.engine_fields()["mixed_step_factor"] == limits.PACING[limits.PACING_DEFAULT]
