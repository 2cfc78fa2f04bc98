"""The arena leaderboard as one self-contained HTML page: the table, the scores with their 95 % intervals as an
inline SVG plot (no script, no external file), the pairs that cannot be separated, and the win-rate matrix.

In the plot each variant is a row, best first: a dot at its score and a bar over its interval. An interval with
an infinite end is drawn dashed to the plot's edge, ending in an arrow.
"""

from __future__ import annotations

import html
import math

from app.arena import Board, display_names
from app.cli.arena_text import agreement_line, fmt_rate, fmt_score, inseparable, summary

ROW, LEFT, WIDTH, TOP, BOTTOM = 28, 230, 760, 16, 36

STYLE = """body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:right}
th:nth-child(2),td:nth-child(2){text-align:left}.matrix td{text-align:center}.matrix th{text-align:left}
.note{color:#555}svg text{font:12px system-ui,sans-serif}"""


def nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    raw = (hi - lo) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step) + 1)]


def svg_plot(b: Board) -> str:
    """Scores with error bars, one row per variant, as an <svg> element."""
    names = display_names(b.standings)
    finite = [x for s in b.standings for x in (s.score, s.ci_low, s.ci_high) if math.isfinite(x)]
    lo, hi = (min(finite), max(finite)) if finite else (900.0, 1100.0)
    pad = max((hi - lo) * 0.08, 20.0)
    lo, hi = lo - pad, hi + pad
    plot_w = WIDTH - LEFT - 20
    height = TOP + ROW * len(b.standings) + BOTTOM

    def x(v: float) -> float:
        v = min(max(v, lo), hi)
        return LEFT + (v - lo) / (hi - lo) * plot_w

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="scores" width="{WIDTH}" height="{height}" '
             f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="Scores with 95 % intervals">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
             'orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#1f5fa8"/></marker></defs>']
    axis_y = TOP + ROW * len(b.standings)
    for t in nice_ticks(lo, hi):
        parts.append(f'<line x1="{x(t):.1f}" y1="{TOP}" x2="{x(t):.1f}" y2="{axis_y}" stroke="#eee"/>'
                     f'<text x="{x(t):.1f}" y="{axis_y + 16}" text-anchor="middle">{t:g}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{axis_y + 32}" text-anchor="middle">score '
                 '(Bradley–Terry, Elo-like scale, mean 1000)</text>')
    for k, s in enumerate(b.standings):
        y = TOP + ROW * k + ROW / 2
        name = html.escape(names[s.variant])
        tip = html.escape(f"{names[s.variant]}: {fmt_score(s.score)} [{fmt_score(s.ci_low)}, {fmt_score(s.ci_high)}]")
        parts.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{name}</text>')
        for end, sign in ((s.ci_low, -1), (s.ci_high, 1)):
            if math.isfinite(end):
                parts.append(f'<line class="ci" x1="{x(s.score):.1f}" y1="{y:.1f}" x2="{x(end):.1f}" y2="{y:.1f}" '
                             f'stroke="#1f5fa8" stroke-width="2"/><line x1="{x(end):.1f}" y1="{y - 6:.1f}" '
                             f'x2="{x(end):.1f}" y2="{y + 6:.1f}" stroke="#1f5fa8" stroke-width="2"/>')
            else:
                edge = hi if sign > 0 else lo
                parts.append(f'<line class="ci unbounded" x1="{x(s.score):.1f}" y1="{y:.1f}" x2="{x(edge):.1f}" '
                             f'y2="{y:.1f}" stroke="#1f5fa8" stroke-width="2" stroke-dasharray="4 3" '
                             'marker-end="url(#arrow)"/>')
        parts.append(f'<circle class="score" cx="{x(s.score):.1f}" cy="{y:.1f}" r="5" fill="#1f5fa8">'
                     f'<title>{tip}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def _table(b: Board) -> str:
    names = display_names(b.standings)
    head = "".join(f"<th>{h}</th>" for h in ("Rank", "Variant", "Score", "95 % interval", "Votes", "Wins",
                                              "Ties", "Losses", "Both bad"))
    rows = []
    for s in b.standings:
        cells = (s.rank_text, names[s.variant], fmt_score(s.score), f"{fmt_score(s.ci_low)} – {fmt_score(s.ci_high)}",
                 s.votes, s.wins, s.ties, s.losses, s.both_bad)
        rows.append(f'<tr data-variant="{html.escape(s.variant)}">'
                    + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return f'<table class="standings"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _matrix(b: Board) -> str:
    names = display_names(b.standings)
    order = [s.variant for s in b.standings]
    head = "<th></th>" + "".join(f"<th>{html.escape(names[v])}</th>" for v in order)
    rows = []
    for v, row in zip(order, b.win_rates(), strict=True):
        cells = []
        for rate in row:
            shade = "" if rate is None else f' style="background:hsl({120 * rate:.0f},60%,85%)"'
            cells.append(f"<td{shade}>{fmt_rate(rate)}</td>")
        rows.append(f"<tr><th>{html.escape(names[v])}</th>{''.join(cells)}</tr>")
    return f'<table class="matrix"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _section(b: Board) -> str:
    cannot = inseparable(b, display_names(b.standings))
    items = "".join(f"<li>{html.escape(c)}</li>" for c in cannot)
    return (svg_plot(b) + _table(b)
            + (f'<h3>Cannot separate</h3><ul class="cannot-separate">{items}</ul>' if cannot else "")
            + "<h3>Win rate of the row over the column</h3><p class=note>A tie or “both bad” counts as half a win; "
              "– means no votes between them.</p>" + _matrix(b))


def render_html(boards: dict[str, Board], total: int, title: str = "") -> str:
    main = boards["all"]
    body = [f"<h1>Arena leaderboard{' — ' + html.escape(title) if title else ''}</h1>"]
    if not total:
        body.append("<p>No votes yet.</p>")
    else:
        body += [f"<p>{html.escape(summary(main, total))}.</p>",
                 "<p class=note>Scores: a Bradley–Terry fit on FastChat's Elo-like scale (400 points = 10:1 odds, "
                 "mean 1000), with 95 % bootstrap intervals. A rank range such as 2–3 means the votes cannot order "
                 "those variants.</p>", _section(main)]
        if main.sources.human and main.sources.judge:
            body.append(f"<h2>Human and judge votes</h2><p>{html.escape(agreement_line(main))}</p>")
            for source in ("human", "judge"):
                body += [f'<h2 id="{source}">{source.capitalize()} votes only</h2>', _section(boards[source])]
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Arena leaderboard</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")
