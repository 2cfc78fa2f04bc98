"""Model → Prompt format: how chat messages become a prompt for the loaded model file, overridable per file.

Auto (the GGUF's template, else the format its special tokens reveal, else raw), the GGUF's template, raw, or
any of llama.cpp's built-in formats; and Tool calls: how the model is offered tools (auto: its template's own
tool-call format, else llama.cpp's generic JSON format; the template's own only; always the generic one).
Choosing one stores it for this model file and reloads the model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from PySide6.QtGui import QActionGroup
from PySide6.QtWidgets import QMenu

from app.engine import ModelInfo, chat_format

TOOL_CHOICES = (("auto", "Auto (the template's own, else generic JSON)"), ("template", "The template's own only"),
                ("generic", "Generic JSON (llama.cpp's fallback)"))


class PromptFormatMenu:
    def __init__(self, settings, model_info: Callable[[], ModelInfo | None], loading: Callable[[], bool], load_model,
                 confirm_interrupt, parent_menu: QMenu, owner):
        """`model_info()` is the loaded model's (None: none), `loading()` whether one is loading; `load_model(path)`
        (a coroutine) reloads with the stored settings; `confirm_interrupt(what)` asks before stopping runs;
        `owner` (a QObject) owns the action group."""
        self.settings, self._model_info, self._loading = settings, model_info, loading
        self._load_model, self._confirm = load_model, confirm_interrupt
        menu = parent_menu.addMenu("Prompt format")
        choices = [(chat_format.AUTO, "Auto (the GGUF's template, else detected)"),
                   (chat_format.GGUF, "Template from the GGUF"), (chat_format.RAW, "Raw: no template")]
        builtin = menu.addMenu("Built-in (llama.cpp)")
        self.actions = _choices(owner, [(builtin if text == name else menu, name, text)
                                        for name, text in choices + [(n, n) for n in chat_format.builtin_names()]],
                                self.choose)
        tools = menu.addMenu("Tool calls")
        self.tool_actions = _choices(owner, [(tools, name, text) for name, text in TOOL_CHOICES], self.choose_tools)

    def choose(self, name: str) -> None:
        """Remember the format for the loaded model and reload it with that format."""
        self._reload_with(name, self.settings.chat_format, self.settings.set_chat_format, "Changing the prompt format")

    def choose_tools(self, name: str) -> None:
        """Remember how the loaded model is offered tools and reload it so."""
        self._reload_with(name, self.settings.tool_format, self.settings.set_tool_format,
                          "Changing the tool-call format")

    def _reload_with(self, name: str, stored: Callable[[str], str], store: Callable[[str, str], None],
                     what: str) -> None:
        """Store `name` for the loaded model's file and reload it, once the user agrees to interrupt what runs;
        otherwise tick what is stored again."""
        info = self._model_info()
        if info is None or name == stored(info.path):
            return
        if not self._loading() and self._confirm(what):
            store(info.path, name)
            asyncio.ensure_future(self._load_model(info.path))
        else:
            self.check(info.path)

    def check(self, model_path: str) -> None:
        """Tick the formats stored for this model file."""
        current = self.settings.chat_format(model_path)
        for action in self.actions.actions():
            action.setChecked(action.data() == current)
        tools = self.settings.tool_format(model_path)
        for action in self.tool_actions.actions():
            action.setChecked(action.data() == tools)


def _choices(owner, entries: list[tuple[QMenu, str, str]], chosen: Callable[[str], None]) -> QActionGroup:
    """An exclusive group of checkable actions, one per (menu, name, text); `chosen(name)` when one is picked."""
    group = QActionGroup(owner)
    group.setExclusive(True)
    for menu, name, text in entries:
        action = menu.addAction(text)
        action.setCheckable(True)
        action.setData(name)
        group.addAction(action)
    group.triggered.connect(lambda action: chosen(action.data()))
    return group
