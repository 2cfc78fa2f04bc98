"""Test cases from files, as promptfoo reads them (src/csv.ts, src/util/testCaseReader.ts).

A CSV row becomes a test: `__expected`, `__expected1…N` one assertion each (blank cells skipped, the cell
trimmed, then parsed by `assertion_from_string`); `__description`, `__prefix`, `__suffix`, `__providerOutput`,
`__metric` (set on every assertion of the row), `__threshold` (blank or not a number = unset; 0 is kept, as
promptfoo does since its pull request 9768), `__metadata:key` and `__metadata:key[]` (split on unescaped commas),
`__config:__expected[N]:threshold` (per assertion; bare `__expected` = the first); any other column is a var.
Header names are trimmed, values are not; a UTF-8 BOM is dropped; the delimiter is $PROMPTFOO_CSV_DELIMITER
(default ","). YAML/JSON files hold a list of tests; JSONL one test per line. A plain CSV/JSONL of vars (no
`vars`/`assert` keys) is read by `read_vars_file`, one test per row. A var `file://x` is the file's text
(.json/.yaml parsed) by `load_file_vars`. Every file is read as UTF-8 (`read_text`): one that is not is a
problem naming file, line and byte, never decoded some other way.
"""

from __future__ import annotations

import csv
import glob
import json
import math
import os
import re
from pathlib import Path

import yaml

from app.evaluate import hf_datasets
from app.evaluate.assertion_strings import assertion_from_string
from app.evaluate.errors import Problems
from app.session import images
from app.session.evaluation import EvalCase

TEST_KEYS = frozenset({"description", "vars", "assert", "threshold", "metadata", "options", "providerOutput",
                       "provider", "providers", "prompts"})


def is_file(path) -> bool:
    """Whether `path` is a file; False (never an exception) for a name the OS cannot take: too long, a NUL,
    a lone surrogate outside Python's escape range."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def not_utf8(path: Path, data: bytes, exc: UnicodeDecodeError) -> str:
    """Where a file stops being UTF-8, as `path:line: …` (lines and columns counted from 1)."""
    line = data.count(b"\n", 0, exc.start) + 1
    column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
    return (f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x} at column {column}): save the file as UTF-8, "
            "the encoding promptfoo reads too")


def read_text(path: Path, problems: Problems) -> str | None:
    """A file's text, a UTF-8 BOM dropped; None after adding a problem naming the file (and the line, for bytes
    that are not UTF-8) when it cannot be read. Files are never guessed into another encoding."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        problems.add(str(path), f"cannot read the file: {exc.strerror or exc}")
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.add("", not_utf8(path, data, exc))
        return None


def _number(text: str) -> float | None:
    """JavaScript's Number.parseFloat for a CSV cell: the leading number, or None (blank, NaN)."""
    match = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    if not match:
        return None
    value = float(match.group(0))
    return value if math.isfinite(value) else None


def _metadata(key: str, value: str, metadata: dict) -> None:
    name = key[len("__metadata:"):]
    if not value.strip():
        return
    if name.endswith("[]"):
        metadata[name[:-2]] = [item.strip().replace("\\,", ",", 1) for item in re.split(r"(?<!\\),", value)]
    else:
        metadata[name] = value


def _config(key: str, value: str, configs: dict[int, dict], where: str, problems: Problems) -> None:
    parts = key[len("__config:"):].split(":")
    if len(parts) != 2:
        problems.add(where, f"column {key!r}: write __config:__expected:threshold or __config:__expectedN:threshold")
        return
    target, name = parts
    if target == "__expected":
        index = 0
    elif re.fullmatch(r"__expected(\d+)", target):
        index = int(target[len("__expected"):]) - 1
    else:
        problems.add(where, f"column {key!r}: {target!r} is not __expected or __expectedN")
        return
    if name != "threshold":
        problems.add(where, f"column {key!r}: the only per-assertion setting is threshold, not {name!r}")
        return
    if not value.strip():
        return
    number = _number(value)
    if number is None:
        problems.add(where, f"column {key!r}: {value!r} is not a number")
        return
    configs.setdefault(index, {})[name] = number


def test_from_csv_row(row: dict[str, str], where: str, problems: Problems) -> dict:
    """One CSV row as a promptfoo test dict."""
    test: dict = {"vars": {}, "assert": [], "options": {}}
    metadata: dict = {}
    configs: dict[int, dict] = {}
    metric = None
    for raw_key, value in row.items():
        key = raw_key.strip()
        if key.startswith("__expected"):
            if value.strip():
                test["assert"].append(assertion_from_string(value.strip()))
        elif key in ("__prefix", "__suffix"):
            test["options"][key[2:]] = value
        elif key == "__description":
            test["description"] = value
        elif key == "__providerOutput":
            test["providerOutput"] = value
        elif key == "__metric":
            metric = value
        elif key == "__threshold":
            threshold = _number(value)
            if threshold is not None:
                test["threshold"] = threshold
        elif key == "__metadata":
            problems.add(where, 'the "__metadata" column needs a key, e.g. "__metadata:category"')
        elif key.startswith("__metadata:"):
            _metadata(key, value, metadata)
        elif key.startswith("__config:"):
            _config(key, value, configs, where, problems)
        elif key.startswith("__"):
            problems.unsupported(where, f"the column {key!r}")
        else:
            test["vars"][key] = value
    for index, assertion in enumerate(test["assert"]):
        if metric is not None:
            assertion["metric"] = metric
        for name, value in configs.get(index, {}).items():
            assertion[name] = value
            metadata[name] = value  # promptfoo copies per-assertion config into the test's metadata too
    if not test.get("description"):
        test.pop("description", None)
    if metadata:
        test["metadata"] = metadata
    return test


