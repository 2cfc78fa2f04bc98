"""View → Theme: System, Light or Dark, applied at once (no restart) and kept in the settings (THEME).

The setting is the one source of truth: the window applies it when it opens (CHORUS_THEME, when set, overrides
it for that launch only), the menu and the Settings dialog change it, and the menu's check mark follows whatever
applied it last (app.ui.theme.Theme).
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu, QWidget

from app.ui import settings as keys
from app.ui.settings import Settings
from app.ui.theme import THEMES, Theme, forced_theme


def choose_theme(settings: Settings, choice: str) -> None:
    """Keep `choice` as the theme and apply it now."""
    settings.set(keys.THEME, choice)
    Theme.of().use(choice)


class ThemeMenu(QObject):
    def __init__(self, settings: Settings, menu: QMenu, parent: QWidget):
        super().__init__(parent)
        self.settings = settings
        self.theme = Theme.of()
        self.menu = menu.addMenu("Theme")
        group = QActionGroup(self, exclusive=True)
        self.actions: dict[str, QAction] = {}
        for choice, text in THEMES.items():
            action = QAction(text, self.menu, checkable=True)
            action.setStatusTip("Follow the desktop's light or dark setting" if choice == "system" else
                                f"Always {text.lower()}, whatever the desktop uses")
            action.triggered.connect(lambda _=False, c=choice: choose_theme(self.settings, c))
            group.addAction(action)
            self.menu.addAction(action)
            self.actions[choice] = action
        self.theme.changed.connect(self._check)
        self.theme.use(forced_theme() or settings.get(keys.THEME))

    def _check(self, choice: str) -> None:
        self.actions[choice].setChecked(True)
