"""The evaluation inside the session model and its file: cells are evented parts of the session (autosave hears
them through `session.events.all`), each holds its generation's PaneResult, the file declares the evaluation with
msgspec, files written before still load, and an unchanged evaluation is not encoded again."""

import json
from pathlib import Path

import msgspec
import pytest

from app.engine.sampling.logprobs import TokenLogprob
from app.evaluate import read_config
from app.session import PaneResult, RunState, Session, SessionFileError, evaluation_file, store
from app.session.votes import Vote

BEFORE = Path(__file__).parent / "data" / "evaluation_before_cell_results.chorus.json"
ECHO = {"prompts": ["Say {{word}}", "Shout {{word}}"], "providers": ["echo"],
        "tests": [{"vars": {"word": w}, "assert": [{"type": "contains", "value": "a"}]} for w in ("a", "b")]}


def echo_evaluation(tmp_path):
    return read_config(ECHO, tmp_path).evaluation()


def test_a_session_file_written_before_cells_held_their_result_still_loads():
    session = Session.load(BEFORE)
    evaluation = session.evaluation
    assert (evaluation.description, evaluation.duration_s, len(evaluation.cells)) == ("old format", 3.5, 4)
    assert [(c.status, c.output) for c in evaluation.cells] == [
        ("pass", "Capital of France? Paris"), ("fail", "Lyon"), ("error", "Lima"), ("pending", "Li")]
    passed, failed, error, cut_short = evaluation.cells
    assert passed.grading.named_scores == {"exact": 1.0} and passed.grading.component_results[1].judge[0].reply
    assert failed.result.state == RunState.DONE and failed.finish_reason == "stop"
    assert (failed.prompt_tokens, failed.generated_tokens, failed.cached_tokens) == (12, 2, 4)
    assert (failed.ttft_s, failed.decode_tps, failed.latency_ms) == (0.05, 40.0, 120.0)
    assert error.error.startswith("Latency assertion") and error.grading is None
    assert cut_short.result.state == RunState.INTERRUPTED  # it was running: kept, and run again on a resume
    assert evaluation.unfinished() == [cut_short]
    case = evaluation.cases[0]
    assert case.assertions[1].assertions[0].threshold == 5000 and case.assertions[2].rubric_prompt
    assert evaluation.cases[1].provider_output == "Lima" and evaluation.cases[0].vars["extra"] == {"k": [1, 2]}
    variant = evaluation.variants[1]
    assert (variant.max_tokens, variant.stop, variant.sampling) == (64, ["\n"], {"temperature": 0.0, "seed": 3})
    assert session.votes[0].note == "clearer" and session.panes[0].result.token_logprobs[0].top
    again = Session(**{k: v for k, v in store.decode(store.encode(session)).items() if k != "autosave"})
    assert evaluation_file.encode(again.evaluation) == evaluation_file.encode(evaluation)


def test_cells_and_votes_reach_the_session_s_events_which_autosave_hears(tmp_path):
    session = Session()
    heard = []
    session.events.all.connect(lambda info: heard.append(tuple(str(step) for step in info.path)))
    session.evaluation = evaluation = echo_evaluation(tmp_path)
    cell = evaluation.cell(1, 0)
    cell.status = "running"
    cell.result.stream(text="Say", state=RunState.GENERATING)
    cell.result = PaneResult(state=RunState.DONE, text="Say b")
    session.votes = [Vote(a="k1", b="k2", winner="a")]
    index = str(evaluation.cells.index(cell))
    assert heard[0] == (".evaluation",) and heard[-1] == (".votes",)
    assert (".evaluation", ".cells", f"[{index}]", ".status") in heard
    assert (".evaluation", ".cells", f"[{index}]", ".result", ".text") in heard
    assert (".evaluation", ".cells", f"[{index}]", ".result") in heard
    session.evaluation = None  # a replaced evaluation no longer reaches the session
    heard.clear()
    cell.status = "pass"
    assert heard == []