def read_csv_rows(path: Path, problems: Problems) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) pairs; a row whose field count differs from the header's is a problem."""
    delimiter = os.environ.get("PROMPTFOO_CSV_DELIMITER", ",")
    text = read_text(path, problems)
    if text is None:
        return []
    for strict in (True, False):  # promptfoo: strict quotes first, then relaxed
        try:
            reader = csv.reader(text.splitlines(keepends=True), delimiter=delimiter, strict=strict)
            records = [(reader.line_num, record) for record in reader]
            break
        except csv.Error as exc:
            if not strict:
                problems.add(str(path), f"not a readable CSV file: {exc}")
                return []
    records = [(line, record) for line, record in records if record]
    if not records:
        problems.add(str(path), "the CSV file is empty (it needs a header row)")
        return []
    header = [name.strip() for name in records[0][1]]
    rows = []
    for line, record in records[1:]:
        if len(record) != len(header):
            problems.add(f"{path}:{line}", f"{len(record)} fields, but the header has {len(header)}")
            continue
        rows.append((line, dict(zip(header, record, strict=True))))
    return rows


def read_csv_tests(path: Path, problems: Problems) -> list[dict]:
    return [test_from_csv_row(row, f"{path}:{line}", problems) for line, row in read_csv_rows(path, problems)]


_GENERATORS = {".py": "Python", ".js": "JavaScript", ".cjs": "JavaScript", ".mjs": "JavaScript", ".ts": "TypeScript"}


def read_test_file(path: Path, problems: Problems) -> list[dict]:
    """Tests from a .csv, .json, .jsonl, .yaml or .yml file (a list of tests, or one per JSONL line)."""
    code = _GENERATORS.get(Path(path.name.split(":", 1)[0]).suffix.lower())  # x.py or x.py:function
    if code:
        problems.unsupported(str(path), f"the test generator {path.name!r}, in {code} (tests made by code),",
                             "write the tests out in a .yaml, .json, .jsonl or .csv file")
        return []
    suffix = path.suffix.lower()
    if not is_file(path):
        problems.add(str(path), "test file not found")
        return []
    if suffix == ".csv":
        return read_csv_tests(path, problems)
    if suffix == ".jsonl":
        return _jsonl(path, problems)
    if suffix in (".json", ".yaml", ".yml"):
        text = read_text(path, problems)
        if text is None:
            return []
        try:
            data = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError) as exc:
            problems.add(str(path), f"not valid YAML/JSON: {exc}")
            return []
        data = data if isinstance(data, list) else [data]
        if not all(isinstance(item, dict) for item in data):
            problems.add(str(path), "a test file must hold a list of tests (mappings)")
            return []
        return data
    problems.unsupported(str(path), f"a {suffix or 'extension-less'} test file", "use .csv, .json, .jsonl or .yaml")
    return []


