"""What a user can do to a pane, through the SessionController: run, stop, branch, edit, drop, clear.

A mixin of PromptPane (it uses the pane's `spec`, `controller`, `busy`, `commit_form`, `show_error` and `prompt`).
A problem is shown in the pane's status line, never raised: a click never ends in a traceback.
"""

from __future__ import annotations

from app.session import PaneSpec


class PaneActions:
    _draft_before_edit = ""  # the draft an edit replaced, restored by Cancel edit

    def run(self, use_draft: bool = True) -> bool:
        """Run this pane (a message, or regenerate the last reply); a problem is shown, never raised."""
        if self.busy:
            return False
        try:
            self.commit_form()
            self.controller.run(self.spec, use_draft=use_draft)
        except (ValueError, RuntimeError) as exc:
            self.show_error(str(exc))
            return False
        return True

    def stop(self) -> None:
        self.controller.stop(self.spec)

    def branch(self, token_index: int, token_text: str) -> PaneSpec | None:
        try:
            return self.controller.branch(self.spec, token_index, token_text)
        except (ValueError, RuntimeError) as exc:
            self.show_error(str(exc))
            return None

    def start_edit(self, index: int) -> None:
        self._draft_before_edit = self.spec.draft
        self._images_before_edit = self.spec.draft_images
        self.controller.start_edit(self.spec, index)
        self.prompt.setFocus()

    def cancel_edit(self) -> None:
        self.controller.cancel_edit(self.spec, self._draft_before_edit, getattr(self, "_images_before_edit", ()))

    def drop_oldest(self) -> None:
        self.controller.drop_oldest(self.spec)

    def drop_oldest_and_retry(self) -> None:
        self.drop_oldest()
        self.run()

    def clear_conversation(self) -> None:
        self.controller.clear(self.spec)
