"""Settings: KV cache type and GPU layers, the live memory estimate, and the question asked before settings or a
load that will not fit in free memory."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QComboBox, QLabel, QMessageBox

from app.engine.devices import gpu_offload_supported
from app.models import estimate_memory
from app.ui import settings as keys
from app.ui.models.fit_prompt import confirm_fit
from app.ui.models.settings_dialog import SettingsDialog
from app.ui.settings import gpu_layers_value


def answer_fit_warning(button, seen: list):
    """When the fit warning opens, note its text and press `button` on it."""

    def press():
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox) and box.objectName() == "fitWarning":
            seen.append(box.text())
            box.button(button).click()
        else:
            QTimer.singleShot(20, press)

    QTimer.singleShot(0, press)


def test_kv_type_and_gpu_layers_are_declared_once_and_reach_the_engine_fields(settings):
    fields = settings.engine_fields()
    assert fields["kv_type"] == "f16" and fields["n_gpu_layers"] == "auto"
    settings.set(keys.KV_TYPE, "q8_0")
    settings.set(keys.GPU_LAYERS, "12")
    assert settings.engine_fields()["kv_type"] == "q8_0" and settings.engine_fields()["n_gpu_layers"] == 12
    settings.set(keys.KV_TYPE, "q3_hand_edited")
    assert settings.engine_fields()["kv_type"] == "f16"  # a stale value never breaks a load
    assert [gpu_layers_value(v) for v in ("auto", "all", "none", "7", "junk")] == ["auto", -1, 0, 7, "auto"]


def test_the_dialog_shows_the_estimate_live_and_what_a_cpu_build_lacks(qtbot, settings, model_path):
    dialog = SettingsDialog(settings, model_path=str(model_path))
    qtbot.addWidget(dialog)
    label = dialog.findChild(QLabel, "memoryEstimate")
    before = estimate_memory(model_path, settings.get(keys.SLOTS), settings.get(keys.CONTEXT_PER_SLOT))
    assert before.describe() in label.text()
    dialog.boxes[keys.SLOTS.key].setValue(16)
    dialog.findChild(QComboBox, "kvType").setCurrentIndex(1)  # q8_0
    after = estimate_memory(model_path, 16, settings.get(keys.CONTEXT_PER_SLOT), "q8_0")
    assert after.describe() in label.text() and after.kv != before.kv
    if not gpu_offload_supported():
        assert dialog.findChild(QComboBox, "gpuLayers") is None  # no dead control
        assert "CPU build" in dialog.findChild(QLabel, "gpuNote").text()


def test_applying_settings_that_do_not_fit_asks_first_with_the_numbers(qtbot, settings, model_path):
    dialog = SettingsDialog(settings, model_path=str(model_path))
    qtbot.addWidget(dialog)
    dialog.boxes[keys.SLOTS.key].setValue(64)
    dialog.boxes[keys.CONTEXT_PER_SLOT.key].setValue(131072)  # 64 x 128k tokens of KV: about 193 GB
    seen: list[str] = []
    answer_fit_warning(QMessageBox.No, seen)
    dialog.accept()
    assert seen and "of RAM, but" in seen[0] and "KV cache" in seen[0]
    assert not dialog.engine_changed and settings.get(keys.SLOTS) != 64  # nothing applied
    answer_fit_warning(QMessageBox.Yes, seen)
    dialog.accept()
    assert len(seen) == 2 and dialog.engine_changed and settings.get(keys.SLOTS) == 64


def test_a_load_that_will_not_fit_is_asked_about_before_it_starts(qtbot, settings, model_path):
    fields = dict(settings.engine_fields(), n_slots=64, n_ctx_per_slot=131072)
    seen: list[str] = []
    answer_fit_warning(QMessageBox.No, seen)
    assert confirm_fit(None, str(model_path), fields) is False
    assert "GiB of RAM, but" in seen[0]
    assert confirm_fit(None, str(model_path), settings.engine_fields()) is True  # the defaults fit: no question
    assert len(seen) == 1
