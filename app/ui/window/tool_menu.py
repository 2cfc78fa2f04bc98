"""The Tools menu's way into tool calling: *Add tools to this pane…* (the pane's Tools section, with an example
tool and mock result when it has none), *Continue all tool calls* (every pane waiting with calls answered from its
mock results, the next turns run together) and *How tool calling works…* (the steps, in a message).

Given the grid, the current pane and the status bar; the panes' own views do the work (PromptPane.open_tools,
ToolCardsView.continue_calls).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QMessageBox, QStatusBar, QWidget

from app.session import tool_loop
from app.ui.pane.grid import PaneGrid
from app.ui.pane.prompt_pane import PromptPane

HOW_IT_WORKS = (
    "<p><b>Tool calling, step by step</b></p><ol>"
    "<li><b>Tools → Add tools to this pane…</b> opens the pane's Tools section with an example tool (get_weather) "
    "and a mock result for it. Write your own as OpenAI-style function definitions (JSON).</li>"
    "<li><b>Tool choice</b>: <i>auto</i> lets the model decide; <i>required</i> (or one function's name) makes it "
    "call. <b>Call first</b> starts the reply with the call, so even a small model writes a valid one. The line at "
    "the top of the section says how the loaded model takes tools.</li>"
    "<li><b>Run</b>: each call is a card as the reply writes it — the function, its arguments, whether they "
    "validate, and the mock result that answers it.</li>"
    "<li><b>Continue</b> answers the calls with the mock results and generates the next turn, for every pane of "
    "the group waiting with calls; <b>Continue all</b> (here or beside Continue) does it for every pane. That turn "
    "runs with tool choice <i>auto</i>, so the model may answer with the results. <b>auto N steps</b> goes on by "
    "itself for up to N rounds.</li></ol>"
    "<p>Mock results for a whole group are typed once, under the pane's own. The guide's <i>Use tools</i> section "
    "(docs/guide.md) has the details.</p>")


class ToolMenu(QObject):
    def __init__(self, grid: PaneGrid, current_pane: Callable[[], PromptPane | None], status: QStatusBar,
                 parent: QWidget):
        super().__init__(parent)
        self.grid, self.current_pane, self.status, self.parent_widget = grid, current_pane, status, parent

    def build_menu(self, menu: QMenu) -> None:
        """The entries, first in `menu` (above what it holds), then a separator."""
        self._before = menu.actions()[0] if menu.actions() else None
        self.act_add_tools = self._add(menu, "Add tools to this pane…", self.add_tools,
                                       "Open the pane's Tools section (an example tool when it has none)")
        self.act_continue_all = self._add(menu, "Continue all tool calls", self.continue_all,
                                          "Answer every waiting pane's calls with its mock results and run the "
                                          "next turns together")
        self.act_help = self._add(menu, "How tool calling works…", self.show_help, "Tool calling, step by step")
        menu.insertSeparator(self._before) if self._before is not None else menu.addSeparator()

    def _add(self, menu: QMenu, text: str, slot, tip: str) -> QAction:
        action = QAction(text, menu)
        menu.insertAction(self._before, action)  # None: at the end
        action.setStatusTip(tip)
        action.triggered.connect(slot)
        return action

    def add_tools(self) -> PromptPane:
        """The current pane's Tools section, open and in sight (a pane is added when there is none)."""
        view = self.current_pane() or self.grid.add_pane()
        view.open_tools()
        self.grid.reveal(view)
        view.tools.editor.setFocus()
        return view

    def continue_all(self) -> str:
        """Continue every pane waiting with calls (through the current pane's view if it waits, else the first
        that does); the status bar says what happened."""
        waiting = [v for v in self.grid.panes if tool_loop.pending_calls(v.spec)]
        current = self.current_pane()
        view = current if current in waiting else (waiting[0] if waiting else None)
        text = view.tool_cards.continue_calls(everywhere=True).splitlines()[0] if view is not None \
            else "No pane is waiting with tool calls"
        self.status.showMessage(text, 8000)
        return text

    def show_help(self) -> QMessageBox:
        box = QMessageBox(QMessageBox.Information, "How tool calling works", HOW_IT_WORKS, QMessageBox.Ok,
                          self.parent_widget)
        box.open()
        return box
