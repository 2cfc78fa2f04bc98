"""`python -m app arena-report SESSION.chorus.json [--html OUT.html] [--seed N] [--rounds N]`: the arena's
leaderboard from the votes of a session file, as a table on standard output and, with --html, as one
self-contained page (scores with error bars as inline SVG, the win-rate matrix).

Reads only the file's top-level "votes" list (a file without one has no votes). Exit 0 when the board was
printed (even with no votes), 2 with one sentence on standard error when the file or an argument is unusable.
"""

from __future__ import annotations

import sys
from pathlib import Path

from app.arena import VoteError, read_votes
from app.arena.board import ARENA_SEED, BOOTSTRAP_ROUNDS
from app.cli.arena_html import render_html
from app.cli.arena_text import build_boards, render_text
from app.session.store import write_atomic


def run_arena_report(session: str, html: str | None = None, seed: int = ARENA_SEED,
                     rounds: int = BOOTSTRAP_ROUNDS.default) -> int:
    def fail(message: str) -> int:
        print(f"arena-report: {message}", file=sys.stderr)
        return 2

    try:
        BOOTSTRAP_ROUNDS.check("--rounds", rounds)
    except ValueError as e:
        return fail(f"{e}.")
    path = Path(session)
    if not path.is_file():
        return fail(f"{session}: no such file.")
    try:
        votes = read_votes(path)
    except VoteError as e:
        return fail(f"{session} is not usable: {e}.")
    if not votes:
        print(f"No votes in {session}.")
    boards = build_boards(votes, rounds, seed)
    if votes:
        print(render_text(boards, len(votes)))
    if html:
        try:
            write_atomic(html, render_html(boards, len(votes), title=path.name))
        except OSError as e:
            return fail(f"cannot write {html} ({e.strerror or e}).")
        print(f"Wrote {html}")
    return 0


def arena_report_command(args) -> int:
    return run_arena_report(args.session, html=args.html, seed=args.seed, rounds=args.rounds)
