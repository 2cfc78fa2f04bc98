"""`nunjucksFilters`: the config's own template filters, as promptfoo loads them (src/util/index.ts readFilters,
src/util/templates.ts): `{name: path}`, the path (a glob) relative to the config, each file a JavaScript module
whose export is the filter function, called as `value | name(arg, …)` → `fn(value, arg, …)` while a prompt is
rendered. Chorus runs it in the embedded V8 that runs `javascript` checks (js_code.py: a fresh context a call,
the same time and memory limits), and only through a CodeRunner, once the user has agreed to run the config's
code: without one, a prompt that uses a filter is that cell's ERROR and nothing runs. A filter that throws, or
runs past its limits, is that cell's ERROR naming the filter.
"""

from __future__ import annotations

import glob
from pathlib import Path

from app.evaluate import js_code
from app.evaluate.check_types import CheckError
from app.evaluate.errors import Problems

SUFFIXES = (".js", ".cjs", ".mjs")


def read(value, base: Path, problems: Problems) -> dict[str, str]:
    """name → the filter's file (absolute); every problem added (not a mapping, no file, not JavaScript)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        problems.add("nunjucksFilters", "must map each filter's name to its JavaScript file")
        return {}
    found = {}
    for name, written in value.items():
        paths = sorted(glob.glob(str(base / written.removeprefix("file://"))))
        if not paths:
            problems.add(f"nunjucksFilters.{name}", f"no file matches {written!r}")
        for path in map(Path, paths):  # promptfoo: the last file a glob matches is the filter
            if path.suffix.lower() not in SUFFIXES:
                problems.unsupported(f"nunjucksFilters.{name}", f"a filter in {path.name}",
                                     "promptfoo loads filters from JavaScript files")
            found[str(name)] = str(path.resolve())
    return found


def callables(filters: dict[str, str], code) -> dict:
    """The filters as template callables; each raises CheckError when it fails or code was not allowed."""
    def make(name: str, path: str):
        def run(value, *args):
            if code is None:
                raise CheckError(f"the nunjucks filter {name} runs code, which was not allowed for this evaluation")
            try:
                result = js_code.call(None, Path(path), None, (), [value, *args], code.js_time_limit, "filter")
            except js_code.CodeLimit as exc:
                raise CheckError(f"nunjucks filter {name}: {exc}") from None
            if result.error is not None:
                raise CheckError(f"nunjucks filter {name} failed: {result.error}")
            return None if result.value.undefined else result.value.value
        return run

    return {name: make(name, path) for name, path in filters.items()}
