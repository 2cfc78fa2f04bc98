"""Votes files under fuzzing (app/arena/files.py read_votes): every field of a vote in a .jsonl, a .csv and a
session file set to every wrong type, lone surrogates included, plus files that are not UTF-8. Each file
either reads (and its votes write back and read again the same) or is refused with VoteError naming the line or
row and the field — never another exception. The examples are counted and the count checked."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.arena import Vote, VoteError, read_votes, to_csv, write_votes
from app.arena.files import FIELDS, from_csv
from tests.evaluate.test_config_fuzz import damaged

VOTE = {"a": "k1", "b": "k2", "winner": "a", "id": "v1", "a_label": "A", "b_label": "B", "source": "judge",
        "judge": "local", "case_id": "c1", "case_text": "Say hi", "note": "n", "time": "2026-01-01T00:00:00Z"}
COUNTS: dict[str, int] = {}
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def check(path, field: str) -> str:
    try:
        votes = read_votes(path)
    except VoteError as exc:
        message = str(exc)
        assert message.startswith(("line ", "row ", "votes[", "header", "not JSON", "a session file")), message
        # the damaged field, or the field a rule across fields names (a human vote with a judge), or the file's shape
        assert field in message or "field `" in message or any(
            part in message for part in ("not JSON", "not UTF-8", "header", "a vote must be", "more cells")), \
            (field, message)
        return "refused"
    out = path.with_name("back.csv" if path.suffix == ".csv" else "back.jsonl")
    write_votes(out, votes)
    assert read_votes(out) == votes
    return "read"


def count(kind: str, outcome: str) -> None:
    COUNTS[f"{kind} {outcome}"] = COUNTS.get(f"{kind} {outcome}", 0) + 1


def test_every_field_of_a_votes_jsonl_and_session_file_set_to_every_wrong_type(tmp_path):
    @FUZZ
    @given(damaged(VOTE), st.booleans())
    def one(case, as_session):
        vote, path = case
        if as_session:
            target = tmp_path / "s.chorus.json"
            target.write_text(json.dumps({"format": "chorus-session", "votes": [VOTE, vote]}), encoding="utf-8")
        else:
            target = tmp_path / "votes.jsonl"
            target.write_text(json.dumps(VOTE) + "\n" + json.dumps(vote) + "\n", encoding="utf-8")
        count("session" if as_session else "jsonl", check(target, str(path[0])))

    one()
    total = sum(COUNTS.values())
    print(f"votes fuzz (jsonl + session): {total} files, {COUNTS}")
    assert total >= 250 and any("read" in k for k in COUNTS) and any("refused" in k for k in COUNTS)


CELLS = st.sampled_from(["", " ", "x", "a", "b", "tie", "both-bad", "human", "judge", "2026-01-01T00:00:00Z",
                         "yesterday", "=1+1", "'=1", "\udcff", "é", "line\nbreak", '"', "x" * 2000])


def test_every_cell_of_a_votes_csv_set_to_every_wrong_value(tmp_path):
    good = from_csv(to_csv([Vote(a="k1", b="k2", winner="a")]))
    assert len(good) == 1

    @FUZZ
    @given(st.sampled_from(FIELDS), CELLS)
    def one(field, cell):
        row = {**VOTE, field: cell}
        text = to_csv([]).splitlines()[0] + "\n" + ",".join(
            '"' + str(row[name]).replace('"', '""') + '"' for name in FIELDS) + "\n"
        target = tmp_path / "votes.csv"
        target.write_bytes(text.encode("utf-8", "surrogatepass"))  # a lone surrogate: bytes that are not UTF-8
        count("csv", check(target, field))

    one()
    read, refused = COUNTS.get("csv read", 0), COUNTS.get("csv refused", 0)
    print(f"votes fuzz (csv): {read + refused} files, {read} read, {refused} refused")
    assert read + refused >= 150 and read and refused


def test_a_votes_file_that_is_not_utf8_names_line_and_byte(tmp_path):
    target = tmp_path / "votes.jsonl"
    target.write_bytes(json.dumps(VOTE).encode() + b"\n" + json.dumps({**VOTE, "note": "caf"}).encode()[:-2]
                       + b"\xe9\"}\n")
    try:
        read_votes(target)
    except VoteError as exc:
        assert "line 2" in str(exc) and "0xe9" in str(exc), str(exc)
    else:
        raise AssertionError("a file that is not UTF-8 was read")
