"""The comparison table: one row per pane with what differs, how it ended, its figures, its similarity to a
reference pane (or a version of it, or of each pane's own; in words, difflib's ratio, and in meaning, the
embedders' cosine), its word error rate against a reference text (each pane's own `reference`, or a pane's
reply: app/session/word_errors.py), its tool calls (as `name(arguments)`, the share that validate against the
pane's tools, and the F1 of the names called against the pane's expected calls, else against the reference pane's
calls) and its rating; sortable by any column and exported as CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

from app.session import compare, diff, tool_cards, versions
from app.session.state import PaneSpec
from app.session.word_errors import word_errors

COLUMNS = ("pane", "title", "model", "differs", "finish", "tokens", "thinking tok", "TTFT s", "answer s", "tok/s",
           "cached", "similarity", "meaning", "WER", "tool calls", "valid", "F1 vs expected", "rating")


TOOL_COLUMNS = ("tool calls", "valid", "F1 vs expected")
WER = "WER"


def columns(panes: list[PaneSpec], wer: bool = False) -> tuple[str, ...]:
    """The columns in the order a view shows them: the word error rate right after how each reply finished when
    it is measured (`wer`), then, when a pane has tools (or its reply calls), its tool columns, where they are
    seen without scrolling sideways; else as COLUMNS (also the CSV's order)."""
    tools = any(p.tools.strip() or p.result.tool_calls for p in panes)
    if not tools and not wer:
        return COLUMNS
    front = ((WER,) if wer else ()) + (TOOL_COLUMNS if tools else ())
    rest = [c for c in COLUMNS if c not in front]
    at = rest.index("finish") + 1
    return (*rest[:at], *front, *rest[at:])


OWN = "own"  # as the reference: each pane's own reply (with `version`: e.g. its previous version)
REFERENCE = "reference"  # as the word error rate's reference: each pane's own reference text (PaneSpec.reference)


def rows(panes: list[PaneSpec], reference: PaneSpec | str | None = None, version: int | str | None = None,
         meaning: Callable[[str, str], float | None] | None = None,
         model_of: Callable[[str], str] | None = None, wer: PaneSpec | str | None = None,
         similar: Callable[[str, str], float | None] = diff.similarity) -> list[dict]:
    """Values are numbers where they are numbers (None when unknown), so sorting is numeric. Similarity is to
    `reference`'s reply (OWN: each pane's own), its `version` as `versions.pick` reads it (None: the shown one,
    versions.PREVIOUS, or an index); None where that version does not exist. `meaning(a, b)` is the meaning
    similarity of two finished replies (None until known: app/session/meaning.py); a reply still running or
    empty has none. `model_of(backend)` names the model a pane runs on (BackendRegistry.model_of: the one rule
    of app.models.model_name); without it, or when it is not known, the model is None. The word error rate
    ("WER") is against `wer`: a pane's shown reply, REFERENCE (each pane's own reference text) or None (not
    measured); "WER detail" says how many words were wrong, or why there is no rate. `similar(a, b)` is the
    similarity in words (a view may answer None while it works it out elsewhere)."""
    diffs = compare.differences_in_groups(panes)
    out = []
    for pane, difference in zip(panes, diffs, strict=True):
        r = pane.result
        against = pane if reference == OWN else reference
        theirs = versions.pick(against, version) if against is not None else None
        out.append({"pane": pane.number, "title": pane.label,
                    "model": (model_of(pane.backend) or None) if model_of is not None else None,
                    "differs": compare.label(difference),
                    "finish": r.finish_reason or r.state.value, "tokens": r.generated_tokens,
                    "thinking tok": r.reasoning_tokens, "TTFT s": r.ttft_s, "answer s": r.answer_ttft_s,
                    "tok/s": r.decode_tps, "cached": r.cached_tokens,
                    "similarity": None if theirs is None else similar(theirs.text, r.text),
                    "meaning": _meaning(meaning, theirs, r),
                    **wer_columns(pane, wer),
                    **tool_columns(pane, against),
                    "rating": pane.rating, "note": pane.note, "id": pane.id})
    return out


def _meaning(meaning, a, b) -> float | None:
    """The meaning similarity of two results (PaneResult), when both are finished replies."""
    if meaning is None or a is None:
        return None
    if a.busy or b.busy or not a.text or not b.text:
        return None
    return meaning(a.text, b.text)


def wer_columns(pane: PaneSpec, against: PaneSpec | str | None) -> dict:
    """The pane's word error rate against `against` (as `rows` takes it) and what it counts, or why it has none."""
    if against is None:
        return {WER: None, "WER detail": ""}
    if against == REFERENCE:
        reference, name = pane.reference, "its reference text"
        if not reference.strip():
            return {WER: None, "WER detail": "no reference text"}
    else:
        reference, name = against.result.text, f"{against.label}'s reply"
    found = word_errors(reference, pane.result.text)
    return {WER: found.rate, "WER detail": f"against {name}: {found.describe()}"}


def tool_columns(pane: PaneSpec, reference: PaneSpec | None = None) -> dict:
    """The pane's calls, the share of them that validate (None without calls), and F1 vs what was expected."""
    calls = pane.result.tool_calls
    valid, total = tool_cards.validity(calls, pane.tools)
    expected = tool_cards.expected_names(pane.expected_calls)
    if not expected and reference is not None and reference is not pane:
        expected = {c["name"] for c in reference.result.tool_calls}
    return {"tool calls": "; ".join(tool_cards.call_line(c) for c in calls),
            "valid": valid / total if total else None,
            "F1 vs expected": tool_cards.f1({c["name"] for c in calls}, expected)}


def sort(table: list[dict], column: str, descending: bool = False) -> list[dict]:
    """Unknown values (None) go last whichever the direction."""
    known = [row for row in table if row[column] is not None]
    unknown = [row for row in table if row[column] is None]
    return sorted(known, key=lambda row: row[column], reverse=descending) + unknown


def to_csv(table: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[*COLUMNS, "note"], extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in table:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in [*COLUMNS, "note"]})
    return buffer.getvalue()
