"""The scrollable grid of pane views over the session's panes, laid out in columns (or one group side by side).

The grid renders `session.panes` and `session.view`: it makes a view when a pane is inserted, drops it when the
pane is removed, and re-flows when the column count or the columns-mode group changes; with no pane it shows
what to do (empty_hint.py). It never edits the session; `add_pane` and friends are conveniences that call the
controller and return the new view.

At any size: a view is an empty frame until it is first painted (prompt_pane.py), and the grid builds the frames
that were painted a few per event-loop turn (in the window's sliced work, app/ui/widgets/sliced.py), so a sweep or
an opened session of hundreds of panes builds the dozen on screen, and scrolling builds the next. Panes inserted or
removed together (a sweep, Open, New) are placed once, at the end of the sliced turn that added them (or on the
next event-loop turn), with their headers' titles worked out once for all of them
(`settle` places them at once where a caller needs their geometry).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import QGridLayout, QScrollArea, QWidget

from app.session import MAIN, PaneSpec, Session, SessionController
from app.session.compare import differences_in_groups
from app.session.state import COLUMNS, pane_change
from app.ui.pane.empty_hint import EmptyHint
from app.ui.pane.prompt_pane import PromptPane
from app.ui.widgets.scroll_sync import ScrollSync
from app.ui.widgets.sliced import end_turns_with, share_turns

MIN_COLUMN_WIDTH = 180  # columns mode: 8 variants fit side by side on a 1600 px screen, more scroll sideways
PANE_MIN_WIDTH = 300
QWIDGETSIZE_MAX = (1 << 24) - 1
TICK_MS = 500  # live wait/TTFT/tok/s figures in busy panes, 2 Hz
DELETE_SLICE, DELETE_BUILT = 60, 20  # panes deleted per event-loop turn: a built one counts as 20 not built
PLACEHOLDER_HEIGHT = 300  # a pane not built yet takes a built pane's height (the last one built), this at first
_TITLE_FIELDS = frozenset({"system", "sampling", "max_tokens", "stop", "output_format", "backend", "group", "title",
                           "thinking"})


class PaneGrid(QScrollArea):
    sig_pane_added = Signal(object)
    """A pane view was created (the compare tools connect to its actions)."""

    _laid_out = 0  # the columns the panes are laid out in (shown_columns when they were)
    _anchor: PromptPane | None = None  # a pane just scrolled to, kept in sight while the panes around it build

    def __init__(self, session: Session, controller: SessionController, check_grammar=None,
                 parent: QWidget | None = None):
        """`check_grammar(grammar, json_schema)`: the loaded model's parser for the panes' format editors."""
        super().__init__(parent)
        self._check_grammar = check_grammar
        self.setWidgetResizable(True)
        self.setObjectName("paneGrid")
        self._container = QWidget()
        self._container.setObjectName("paneContainer")
        self._layout = QGridLayout(self._container)
        self._layout.setContentsMargins(8, 8, 8, 8)
        self._layout.setSpacing(8)
        self.setWidget(self._container)
        self.empty_hint = EmptyHint(lambda: self.add_pane(), self._container)  # shown while there is no pane
        self.session, self.controller = session, controller
        self.panes: list[PromptPane] = []  # the views, in the session's order
        self._scroll_sync = ScrollSync()
        self.backend_names = [MAIN]  # what each pane's header offers
        self.backend_labels: dict[str, str] = {}  # and how it shows them (the main model by its model's name)
        self.tool_support = ""  # how the local model takes tools, in words (each pane's Tools section)
        self._ticker = QTimer(self, interval=TICK_MS)
        self._ticker.timeout.connect(lambda: [view.tick() for view in self.panes if view.built])
        self._ticker.start()
        self._views: dict[int, PromptPane] = {}  # id(spec) -> its view
        self._place_timer = QTimer(self, singleShot=True, interval=0)  # inserts and removals placed together
        self._place_timer.timeout.connect(self.settle)
        end_turns_with(self.settle)  # panes a sliced turn added (a sweep's, an open's) are placed within the turn
        self._place_index: int | None = None  # the first pane whose place changed since the grid was laid out
        self._to_build: list[PromptPane] = []  # painted, not built yet: built a few per event-loop turn
        self._to_delete: list[PromptPane] = []  # removed, hidden, deleted a few per event-loop turn
        self._delete_timer = QTimer(self, singleShot=True, interval=0)
        self._delete_timer.timeout.connect(self._delete_some)
        self._width_check = QTimer(self, singleShot=True, interval=0)
        self._width_check.timeout.connect(self._check_widths)
        self.placeholder_height = PLACEHOLDER_HEIGHT
        for spec in session.panes:
            self._insert_view(spec, len(self.panes))
        self._reflow()
        session.panes.events.inserted.connect(self._inserted)
        session.panes.events.removed.connect(self._removed)
        for signal in (session.panes.events.moved, session.panes.events.changed, session.panes.events.reordered):
            signal.connect(self._rebuild)
        session.view.events.columns.connect(self._reflow)
        session.view.events.column_group.connect(self._reflow)
        session.events.all.connect(self._on_session_event)

    @property
    def columns(self) -> int:
        return COLUMNS.clamp(self.session.view.columns)

    @property
    def shown_columns(self) -> int:
        """The columns laid out: the chosen count, or fewer when the grid is too narrow for that many panes
        (the panes wrap onto more rows instead of scrolling sideways or cutting their settings' labels). A pane
        needs PANE_MIN_WIDTH, or more while a settings section it has open needs more."""
        margins = self._layout.contentsMargins()
        spacing = self._layout.spacing()
        room = self.width() - 2 * self.frameWidth() - self.verticalScrollBar().sizeHint().width() \
            - margins.left() - margins.right() + spacing
        pane = max([PANE_MIN_WIDTH, *(view.settings_width() for view in self.panes if view.built)])
        return max(1, min(self.columns, room // (pane + spacing)))

    def _sections_changed(self) -> None:
        if not self._width_check.isActive():
            self._width_check.start()  # checked once per turn, however many panes said so

    def _check_widths(self) -> None:
        """Lay the panes out again if their widths now allow another column count (a section opened or
        closed); once per event-loop turn, however many panes asked for layouts (a Run all over hundreds)."""
        if not self.column_group and self.shown_columns != self._laid_out:
            self._reflow()

    @property
    def column_group(self) -> str | None:
        group = self.session.view.column_group
        return group if any(v.spec.group == group for v in self.panes) else None

    def view_of(self, spec: PaneSpec) -> PromptPane | None:
        return self._views.get(id(spec))

    def rendering(self, steps: Iterator[PaneSpec]) -> Generator[PaneSpec, None, object]:
        """`steps` (each yields the pane it changed) with each pane rendered once, at the end of the step that
        changed it, however many of its fields changed, and `steps`' return value: work done in slices
        (app/ui/widgets/sliced.py) renders its panes within its slices, not all of them in the turn after."""
        while True:
            PromptPane.held += 1
            try:
                spec = next(steps)
            except StopIteration as done:
                return done.value
            finally:
                PromptPane.held -= 1
            if (view := self.view_of(spec)) is not None:
                view.render_pending()
            yield spec

    # --- conveniences over the controller (tests, the self-test, menus) --------------------------------------
    def add_pane(self, spec: PaneSpec | None = None, after: PromptPane | None = None) -> PromptPane:
        view = self.view_of(self.controller.add_pane(spec, after.spec if after is not None else None))
        self.reveal(view)
        return view

    def reveal(self, view: PromptPane) -> None:
        """Scroll `view` into sight, its header first when it is taller than the grid, and focus its editor.
        A pane just added has no place in the grid until its layout has run (and its contents have sized it):
        scrolling at once went to the old geometry and left the new pane out of sight, so the scroll is done
        again once the events already posted, the layout's among them, have been handled."""
        self._scroll_to(view)
        view.prompt.setFocus()
        QTimer.singleShot(0, self, lambda: view in self.panes and self._scroll_to(view))

    def show_pane(self, spec: PaneSpec) -> None:
        """Scroll the pane of `spec` into sight (a row picked in a comparison), built."""
        if (view := self.view_of(spec)) is not None:
            self._scroll_to(view)

    def _scroll_to(self, view: PromptPane) -> None:
        """Scroll `view` into sight; the panes that come on screen with it build in the next turns and may be
        taller or shorter than their placeholders, so it is scrolled into sight again once they are built."""
        self.settle()
        view.build()
        self._bring_into_sight(view)
        self._anchor = view

    def _bring_into_sight(self, view: PromptPane) -> None:
        self._layout.activate()
        self.ensureWidgetVisible(view)
        if view.height() > self.viewport().height():
            self.verticalScrollBar().setValue(view.mapTo(self._container, QPoint(0, 0)).y() - self._layout.spacing())

    def duplicate_pane(self, view: PromptPane) -> PromptPane:
        return self.view_of(self.controller.duplicate(view.spec))

    def remove_pane(self, view: PromptPane) -> None:
        if view in self.panes:
            index = self.panes.index(view)
            self.controller.remove(view.spec)
            if self.panes:
                self.panes[min(index, len(self.panes) - 1)].prompt.setFocus()

    def set_columns(self, columns: int) -> None:
        self.controller.set_columns(COLUMNS.clamp(columns))

    def show_group_in_columns(self, group: str | None) -> None:
        self.controller.show_group_in_columns(group)

    # --- the session -> views -------------------------------------------------------------------------------
    def _inserted(self, index: int, spec: PaneSpec) -> None:
        self._insert_view(spec, index)
        self.empty_hint.hide()  # gone as soon as a pane exists
        self._place_later(index)

    def _removed(self, index: int, spec: PaneSpec) -> None:
        view = self.view_of(spec)
        if view is not None:
            index = self.panes.index(view)
            self._drop_view(view)
        self._place_later(index)

    def _place_later(self, index: int) -> None:
        """Panes from `index` on changed places: lay them out on the next event-loop turn, with whatever else is
        inserted or removed before it (a sweep adds hundreds: placing each at once moved all those after it)."""
        self._place_index = index if self._place_index is None else min(self._place_index, index)
        self._place_timer.start()

    def settle(self) -> None:
        """Place the panes inserted or removed since the grid was last laid out, now."""
        self._place_timer.stop()
        index, self._place_index = self._place_index, None
        if index is None:
            return
        if self.column_group is None and self.panes and self._laid_out and self.shown_columns == self._laid_out:
            self._place_from(index)  # each insert or removal moves only the panes after it
        else:
            self._reflow()

    def _rebuild(self, *_args) -> None:
        """Panes were moved or replaced: one view per pane, in order, again."""
        for view in list(self.panes):
            self._drop_view(view)
        for spec in self.session.panes:
            self._insert_view(spec, len(self.panes))
        self._reflow()

    def _on_session_event(self, info) -> None:
        change = pane_change(info)
        if change is not None and change[1] in _TITLE_FIELDS:
            self.refresh_titles()  # a setting changed (never a streamed token): headers say what differs now

    def _insert_view(self, spec: PaneSpec, index: int) -> PromptPane:
        view = PromptPane(spec, self.controller, self._container, self._build_soon)
        view.hide()  # until it is placed
        view.setMinimumHeight(self.placeholder_height)
        view.sig_sections_changed.connect(self._sections_changed)
        view.set_backends(self.backend_names, self.backend_labels)
        view.set_tool_support(self.tool_support)
        if self._check_grammar is not None:
            view.set_checker(self._check_grammar)
        self.panes.insert(index, view)
        self._views[id(spec)] = view
        self.sig_pane_added.emit(view)
        return view

    def _drop_view(self, view: PromptPane) -> None:
        view.detach()
        self.panes.remove(view)
        self._views.pop(id(view.spec), None)
        self._layout.removeWidget(view)
        view.hide()
        self._to_delete.append(view)  # deleted a few per event-loop turn: closing a session of hundreds of
        self._delete_timer.start()  # panes deleted them all in one turn

    def _delete_some(self) -> None:
        budget = DELETE_SLICE
        while self._to_delete and budget > 0:
            view = self._to_delete.pop(0)
            budget -= DELETE_BUILT if view.built else 1
            view.deleteLater()
        if self._to_delete:
            self._delete_timer.start()

    # --- building the panes on screen ----------------------------------------------------------------------------
    def _build_soon(self, view: PromptPane) -> None:
        """`view` was painted before it was built: build it within the next event-loop turns."""
        if view not in self._to_build:
            self._to_build.append(view)
            share_turns(self._build_one)

    def _build_one(self) -> bool:
        """Build the next painted pane (the window's sliced work runs a few per event-loop turn, beside its other
        sliced work: app/ui/widgets/sliced.py); False when none is left."""
        while self._to_build:
            view = self._to_build.pop(0)
            if view.built or self.view_of(view.spec) is not view or view.visibleRegion().isEmpty():
                continue  # built, removed, or scrolled away meanwhile (painted again when it comes back)
            view.build()
            if not view._compact:
                self.placeholder_height = max(120, view.minimumSizeHint().height())
            break
        if self._to_build:
            return True
        if (anchor := self._anchor) is not None:  # the panes around a pane scrolled to are built: it stays in sight
            self._anchor = None
            if self.view_of(anchor.spec) is anchor:
                self._bring_into_sight(anchor)
        return False

    def set_tool_support(self, text: str) -> None:
        """The local model's line for every pane's Tools section (a model was loaded)."""
        self.tool_support = text
        for view in self.panes:
            view.set_tool_support(text)  # and a built one checks it can read its images

    def set_backend_names(self, names: list[str], labels: dict[str, str] | None = None) -> None:
        """The backends panes can choose changed (one was added or removed, a model loaded); `labels`: how each
        is shown (BackendRegistry.label: the main model by its model's name)."""
        self.backend_names, self.backend_labels = list(names), dict(labels or {})
        for view in self.panes:
            view.set_backends(self.backend_names, self.backend_labels)
        self.refresh_titles()  # the backend shows in the header's chooser now, or in its title again

    # --- layout ----------------------------------------------------------------------------------------------------
    def _reflow(self, *_args) -> None:
        self._place_timer.stop()
        self._place_index = None
        for view in self.panes:
            self._layout.removeWidget(view)
        self._layout.removeWidget(self.empty_hint)
        self.empty_hint.setVisible(not self.panes)
        if not self.panes:  # centred in the whole area until a pane is added
            self._layout.addWidget(self.empty_hint, 0, 0, 1, self.columns, Qt.AlignCenter)
        group = self.column_group
        grouped = [v for v in self.panes if group is not None and v.spec.group == group]
        if grouped:
            self._columns_layout(grouped)
            return
        self._scroll_sync.clear()
        columns = self._laid_out = self.shown_columns
        for i, view in enumerate(self.panes):
            row, col = divmod(i, columns)
            view.setMinimumWidth(PANE_MIN_WIDTH)
            view.setMaximumWidth(QWIDGETSIZE_MAX)
            view.set_compact(False)
            self._layout.addWidget(view, row, col)  # parented first: a parentless widget shown is a window
            view.show()
        for col in range(max(self._layout.columnCount(), int(COLUMNS.high))):
            self._layout.setColumnStretch(col, 1 if col < columns else 0)
        rows = max(1, (len(self.panes) + columns - 1) // columns)  # no pane: the hint's row fills the area
        for row in range(self._layout.rowCount()):
            self._layout.setRowStretch(row, 1 if row < rows else 0)  # panes share the height: more conversation
        self.refresh_titles()

    def _place_from(self, index: int) -> None:
        """The grid (no group in columns, its column count unchanged) with the panes from `index` on placed again:
        what an insert or a removal changes. A full `_reflow` each time placed every pane, which made a sweep of
        256 panes (and closing them) quadratic."""
        columns = self._laid_out
        moved = self.panes[index:]
        for view in moved:
            self._layout.removeWidget(view)
        for i, view in enumerate(moved, start=index):
            view.setMinimumWidth(PANE_MIN_WIDTH)
            view.setMaximumWidth(QWIDGETSIZE_MAX)
            view.set_compact(False)
            self._layout.addWidget(view, *divmod(i, columns))
            view.show()
        rows = (len(self.panes) + columns - 1) // columns
        for row in range(self._layout.rowCount()):
            self._layout.setRowStretch(row, 1 if row < rows else 0)
        self.refresh_titles()

    def _columns_layout(self, grouped: list[PromptPane]) -> None:
        width = self._column_width(len(grouped))
        for col, view in enumerate(grouped):
            view.setFixedWidth(width)
            view.set_compact(True)
            self._layout.addWidget(view, 0, col)
        for view in self.panes:  # after every view is parented (a parentless widget shown is a window)
            view.setVisible(view in grouped)
        for col in range(max(self._layout.columnCount(), len(grouped))):
            self._layout.setColumnStretch(col, 0)
        for row in range(self._layout.rowCount()):
            self._layout.setRowStretch(row, 1 if row == 0 else 0)
        self._scroll_sync.set_views([v.output for v in grouped])
        self.refresh_titles()

    def _column_width(self, n: int) -> int:
        """Columns share the visible width, down to MIN_COLUMN_WIDTH (then the grid scrolls sideways)."""
        margins = self._layout.contentsMargins()
        room = self.viewport().width() - margins.left() - margins.right() - self._layout.spacing() * (n - 1)
        return max(MIN_COLUMN_WIDTH, room // max(n, 1))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        group = self.column_group
        if not group and self.shown_columns != self._laid_out:
            self._reflow()
        if group:
            grouped = [v for v in self.panes if v.spec.group == group]
            width = self._column_width(len(grouped))
            for view in grouped:
                view.setFixedWidth(width)

    def refresh_titles(self) -> None:
        """Each header names the settings where its pane differs from the others (e.g. "T 0.7 · seed 3")."""
        for view, diff in zip(self.panes, differences_in_groups([v.spec for v in self.panes]), strict=True):
            view.set_differences(diff)
