"""The `prompts:` of a config, read as promptfoo reads them (src/prompts/index.ts, utils.ts, processors/).

`prompts` is a string, a list (strings or {raw | id, label} objects) or a legacy map {path: label}. A string is
a file when it starts `file://`, ends in a known extension, has a "." 3rd or 4th from the end, or holds "/", "\\"
or "*" (and no newline); otherwise it is the template itself, labelled with its own text. So `What is 1/2?` is a
file to promptfoo too: when no such file exists the problem says so. A .txt file holds several prompts split on
lines that are `---` (each trimmed, empty ones dropped); .json, .md, .j2 hold one each (a .json chat prompt is
re-serialised compactly, as promptfoo does); .jsonl one per line; globs expand in sorted order. Prompt functions
(.js, .py and other executables) are not supported.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

from app.evaluate import case_files
from app.evaluate.errors import Problems
from app.session.evaluation import PromptTemplate

SEPARATOR = "---"
TEXT_TYPES = (".txt", ".md", ".j2", ".json", ".jsonl", ".yaml", ".yml")
CODE_TYPES = (".js", ".cjs", ".mjs", ".ts", ".py", ".sh", ".rb", ".go", ".exe")


def looks_like_file(text: str) -> bool:
    """promptfoo's maybeFilePath."""
    if "\n" in text:
        return False
    head = text.split(":")[0]
    return (text.startswith("file://") or any(head.endswith(ext) for ext in TEXT_TYPES + CODE_TYPES)
            or text[-3:-2] == "." or text[-4:-3] == "." or text.endswith(".")
            or any(c in text for c in "*/\\"))


def _from_file(written: str, label: str | None, base: Path, problems: Problems) -> list[PromptTemplate]:
    name = written[len("file://"):] if written.startswith("file://") else written
    function = None
    if ":" in Path(name).name and not case_files.is_file(Path(base, name)):
        name, function = name.rsplit(":", 1)
    pattern = str(base / name)
    paths = sorted(glob.glob(pattern)) if any(c in name for c in "*?[") else [pattern]
    if not paths or not case_files.is_file(paths[0]):
        hint = ("" if written.startswith("file://") else
                " (promptfoo reads a prompt holding '/', '\\\\' or '*', or with a '.' near its end, as a file path; "
                f"write a literal prompt like this one as `- raw: {written!r}`)")
        problems.add(f"prompts: {written!r}", f"no such prompt file{hint}")
        return []
    prompts = []
    for path in map(Path, paths):
        shown = str(Path(name) if len(paths) == 1 else path.relative_to(base))
        suffix = path.suffix.lower()
        if suffix in CODE_TYPES or function:
            problems.unsupported(f"prompts: {written!r}", "a prompt function (JavaScript, Python or an executable)")
            continue
        text = case_files.read_text(path, problems)
        if text is None:
            continue
        if suffix == ".txt" or suffix not in TEXT_TYPES:
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
    return prompts


def _one(item, base: Path, problems: Problems, where: str) -> list[PromptTemplate]:
    if isinstance(item, str):
        if looks_like_file(item):
            return _from_file(item, None, base, problems)
        return [PromptTemplate(raw=item, label=item)]
    if isinstance(item, dict):
        unknown = sorted(set(item) - {"raw", "id", "label", "config"})
        if unknown:
            problems.unsupported(where, f"the prompt key(s) {', '.join(unknown)}")
        if item.get("config"):
            problems.unsupported(where, "a prompt's own config")
        label = item.get("label")
        if label is not None and not isinstance(label, str):
            problems.add(f"{where}.label", f"must be a string, got {type(label).__name__}")
            return []
        if isinstance(item.get("raw"), str):
            return [PromptTemplate(raw=item["raw"], label=label or item["raw"])]
        if isinstance(item.get("id"), str):
            found = (_from_file(item["id"], label, base, problems) if looks_like_file(item["id"])
                     else [PromptTemplate(raw=item["id"], label=label or item["id"])])
            return found
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
            found += _from_file(str(path), str(label), base, problems) if looks_like_file(str(path)) else [
                PromptTemplate(raw=str(path), label=str(label))]
        return found
    if isinstance(value, list):
        found = []
        for index, item in enumerate(value):
            found += _one(item, base, problems, f"prompts[{index}]")
        return found
    problems.add("prompts", f"must be a string, a list or a map, not {type(value).__name__}")
    return []
