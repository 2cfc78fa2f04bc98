"""The installers' icons are rendered from resources/chorus.svg by packaging/make_icons.py."""

import importlib.util
from pathlib import Path

from PySide6.QtGui import QImage

_SPEC = importlib.util.spec_from_file_location("make_icons", Path(__file__).parents[2] / "packaging" / "make_icons.py")
make_icons = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(make_icons)


def test_hicolor_icons_have_their_sizes_and_are_not_blank(qapp, tmp_path):
    make_icons.hicolor(tmp_path)
    for size in make_icons.HICOLOR_SIZES:
        image = QImage(str(tmp_path / f"{size}x{size}" / "apps" / "chorus.png"))
        assert (image.width(), image.height()) == (size, size)
        centre = image.pixelColor(size // 2, size // 3)  # inside the rounded square, not the transparent corner
        assert centre.alpha() == 255
        assert image.pixelColor(0, 0).alpha() == 0
    assert (tmp_path / "scalable" / "apps" / "chorus.svg").read_bytes() == make_icons.SOURCE.read_bytes()


def test_macos_iconset_has_the_names_iconutil_expects(qapp, tmp_path):
    make_icons.iconset(tmp_path)
    names = {p.name for p in tmp_path.iterdir()}
    assert "icon_512x512@2x.png" in names and "icon_16x16.png" in names
    assert QImage(str(tmp_path / "icon_512x512@2x.png")).width() == 1024
