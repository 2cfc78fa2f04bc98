"""Light or dark, following the desktop: every colour the window draws is derived from Qt's palette.

`follow_desktop(app)` applies the desktop's colour scheme (Qt 6.5+ `QStyleHints.colorScheme()`) and follows it
when it changes (`colorSchemeChanged`). A platform theme that already gives a dark palette is kept; when the
desktop is dark but the palette is not (Fusion without a platform theme, e.g. under Xvfb or a bare X session),
the application gets `dark_palette()`. The environment variable `CHORUS_THEME=dark|light` forces one (the
screenshots use it); unset or `auto` follows the desktop.

Colours that mean something (a run state, a verdict, a token's probability) keep their hue in both themes and
are fitted to the palette: `readable` moves a colour's lightness until text in it reaches a contrast ratio with
the background it is drawn on (WCAG 2: 4.5 for text), `blend` tints a background towards a hue. Widgets that
draw with them re-derive them on `QEvent.PaletteChange`.
"""

from __future__ import annotations

import os
from functools import lru_cache

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette

THEME_ENV = "CHORUS_THEME"
TEXT_CONTRAST = 4.5  # WCAG 2 AA, normal text
# (role, colour) of the dark palette; the disabled group dims text, as Fusion's own palettes do
DARK = {QPalette.Window: "#2b2b2b", QPalette.WindowText: "#e6e6e6", QPalette.Base: "#1e1e1e",
        QPalette.AlternateBase: "#262626", QPalette.ToolTipBase: "#3a3a3a", QPalette.ToolTipText: "#f0f0f0",
        QPalette.PlaceholderText: "#8c8c8c", QPalette.Text: "#e6e6e6", QPalette.Button: "#353535",
        QPalette.ButtonText: "#e6e6e6", QPalette.BrightText: "#ff6b6b", QPalette.Light: "#4a4a4a",
        QPalette.Midlight: "#3e3e3e", QPalette.Mid: "#5a5a5a", QPalette.Dark: "#1a1a1a", QPalette.Shadow: "#0d0d0d",
        QPalette.Highlight: "#2f6fd6", QPalette.HighlightedText: "#ffffff", QPalette.Link: "#6aa6ff",
        QPalette.LinkVisited: "#b48cff"}
DARK_DISABLED = {QPalette.WindowText: "#7a7a7a", QPalette.Text: "#7a7a7a", QPalette.ButtonText: "#7a7a7a",
                 QPalette.Highlight: "#3d3d3d"}


def is_dark(palette: QPalette) -> bool:
    """The palette draws light text on a dark window."""
    return palette.color(QPalette.Window).lightness() < palette.color(QPalette.WindowText).lightness()


def dark_palette() -> QPalette:
    palette = QPalette()
    for role, colour in DARK.items():
        palette.setColor(role, QColor(colour))
    for role, colour in DARK_DISABLED.items():
        palette.setColor(QPalette.Disabled, role, QColor(colour))
    return palette


def wanted_scheme() -> Qt.ColorScheme:
    """CHORUS_THEME if it says dark or light, else the desktop's scheme (Unknown when it does not say)."""
    forced = os.environ.get(THEME_ENV, "").strip().lower()
    if forced in ("dark", "light"):
        return Qt.ColorScheme.Dark if forced == "dark" else Qt.ColorScheme.Light
    return QGuiApplication.styleHints().colorScheme()


def apply_scheme(app, scheme: Qt.ColorScheme | None = None) -> None:
    """Give `app` a palette of `scheme` (default: `wanted_scheme()`) unless its palette already is one."""
    scheme = wanted_scheme() if scheme is None else scheme
    dark = is_dark(app.palette())
    if scheme == Qt.ColorScheme.Dark and not dark:
        app.setPalette(dark_palette())
    elif scheme == Qt.ColorScheme.Light and dark:
        app.setPalette(app.style().standardPalette())
    else:
        return
    app.setStyleSheet(app.styleSheet())  # the style sheet's palette(...) colours are resolved again


def follow_desktop(app) -> None:
    """Apply the wanted scheme now and whenever the desktop's changes (a forced one stays)."""
    apply_scheme(app)
    hints = QGuiApplication.styleHints()
    hints.colorSchemeChanged.connect(lambda scheme: apply_scheme(app, None if os.environ.get(THEME_ENV) else scheme))


# --- colours fitted to a palette ---------------------------------------------------------------------------------
def luminance(colour: QColor) -> float:
    """WCAG 2 relative luminance."""
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


def contrast_ratio(a: QColor, b: QColor) -> float:
    """WCAG 2 contrast ratio, 1 (none) to 21 (black on white)."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def readable(colour: QColor | str, background: QColor, ratio: float = TEXT_CONTRAST) -> QColor:
    """`colour`'s hue, lightened (on a dark background) or darkened (on a light one) until it reaches `ratio`."""
    return QColor(_readable(QColor(colour).rgba(), QColor(background).rgba(), ratio))


@lru_cache(maxsize=256)  # painters ask per cell and per paint: a few colours on a few backgrounds
def _readable(rgba: int, background_rgba: int, ratio: float) -> int:
    colour, background = QColor.fromRgba(rgba), QColor.fromRgba(background_rgba)
    lighten = luminance(background) < 0.18
    hue, saturation, lightness, alpha = colour.getHslF()
    while contrast_ratio(colour, background) < ratio and 0.0 < lightness < 1.0:
        lightness = min(1.0, lightness + 0.02) if lighten else max(0.0, lightness - 0.02)
        colour = QColor.fromHslF(max(hue, 0.0), saturation, lightness, alpha)
    return colour.rgba()


def blend(base: QColor, hue: QColor | str, amount: float) -> QColor:
    """`base` moved `amount` (0..1) of the way towards `hue`: a tint that keeps the base's text readable."""
    hue = QColor(hue)
    mix = [b + (h - b) * amount for b, h in ((base.redF(), hue.redF()), (base.greenF(), hue.greenF()),
                                             (base.blueF(), hue.blueF()))]
    return QColor.fromRgbF(*mix)
