"""The docs a newcomer reads stay short, and neither the docs nor the code talk about how the work was organised:
no tracker numbers, no working sessions, branches or locks. A benchmark is labelled by its date and machine."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

README_MAX_LINES = 200
BENCHMARKS_MAX_LINES = 350

# Each pattern names one way text has talked about the work instead of the product; each is narrow enough to leave
# the product's own words alone ("a tool-call issue", "the session file", "a pane's branch", "under the lock").
WORK_TALK = {
    "an issue number": r"\bissues?\s*#?\d+\b",
    "a tracker's #number": r"\((?:see )?#\d+\)|\b(?:see|fixes|fixed in|closes|per|from) #\d+\b",
    "the issue as a source": r"\bthe issue(?:'s\b| (?:asks|names|describes|proposed|wants|says)\b)",
    "a numbered defect": r"\bdefects? \d+\b",
    "a working session": r"\bsession[ -]\d+\b",
    "other workers on the machine": (r"\b(?:other|several|\d+|two|three|four|five|six|seven|eight) (?:other )?"
                                     r"(?:helpers|agents)\b|\bother helper's\b|\bhelpers' |\bhelper sessions?\b"
                                     r"|\bother sessions\b|\bsessions' (?:shells|work|editing)\b"),
    "a lock the work queued behind": (r"\bshared (?:test )?lock\b|\btest lock\b|\bqueued behind the (?:shared )?lock\b"
                                      r"|\bwait(?:s|ing)? on the (?:same |shared )?lock\b|\block time\b"),
    "a work branch": r"\bs\d{1,2}-[a-z][a-z0-9]+\b|\b(?:this|that|another) branch\b|\bevery branch merged\b",
    "who does the work": r"\bthe lead\b|\bworktree\b",
}
_COMPILED = {name: re.compile(pattern, re.IGNORECASE if name != "a work branch" else 0)
             for name, pattern in WORK_TALK.items()}


def _texts():
    """README.md, every doc, and every Python file of the product, its tests, scripts and packaging."""
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.md"))
    for folder in ("app", "tests", "scripts", "packaging"):
        yield from (p for p in sorted((ROOT / folder).rglob("*.py")) if p != Path(__file__).resolve())


def work_talk(text: str) -> list[str]:
    """What in `text` talks about the work rather than the product: `line: pattern name: the match`."""
    return [f"{number}: {name}: {match.group(0).strip()!r}"
            for number, line in enumerate(text.splitlines(), 1)
            for name, pattern in _COMPILED.items() for match in [pattern.search(line)] if match]


def test_the_readme_is_a_page_a_newcomer_reads():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the manual is docs/guide.md"


def test_the_benchmarks_hold_the_latest_results_only():
    lines = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= BENCHMARKS_MAX_LINES, (f"docs/benchmarks.md has {len(lines)} lines: earlier runs are in "
                                                f"git, an investigation goes to docs/investigations/DATE-topic.md")


def test_investigations_are_named_by_date_and_topic():
    names = [p.name for p in (ROOT / "docs" / "investigations").glob("*")]
    assert names and all(re.fullmatch(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md", n) for n in names), names


def test_no_doc_or_code_talks_about_how_the_work_was_organised():
    found = [f"{path.relative_to(ROOT)}:{hit}" for path in _texts()
             for hit in work_talk(path.read_text(encoding="utf-8", errors="replace"))]
    assert found == []


def test_the_patterns_reject_work_talk_and_leave_the_products_words_alone():
    rejected = ["see issue 34", "(issue #29)", "Issues 33 and 35", "fixed in #34.", "(#34)", "see #7",
                "the issue's goals", "what the issue proposed", "defect 6", "Session 11 measured", "session-9",
                "five helper sessions", "the other helpers' editing", "shared by six agents", "other sessions' shells",
                "the shared lock", "under the shared test lock", "queued behind the lock", "branch s10-lingmuse",
                "on that branch", "every branch merged", "the lead merges"]
    kept = ["a tool-call issue", "the session file", "two sessions' votes merge", "the session's view",
            "llama.cpp#20824", "llama.cpp #15417", "Row #2", "color:#222", "QColor(\"#3b82f6\")", "# 3 panes",
            "a pane's branch", "click one to branch", "counted live under the lock", "a FIFO lock",
            "held with a lock file", "the scaling test's measurement helpers", "mtmd-helper's scope",
            "Identical requests queued behind full slots", "autosave-2.chorus.json", "Qwen3-Coder", "s3 bucket",
            "x86_64", "queued requests stay queued"]
    assert [t for t in rejected if not work_talk(t)] == []
    assert [t for t in kept if work_talk(t)] == []
