"""The session file format under fuzzing: every file either loads and is usable (exported, saved, loaded back
the same) or is refused with SessionFileError naming what is wrong — never another exception. The same for
the autosave, which must never stop the app from starting.

Hypothesis runs derandomized in CI (tests/conftest.py's "ci" profile), so a new counterexample cannot fail an
unrelated change; `HYPOTHESIS_PROFILE=dev` explores with fresh randomness.
"""

import json

from hypothesis import given
from hypothesis import strategies as st

from app.session import Session, SessionFileError, autosave, export

WRONG = st.sampled_from([None, "text", 5, -3, 2.5, 1e309, [], [1, "x"], {}, {"a": 1}, True, "\udcff",
                         "x" * 3000])
TEXT = st.text(max_size=40)
TURN = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": TEXT})
SAMPLING = st.fixed_dictionaries({}, optional={
    "temperature": st.floats(0, 2), "top_k": st.integers(0, 1000), "top_p": st.floats(0.01, 1),
    "min_p": st.floats(0, 0.99), "repeat_penalty": st.floats(0.5, 2), "seed": st.one_of(st.none(),
                                                                                         st.integers(0, 2**32 - 1))})
RESULT = st.fixed_dictionaries({}, optional={
    "state": st.sampled_from(["idle", "queued", "prefilling", "generating", "done", "cancelled", "error",
                              "interrupted"]),
    "text": TEXT, "token_ids": st.lists(st.integers(0, 50000), max_size=5), "finish_reason": st.sampled_from(
        [None, "stop", "length", "cancelled", "error"]), "generated_tokens": st.integers(0, 100),
    "ttft_s": st.one_of(st.none(), st.floats(0, 10)), "reply_prefix": TEXT,
    "token_logprobs": st.one_of(st.none(), st.lists(st.fixed_dictionaries(
        {"token_id": st.integers(0, 9), "text": TEXT, "logprob": st.floats(-20, 0),
         "top": st.lists(st.tuples(st.integers(0, 9), TEXT, st.floats(-20, 0)), max_size=2)}), max_size=3))})
PANE = st.fixed_dictionaries({}, optional={
    "id": st.text("0123456789abcdef", min_size=1, max_size=12), "title": TEXT, "system": TEXT,
    "turns": st.lists(TURN, max_size=4), "draft": TEXT, "editing": st.one_of(st.none(), st.integers(-1, 6)),
    "sampling": SAMPLING, "max_tokens": st.integers(1, 40000), "stop": st.lists(TEXT, max_size=3),
    "backend": TEXT, "show_probabilities": st.booleans(),
    "output_format": st.fixed_dictionaries({"kind": st.sampled_from(["text", "json", "schema", "grammar"]),
                                            "text": st.sampled_from(["", "{}", '{"type": "object"}', "root ::= x",
                                                                     "{bad"])}),
    "reply_prefix": TEXT, "group": st.one_of(st.none(), TEXT), "rating": st.one_of(st.none(), st.integers(-5, 99)),
    "note": TEXT, "result": RESULT})
FILE = st.fixed_dictionaries(
    {"format": st.just("chorus-session"), "version": st.sampled_from([1, 2])},
    optional={"panes": st.lists(PANE, max_size=4), "next_number": st.integers(-2, 50),
              "view": st.fixed_dictionaries({}, optional={"columns": st.integers(-3, 9),
                                                          "column_group": st.one_of(st.none(), TEXT)})})


@st.composite
def damaged(draw):
    """A plausible session file with one value (anywhere in it) replaced by a value of the wrong type."""
    data = draw(FILE)
    paths = list(_paths(data))
    if paths:
        path = draw(st.sampled_from(paths))
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = draw(WRONG)
    return data


def _paths(value, prefix=()):
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if prefix + (key,) != ("format",):
            yield prefix + (key,)
        yield from _paths(item, prefix + (key,))


def check_file(tmp_path, text: str) -> str:
    """Load, then use; returns "loaded" or "refused"."""
    path = tmp_path / "fuzz.chorus.json"
    path.write_text(text, encoding="utf-8")
    try:
        session = Session.load(path)
    except SessionFileError as exc:
        assert str(exc)  # refused, with a reason
        return "refused"
    session.to_markdown()
    export.to_jsonl(session)
    again = tmp_path / "again.chorus.json"
    session.save(again)
    assert Session.load(again) == session
    numbers = [p.number for p in session.panes]
    assert len(set(numbers)) == len(numbers) and all(n < session.next_number for n in numbers)
    return "loaded"


@given(FILE)
def test_plausible_files_load_and_stay_usable(tmp_path_factory, data):
    check_file(tmp_path_factory.mktemp("f"), json.dumps(data))


@given(damaged())
def test_wrong_types_anywhere_load_usable_or_are_refused(tmp_path_factory, data):
    check_file(tmp_path_factory.mktemp("f"), json.dumps(data))


@given(damaged())
def test_a_damaged_autosave_never_stops_the_app(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("a")
    path = folder / autosave.AUTOSAVE_NAME
    path.write_text(json.dumps(data), encoding="utf-8")
    restored = autosave.restore(path)
    if restored.session is None:
        assert restored.message and list(folder.glob(f"{autosave.AUTOSAVE_NAME}.unreadable-*"))


def test_the_reported_crashes_are_refused_or_loaded(tmp_path):
    """The cases found on the old loader: each escaped as TypeError, AttributeError or UnicodeEncodeError."""
    base = {"format": "chorus-session", "version": 1}
    refused = [{**base, "panes": None}, {**base, "panes": [{"system": 5}]}, {**base, "panes": [{"title": "\udcff"}]},
               {**base, "view": {"columns": "x"}}]
    for data in refused:
        assert check_file(tmp_path, json.dumps(data)) == "refused", data
    assert check_file(tmp_path, json.dumps({**base, "view": {"columns": None}})) == "loaded"
    assert check_file(tmp_path, json.dumps({**base, "panes": [{"rating": 99}]})) == "loaded"  # clamped to 5
