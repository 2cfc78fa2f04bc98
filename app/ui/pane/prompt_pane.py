"""One prompt pane: a view of its PaneSpec — the conversation, the next message, the sampling settings — and
its run streaming in with its latency figures.

The pane renders its spec and writes the user's edits into it; structural actions and runs go through the
SessionController, and a problem is shown in the pane's status line, never raised: a click never ends in a
traceback. It keeps no copy of the run's state: text, state and figures are read from `spec.result` each time.

Built when needed: a pane starts as an empty frame (its state stripe, the height a built pane takes) and gets
its widgets (pane_widgets.py) the first time it is painted (scrolled into view), focused (Tab reaches it), or
any part of it is asked for (`pane.prompt`, `pane.output`, …). Until then it listens to nothing: a reply
streaming into a pane no one has looked at costs the window nothing, and the pane shows the whole reply when it
is built, from the spec. What the grid tells every pane (its header's differences, the backends, columns mode, a
problem to show) is kept and applied when it is built. How spec and widgets follow each other: pane_render.py.

Output first: a pane exists to show its reply. Before its first run a pane shows its settings sections and a
full editor; once it has a conversation or a run, the closed sections hide their toggles (the pane's ⚙ menu
opens them), the editor folds to one line until it is focused (app/ui/pane/editor.py) and the rating shows, so
the reply gets most of the pane's height.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QFrame, QWidget

from app.session import MAIN, PaneSpec, RunState, SessionController
from app.ui.pane import pane_render, pane_widgets, settings_sections
from app.ui.pane.tools_options import server_support_text
from app.ui.widgets.striped_frame import StripedFrame

# The coloured stripe down a pane's left edge that says its state at a glance (red for a message shown outside
# a run, as for an error).
STATE_COLORS = {RunState.QUEUED: QColor("#9ca3af"), RunState.PREFILLING: QColor("#f59e0b"),
                RunState.GENERATING: QColor("#3b82f6"), RunState.DONE: QColor("#10b981"),
                RunState.CANCELLED: QColor("#6b7280"), RunState.ERROR: QColor("#ef4444"),
                RunState.INTERRUPTED: QColor("#a855f7")}


class PromptPane(StripedFrame):
    sig_compare_action = Signal(object, str)
    """A compare action for this pane: (pane, "variants" | "compare" | "diff_previous" | "columns" | "run_group" |
    "table")."""
    sig_sections_changed = Signal()
    """A settings section opened, closed or changed its layout: the width the pane needs may have changed
    (`settings_width`)."""
    _draft_before_edit = ""  # the draft an edit replaced, restored by Cancel edit
    _images_before_edit: tuple = ()  # and its images
    built = False  # its widgets are made (build)
    held = 0  # while above 0 (PaneGrid.rendering's steps), every pane's changes wait for its next render
    _building = False

    def __init__(self, spec: PaneSpec, controller: SessionController, parent: QWidget | None = None,
                 on_shown: Callable[[PromptPane], None] | None = None):
        """`on_shown(pane)`: the pane, not built yet, was painted: build it soon (the grid builds a few per
        event-loop turn); without it the pane builds itself on the next turn."""
        super().__init__(parent)
        self.setObjectName("promptPane")
        self.setFrameShape(QFrame.StyledPanel)
        self.setFocusPolicy(Qt.TabFocus)  # until built: Tab reaches it, and focusing it builds it
        self.setMinimumWidth(180)
        self.spec, self.controller = spec, controller
        self._on_shown = on_shown
        self._tool_support = ""  # the local model's line for the Tools section (set_tool_support)
        self._notice: str | None = None  # an error shown outside a run (no model, invalid setting): red stripe
        self._compact = False
        self._differences: list[str] | None = None  # what the grid says sets this pane apart (header)
        self._backends: tuple[list[str], dict[str, str]] | None = None
        self._checker = None  # the loaded model's grammar checker for the Output section
        self._refresh = QTimer(self, singleShot=True, interval=0)  # one refresh per event-loop turn
        self._refresh.timeout.connect(self._render)
        self._dirty: set[str] = set()

    def __getattr__(self, name: str):
        """A part of a pane not built yet (`pane.prompt`, `pane.output`, …): build the pane, then answer; a
        settings section's form not made yet (`pane.sampling`, `pane.tools`, …): make it, then answer."""
        if name in pane_widgets.PARTS and not self.built and not self._building:
            self.build()
            return getattr(self, name)
        if name in settings_sections.PARTS and not self._building:
            self.sections.make(settings_sections.PARTS[name])
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def build(self) -> None:
        """Make the pane's widgets and show its spec in them (once; later calls do nothing)."""
        if self.built or self._building:
            return
        self._building = True
        self.setUpdatesEnabled(False)
        try:
            pane_widgets.build(self)
            self.built = True
        finally:
            self._building = False
        self.setFocusPolicy(Qt.NoFocus)
        self.setMinimumHeight(0)  # the placeholder's height goes: its layout says what the pane needs now
        notice = self._notice
        self.load_spec()
        self._show_tool_support()
        if self._backends is not None:
            self.header.set_backends(*self._backends)
        if self._differences is not None:
            self.header.set_differences(self._differences)
        if self._compact:
            self.set_compact(True)
        if notice is not None:
            self.show_error(notice)
        pane_widgets.show_parts(self)
        self.setUpdatesEnabled(True)

    def detach(self) -> None:
        """The pane leaves the session: stop listening to its spec (the widget is about to be deleted)."""
        self._refresh.stop()
        if not self.built:
            return
        self.spec.events.all.disconnect(self.on_spec_event)
        self.sections.detach()
        self.tool_cards.detach()

    def eventFilter(self, watched, event) -> bool:
        """A settings section's body (settings_sections.py) changed its layout."""
        if event.type() == QEvent.LayoutRequest:
            self.sig_sections_changed.emit()
        return False

    def paintEvent(self, event) -> None:
        if not self.built:
            if self._on_shown is not None:
                self._on_shown(self)
            else:
                QTimer.singleShot(0, self, self.build)
        elif self._dirty and not self._refresh.isActive():
            self._refresh.start()  # back in view with streamed changes pending: show them (not while painting)
        super().paintEvent(event)

    def focusInEvent(self, event) -> None:
        """Tab (or Shift+Tab) reached the pane before it was built: build it and focus its first (last) control."""
        super().focusInEvent(event)
        if self.built:
            return
        self.build()
        if event.reason() == Qt.BacktabFocusReason:
            self.output.setFocus(Qt.BacktabFocusReason)
        else:
            (self.prompt if self.prompt.isVisibleTo(self) else self.run_button).setFocus(Qt.TabFocusReason)

    # --- state ----------------------------------------------------------------------------------------------------
    @property
    def number(self) -> int | None:
        return self.spec.number

    @property
    def state(self) -> RunState:
        return self.spec.result.state

    @property
    def busy(self) -> bool:
        return self.spec.result.busy

    @property
    def tokens(self) -> int:
        return self.spec.result.generated_tokens

    def reply_text(self) -> str:
        """The last reply (streaming or finished)."""
        return self.spec.result.text

    def show_state(self) -> None:
        self._notice = None
        busy = self.busy
        self.run_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        # an earlier exchange to drop: a message too long on its own (a long video) is not helped by losing itself
        drop = self.spec.result.error_kind == "context" and not busy and len(self.spec.turns) > 1
        if self.drop_button.isHidden() == drop:
            self.drop_button.setVisible(drop)
            self.controls.place_rating()
        self._update_stripe()
        self.version_bar.sync()
        self.refresh_status()

    def show_error(self, message: str) -> None:
        """A problem before or outside a run (empty message, invalid setting, no model): nothing else changes
        (a pane not built yet shows it once it is)."""
        self._notice = message
        self._update_stripe()
        if self.built:
            self.status.setText(f"⚠ {message}")

    def _stripe_color(self) -> QColor | None:
        return STATE_COLORS[RunState.ERROR] if self._notice is not None else STATE_COLORS.get(self.spec.result.state)

    def tick(self) -> None:
        """Refresh the live figures (called a few times a second while busy)."""
        if self.built and self.busy and not self._scrolled_away():
            self.refresh_status()

    def _scrolled_away(self) -> bool:
        """Shown, but no part of it on screen (scrolled out of the grid's view)."""
        return self.isVisible() and self.visibleRegion().isEmpty()

    def refresh_status(self) -> None:
        self.status.setText(self.spec.result.summary(time.perf_counter()))

    # --- actions, through the SessionController -------------------------------------------------------------------
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
        self.controller.cancel_edit(self.spec, self._draft_before_edit, self._images_before_edit)

    def drop_oldest(self) -> None:
        self.controller.drop_oldest(self.spec)

    def drop_oldest_and_retry(self) -> None:
        self.drop_oldest()
        self.run()

    def clear_conversation(self) -> None:
        self.controller.clear(self.spec)

    # --- what the grid tells every pane (kept until the pane is built) ------------------------------------------
    def set_tool_support(self, text: str) -> None:
        """How the local model takes tools, in words: the Tools section says it when the pane runs there."""
        self._tool_support = text
        if self.built:
            self._show_tool_support()
            self.images.check()  # another model: can it read the pane's images?

    def _show_tool_support(self) -> None:
        if self.sections.built("tools"):  # (else said when the Tools section is made)
            self.tools.set_support(self.tool_support_text())

    def tool_support_text(self) -> str:
        """How the pane's backend takes tools, in words (the Tools section's line)."""
        backend = self.spec.backend or MAIN
        return self._tool_support if backend == MAIN else server_support_text(backend)

    show_tool_support = _show_tool_support

    def set_backends(self, names: list[str], labels: dict[str, str]) -> None:
        """The backends the header offers (and how it shows them)."""
        self._backends = (names, labels)
        if self.built:
            self.header.set_backends(names, labels)
            self.images.check()

    def set_differences(self, differences: list[str]) -> None:
        """The settings that set this pane apart from the others of its group (its header's title)."""
        self._differences = differences
        if self.built:
            self.header.set_differences(differences)

    def set_checker(self, check) -> None:
        """The loaded model's grammar and schema checker, for the Output section's format editor."""
        self._checker = check
        if self.built and self.sections.built("options"):
            self.options.set_checker(check)

    @property
    def checker(self):
        """The loaded model's grammar and schema checker (None before a model is loaded)."""
        return self._checker

    def set_compact(self, compact: bool) -> None:
        """Columns mode: settings and editor folded away (their sections closed) so the outputs get the height."""
        was, self._compact = self._compact, compact
        if not self.built or not (compact or was):  # in the grid already: nothing to unfold
            return
        if compact:
            for toggle in self._toggles:
                toggle.setChecked(False)  # closes its section
        self.controls.set_sections_enabled(not compact)
        self.arrange()
        self.header.set_compact(compact)

    def settings_width(self) -> int:
        """The width the settings sections open in this pane need to show whole (0 with none open)."""
        if not self.built:
            return 0
        margins = self.layout().contentsMargins()
        return max([0, *(section.minimumSizeHint().width() + margins.left() + margins.right()
                         for section in self.sections.bodies() if section.isVisibleTo(self))])

    def has_reply(self) -> bool:
        """The pane has a conversation or a run (streaming or ended): its reply comes first."""
        return bool(self.spec.turns) or self.spec.result.state is not RunState.IDLE

    def arrange(self) -> None:
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
        self.video_fields.accessible_for(label)
        self.controls.name_for(label)

    # --- spec -> widgets, widgets -> spec (pane_render.py) ----------------------------------------------------
    def on_spec_event(self, info) -> None:
        """A change the user made (or an action: run, edit, clear) shows at once; streamed results are
        coalesced into one refresh per event-loop turn, and so is everything while the panes are `held` (work
        that changes many panes a step at a time: a run's start changes the conversation, the draft, the
        versions and the result one after another, and the pane renders once, when they are all in)."""
        self._dirty.add(pane_render.changed_field(info))
        if self._dirty - {"result"} and not PromptPane.held:
            self._render()
        elif not self._refresh.isActive():
            self._refresh.start()

    def render_pending(self) -> None:
        """Render the changes waiting for the next turn now (work done in slices renders each pane within its
        slice, not all of them in the turn after)."""
        if self._dirty:
            self._render()

    def _render(self) -> None:
        self._refresh.stop()
        if self._dirty == {"result"} and self._scrolled_away():
            return  # only streamed changes, and no one can see them: they show when the pane is painted again
        dirty, self._dirty = self._dirty, set()
        pane_render.render(self, dirty)

    def load_spec(self) -> None:
        """Show everything the spec holds (after a restore, a duplicate or a run)."""
        pane_render.load_spec(self)

    def load_editors(self, fields=pane_render.EDITOR_FIELDS) -> None:
        pane_render.load_editors(self, fields)

    def commit_form(self) -> None:
        """Copy the sampling and output forms into the spec; raises ValueError with a message if a value is
        invalid (the spec keeps its last valid values then). A pane not built yet has nothing newer than its spec."""
        if self.built:
            pane_render.commit_form(self)

    def open_tools(self) -> None:
        """Open the Tools section with its editor focused (Tools → Add tools to this pane…); a pane without tools
        gets the example tool and a mock result for it, ready to run."""
        if not self.spec.tools.strip():
            self.tools.load_example()
            self.commit_form()
        self._toggles[3].setChecked(True)
        self.tools.editor.setFocus()

    def form_edited(self) -> None:
        try:
            self.commit_form()
        except ValueError:
            return  # shown when the user runs the pane