def _jsonl(path: Path, problems: Problems) -> list[dict]:
    items = []
    text = read_text(path, problems)
    for number, line in enumerate((text or "").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (ValueError, RecursionError) as exc:
            problems.add(f"{path}:{number}", f"not JSON: {exc}")
            continue
        if not isinstance(item, dict):
            problems.add(f"{path}:{number}", "each line must be a JSON object")
            continue
        items.append(item)
    return items


def read_vars_file(path: Path) -> list[dict]:
    """Tests from a plain CSV or JSONL of vars: every column (key) is a var, except promptfoo's `__` columns in a
    CSV, and a JSONL line that already is a test (has vars/assert) is kept as one. Raises ConfigError."""
    problems = Problems()
    path = Path(path)
    if path.suffix.lower() == ".csv":
        tests = read_test_file(path, problems)
    elif path.suffix.lower() == ".jsonl":
        tests = [item if "vars" in item or "assert" in item else {"vars": item} for item in _jsonl(path, problems)]
    else:
        problems.unsupported(str(path), f"a {path.suffix or 'extension-less'} vars file", "use .csv or .jsonl")
        tests = []
    problems.raise_if_any(str(path))
    return tests


# The extensions promptfoo reads as images (src/util/file.ts isImageFile): such a `file://` var becomes
# `data:<mime>;base64,...`. Chorus sends the formats its engine decodes and names any other.
PROMPTFOO_IMAGE_TYPES = ("jpg", "jpeg", "png", "gif", "bmp", "webp", "svg", "heic", "heif", "avif", "tif", "tiff")
# The extensions promptfoo reads as audio (src/util/file.ts isAudioFile): such a var becomes the file's base64, for
# an `input_audio` part's data. Chorus sends the formats its engine decodes (wav, mp3, flac, ogg) and names others.
PROMPTFOO_AUDIO_TYPES = ("wav", "mp3", "ogg", "aac", "m4a", "flac", "wma", "aiff", "opus")
# The extensions promptfoo reads as video (src/util/file.ts isVideoFile): such a var becomes a data URL, for a
# `video_url` part. Chorus sends the containers it knows (mp4, mov, mkv, webm, avi) and names others.
PROMPTFOO_VIDEO_TYPES = ("mp4", "webm", "mov", "avi", "wmv", "mkv", "m4v")


def load_file_vars(test: EvalCase, where: str, base: Path, problems: Problems) -> EvalCase:
    """Var values `file://path` become the file's contents (.json/.yaml parsed; an image a data URL), as
    promptfoo loads them."""
    loaded = {}
    for key, value in test.vars.items():
        items = value if isinstance(value, list) else [value]
        if not any(isinstance(v, str) and v.startswith("file://") for v in items):
            continue
        out = []
        for item in items:
            if not (isinstance(item, str) and item.startswith("file://")):
                out.append(item)
                continue
            path = base / item[7:]
            if path.suffix.lower() in (".py", ".js", ".cjs", ".mjs", ".ts"):
                problems.unsupported(f"{where}.vars.{key}", f"a var computed by {path.name}", "it runs code")
            elif not is_file(path):
                problems.add(f"{where}.vars.{key}", f"no such file: {path}")
            elif path.suffix.lower().lstrip(".") in PROMPTFOO_IMAGE_TYPES + PROMPTFOO_AUDIO_TYPES + \
                    PROMPTFOO_VIDEO_TYPES:
                try:  # promptfoo inlines it as a data URL (evaluatorHelpers.ts renderPrompt); see docs/evaluate.md
                    ref = images.add_file(path)  # a clip: its base64, as promptfoo loads an audio var
                    out.append(images.audio_part(ref)["input_audio"]["data"] if ref.is_audio else images.data_url(ref))
                except images.ImageError as exc:
                    problems.add(f"{where}.vars.{key}", str(exc))
            elif (text := read_text(path, problems)) is None:
                continue
            elif path.suffix.lower() in (".json", ".yaml", ".yml"):
                try:
                    out.append(yaml.safe_load(text))
                except (yaml.YAMLError, RecursionError) as exc:
                    problems.add(f"{where}.vars.{key}", f"{path}: not valid YAML/JSON: {_one_line(exc)}")
            else:
                out.append(text)
        loaded[key] = out if isinstance(value, list) else (out[0] if out else value)
    return test.model_copy(update={"vars": {**test.vars, **loaded}}) if loaded else test


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


REMOTE_TESTS = ("langfuse://", "az://", "https://docs.google.com/spreadsheets/", "https://", "http://")


def raw_tests(value, base: Path, problems: Problems) -> list[tuple[str, dict]]:
    """(where, test dict) for every test, files expanded; CSV rows without a description are "Row #N"."""
    items = value if isinstance(value, list) else [value]
    found: list[tuple[str, dict]] = []
    for index, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get("path"), str) and not set(item) - {"path", "config"}:
            item = item["path"]  # {path, config}: the config goes to a test generator's code, which Chorus refuses
        if isinstance(item, dict):
            found.append((f"tests[{index}]", item))
        elif isinstance(item, str) and item.startswith(hf_datasets.PREFIX):
            try:
                found += [(f"{item} row {row}", test) for row, test in enumerate(hf_datasets.tests(item), start=1)]
            except hf_datasets.DatasetError as exc:
                problems.add(f"tests[{index}]", str(exc))
        elif isinstance(item, str) and item.startswith(REMOTE_TESTS):
            problems.unsupported(f"tests[{index}]", f"reading tests from {item.split('?')[0]!r}",
                                 "save them as a .csv, .json, .jsonl or .yaml file")
        elif isinstance(item, str):
            name = item[7:] if item.startswith("file://") else item
            paths = sorted(glob.glob(str(base / name))) if any(c in name for c in "*?[") else [str(base / name)]
            if not paths:
                problems.add(f"tests[{index}]", f"no file matches {item!r}")
            for path in map(Path, paths):
                tests = read_test_file(path, problems)
                for row, test in enumerate(tests, start=1):
                    if path.suffix.lower() == ".csv":
                        test.setdefault("description", f"Row #{row}")
                    found.append((f"{path.name} test {row}", test))
        else:
            problems.add(f"tests[{index}]", "a test is a mapping or a file:// path")
    return found
