"""One blind pairwise vote, declared once (msgspec): the session file embeds it and the CSV/JSONL files carry it.
Errors name the field: msgspec's own as "- at `$.winner`", the checks below as "field `b`: ...".

Invariants a `Vote` keeps (checked on construction and on every decode, errors name the field):
- `a` and `b` are two different variants' stable keys (`variant_key` of their settings), in the order shown:
  `a` was on the left (or first), `b` on the right.
- `winner` is "a", "b", "tie" or "both_bad" (a tie where neither output was acceptable).
- `source` is "human", or "judge" with the judge's name in `judge`.
- `time` is timezone-aware and stored in UTC; every text field encodes as UTF-8 (no lone surrogates).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import uuid
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

Winner = Literal["a", "b", "tie", "both_bad"]
Source = Literal["human", "judge"]
WINNERS: tuple[str, ...] = ("a", "b", "tie", "both_bad")
KEY_LENGTH = 12  # hex digits of the settings hash: 48 bits, collisions need ~16 million variants

Key = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Text = Annotated[str, msgspec.Meta(max_length=1_000_000)]


class VoteError(ValueError):
    """A vote, or a file of votes, that cannot be used; the message names the field (and line or row)."""


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def new_id() -> str:
    return uuid.uuid4().hex


class Vote(msgspec.Struct, frozen=True, omit_defaults=False):
    """A blind vote between the outputs of variants `a` and `b` for one case (a prompt or test case)."""

    a: Key
    b: Key
    winner: Winner
    id: Key = msgspec.field(default_factory=new_id)
    a_label: Text = ""
    b_label: Text = ""
    source: Source = "human"
    judge: Text = ""
    case_id: Text = ""
    case_text: Text = ""
    note: Text = ""
    time: Annotated[dt.datetime, msgspec.Meta(tz=True)] = msgspec.field(default_factory=utc_now)

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if isinstance(value, str):
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError(f"field `{name}`: text that cannot be encoded (a lone surrogate)") from None
        if self.winner not in WINNERS:
            raise ValueError(f"field `winner`: {self.winner!r} is not one of {', '.join(WINNERS)}")
        if self.source not in ("human", "judge"):
            raise ValueError(f"field `source`: {self.source!r} is not human or judge")
        if self.a == self.b:
            raise ValueError(f"field `b`: a vote needs two different variants, got {self.a!r} twice")
        if self.source == "judge" and not self.judge.strip():
            raise ValueError("field `judge`: a judge's vote needs the judge's name")
        if self.source == "human" and self.judge:
            raise ValueError("field `judge`: a human vote has no judge name")
        if self.time.utcoffset() != dt.timedelta(0):
            msgspec.structs.force_setattr(self, "time", self.time.astimezone(dt.timezone.utc))

    @property
    def winner_key(self) -> str | None:
        """The key of the preferred variant, or None for a tie or "both bad"."""
        return self.a if self.winner == "a" else self.b if self.winner == "b" else None

    @property
    def pair(self) -> tuple[str, str]:
        """The two variants' keys, sorted: the same for both orders shown."""
        return (self.a, self.b) if self.a < self.b else (self.b, self.a)

    @property
    def case(self) -> str:
        """What identifies the case: its id, else its text ("" when neither was recorded)."""
        return self.case_id or self.case_text


def vote_from_builtins(obj: Any, where: str = "") -> Vote:
    """A Vote from plain JSON values (a dict); VoteError names the field, prefixed by `where`."""
    prefix = f"{where}: " if where else ""
    if not isinstance(obj, dict):
        raise VoteError(f"{prefix}a vote must be a JSON object, got {json_kind(obj)}")
    try:
        return msgspec.convert(obj, Vote)
    except (msgspec.ValidationError, ValueError) as e:
        raise VoteError(f"{prefix}{e}") from None


def json_kind(value: Any) -> str:
    """How JSON would name the type of a decoded value, for messages."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return {dict: "an object", list: "an array", str: "a string"}.get(type(value), "a number")


def vote_to_builtins(vote: Vote) -> dict:
    return msgspec.to_builtins(vote)


def canonical_json(settings: Any) -> str:
    """The settings as canonical JSON: keys sorted, None values dropped, numbers as floats (0 and 0.0 alike),
    tuples as lists. Dataclasses and msgspec structs are taken field by field."""
    return json.dumps(_canonical(msgspec.to_builtins(settings)), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        value = float(value)
        return value if math.isfinite(value) else repr(value)
    return str(value)


def variant_key(settings: Any) -> str:
    """A short stable key for a variant: a hash of the canonical JSON of everything that defines it (model,
    backend, prompt template, sampling...). Equal settings give equal keys across sessions and machines."""
    return hashlib.sha256(canonical_json(settings).encode("utf-8")).hexdigest()[:KEY_LENGTH]
