"""The `prompts:` of a config, read as promptfoo reads them (src/prompts/index.ts, utils.ts, processors/).

`prompts` is a string, a list (strings or {raw | id, label} objects) or a legacy map {path: label}. A string (an
object's `raw`, else its `id`) is a file when promptfoo's maybeFilePath says so: it holds no newline (nor portkey://,
langfuse://, helicone://) and it starts `file://`, its last or second-to-last ":"-separated part ends in one of
promptfoo's file extensions, its 3rd or 4th character from the end is ".", or it holds "/", "\\" or "*". Otherwise it
is the template itself, labelled with its own text: `Name the capital of {{country}}.` is a template. A file path that
is a pattern (it holds "*", "?", "{", "}", "[" or "]") or a directory, and matches no file, is the template itself
too, so `What is 1/2?` is a template; `Use e.g.` (a "." 3rd from the end) names a file, and when no such file exists
the problem says so. A .txt file holds several prompts split on lines that are `---` (each trimmed, empty ones
dropped); .json, .md, .j2, .yaml/.yml hold one each (a chat prompt is re-serialised compactly, as promptfoo does);
.jsonl one per line; .csv one per row (`csv_prompts`); globs expand in sorted order. `exec:` prompts, and files
ending .sh, .bash, .exe, .bat, .cmd, .ps1, .rb or .pl or marked executable, run a command for each cell
(exec_prompts.py). A prompt object's `config` is kept with it: its settings go over its providers' config.
Prompt functions in JavaScript or Python (.js, .py) and prompts kept in Langfuse, Portkey or Helicone are not
supported.
"""

from __future__ import annotations

import csv
import glob
import json
import os
from pathlib import Path

from app.evaluate import case_files, exec_prompts
from app.evaluate.errors import Problems
from app.session.evaluation import PromptTemplate

SEPARATOR = "---"
TEXT_TYPES = (".txt", ".md", ".j2", ".json", ".jsonl", ".yaml", ".yml")
CODE_TYPES = (".js", ".cjs", ".mjs", ".ts", ".py", ".go")  # prompt functions: not supported
# promptfoo's VALID_FILE_EXTENSIONS (src/prompts/constants.ts): the endings maybeFilePath takes for a file
FILE_EXTENSIONS = (".cjs", ".cts", ".js", ".json", ".jsonl", ".mjs", ".mts", ".py", ".ts", ".txt", ".yml", ".yaml")
NEVER_A_PATH = ("\n", "portkey://", "langfuse://", "helicone://")
PATTERN_CHARACTERS = "*?{}[]"  # parsePathOrGlob's isPathPattern


def looks_like_file(text: str) -> bool:
    """promptfoo's maybeFilePath (src/prompts/utils.ts)."""
    if any(part in text for part in NEVER_A_PATH):
        return False
    last_two = text.split(":")[-2:]  # a path may end in `:functionName`
    return (text.startswith("file://") or any(token.endswith(ext) for token in last_two for ext in FILE_EXTENSIONS)
            or text[-3:-2] == "." or text[-4:-3] == "."
            or any(c in text for c in "*/\\"))


