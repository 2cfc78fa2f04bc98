"""What `python -m app run` reads: a JSONL of requests (streamed, a line at a time) or a saved session.

Each input becomes a RunItem: its line number (or pane number), an id, the GenerationRequest and its settings
as the comparison labels, or the reason the line cannot run (then the rest still run). An input that cannot be
read at all raises InputError with one sentence.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.engine import GenerationRequest, SamplingParams
from app.session import MAIN, Session, SessionFileError, compare, conversation

REQUEST_FIELDS = ("id", "messages", "prompt", "sampling", "max_tokens", "stop", "logprobs", "json_schema", "grammar")


class InputError(ValueError):
    """The input as a whole cannot be used (missing, unreadable, neither JSONL nor a session)."""


@dataclass
class RunItem:
    line: int  # 1-based line of the JSONL, or pane number of a session
    id: str
    request: GenerationRequest | None
    settings: dict[str, str]
    error: str | None = None  # why this line cannot run
    turns: list[dict] | None = None  # a session pane's conversation as this run sends it


def request_settings(request: GenerationRequest) -> dict[str, str]:
    """The same labels a pane's settings get, read from a request (app.session.compare.FIELDS)."""
    return compare.labels(compare.setup_of_request(request, MAIN))


def parse_line(text: str, line: int) -> RunItem:
    """One JSONL line as a RunItem; a bad line becomes an item with `error` (and its id, if it had one)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return RunItem(line, f"line-{line}", None, {}, f"line {line}: not valid JSON ({exc.msg})")
    if not isinstance(data, dict):
        return RunItem(line, f"line-{line}", None, {}, f"line {line}: expected a JSON object")
    item_id = str(data.get("id", f"line-{line}"))
    unknown = sorted(set(data) - set(REQUEST_FIELDS))
    if unknown:
        return RunItem(line, item_id, None, {}, f"line {line}: unknown field(s) {', '.join(unknown)} "
                                                f"(known: {', '.join(REQUEST_FIELDS)})")
    try:
        sampling = data.get("sampling") or {}
        if not isinstance(sampling, dict):
            raise ValueError("sampling must be an object")
        fields = {k: data[k] for k in ("messages", "prompt", "max_tokens", "logprobs", "json_schema", "grammar")
                  if k in data}
        request = GenerationRequest(sampling=SamplingParams(**sampling), stop=tuple(data.get("stop") or ()),
                                    **fields)
    except (TypeError, ValueError) as exc:
        return RunItem(line, item_id, None, {}, f"line {line}: {exc}")
    return RunItem(line, item_id, request, request_settings(request))


def _jsonl_items(path: Path) -> Iterator[RunItem]:
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, text in enumerate(lines, start=1):
            if text.strip():
                yield parse_line(text, number)


def _session_items(session: Session) -> Iterator[RunItem]:
    for number, pane in enumerate(session.panes, start=1):
        item_id = pane.title or f"pane-{number}"
        try:
            request, turns = conversation.plan_run(pane)
        except ValueError as exc:
            yield RunItem(number, item_id, None, compare.settings_of(pane), f"pane {number}: {exc}")
            continue
        yield RunItem(number, item_id, request, compare.settings_of(pane), turns=turns)


def open_input(path: str | Path) -> tuple[Iterator[RunItem], int, Session | None]:
    """(items, how many there are, the session if the input is one). JSONL is read lazily."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            first = f.readline()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        head = json.loads(first) if first.strip() else None
    except json.JSONDecodeError:
        head = None
    if not (first.strip() == "{" or (isinstance(head, dict) and head.get("format") == "chorus-session")):
        with path.open("rb") as f:  # one request per line: count them (for the progress bar), keep none
            total = sum(1 for raw in f if raw.strip())
        return _jsonl_items(path), total, None
    try:
        session = Session.load(path)
    except (SessionFileError, UnicodeDecodeError) as exc:
        raise InputError(str(exc)) from exc
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return _session_items(session), len(session.panes), session
