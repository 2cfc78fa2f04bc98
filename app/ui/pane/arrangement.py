"""How a pane arranges itself: output first once it has a reply, columns mode, and the accessible names of its
controls. A mixin of PromptPane (it uses the pane's `spec`, `prompt`, `rating`, `controls`, `_toggles`,
`_compact` and the widgets it names).

Output first: a pane exists to show its reply. Before its first run a pane shows its settings sections and a
full editor; once it has a conversation or a run, the closed sections hide their toggles (the pane's ⚙ menu
opens them), the editor folds to one line until it is focused (app/ui/pane/editor.py) and the rating shows, so
the reply gets most of the pane's height.
"""

from __future__ import annotations

from app.session import RunState


class PaneArrangement:
    def set_compact(self, compact: bool) -> None:
        """Columns mode: settings and editor folded away (their sections closed) so the outputs get the height."""
        self._compact = compact
        if compact:
            for toggle in self._toggles:
                toggle.setChecked(False)  # closes its section
        self.controls.set_sections_enabled(not compact)
        self._arrange()
        self.header.set_compact(compact)

    def has_reply(self) -> bool:
        """The pane has a conversation or a run (streaming or ended): its reply comes first."""
        return bool(self.spec.turns) or self.spec.result.state is not RunState.IDLE

    def _arrange(self) -> None:
        """Output first: once there is a reply, closed settings sections hide their toggles (the ⚙ menu opens
        them), the editor folds to a line until focused, and the rating shows."""
        reply = self.has_reply()
        for toggle in self._toggles:
            toggle.setVisible(not self._compact and (not reply or toggle.isChecked()))
        self.prompt.setVisible(not self._compact)
        self.prompt.set_foldable(reply)
        self.rating.setVisible(reply)

    def name_controls(self) -> None:
        """Accessible names that say which pane each control belongs to."""
        label = self.spec.label
        self.setAccessibleName(label)
        self.prompt.setAccessibleName(f"Message for {label}")
        self.system_prompt.setAccessibleName(f"System prompt of {label}")
        self.output.setAccessibleName(f"Conversation of {label}")
        self.status.setAccessibleName(f"Status of {label}")
        self.controls.name_for(label)
