"""The arena's entries in the Compare menu: the arena over the current pane's group (or all panes), and the
leaderboard. Given what they need — the session, the runner, the current pane, which model a backend runs —
and nothing else of the window."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QWidget

from app.arena.roster import candidate_sets
from app.arena.standby import PairLoads
from app.backends.registry import BackendRegistry
from app.engine import ModelInfo
from app.models import model_name
from app.session import MAIN, SessionModel, SessionRunner
from app.ui.arena.leaderboard import LeaderboardDialog
from app.ui.arena.view import ArenaView


class ArenaTools(QObject):
    def __init__(self, session: SessionModel, runner: SessionRunner, current_pane: Callable[[], object | None],
                 model_info: Callable[[], ModelInfo | None], parent: QWidget, registry: BackendRegistry | None = None):
        """`model_info()`: the main model's (None while none is loaded); `registry`: the window's backends, whose
        models on standby a pair loads before it generates (None: such a pair says it cannot run)."""
        super().__init__(parent)
        self.session, self.runner, self.registry = session, runner, registry
        self._current, self._model_info, self.parent_widget = current_pane, model_info, parent
        self.arena: ArenaView | None = None
        self.leaderboard: LeaderboardDialog | None = None

    def build_menu(self, menu) -> None:
        menu.addSeparator()
        for text, keys, slot, tip in (
                ("Arena…", "Ctrl+Shift+A", self.open_arena, "Blind pairwise votes between the variants of a group"),
                ("Arena leaderboard…", "Ctrl+Shift+L", self.open_leaderboard, "The arena's votes, ranked")):
            action = QAction(text, self.parent_widget, shortcut=QKeySequence(keys), statusTip=tip)
            action.triggered.connect(lambda _=False, s=slot: s())
            menu.addAction(action)

    def _model_of(self, backend: str) -> str:
        """The model a backend runs, part of a variant's key (other backends' names already say it). The GGUF's
        own name, as it always was, so saved votes still meet their variants; it is never shown (the judge is
        named by `_judge_name`)."""
        info = self._model_info() if backend == MAIN else None
        return info.name if info is not None else ""

    def _judge_name(self) -> str:
        """The main model as the window names it (app.models.model_name): the judge of its votes."""
        info = self._model_info()
        return model_name(info.path) if info is not None else ""

    def open_arena(self) -> ArenaView:
        """The arena (one at a time), over the current pane's group first when it has one."""
        if self.arena is not None:
            self.arena.raise_()
            self.arena.activateWindow()
            return self.arena
        sets = candidate_sets(self.session)
        current = self._current()
        group = getattr(getattr(current, "spec", current), "group", None)
        sets.sort(key=lambda s: group is None or any(p.group != group for p in s[1]))  # its group first
        loads = PairLoads(self.registry) if self.registry is not None else None
        self.arena = ArenaView(self.session, self.runner, sets, self._model_of, self.open_leaderboard,
                               self.parent_widget, loads=loads, judge_name=self._judge_name)
        self.arena.finished.connect(lambda _result: self._closed("arena"))
        self.arena.show()
        return self.arena

    def open_leaderboard(self) -> LeaderboardDialog:
        if self.leaderboard is None:
            self.leaderboard = LeaderboardDialog(self.session, self.parent_widget)
            self.leaderboard.finished.connect(lambda _result: self._closed("leaderboard"))
        self.leaderboard.show()
        self.leaderboard.raise_()
        return self.leaderboard

    def _closed(self, name: str) -> None:
        dialog: QDialog | None = getattr(self, name)
        setattr(self, name, None)
        if dialog is not None:
            dialog.deleteLater()
