"""Light or dark: the user's choice (System, Light or Dark), and every colour the window draws derived from Qt's
palette.

`Theme.of(app).use(choice)` applies a choice at once, with no restart: "system" follows the desktop's colour
scheme (Qt 6.5+ `QStyleHints.colorScheme()`) and keeps following it (`colorSchemeChanged`); "light" and "dark"
hold whatever the desktop does. A platform theme that already gives a palette of the wanted scheme is kept;
otherwise the application gets `dark_palette()` or the style's standard (light) one. The choice is a declared
setting (app/ui/settings.py THEME, View → Theme and the Settings dialog: app/ui/window/theme_menu.py); the
environment variable `CHORUS_THEME=dark|light|system` overrides it for one launch (`forced_theme`).

Editors (the prompt, the system prompt, the JSON and tool fields, line edits) get a border drawn in a colour
fitted to the palette (`editor_rules`): Fusion draws theirs a shade darker than the window, which vanishes on a
dark base. The rules are re-derived whenever the scheme is applied.

Colours that mean something (a run state, a verdict, a token's probability) keep their hue in both themes and
are fitted to the palette: `readable` moves a colour's lightness until text in it reaches a contrast ratio with
the background it is drawn on (WCAG 2: 4.5 for text, 3 for a control's edge), `blend` tints a background
towards a hue. Widgets that draw with them re-derive them on `QEvent.PaletteChange`.
"""

from __future__ import annotations

import os
from functools import lru_cache

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette

THEME_ENV = "CHORUS_THEME"
THEMES = {"system": "System", "light": "Light", "dark": "Dark"}  # the choices, as menus and the settings name them
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


def forced_theme() -> str | None:
    """The theme CHORUS_THEME forces for this launch ("auto" means "system"), or None."""
    forced = os.environ.get(THEME_ENV, "").strip().lower()
    forced = "system" if forced == "auto" else forced
    return forced if forced in THEMES else None


def wanted_scheme() -> Qt.ColorScheme:
    """CHORUS_THEME if it says dark or light, else the desktop's scheme (Unknown when it does not say)."""
    forced = forced_theme()
    if forced in ("dark", "light"):
        return Qt.ColorScheme.Dark if forced == "dark" else Qt.ColorScheme.Light
    return QGuiApplication.styleHints().colorScheme()


def apply_scheme(app, scheme: Qt.ColorScheme | None = None) -> None:
    """Give `app` a palette of `scheme` (default: `wanted_scheme()`; Unknown: the platform's own), keeping the
    platform's palette when it already is one, and fit the editors' borders to it."""
    scheme = wanted_scheme() if scheme is None else scheme
    before = QPalette(app.palette())
    wanted_dark = {Qt.ColorScheme.Dark: True, Qt.ColorScheme.Light: False}.get(scheme)
    if wanted_dark is None or wanted_dark != is_dark(before):
        app.setPalette(QPalette())  # back to the platform's palette (nothing set explicitly)
        dark = is_dark(app.palette())
        if wanted_dark and not dark:
            app.setPalette(dark_palette())
        elif wanted_dark is False and dark:
            app.setPalette(app.style().standardPalette())
    if app.palette() != before or EDITOR_RULES_MARK not in app.styleSheet():
        restyle(app)  # the style sheet's palette(...) colours are resolved again, the borders fitted


def follow_desktop(app) -> None:
    """Apply the wanted scheme now and whenever the desktop's changes (a forced one stays)."""
    Theme.of(app).use(forced_theme() or "system")


# --- editors' borders --------------------------------------------------------------------------------------------
EDGE_CONTRAST = 3.0  # WCAG 2 non-text contrast: a control's boundary against what surrounds it
EDITOR_RULES_MARK = "\n/* editors' borders, fitted to the palette (app/ui/theme.py) */\n"
EDITORS = 'QPlainTextEdit[readOnly="false"], QTextEdit[readOnly="false"], QLineEdit[frame="true"]'


def editor_border(palette: QPalette) -> QColor:
    """The palette's mid tone, moved until it stands out 3:1 from both the base (a pane, an editor's inside)
    and the window (a dialog) colours."""
    colour = readable(palette.color(QPalette.Mid), palette.color(QPalette.Base), EDGE_CONTRAST)
    return readable(colour, palette.color(QPalette.Window), EDGE_CONTRAST)


def editor_rules(palette: QPalette) -> str:
    """Style-sheet rules for the editable text fields: a border that shows in this palette, the highlight when
    focused. (A line edit inside a spin box or a combo box has no frame of its own and is left alone.)"""
    focused = ", ".join(f"{selector.strip()}:focus" for selector in EDITORS.split(","))
    return (f"{EDITORS} {{ border: 1px solid {editor_border(palette).name()}; border-radius: 3px; }}\n"
            f"{focused} {{ border-color: {palette.color(QPalette.Highlight).name()}; }}\n")


def restyle(app) -> None:
    """Replace the editor rules at the end of the application's style sheet with ones for its palette now."""
    base = app.styleSheet().split(EDITOR_RULES_MARK)[0]
    app.setStyleSheet(base + EDITOR_RULES_MARK + editor_rules(app.palette()))


class Theme(QObject):
    """The application's theme choice, applied live. One per application: `Theme.of(app)`."""

    changed = Signal(str)
    """The choice now applied: "system", "light" or "dark"."""

    def __init__(self, app):
        super().__init__(app)
        self.app = app
        self.choice = "system"
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._desktop_changed)

    @classmethod
    def of(cls, app=None) -> Theme:
        app = app or QGuiApplication.instance()
        theme = app.findChild(Theme)
        return theme if theme is not None else cls(app)

    def use(self, choice: str) -> None:
        """Apply "system", "light" or "dark" (anything else: "system") now."""
        self.choice = choice if choice in THEMES else "system"
        schemes = {"dark": Qt.ColorScheme.Dark, "light": Qt.ColorScheme.Light}
        apply_scheme(self.app, schemes.get(self.choice, QGuiApplication.styleHints().colorScheme()))
        self.changed.emit(self.choice)

    def _desktop_changed(self, _scheme) -> None:
        if self.choice == "system":
            self.use("system")


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
