"""Comparing two runs of an evaluation (app/evaluate/run_compare.py, `eval-compare`): the exact McNemar test on
known tables, the pairing of cells, and the command's exit codes on results files written by hand in promptfoo's
v3 layout."""

import json
from pathlib import Path

import pytest
from scipy.stats import binomtest

from app.__main__ import main
from app.evaluate.run_compare import ResultsFileError, compare, load_run, mcnemar_exact


@pytest.mark.parametrize(("worse", "better", "p"), [
    (0, 0, 1.0),                 # no discordant pair: the test cannot tell
    (3, 3, 1.0),
    (5, 0, 2 / 2 ** 5),          # all five one way: 2 × 0.5^5 = 0.0625, not below 0.05
    (0, 6, 2 / 2 ** 6),          # 0.03125
    (1, 9, 2 * 11 / 2 ** 10),    # 2 × P(X ≤ 1), X ~ B(10, ½) = 2 × (1 + 10) / 1024
    (2, 8, 2 * 56 / 2 ** 10),    # 2 × (1 + 10 + 45) / 1024 = 0.109375
])
def test_mcnemar_exact_matches_hand_computed_tables(worse, better, p):
    assert mcnemar_exact(worse, better) == pytest.approx(p)
    assert mcnemar_exact(better, worse) == pytest.approx(p)  # two-sided: symmetric


def test_mcnemar_exact_is_scipys_binomial_test_on_the_discordant_pairs():
    for worse, better in [(4, 17), (12, 3), (30, 41)]:
        assert mcnemar_exact(worse, better) == binomtest(better, worse + better, 0.5).pvalue


def cell(variant: int, test: int, success: bool, vars_: dict, **extra) -> dict:
    return {"promptIdx": variant, "testIdx": test, "success": success, "vars": vars_, "score": float(success),
            "provider": {"id": "openai:chat:x", "label": ["greedy", "warm"][variant]},
            "prompt": {"raw": "Q {{n}}", "label": "Q {{n}}"}, "failureReason": 0 if success else 1,
            "gradingResult": {"pass": success, "score": float(success), "reason": "ok" if success else "wrong"},
            **extra}


def results_file(path: Path, cells: list[dict], prompts: int = 2) -> Path:
    columns = [{"raw": "Q {{n}}", "label": "Q {{n}}", "provider": ["greedy", "warm"][i]} for i in range(prompts)]
    path.write_text(json.dumps({"evalId": "x", "results": {"version": 3, "timestamp": "2026-11-26T00:00:00Z",
                                                            "prompts": columns, "results": cells}}))
    return path


def grid(passes: dict[int, list[bool]]) -> list[dict]:
    """Cells for each variant: passes[v][t] is test t's verdict."""
    return [cell(v, t, ok, {"n": t}) for v, column in passes.items() for t, ok in enumerate(column)]


def test_six_cells_that_all_flipped_to_fail_are_significant_and_exit_100(tmp_path, capsys):
    old = results_file(tmp_path / "old.json", grid({0: [True] * 8, 1: [True] * 8}))
    new = results_file(tmp_path / "new.json", grid({0: [False] * 6 + [True] * 2, 1: [True] * 8}))
    assert main(["eval-compare", str(old), str(new)]) == 100
    out, err = capsys.readouterr()
    greedy, warm = (next(line for line in out.splitlines() if line.startswith(f"[{v}]")) for v in ("greedy", "warm"))
    assert "8/8 100%" in greedy and "2/8 25%" in greedy and "-75 pts" in greedy and "significantly worse" in greedy
    assert "no detectable change" in warm
    assert out.count("pass → fail — wrong") == 6 and "[greedy] Q {{n}} · n=0: pass → fail" in out
    assert "significantly worse: [greedy] Q {{n}}" in err


def test_five_flips_are_not_enough_at_005_so_it_says_no_detectable_change_and_exits_0(tmp_path, capsys):
    old = results_file(tmp_path / "old.json", grid({0: [True] * 5 + [False] * 3}), prompts=1)
    new = results_file(tmp_path / "new.json", grid({0: [False] * 8}), prompts=1)
    assert main(["eval-compare", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "0.0625" in out and "no detectable change" in out
    assert main(["eval-compare", str(old), str(new), "--alpha", "0.1"]) == 100  # a looser gate catches it


def test_an_improvement_is_significant_but_passes_the_gate(tmp_path, capsys):
    old = results_file(tmp_path / "old.json", grid({0: [False] * 7}), prompts=1)
    new = results_file(tmp_path / "new.json", grid({0: [True] * 7}), prompts=1)
    assert main(["eval-compare", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "significantly better" in out and out.count("fail → pass") == 7


def test_cells_pair_by_variant_and_case_not_by_position(tmp_path):
    """The new run lists its cases in another order, adds one, and repeats one: repeats pair in order, the new
    case and the variant the old run lacks are left out and counted."""
    old = results_file(tmp_path / "old.json", [cell(0, 0, True, {"n": "a"}), cell(0, 1, False, {"n": "b"}),
                                               cell(0, 2, True, {"n": "a"})])  # case a twice (a repeat)
    new = results_file(tmp_path / "new.json", [cell(0, 0, True, {"n": "b"}), cell(0, 1, True, {"n": "a"}),
                                               cell(0, 2, False, {"n": "a"}), cell(0, 3, True, {"n": "c"}),
                                               cell(1, 0, True, {"n": "a"})])
    result = compare(load_run(old), load_run(new))
    (greedy,) = result.variants
    assert greedy.paired == 3 and (greedy.old_passed, greedy.new_passed) == (2, 2)
    assert [(o.label, o.passed, n.passed) for o, n in greedy.worse] == [("n=a (repeat 2)", True, False)]
    assert [(o.label, n.passed) for o, n in greedy.better] == [("n=b", True)]
    assert (result.only_old, result.only_new) == (0, 2)


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read it"),
    ("{not json", "not JSON"),
    (json.dumps({"results": {"version": 2, "table": {}}}), "not a results file in promptfoo's v3 layout"),
    (json.dumps({"results": {"results": [{"promptIdx": "0", "testIdx": 0, "success": True}]}}), "promptIdx"),
])
def test_an_unusable_file_exits_2_naming_it(tmp_path, capsys, content, message):
    good = results_file(tmp_path / "good.json", grid({0: [True]}), prompts=1)
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    with pytest.raises(ResultsFileError, match=message):
        load_run(bad)
    assert main(["eval-compare", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and message in err and "Traceback" not in err


def test_a_pair_with_an_unreliable_judges_verdict_is_counted_apart(tmp_path, capsys):
    """Chorus marks a verdict resting on a judge that failed calibration (`unreliableVerdict`): neither a pass
    nor a fail, so its pair is not compared."""
    old = results_file(tmp_path / "old.json", grid({0: [True] * 6}), prompts=1)
    cells = grid({0: [False] * 6})
    for c in cells[:2]:
        c["unreliableVerdict"] = True
    new = results_file(tmp_path / "new.json", cells, prompts=1)
    (greedy,) = compare(load_run(old), load_run(new)).variants
    assert (greedy.paired, greedy.unreliable, len(greedy.worse)) == (4, 2, 4)
    assert main(["eval-compare", str(old), str(new)]) == 0  # 4 of 4 flips: p = 0.125
    assert "2 pair(s) with a verdict by a judge that failed its calibration" in capsys.readouterr().out