def _is_dir(path: str) -> bool:
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def _from_file(written: str, label: str | None, base: Path, problems: Problems,
               config: dict) -> list[PromptTemplate]:
    name = written[len("file://"):] if written.startswith("file://") else written
    function = None
    if ":" in Path(name).name and not case_files.is_file(Path(base, name)):
        name, function = name.rsplit(":", 1)
    pattern = str(base / name)
    if any(c in name for c in PATTERN_CHARACTERS) or _is_dir(pattern):
        paths = [path for path in sorted(glob.glob(pattern)) if case_files.is_file(path)]
        if not paths:  # promptfoo: "nothing at this filepath, so treat it as a prompt string"
            return [PromptTemplate(raw=written, label=label or written, config=config)]
    else:
        paths = [pattern]
    if not case_files.is_file(paths[0]):
        hint = ("" if written.startswith("file://") else
                " (promptfoo reads a prompt holding '/', '\\\\' or '*', or with a '.' 3rd or 4th from its end, as a "
                "file path; put a literal prompt like this one in a .txt file and name that file: "
                "`file://prompt.txt`)")
        problems.add(f"prompts: {written!r}", f"no such prompt file{hint}")
        return []
    prompts = []
    for path in map(Path, paths):
        shown = str(Path(name) if len(paths) == 1 else path.relative_to(base))
        suffix = path.suffix.lower()
        if suffix in CODE_TYPES or (function and suffix not in exec_prompts.EXECUTABLE_SUFFIXES):
            problems.unsupported(f"prompts: {written!r}", "a prompt function in JavaScript or Python",
                                 "write it as an `exec:` prompt that prints the prompt")
            continue
        if suffix in exec_prompts.EXECUTABLE_SUFFIXES or (suffix not in TEXT_TYPES + (".csv",) and os.access(
                path, os.X_OK)):
            prompts.append(_exec(str(path), label, base, config))
            continue
        text = case_files.read_text(path, problems)
        if text is None:
            continue
        if suffix == ".csv":
            prompts += csv_prompts(text, label)
        elif suffix == ".txt" or suffix not in TEXT_TYPES:
            chunks, current = [], []
            for line in text.splitlines():
                if line.strip() == SEPARATOR:
                    chunks.append("\n".join(current))
                    current = []
                else:
                    current.append(line)
            chunks.append("\n".join(current))
            for chunk in (c.strip() for c in chunks):
                if chunk:
                    prompts.append(PromptTemplate(raw=chunk, label=f"{label}: {shown}: {chunk}" if label
                                                  else f"{shown}: {chunk}"))
        elif suffix == ".json":
            try:
                raw = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
            except ValueError:
                raw = text
            prompts.append(PromptTemplate(raw=raw, label=label or f"{shown}: {raw}"))
        elif suffix == ".jsonl":
            lines = [line for line in text.splitlines() if line]
            for line in lines:
                shown_label = (f"{label}: {line}" if label else f"{shown}: {line}") if len(lines) > 1 else (
                    label or shown)
                prompts.append(PromptTemplate(raw=line, label=shown_label))
        elif suffix in (".yaml", ".yml"):
            import yaml

            raw = json.dumps(yaml.safe_load(text), ensure_ascii=False, separators=(",", ":"))
            prompts.append(PromptTemplate(raw=raw, label=label or f"{shown}: {raw}"))
        else:  # .md, .j2
            prompts.append(PromptTemplate(raw=text, label=label or f"{shown}: {text[:50]}..."))
    return [p.model_copy(update={"config": config}) if config else p for p in prompts]


