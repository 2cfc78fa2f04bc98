"""Write an evaluation's outputs by file extension, each crash-safely (temp file, fsync, rename).

.json → promptfoo v3 results, .jsonl → one result per line, .yaml/.yml → the same as YAML, .csv, .html, .xml
(JUnit). An unknown extension is refused before anything runs (`check_paths`).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from app.evaluate import reports, results_json
from app.files import write_atomic
from app.session.evaluation import Evaluation

WRITERS = {".json": results_json.to_json, ".jsonl": results_json.to_jsonl, ".csv": reports.to_csv,
           ".html": reports.to_html, ".htm": reports.to_html, ".xml": reports.to_junit,
           ".yaml": lambda e: yaml.safe_dump(results_json.results_document(e), allow_unicode=True, sort_keys=False),
           ".yml": lambda e: yaml.safe_dump(results_json.results_document(e), allow_unicode=True, sort_keys=False)}


def check_paths(paths) -> list[str]:
    """Problems with the output paths (unknown extensions), one sentence each."""
    return [f"-o {p}: unknown output type {Path(p).suffix or '(none)'}; use {', '.join(sorted(WRITERS))}"
            for p in paths if Path(p).suffix.lower() not in WRITERS]


def write_outputs(evaluation: Evaluation, paths) -> None:
    for path in paths:
        write_atomic(path, WRITERS[Path(path).suffix.lower()](evaluation))
