"""Votes as data: JSONL and CSV export/import, merging two lists by vote id, and the votes of a session file.

- Export then import gives equal votes (CSV cells that a spreadsheet would run as a formula are escaped with a
  leading ' on export and unescaped on import, so the round trip is exact).
- `merge` keeps one vote per id. When two copies of an id differ, the one with the later time wins, then the
  greater canonical JSON, so merge(x, y) == merge(y, x) and merge(x, x) == merge(x). The result is sorted by
  (time, id), never by the order of its inputs.
- Files are written crash-safe (`app.session.store.write_atomic`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path

import msgspec

from app.files import write_atomic
from app.session.votes import Vote, VoteError, json_kind, vote_from_builtins, vote_to_builtins

FIELDS: tuple[str, ...] = Vote.__struct_fields__
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _vote(obj, where: str) -> Vote:
    """vote_from_builtins, with a lone surrogate in a field named as Vote itself names it (msgspec would raise
    an encoding error that names no field for some fields)."""
    if isinstance(obj, dict):
        for name, value in obj.items():
            if isinstance(value, str) and any("\ud800" <= ch <= "\udfff" for ch in value):
                raise VoteError(f"{where}: field `{name}`: text that cannot be encoded (a lone surrogate)")
    return vote_from_builtins(obj, where)


def to_jsonl(votes: Iterable[Vote]) -> str:
    return "".join(msgspec.json.encode(v).decode("utf-8") + "\n" for v in votes)


def from_jsonl(text: str) -> list[Vote]:
    """Votes from JSONL text (blank lines skipped); VoteError names the line and field."""
    votes = []
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines(): JSON text may hold U+0085, U+2028
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise VoteError(f"line {number}: not JSON ({e.msg})") from None
        except RecursionError:
            raise VoteError(f"line {number}: not JSON that can be read (nested too deeply)") from None
        votes.append(_vote(obj, f"line {number}"))
    return votes


def _escape(cell: str) -> str:
    return "'" + cell if cell.startswith(_FORMULA_START) or cell.startswith("'") else cell


def _unescape(cell: str) -> str:
    return cell[1:] if cell.startswith("'") and cell[1:].startswith((*_FORMULA_START, "'")) else cell


def to_csv(votes: Iterable[Vote]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS)  # "\r\n" rows: cells holding \r or \n get quoted
    writer.writeheader()
    for vote in votes:
        writer.writerow({k: _escape(str(v)) for k, v in vote_to_builtins(vote).items()})
    return out.getvalue()


def from_csv(text: str) -> list[Vote]:
    """Votes from CSV with a header row naming Vote's fields (any order; missing optional columns default)."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    names = reader.fieldnames or []
    unknown = [n for n in names if n not in FIELDS]
    if unknown:
        raise VoteError(f"header: unknown column(s) {', '.join(map(repr, unknown))}; known: {', '.join(FIELDS)}")
    votes = []
    for row in reader:
        where = f"row {reader.line_num}"
        if None in row:
            raise VoteError(f"{where}: more cells than the header has columns")
        cells = {k: _unescape(v) for k, v in row.items() if v is not None}
        votes.append(_vote(cells, where))
    return votes


def write_votes(path: str | Path, votes: Iterable[Vote]) -> None:
    """Write votes as .csv or .jsonl (by the file's suffix), crash-safe."""
    path = Path(path)
    write_atomic(path, to_csv(votes) if path.suffix.lower() == ".csv" else to_jsonl(votes))


def read_votes(path: str | Path) -> list[Vote]:
    """Votes from a .csv or .jsonl file, or from a session file's top-level "votes"."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise VoteError(f"cannot read it ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise VoteError(f"line {line}: not UTF-8 (byte 0x{data[e.start]:02x}): save the file as UTF-8") from None
    if path.suffix.lower() == ".csv":
        return from_csv(text)
    if path.name.lower().endswith(".jsonl"):
        return from_jsonl(text)
    try:
        document = json.loads(text)
    except ValueError as e:
        raise VoteError(f"not JSON ({e})") from None
    except RecursionError:
        raise VoteError("not JSON that can be read (nested too deeply)") from None
    return votes_from_session(document)


def votes_from_session(data) -> list[Vote]:
    """The top-level "votes" list of a session file's JSON (none when the key is absent)."""
    if not isinstance(data, dict):
        raise VoteError(f"a session file holds a JSON object, this one holds {json_kind(data)}")
    raw = data.get("votes", [])
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise VoteError(f'"votes" must be a list, got {json_kind(raw)}')
    return [_vote(obj, f"votes[{i}]") for i, obj in enumerate(raw)]


def merge(*vote_lists: Iterable[Vote]) -> list[Vote]:
    """One vote per id from all lists, sorted by (time, id); see the module docstring for conflicts."""
    best: dict[str, tuple[tuple, Vote]] = {}
    for votes in vote_lists:
        for vote in votes:
            rank = (vote.time, msgspec.json.encode(vote))
            if vote.id not in best or rank > best[vote.id][0]:
                best[vote.id] = (rank, vote)
    return sorted((v for _, v in best.values()), key=lambda v: (v.time, v.id))
