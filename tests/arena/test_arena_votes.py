"""Votes as data: the schema and its messages, stable variant keys, CSV/JSONL round trips, merging by id, and
reading a session file's top-level "votes"."""

import datetime as dt
import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.arena import (
    Vote,
    VoteError,
    board,
    from_csv,
    from_jsonl,
    merge,
    read_votes,
    to_csv,
    to_jsonl,
    variant_key,
    votes_from_session,
    write_votes,
)
from app.engine import SamplingParams
from app.session.votes import vote_from_builtins
from tests.fixtures.arena_sim import simulate


def test_a_vote_round_trips_through_json_with_utc_time():
    vote = Vote("k1", "k2", "both_bad", a_label="T 0", b_label="T 1", case_id="q7", case_text="Name a bird.",
                note="both off-topic", time=dt.datetime(2025, 3, 1, 14, tzinfo=dt.timezone(dt.timedelta(hours=2))))
    assert vote.time == dt.datetime(2025, 3, 1, 12, tzinfo=dt.timezone.utc)
    data = msgspec.json.decode(msgspec.json.encode(vote))
    assert data["time"] == "2025-03-01T12:00:00Z" and data["winner"] == "both_bad"
    assert vote_from_builtins(data) == vote
    assert len(vote.id) == 32 and Vote("k1", "k2", "a").id != Vote("k1", "k2", "a").id
    assert vote.pair == ("k1", "k2") == Vote("k2", "k1", "a").pair
    assert (Vote("k1", "k2", "a").winner_key, Vote("k1", "k2", "b").winner_key, vote.winner_key) == ("k1", "k2", None)


@pytest.mark.parametrize(("change", "field"), [
    ({"winner": "c"}, "$.winner"), ({"winner": None}, "$.winner"), ({"a": 5}, "$.a"), ({"a": ""}, "$.a"),
    ({"b": "k1"}, "$.b"), ({"source": "robot"}, "$.source"), ({"source": "judge"}, "$.judge"),
    ({"judge": "J"}, "$.judge"), ({"time": "yesterday"}, "$.time"), ({"time": "2025-01-01T00:00:00"}, "$.time"),
    ({"note": "bad \udcff"}, "$.note"), ({"case_id": ["q"]}, "$.case_id"), ({"id": 7}, "$.id"),
])
def test_invalid_fields_are_refused_naming_the_field(change, field):
    data = {"a": "k1", "b": "k2", "winner": "a", **change}
    name = field.removeprefix("$.")
    with pytest.raises(VoteError, match=rf"votes\[3\]: (.*`\$\.{name}`|field `{name}`: )"):
        vote_from_builtins(data, "votes[3]")


def test_a_vote_must_be_an_object_with_its_required_fields():
    with pytest.raises(VoteError, match="must be a JSON object, got an array"):
        vote_from_builtins([1, 2])
    with pytest.raises(VoteError, match="missing required field `winner`"):
        vote_from_builtins({"a": "k1", "b": "k2"})


def test_variant_key_is_stable_and_depends_only_on_the_settings():
    base = {"model": "smollm2", "temperature": 0, "seed": 1, "stop": ("\n",), "system": None}
    same = {"stop": ["\n"], "seed": 1.0, "temperature": 0.0, "model": "smollm2"}
    assert variant_key(base) == variant_key(same)
    assert len(variant_key(base)) == 12 and variant_key(base) != variant_key({**base, "temperature": 0.7})
    assert variant_key(SamplingParams(temperature=0.5)) == variant_key(msgspec.to_builtins(SamplingParams(0.5)))
    assert variant_key({"x": True}) != variant_key({"x": 1})
    # the same on every machine and run: a fixed input, a fixed key
    assert variant_key({"model": "m", "temperature": 0.7}) == variant_key({"temperature": 0.7, "model": "m"})
    assert variant_key({}) == "44136fa355b3"


text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
votes_strategy = st.lists(st.builds(
    lambda a, b, w, note, case, src: Vote(f"k{a}", f"k{a + b}", w, note=note, case_text=case, source=src,
                                          judge="J" if src == "judge" else "", a_label=note[:5]),
    st.integers(0, 5), st.integers(1, 5), st.sampled_from(["a", "b", "tie", "both_bad"]), text, text,
    st.sampled_from(["human", "judge"])), max_size=12)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(votes_strategy)
def test_csv_and_jsonl_round_trip_exactly(votes):
    assert from_jsonl(to_jsonl(votes)) == votes
    assert from_csv(to_csv(votes)) == votes


