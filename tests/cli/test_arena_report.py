"""`python -m app arena-report`: the table on standard output, the self-contained HTML (parsed: the SVG plot and
the rows), no votes, and exit 2 with one sentence for unusable input."""

import json
import math
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import msgspec
import pytest

from app.__main__ import main
from app.arena import board
from tests.fixtures.arena_sim import simulate


class Page(HTMLParser):
    """Collects the elements of a page: tags with their attributes, and the text of table cells by table."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def find(self, tag, **attrs):
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]


@pytest.fixture
def session_file(tmp_path):
    votes = simulate([0.0, 0.2, 1.5], 12, seed=4) + simulate([0.0, 0.2, 1.5], 3, seed=5, source="judge")
    votes = [msgspec.structs.replace(v, a_label=f"Variant <{v.a}>", b_label=f"Variant <{v.b}>") for v in votes]
    path = tmp_path / "arena.chorus.json"
    path.write_text(json.dumps({"format": "chorus-session", "version": 2, "panes": [],
                                "votes": msgspec.to_builtins(votes)}))
    return path, votes


def test_prints_the_leaderboard_and_writes_a_self_contained_html(session_file, tmp_path, capsys):
    path, votes = session_file
    out = tmp_path / "report.html"
    assert main(["arena-report", str(path), "--html", str(out), "--seed", "3", "--rounds", "100"]) == 0
    text = capsys.readouterr().out
    expected = board(votes, seed=3, rounds=100)
    assert text.startswith("Arena leaderboard: 45 votes (36 human, 9 judge: judge-x 9), 3 variants, "
                           "100 bootstrap rounds, seed 3")
    first = expected.standings[0]
    assert re.search(rf"^{first.rank_text} +Variant <{first.variant}> +{first.score:.0f} +", text, re.M)
    assert "Cannot separate" in text
    assert "Variant <v0> ~ Variant <v1>" in text or "Variant <v1> ~ Variant <v0>" in text
    assert "Human votes only:" in text and "Judge votes only:" in text and "agree on" in text

    html = out.read_text(encoding="utf-8")
    page = Page()
    page.feed(html)
    assert not page.find("script") and not page.find("link") and not page.find("img")  # self-contained
    svg = page.find("svg", **{"class": "scores"})
    assert len(svg) == 3  # all votes, human only, judge only
    assert len(page.find("circle", **{"class": "score"})) == 3 * 3
    assert "<title>Variant &lt;v2&gt;: " in html  # labels are escaped
    standings_tables = [t for t in page.tables if t[0][:3] == ["Rank", "Variant", "Score"]]
    assert len(standings_tables) == 3
    rows = standings_tables[0][1:]
    assert [r[1] for r in rows] == [f"Variant <{s.variant}>" for s in expected.standings]
    assert [r[2] for r in rows] == [f"{s.score:.0f}" for s in expected.standings]
    assert [int(r[4]) for r in rows] == [s.votes for s in expected.standings]
    matrix = next(t for t in page.tables if t[0][0] == "")
    assert matrix[1][1] == "–" and len(matrix) == 4 and all(len(r) == 4 for r in matrix)
    cell = matrix[1][2]
    assert cell == f"{expected.win_rates()[0][1]:.2f}"
    assert page.find("ul", **{"class": "cannot-separate"})


def test_unbounded_intervals_are_drawn_dashed_to_the_edge(tmp_path, capsys):
    from app.cli.arena_html import render_html

    b = board(simulate([0.0, 1.0], 5, seed=1), variants=["unvoted"])
    html = render_html({"all": b}, 10)
    page = Page()
    page.feed(html)
    unbounded = page.find("line", **{"class": "ci unbounded"})
    assert len(unbounded) == 2 and all(u["marker-end"] == "url(#arrow)" for u in unbounded)
    assert math.isinf(b.standing("unvoted").ci_high)


def test_a_session_without_votes_reports_none(tmp_path, capsys):
    path = tmp_path / "empty.chorus.json"
    path.write_text(json.dumps({"format": "chorus-session", "version": 1, "panes": []}))
    out = tmp_path / "empty.html"
    assert main(["arena-report", str(path), "--html", str(out)]) == 0
    assert f"No votes in {path}." in capsys.readouterr().out
    assert "No votes yet." in out.read_text()


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "is not usable: not JSON"),
    ("[1, 2]", "is not usable: a session file holds a JSON object, this one holds an array"),
    ('{"votes": 3}', 'is not usable: "votes" must be a list, got a number'),
    ('{"votes": [{"a": "x", "b": "y", "winner": "maybe"}]}',
     "is not usable: votes[0]: Invalid enum value 'maybe' - at `$.winner`"),
])
def test_an_unusable_file_exits_2_with_one_sentence(tmp_path, capsys, content, message):
    path = tmp_path / "bad.chorus.json"
    path.write_text(content)
    assert main(["arena-report", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.startswith("arena-report: ") and err.endswith(".") and "\n" not in err


def test_missing_file_and_bad_rounds_exit_2(tmp_path, capsys, session_file):
    assert main(["arena-report", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["arena-report", str(session_file[0]), "--rounds", "3"]) == 2
    assert "--rounds must be in [20, 10000]" in capsys.readouterr().err


def test_runs_as_a_module_without_qt(session_file):
    code = ("import sys, runpy; sys.argv = ['app', 'arena-report', sys.argv[1]]\n"
            "try:\n    runpy.run_module('app', run_name='__main__')\nexcept SystemExit as e:\n"
            "    assert e.code == 0, e.code\n"
            "assert not any(m.startswith(('PySide6', 'pyqtgraph')) for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code, str(session_file[0])], check=True, capture_output=True, timeout=120,
                   cwd=Path(__file__).resolve().parents[2])
