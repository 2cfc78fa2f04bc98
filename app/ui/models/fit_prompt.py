"""Ask before a load that will not fit: the numbers from app.engine.devices.fit_check, and Yes / No."""

from __future__ import annotations

import logging

from PySide6.QtWidgets import QMessageBox, QWidget

from app.engine import EngineConfig
from app.engine.devices import fit_check

log = logging.getLogger("chorus.ui.models")


def confirm_fit(parent: QWidget | None, path: str, engine_fields: dict, what: str = "Load") -> bool:
    """True when the model fits at these settings, or the user chose to go on anyway. A file whose size cannot
    be estimated passes (the loader then says what is wrong with it)."""
    try:
        check = fit_check(EngineConfig(model_path=path, **engine_fields))
    except (ValueError, OSError) as exc:
        log.info("no memory estimate for %s: %s", path, exc)
        return True
    if check.fits:
        return True
    box = QMessageBox(QMessageBox.Warning, "This may not fit in memory", f"{check.message}\n\n{what} anyway?",
                      QMessageBox.Yes | QMessageBox.No, parent)
    box.setObjectName("fitWarning")
    box.setDefaultButton(QMessageBox.No)
    return box.exec() == QMessageBox.Yes