def test_csv_escapes_formulas_and_round_trips_them():
    notes = ["=1+1", "+cmd", "-2", "@x", "'=already quoted", "'plain", "plain", "", "a,b\n\"c\""]
    votes = [Vote("k1", "k2", "a", note=n) for n in notes]
    text = to_csv(votes)
    assert "\n'=1+1" not in text and ",'=1+1," in text and ",''=already quoted," in text
    assert [v.note for v in from_csv(text)] == notes


def test_bad_lines_and_rows_are_named():
    good = to_jsonl([Vote("k1", "k2", "a")])
    with pytest.raises(VoteError, match=r"line 3: not JSON"):
        from_jsonl(good + "\n{nope\n")
    with pytest.raises(VoteError, match=r"line 2: Invalid enum value 'x' - at `\$.winner`"):
        from_jsonl(good + '{"a": "k1", "b": "k2", "winner": "x"}\n')
    with pytest.raises(VoteError, match="unknown column"):
        from_csv("a,b,winner,colour\nk1,k2,a,red\n")
    with pytest.raises(VoteError, match=r"row 3: .*\$.winner"):
        from_csv("a,b,winner\nk1,k2,a\nk1,k2,z\n")


def test_merge_by_id_is_idempotent_and_commutative():
    mine = simulate([0.0, 0.5, 1.0], 4, seed=1)
    theirs = simulate([0.0, 0.5, 1.0], 4, seed=2)
    shared = mine[:5]
    assert merge(mine, mine) == merge(mine) == sorted(mine, key=lambda v: (v.time, v.id))
    assert merge(mine, theirs + shared) == merge(theirs + shared, mine)
    assert len(merge(mine, theirs + shared)) == len(mine) + len(theirs)
    edited = msgspec.structs.replace(mine[0], note="changed my mind", time=mine[0].time + dt.timedelta(hours=1))
    assert merge(mine, [edited]) == merge([edited], mine)
    assert [v for v in merge(mine, [edited]) if v.id == edited.id] == [edited]  # the later copy wins


def test_export_then_merge_gives_the_same_leaderboard(tmp_path):
    votes = simulate([0.0, 0.4, 1.1], 10, seed=7) + simulate([0.0, 0.4, 1.1], 3, seed=8, source="judge")
    write_votes(tmp_path / "votes.csv", votes[:40])
    write_votes(tmp_path / "votes.jsonl", votes[25:])
    merged = merge(read_votes(tmp_path / "votes.csv"), read_votes(tmp_path / "votes.jsonl"))
    assert sorted(merged, key=lambda v: v.id) == sorted(votes, key=lambda v: v.id)
    before, after = board(votes, seed=3), board(merged, seed=3)
    assert after.standings == before.standings and after.sources == before.sources


def test_votes_of_a_session_file(tmp_path):
    votes = [Vote("k1", "k2", "a"), Vote("k2", "k3", "tie")]
    session = {"format": "chorus-session", "version": 2, "panes": [], "votes": msgspec.to_builtins(votes)}
    assert votes_from_session(session) == votes
    assert votes_from_session({"format": "chorus-session", "panes": []}) == []
    path = tmp_path / "s.chorus.json"
    path.write_text(json.dumps(session))
    assert read_votes(path) == votes
    with pytest.raises(VoteError, match=r'"votes" must be a list, got an object'):
        votes_from_session({"votes": {}})
    with pytest.raises(VoteError, match=r"votes\[1\]: Object missing required field `b`"):
        votes_from_session({"votes": [msgspec.to_builtins(votes[0]), {"a": "k1", "winner": "a"}]})
    with pytest.raises(VoteError, match="holds a JSON object, this one holds an array"):
        votes_from_session([])


def test_a_session_schema_embeds_votes_and_names_the_vote_and_field():
    class SessionFile(msgspec.Struct):
        votes: list[Vote] = []

    votes = [Vote("k1", "k2", "a"), Vote("k2", "k3", "tie", source="judge", judge="J")]
    assert msgspec.json.decode(msgspec.json.encode(SessionFile(votes)), type=SessionFile).votes == votes
    bad = b'{"votes": [{"a": "k1", "b": "k2", "winner": "a"}, {"a": "k1", "b": "k1", "winner": "a"}]}'
    with pytest.raises(msgspec.ValidationError, match=r"field `b`: .* - at `\$.votes\[1\]`"):
        msgspec.json.decode(bad, type=SessionFile)
    with pytest.raises(msgspec.ValidationError, match=r"at `\$.votes\[0\].winner`"):
        msgspec.json.decode(b'{"votes": [{"a": "k1", "b": "k2", "winner": "A"}]}', type=SessionFile)
