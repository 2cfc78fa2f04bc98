"""Render resources/chorus.svg to the PNG sizes desktops want, with Qt's own SVG renderer (no extra tools).

    python packaging/make_icons.py hicolor OUT_DIR   -> OUT_DIR/<n>x<n>/apps/chorus.png (+ scalable/apps/chorus.svg)
    python packaging/make_icons.py iconset OUT.iconset -> the file names macOS `iconutil -c icns` expects
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "resources" / "chorus.svg"
HICOLOR_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICONSET_SIZES = (16, 32, 128, 256, 512)  # each also at @2x


def render(size: int, target: Path) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    image = QImage(size, size, QImage.Format_ARGB32)
    image.fill(Qt.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.Antialiasing)
    QSvgRenderer(str(SOURCE)).render(painter)
    painter.end()
    target.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(target), "PNG"):
        raise SystemExit(f"could not write {target}")


def hicolor(out: Path) -> None:
    for size in HICOLOR_SIZES:
        render(size, out / f"{size}x{size}" / "apps" / "chorus.png")
    (out / "scalable" / "apps").mkdir(parents=True, exist_ok=True)
    shutil.copy(SOURCE, out / "scalable" / "apps" / "chorus.svg")


def iconset(out: Path) -> None:
    for size in ICONSET_SIZES:
        render(size, out / f"icon_{size}x{size}.png")
        render(size * 2, out / f"icon_{size}x{size}@2x.png")


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("hicolor", "iconset"):
        print(__doc__, file=sys.stderr)
        return 2
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    _app = QGuiApplication.instance() or QGuiApplication([])  # QPainter needs a GUI application
    {"hicolor": hicolor, "iconset": iconset}[argv[0]](Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