def test_a_cell_holds_its_result_and_the_file_keeps_its_text_and_figures_not_its_tokens(tmp_path):
    evaluation = echo_evaluation(tmp_path)
    cell = evaluation.cell(0, 1)
    cell.status, cell.latency_ms = "fail", 80.0
    entries = [TokenLogprob(5, "Sh", -0.5, ((5, "Sh", -0.5), (6, "Sa", -1.5))), TokenLogprob(7, "out", -0.1, ())]
    cell.result = PaneResult(state=RunState.DONE, text="Shout", finish_reason="length", generated_tokens=2,
                             token_ids=[5, 7], token_logprobs=entries)
    assert cell.output == "Shout" and cell.logprobs == [-0.5, -0.1] and cell.finish_reason == "length"
    data = json.loads(evaluation_file.encode(evaluation))
    saved = data["cells"][evaluation.cells.index(cell)]
    assert "output" not in saved and saved["result"]["text"] == "Shout" and saved["result"]["generated_tokens"] == 2
    assert "token_ids" not in saved["result"] and "token_logprobs" not in saved["result"]  # in memory only
    back = evaluation_file.decode(json.dumps(data)).cell(0, 1)
    assert back.output == "Shout" and back.finish_reason == "length" and back.latency_ms == 80.0
    assert back.logprobs is None and back.result.token_ids == []


def test_an_unchanged_evaluation_is_not_encoded_again_and_a_changed_cell_is(tmp_path):
    evaluation = echo_evaluation(tmp_path)
    first = evaluation_file.evaluation_to_file(evaluation)
    again = evaluation_file.evaluation_to_file(evaluation)
    assert again.cases is first.cases and again.variants is first.variants
    assert all(a is b for a, b in zip(again.cells, first.cells, strict=True))  # the same encoded bytes, reused
    evaluation.cell(1, 1).result.stream(text="Shout")  # an event of one cell's result
    changed = evaluation_file.evaluation_to_file(evaluation)
    moved = [i for i, (a, b) in enumerate(zip(changed.cells, first.cells, strict=True)) if a is not b]
    assert moved == [evaluation.cells.index(evaluation.cell(1, 1))]
    assert b'"text":"Shout"' in bytes(changed.cells[moved[0]])
    evaluation.variants = [*evaluation.variants]  # replaced: encoded again
    assert evaluation_file.evaluation_to_file(evaluation).variants is not first.variants


@pytest.mark.parametrize("change, message", [
    (lambda d: d["cells"][0].update(status="weird"), "evaluation, cell 1, status: 'weird' is not one of"),
    (lambda d: d["cells"][1]["result"].update(text=5), "evaluation, cell 2, result, text: must be text"),
    (lambda d: d["cases"][0]["assert"][0].update(colour="blue"), "unknown field `colour`"),
    (lambda d: d["variants"][0].update(max_tokens="many"), "evaluation, variant 1, max_tokens: must be a whole"),
    (lambda d: d["cells"].pop(), "evaluation: the cells do not cover"),
    (lambda d: d.update(version=9), "evaluation: it was saved by a newer Chorus"),
])
def test_a_wrong_evaluation_in_a_session_file_is_refused_naming_the_field(tmp_path, change, message):
    session = Session(evaluation=echo_evaluation(tmp_path))
    data = json.loads(store.encode(session))
    change(data["evaluation"])
    with pytest.raises(SessionFileError, match=message):
        store.decode(json.dumps(data))
    with pytest.raises((msgspec.ValidationError, ValueError)):
        evaluation_file.decode(json.dumps(data["evaluation"]))


def leaves(value, path=()):
    """Every place in plain JSON data: (path, value), containers included."""
    yield path, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from leaves(item, (*path, key))


def test_every_field_of_a_saved_evaluation_set_to_a_wrong_type_loads_or_is_refused_by_name():
    """Each place in the fixture's evaluation set to each wrong type: the file loads (the value fits, or is one
    that any type accepts), or SessionFileError names where; nothing else escapes."""
    data = json.loads(BEFORE.read_text(encoding="utf-8"))
    session = Session(**{k: v for k, v in store.decode(json.dumps(data)).items() if k != "autosave"})
    data["evaluation"] = json.loads(evaluation_file.encode(session.evaluation))  # and today's format
    wrong = [5, -1, 2.5, "x", None, True, [], {}, [1, "a"], {"k": 1}, "\udcff"]
    places = [path for path, _ in leaves(data["evaluation"])]
    loaded = refused = 0
    for path in places:
        for value in wrong:
            changed = json.loads(json.dumps(data))
            target = changed["evaluation"]
            for key in path[:-1]:
                target = target[key]
            if path:
                target[path[-1]] = value
            else:
                changed["evaluation"] = value
            try:
                store.decode(json.dumps(changed))
                loaded += 1
            except SessionFileError as exc:
                refused += 1
                assert str(exc).startswith(("evaluation", "it is not valid JSON")), exc
    assert len(places) > 150 and refused > loaded > 0
