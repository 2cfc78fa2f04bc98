"""Where the suite's time goes: every test's wall (setup + call + teardown), kept after each run.

The conftest imports these hooks. At the end of a run they write every test's seconds, and the totals per file and
per directory, to `.pytest_cache/v/chorus/durations` (JSON), and print the directories and the slowest files, so a
CI log shows what to cut. A session fixture's set-up counts toward the first test that asks for it."""

from collections import defaultdict
from pathlib import PurePosixPath

_seconds: dict[str, float] = defaultdict(float)
SLOWEST_FILES = 15


def pytest_runtest_logreport(report) -> None:
    _seconds[report.nodeid] += report.duration


def _totals(by_test: dict[str, float], key) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for nodeid, seconds in by_test.items():
        totals[key(nodeid.split("::", 1)[0])] += seconds
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def pytest_terminal_summary(terminalreporter, config) -> None:
    if not _seconds or hasattr(config, "workerinput"):  # an xdist worker: its controller gets every report
        return
    by_test = {nodeid: round(seconds, 3) for nodeid, seconds in _seconds.items()}
    by_file = _totals(by_test, lambda path: path)
    by_dir = _totals(by_test, lambda path: str(PurePosixPath(path).parent))
    if getattr(config, "cache", None) is not None:  # absent under -p no:cacheprovider
        config.cache.set("chorus/durations", {"tests": by_test, "files": by_file, "directories": by_dir})
    write = terminalreporter.write_line
    terminalreporter.section("wall per directory (setup + call + teardown)")
    for name, seconds in by_dir.items():
        write(f"{seconds:8.1f} s  {name}")
    terminalreporter.section(f"slowest {SLOWEST_FILES} files")
    for name, seconds in list(by_file.items())[:SLOWEST_FILES]:
        write(f"{seconds:8.1f} s  {name}")
