"""The arena leaderboard as plain text (tables, the pairs it cannot order, the win-rate matrix) and the boards
behind it, for `arena-report` and its HTML page."""

from __future__ import annotations

import math

from app.arena import Board, board, display_names


def fmt_score(x: float) -> str:
    return "∞" if x == math.inf else "−∞" if x == -math.inf else f"{x:.0f}"


def fmt_rate(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def summary(b: Board, total: int) -> str:
    s = b.sources
    judges = ", ".join(f"{name} {n}" for name, n in s.judges.items())
    parts = [f"{total} votes ({s.human} human, {s.judge} judge{': ' + judges if judges else ''})",
             f"{len(b.standings)} variants", f"{b.rounds} bootstrap rounds, seed {b.seed}"]
    return ", ".join(parts)


def agreement_line(b: Board) -> str:
    s = b.sources
    if s.agreement is None:
        return "Human and judge votes: no pair and case voted on by both, so no agreement rate."
    return (f"Human and judge votes agree on {s.agreed} of {s.compared} comparisons of the same pair and case "
            f"({100 * s.agreement:.0f} %).")


def inseparable(b: Board, names: dict[str, str]) -> list[str]:
    """One line per pair the data cannot order, best-scored first."""
    order = [s.variant for s in b.standings]
    lines = []
    for i, x in enumerate(order):
        for y in order[i + 1:]:
            stat = b.pair(x, y)
            if stat.cannot_separate:
                why = ("never compared, even through others" if math.isinf(stat.diff_low)
                       else f"intervals overlap; {stat.votes} votes between them")
                lines.append(f"{names[x]} ~ {names[y]} ({why})")
    return lines


def table(b: Board) -> str:
    names = display_names(b.standings)
    header = ("Rank", "Variant", "Score", "95 % interval", "Votes", "W / T / L", "Both bad")
    rows = [header] + [(s.rank_text, names[s.variant], fmt_score(s.score),
                        f"{fmt_score(s.ci_low)} – {fmt_score(s.ci_high)}", str(s.votes),
                        f"{s.wins} / {s.ties} / {s.losses}", str(s.both_bad)) for s in b.standings]
    widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    cannot = inseparable(b, names)
    if cannot:
        lines += ["", "Cannot separate (their order is not known from these votes):"] + [f"  {c}" for c in cannot]
    order = [s.variant for s in b.standings]
    matrix = [[""] + [names[v] for v in order]]
    matrix += [[names[x]] + [fmt_rate(r) for r in row] for x, row in zip(order, b.win_rates(), strict=True)]
    widths = [max(len(r[c]) for r in matrix) for c in range(len(matrix[0]))]
    lines += ["", "Win rate of the row over the column (a tie or both bad = half a win; – = no votes):"]
    lines += ["  " + "  ".join(c.rjust(w) if k else c.ljust(w) for k, (c, w) in enumerate(zip(r, widths, strict=True)))
              for r in matrix]
    return "\n".join(lines)


def render_text(boards: dict[str, Board], total: int) -> str:
    main = boards["all"]
    out = [f"Arena leaderboard: {summary(main, total)}", "", table(main)]
    if main.sources.human and main.sources.judge:
        out += ["", agreement_line(main)]
        for source in ("human", "judge"):
            out += ["", f"{source.capitalize()} votes only:", "", table(boards[source])]
    return "\n".join(out)


def build_boards(votes, rounds: int, seed: int) -> dict[str, Board]:
    boards = {"all": board(votes, rounds=rounds, seed=seed)}
    if boards["all"].sources.human and boards["all"].sources.judge:
        for source in ("human", "judge"):
            boards[source] = board(votes, source=source, rounds=rounds, seed=seed)
    return boards
