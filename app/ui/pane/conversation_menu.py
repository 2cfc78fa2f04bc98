"""A pane's Conversation menu: rerun the last reply, edit an earlier message, drop the oldest exchange, see the
prompt as the model sees it, clear.

Filled each time it opens, from the pane's conversation as it is then; every entry is disabled while the pane
runs, so a conversation never changes under a streaming reply.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMenu, QWidget

from app.ui.pane.prompt_view import PromptView

PREVIEW_CHARS = 48


class ConversationMenu(QMenu):
    def __init__(self, pane, parent: QWidget | None = None):
        super().__init__(parent)
        self.pane = pane
        self.aboutToShow.connect(self.fill)

    def fill(self) -> None:
        pane = self.pane
        spec = pane.spec
        self.clear()
        idle = not pane.busy
        answered = bool(spec.turns) and spec.turns[-1]["role"] == "assistant"
        self.addAction("Rerun last reply", lambda: pane.run(use_draft=False)).setEnabled(idle and answered)
        edit = self.addMenu("Edit message")
        for i, turn in enumerate(spec.turns):
            if turn["role"] == "user":
                text = " ".join(turn["content"].split())
                more = "…" if len(text) > PREVIEW_CHARS else ""
                edit.addAction(f"{i // 2 + 1}. {text[:PREVIEW_CHARS]}{more}", lambda index=i: pane.start_edit(index))
        edit.setEnabled(idle and bool(edit.actions()))
        self.addAction("Drop oldest exchange", pane.drop_oldest).setEnabled(idle and bool(spec.turns))
        self.addSeparator()
        self.addAction("Prompt as the model sees it…", self.show_prompt).setEnabled(
            bool(spec.turns) or bool(spec.draft.strip()))
        self.addSeparator()
        self.addAction("Clear conversation", pane.clear_conversation).setEnabled(idle and bool(spec.turns))

    def show_prompt(self) -> PromptView | None:
        """Open the pane's next prompt as its model sees it; a reason in the pane's status when there is none."""
        pane = self.pane
        try:
            text = pane.controller.prompt_as_seen(pane.spec)
        except ValueError as exc:
            pane.show_error(f"No prompt to show: {exc}")
            return None
        view = PromptView(pane.spec.label, text, pane.window())
        view.setAttribute(Qt.WA_DeleteOnClose)
        view.show()
        return view
