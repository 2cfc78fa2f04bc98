"""Write an evaluation's outputs by file extension, each crash-safely (temp file, fsync, rename).

.json → promptfoo v3 results, .jsonl → one result per line, .yaml/.yml → the same as YAML, .csv, .html, .xml
(JUnit). An unknown extension is refused before anything runs (`check_paths`). Every file is valid UTF-8
whatever the evaluation holds: a lone surrogate (JSON's "\\udcff" read into a prompt, a var, a label…) is
written as the escape `\\udcff` in JSON, JSONL and YAML (reading the file back gives the same string), and as
U+FFFD in CSV, HTML and XML, which have no escape for it; XML also replaces the control characters XML 1.0
forbids. So nothing computed is lost to an encoding error.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from app.evaluate import reports, results_json
from app.files import write_atomic
from app.session.evaluation import Evaluation

_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def escape_surrogates(json_text: str) -> str:
    """JSON (or YAML) text with each lone surrogate written as its \\uXXXX escape. Valid because a surrogate can
    only sit inside a string, where the escape means the same code point."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def replace_surrogates(text: str) -> str:
    """Text with each lone surrogate replaced by U+FFFD (for formats without an escape for it)."""
    return _SURROGATE.sub(REPLACEMENT, text)


def _yaml(evaluation: Evaluation) -> str:
    # safe_dump escapes what it cannot print as "\uXXXX" in a double-quoted scalar: surrogates included
    return yaml.safe_dump(results_json.results_document(evaluation), allow_unicode=True, sort_keys=False)


WRITERS = {".json": lambda e: escape_surrogates(results_json.to_json(e)),
           ".jsonl": lambda e: escape_surrogates(results_json.to_jsonl(e)),
           ".csv": lambda e: replace_surrogates(reports.to_csv(e)),
           ".html": lambda e: replace_surrogates(reports.to_html(e)),
           ".htm": lambda e: replace_surrogates(reports.to_html(e)),
           ".xml": lambda e: _NOT_XML.sub(REPLACEMENT, reports.to_junit(e)),
           ".yaml": _yaml, ".yml": _yaml}


def check_paths(paths) -> list[str]:
    """Problems with the output paths (unknown extensions), one sentence each."""
    return [f"-o {p}: unknown output type {Path(p).suffix or '(none)'}; use {', '.join(sorted(WRITERS))}"
            for p in paths if Path(p).suffix.lower() not in WRITERS]


def write_outputs(evaluation: Evaluation, paths) -> None:
    for path in paths:
        write_atomic(path, WRITERS[Path(path).suffix.lower()](evaluation))
