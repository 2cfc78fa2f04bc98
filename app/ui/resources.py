"""Find the shipped resources (icons, stylesheet) in the source tree or inside an installer bundle."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

from PySide6.QtGui import QIcon


def resources_dir() -> Path:
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle) / "resources"
    return Path(__file__).resolve().parents[2] / "resources"


@cache
def app_icon() -> QIcon:
    return QIcon(str(resources_dir() / "chorus.svg"))


def stylesheet() -> str:
    path = resources_dir() / "style.qss"
    return path.read_text(encoding="utf-8") if path.is_file() else ""