def _csv_rows(text: str) -> list[str]:
    """The prompt texts of a .csv prompt file, as promptfoo's processCsvPrompts finds them."""
    delimiter = os.environ.get("PROMPTFOO_CSV_DELIMITER", ",")
    lines = [line for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    plain = [{"prompt": line} for line in lines[1 if lines and lines[0].strip().lower() == "prompt" else 0:]]
    if delimiter not in text:
        return plain
    try:  # csv-parse: header row, values trimmed, empty lines skipped, rows without a prompt dropped
        records = list(csv.reader(text.splitlines(), delimiter=delimiter,
                                  strict=os.environ.get("PROMPTFOO_CSV_STRICT", "").lower() in ("1", "true")))
    except csv.Error:
        return plain
    records = [r for r in records if any(cell.strip() for cell in r)]
    if not records or any(len(r) != len(records[0]) for r in records):
        return plain  # csv-parse throws on an uneven row; promptfoo then reads the file line by line
    header = [name.strip() for name in records[0]]
    rows = [dict(zip(header, (cell.strip() for cell in r), strict=True)) for r in records[1:]]
    return [row for row in rows if row.get("prompt")]


def csv_prompts(text: str, label: str | None) -> list[PromptTemplate]:
    """One prompt per row of a .csv prompt file: its `prompt` column (or, in a file without the delimiter, each
    non-blank line, a first line `prompt` skipped), labelled by its `label` column, else `<label>: <prompt>` when
    the entry has a label and the file several rows (the bare label for one row), else `Prompt N - <prompt>`;
    a label used twice gets ` (row N)`."""
    rows = _csv_rows(text)
    used = {row["label"] for row in rows if row.get("label")}
    prompts = []
    for index, row in enumerate(rows):
        text = row["prompt"]
        name = row.get("label") or ((f"{label}: {text}" if len(rows) > 1 else label) if label
                                    else f"Prompt {index + 1} - {text}")
        if not row.get("label"):
            first, suffix = name, 1
            while name in used:
                name = f"{first} (row {index + 1}{f'.{suffix}' if suffix > 1 else ''})"
                suffix += 1
            used.add(name)
        prompts.append(PromptTemplate(raw=row["prompt"], label=name))
    return prompts


def _exec(spec: str, label: str | None, base: Path, config: dict) -> PromptTemplate:
    line = exec_prompts.command(spec, base)
    return PromptTemplate(raw=exec_prompts.shown(spec, base), label=label or line, config=config, exec=line)


def _from_string(text: str, label: str | None, base: Path, problems: Problems, where: str,
                 config: dict | None = None) -> list[PromptTemplate]:
    """processPrompt for a written string: an executable, a file (or glob), or the template itself."""
    config = config or {}
    if text.startswith("exec:"):
        return [_exec(text[len("exec:"):], label, base, config)]
    if text.startswith(NEVER_A_PATH[1:]):  # fetched from that service when promptfoo renders it
        problems.unsupported(where, "a prompt kept in Langfuse, Portkey or Helicone")
        return []
    if looks_like_file(text):
        return _from_file(text, label, base, problems, config)
    return [PromptTemplate(raw=text, label=label or text, config=config)]


def _one(item, base: Path, problems: Problems, where: str) -> list[PromptTemplate]:
    if isinstance(item, str):
        return _from_string(item, None, base, problems, where)
    if isinstance(item, dict):
        unknown = sorted(set(item) - {"raw", "id", "label", "config"})
        if unknown:
            problems.unsupported(where, f"the prompt key(s) {', '.join(unknown)}")
        config = item.get("config") or {}
        if not isinstance(config, dict):
            problems.add(f"{where}.config", f"must be a mapping, got {type(config).__name__}")
            return []
        label = item.get("label")
        if label is not None and not isinstance(label, str):
            problems.add(f"{where}.label", f"must be a string, got {type(label).__name__}")
            return []
        text = item.get("raw") or item.get("id")  # normalizeInput: raw ‖ id, then read as any written string
        if isinstance(text, str):
            return _from_string(text, label, base, problems, where, config)
        problems.add(where, "a prompt object needs `raw` (the template) or `id` (a file://… path)")
        return []
    problems.add(where, f"a prompt must be a string or an object, not {type(item).__name__}")
    return []


def read_prompts(value, base: Path, problems: Problems) -> list[PromptTemplate]:
    """Every prompt template the config names, in order."""
    if value is None:
        problems.add("prompts", "the config names no prompts")
        return []
    if isinstance(value, str):
        return _one(value, base, problems, "prompts")
    if isinstance(value, dict):  # legacy map {path: label}
        found = []
        for path, label in value.items():
            found += _from_string(str(path), str(label), base, problems, f"prompts: {path!r}")
        return found
    if isinstance(value, list):
        found = []
        for index, item in enumerate(value):
            found += _one(item, base, problems, f"prompts[{index}]")
        return found
    problems.add("prompts", f"must be a string, a list or a map, not {type(value).__name__}")
    return []
