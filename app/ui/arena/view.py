"""Arena mode: two outputs for the same prompt side by side, blind, and a vote between them.

The variants are the panes of a group (or all panes), each pane's settings one variant (app.arena.roster);
a pane whose backend refuses its prompt (an image for a model without a vision projector) is left out, and a line
under the prompt says which and why.
The next pair is the core's `next_pair` over this arena's votes: the pair whose order is least certain, with the
fewest votes. Its sides are a seeded coin flip. Both outputs are generated through the SessionRunner at once and
stream in lockstep: each side shows no more text than the slower one has produced, so speed, time to first token
and the moment one finishes say nothing about which variant it is; nothing shows a title, setting, token count
or timing until the vote. A vote (keys 1–4, or the buttons) is saved in the session and reveals the pair; a key
pressed while the pair generates casts nothing and the status says to wait. A pair is voted on only when both
sides have text: a side that fails or writes nothing says so, the vote buttons stay off, and N skips the pair
(a skipped pair is drawn again only when every other pair was skipped too). N (or Enter) draws the next pair.
The dialog opens fitted to the screen it opens on. The view renders the runner's results and keeps no copy of
their text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from itertools import combinations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.arena import JudgeTask, Matchup, Vote, next_pair
from app.arena.ask import ask_judge
from app.arena.board import ARENA_SEED
from app.arena.roster import Arena, LeftOut, NoArena, build, refusals
from app.arena.standby import PairLoads
from app.engine.chat.template.reasoning import split_prefix
from app.session import MAIN, PaneResult, PaneSpec, SessionModel, SessionRunner
from app.session.tool_cards import reply_text
from app.ui.arena.side import ArenaSide, side_problem, side_text
from app.ui.widgets.screen_fit import first_geometry

VOTES = (("a", "A is better", "1"), ("b", "B is better", "2"), ("tie", "Tie", "3"), ("both_bad", "Both bad", "4"))
WAIT = "Wait for both outputs: the vote keys work once both have finished."
SIZE = QSize(1200, 760)  # at most: the dialog is fitted to its screen's available area


class ArenaView(QDialog):
    def __init__(self, session: SessionModel, runner: SessionRunner, sets: list[tuple[str, list[PaneSpec]]],
                 model_of: Callable[[str], str] | None = None, open_leaderboard: Callable[[], object] | None = None,
                 parent: QWidget | None = None, seed: int = ARENA_SEED, loads: PairLoads | None = None,
                 judge_name: Callable[[], str] | None = None):
        """`loads`: loads a pair's models that wait on standby before it generates (None: they are not offered);
        `judge_name()`: the main model's name, which its judge votes carry."""
        super().__init__(parent)
        self.setWindowTitle("Arena")
        self.session, self.runner, self.model_of, self.seed = session, runner, model_of, seed
        self.loads, self.judge_name = loads, judge_name
        self.loading: asyncio.Future | None = None  # a pair's models loading (PairLoads.ensure)
        self.arena: Arena | None = None
        self.current = 0  # the pane set in play
        self.matchup: Matchup | None = None
        self.results: dict[str, PaneResult] = {}  # "a"/"b" -> the runner's result of this matchup
        self.handles: list = []
        self.judge_handles: list = []
        self._open = True
        self.voted: Vote | None = None
        self.early_key = False  # a vote key was pressed while the pair generated: the status says to wait
        self.skipped: set[frozenset[str]] = set()  # pairs a side of which could not be voted on
        self.sets = sets
        self.chooser = QComboBox(toolTip="The panes whose settings compete: each pane is one variant",
                                 sizeAdjustPolicy=QComboBox.AdjustToMinimumContentsLengthWithIcon,
                                 minimumContentsLength=24)
        for title, _panes in sets:
            self.chooser.addItem(title)
        self.status = QLabel(wordWrap=True, objectName="arenaStatus")
        self.prompt = QLabel(wordWrap=True, objectName="arenaPrompt")
        self.left_out = QLabel(wordWrap=True, objectName="arenaLeftOut")
        self.left_out.hide()
        self.sides = {"a": ArenaSide("A"), "b": ArenaSide("B")}
        self.note = QLineEdit(placeholderText="Optional note on this vote (Enter does not vote)", maxLength=500)
        self.vote_buttons = {}
        buttons = QHBoxLayout()
        for winner, text, key in VOTES:
            button = QPushButton(f"{text}  [{key}]", toolTip=f"Vote: {text.lower()} (key {key})", autoDefault=False)
            button.setAccessibleName(f"Vote: {text}")  # read aloud without the key's brackets
            button.setAccessibleDescription(f"Key {key}")
            button.clicked.connect(lambda _=False, w=winner: self.vote(w))
            button.setAccessibleName(f"Vote: {text}")  # not "A is better [1]" read out
            QShortcut(QKeySequence(key), self, activated=lambda w=winner: self._vote_key(w))
            button.setEnabled(False)  # until both sides of a pair have text
            buttons.addWidget(button)
            self.vote_buttons[winner] = button
        self.next_button = QPushButton("Next pair  [N]", toolTip="Draw the next pair (the least certain one)",
                                       autoDefault=False)
        self.next_button.setAccessibleName("Next pair")
        self.next_button.clicked.connect(self.next_pair)
        QShortcut(QKeySequence("N"), self, activated=self.next_pair)
        self.judge_box = QCheckBox("Ask the judge too", toolTip="After each of your votes, the main model judges "
                                   "the same pair in both orders; its votes are counted apart from yours")
        self.board_button = QPushButton("Leaderboard…", autoDefault=False)
        self.board_button.setEnabled(open_leaderboard is not None)
        if open_leaderboard is not None:
            self.board_button.clicked.connect(lambda: open_leaderboard())
        buttons.addStretch(1)
        buttons.addWidget(self.next_button)
        more = QHBoxLayout()  # a row of its own: the vote buttons keep their width on a small screen
        more.addWidget(self.note, 1)
        more.addWidget(self.judge_box)
        more.addWidget(self.board_button)
        top = QHBoxLayout()
        top.addWidget(QLabel("Variants:"))
        top.addWidget(self.chooser, 1)
        pair = QHBoxLayout()
        pair.addWidget(self.sides["a"])
        pair.addWidget(self.sides["b"])
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.status)  # wrapped, on a row of its own: a long reason never widens the dialog
        layout.addWidget(self.prompt)
        layout.addWidget(self.left_out)
        layout.addLayout(pair, 1)
        layout.addLayout(buttons)
        layout.addLayout(more)
        self.setGeometry(first_geometry((parent or self).screen().availableGeometry(), SIZE))
        self.chooser.currentIndexChanged.connect(self.choose)
        if sets:
            self.choose(0)
        else:
            self._say("Make variants of a pane first (Compare → Variants and sweeps), then open the arena.")

    # --- the arena and its pairs ---------------------------------------------------------------------------
    def choose(self, index: int) -> None:
        """Run the arena over the `index`th pane set."""
        self._cancel()
        self.current = index
        self.voted = None
        self.skipped.clear()
        self.next_pair()

    def _build(self) -> Arena | None:
        """The chosen set's variants as their panes are now (settings may have changed since the last pair; a
        removed pane is left out), or None with the reason shown."""
        panes = [p for p in self.sets[self.current][1] if any(p is q for q in self.session.panes)]
        try:
            arena = build(panes, self.model_of, refusals(self.runner.backends))
        except NoArena as exc:
            self._show_left_out(exc.left_out)
            self._say(str(exc))
            return None
        self._show_left_out(arena.left_out)
        pairs = {frozenset(pair) for pair in combinations(arena.keys, 2)}
        if pairs <= self.skipped:  # every pair was skipped: draw them all again
            self.skipped -= pairs
        return arena

    def _show_left_out(self, left_out: list[LeftOut]) -> None:
        """The line under the prompt that names each pane left out and why (hidden when none is)."""
        self.left_out.setText("<b>Left out of this arena:</b> " + "<br>".join(
            f"{_escape(item.pane.label)}: {_escape(item.why)}" for item in left_out))
        self.left_out.setVisible(bool(left_out))

    def votes(self) -> list[Vote]:
        """This arena's votes (both variants in it), from the session."""
        keys = set(self.arena.keys) if self.arena else set()
        return [v for v in self.session.votes if v.a in keys and v.b in keys]

    def next_pair(self) -> Matchup | None:
        """Draw the next pair and generate both outputs; ignored until the current pair has its vote, or has
        ended with a side that cannot be voted on (the pair is skipped)."""
        if not self.sets or (self.matchup is not None and self.voted is None and not self.skippable()):
            return None
        if self.matchup is not None and self.voted is None:
            self._skip()
        self._cancel()
        self.arena = self._build()
        if self.arena is None:
            return None
        self.voted, self.early_key = None, False
        self.note.clear()
        for side in self.sides.values():
            side.clear()
        self.matchup = next_pair(self.arena.keys, self.votes(), cases=[self.arena.case_id], seed=self.seed,
                                 skip=self.skipped)
        self.prompt.setText(f"<b>Prompt:</b> {_escape(self.arena.case_text)}" if self.arena.case_text else
                            "<b>Prompt:</b> each variant's own prompt")
        backends = [self.arena.contender(key).pane.backend for key in (self.matchup.a, self.matchup.b)]
        if self.loads is not None and self.loads.needed(backends):
            self._say("Loading this pair's models…")
            self.next_button.setEnabled(False)
            self.loading = asyncio.ensure_future(self._load_then_generate(self.matchup, backends))
            return self.matchup
        return self._generate()

    async def _load_then_generate(self, matchup: Matchup, backends: list[str]) -> None:
        why = await self.loads.ensure(backends)
        if not self._open or self.matchup is not matchup:  # closed, or another set chosen, meanwhile
            return
        if why is None:
            self._generate()
            return
        self._could_not(why)

    def _generate(self) -> Matchup | None:
        """Submit both sides of the drawn pair."""
        for name, key in (("a", self.matchup.a), ("b", self.matchup.b)):
            contender = self.arena.contender(key)
            request = contender.request()
            result = PaneResult(reply_prefix=request.reply_prefix, text=split_prefix(request.reply_prefix)[0])
            try:
                self.handles.append(self.runner.submit(request, contender.pane.backend, result,
                                                       on_finish=lambda *_: self._render()))
            except (RuntimeError, ValueError) as exc:
                self._could_not(str(exc))
                return None
            result.events.text.connect(self._render)
            self.results[name] = result
        self._render()
        return self.matchup

    def _could_not(self, why: str) -> None:
        """The pair could not start: say why; N draws another pair (this one comes back only after the rest)."""
        self._skip()
        self._cancel()
        self._say(f"Could not generate: {why} Press N for another pair.")
        self.next_button.setEnabled(True)

    def _skip(self) -> None:
        self.skipped.add(frozenset((self.matchup.a, self.matchup.b)))

    def ready(self) -> bool:
        """Both outputs of the pair have ended (done, stopped or failed)."""
        return len(self.results) == 2 and not any(r.busy for r in self.results.values())

    def problems(self) -> dict[str, str]:
        """Why a side of the ended pair cannot be voted on ("a"/"b" -> why: it failed, or wrote nothing)."""
        if not self.ready():
            return {}
        found = {name: side_problem(result) for name, result in self.results.items()}
        return {name: why for name, why in found.items() if why}

    def votable(self) -> bool:
        """Both outputs have ended, each with text: only then is a vote cast."""
        return self.ready() and not self.problems()

    def skippable(self) -> bool:
        """The pair has ended without a vote and cannot get one."""
        return self.ready() and self.voted is None and bool(self.problems())

    def _render(self, *_args) -> None:
        if len(self.results) != 2:
            return
        texts = {name: side_text(r) for name, r in self.results.items()}
        if not self.ready():  # lockstep: no side shows more than the slower one has produced
            shown = min(len(texts[name]) for name, r in self.results.items() if r.busy)
            texts = {name: text[:shown] for name, text in texts.items()}
        for name, text in texts.items():
            self.sides[name].show_text(text)
        for button in self.vote_buttons.values():
            button.setEnabled(self.votable() and self.voted is None)
        self.next_button.setEnabled(self.voted is not None or self.matchup is None or self.skippable())
        if self.voted is None:
            votes = self.votes()
            judged = sum(v.source == "judge" for v in votes)
            problems = self.problems()
            self._say(f"{len(self.arena.keys) if self.arena else 0} variants · {len(votes) - judged} votes"
                      + (f" (and {judged} by the judge)" if judged else "") + ". "
                      + ("This pair cannot be voted on: " + "; ".join(f"{name.upper()} {why}" for name, why in
                                                                       sorted(problems.items()))
                         + ". Press N to skip it." if problems
                         else "Which is better? 1: A · 2: B · 3: tie · 4: both bad" if self.ready()
                         else f"Generating both outputs… {WAIT}" if self.early_key else "Generating both outputs…"))

    # --- voting ------------------------------------------------------------------------------------------------
    def _vote_key(self, winner: str) -> None:
        """Keys 1–4: the vote, or, while the pair still generates, a status that says to wait (not a silent no-op)."""
        if self.vote(winner) is None and self.voted is None and self.matchup is not None:
            self.early_key = True
            self._render()

    def vote(self, winner: str) -> Vote | None:
        """Cast the vote (when both outputs are in, each with text, and none was cast yet), save it, reveal the
        pair."""
        if self.matchup is None or self.voted is not None or not self.votable():
            return None
        a, b = self.arena.contender(self.matchup.a), self.arena.contender(self.matchup.b)
        vote = Vote(a=a.key, b=b.key, winner=winner, a_label=a.label, b_label=b.label, case_id=self.arena.case_id,
                    case_text=self.arena.case_text, note=self.note.text().strip())
        self.session.votes = [*self.session.votes, vote]
        self.voted = vote
        for name, contender in (("a", a), ("b", b)):
            outcome = ("won" if winner == name else "lost") if winner in ("a", "b") else winner
            self.sides[name].show_variant(f"<b>{name.upper()} was:</b> {_escape(contender.label)}<br>"
                                          f"<span style='color:gray'>{_escape(self.results[name].summary())}</span>",
                                          outcome)
        if self.judge_box.isChecked():
            self._ask_judge(vote)
        said = {"a": "A is better", "b": "B is better", "tie": "a tie", "both_bad": "both bad"}[winner]
        self._render()
        self._say(f"Saved: {said}. A was {a.label}; B was {b.label}. Press N for the next pair.")
        return vote

    def _ask_judge(self, vote: Vote) -> None:
        """The main model votes on the same pair, both orders, through the runner; its votes join the session."""
        task = JudgeTask(vote.a, vote.b, reply_text(self.results["a"]), reply_text(self.results["b"]), vote.case_id,
                         vote.case_text, vote.a_label, vote.b_label)
        session = self.session

        def counted(judged: Vote) -> None:
            session.votes = [*session.votes, judged]

        def problem(text: str) -> None:
            if self._open:
                self._say(text)

        try:
            self.judge_handles += ask_judge(self.runner, MAIN, task, (self.judge_name or str)() or MAIN, counted,
                                            problem)
        except (RuntimeError, ValueError) as exc:
            self._say(f"The judge could not run: {exc}")

    # --- housekeeping --------------------------------------------------------------------------------------
    def _say(self, text: str) -> None:
        self.status.setText(text)

    def _cancel(self) -> None:
        for result in self.results.values():
            result.events.text.disconnect(self._render)
        for handle in self.handles:
            handle.cancel()
        self.handles, self.results, self.matchup = [], {}, None
        for button in self.vote_buttons.values():
            button.setEnabled(False)

    def done(self, code: int) -> None:
        self._open = False
        self._cancel()
        for handle in self.judge_handles:
            handle.cancel()
        if self.loads is not None and self.loads.loaded:
            self.loading = asyncio.ensure_future(self.loads.release())
        super().done(code)

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key_Return, Qt.Key_Enter) and (self.voted is not None or self.skippable()):
            self.next_pair()
            return
        super().keyPressEvent(event)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
