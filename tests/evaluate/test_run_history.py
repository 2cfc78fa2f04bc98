"""An evaluation keeps each run: Run again keeps the run its cells hold (matrix, settings, verdicts), the runs
survive save and load, and two runs compare cell by cell with the exact McNemar test (real model, greedy)."""

from app.evaluate import read_config, run_history
from app.evaluate.runner import EvaluationRunner
from app.session import Session, SessionRunner, eval_runs
from app.session.eval_runs import EvalRun, RunCell
from tests.conftest import EngineSubmitter

TOPICS = ("rain", "bread", "the sea", "cats", "maps", "bells")


def evaluation_for(model_path, tmp_path, assertion: dict):
    config = {"prompts": [{"raw": "One word about {{topic}}:"}],
              "providers": [{"id": f"file://{model_path}", "label": "greedy",
                             "config": {"temperature": 0, "max_tokens": 6}}],
              "tests": [{"vars": {"topic": t}, "assert": [assertion]} for t in TOPICS]}
    return read_config(config, tmp_path).evaluation()


def run(evaluation, runner, tmp_path) -> None:
    driver = EvaluationRunner(evaluation, runner, lambda target: "local", tmp_path)
    driver.start()
    assert driver.drive(timeout=300)


def test_each_run_is_kept_and_two_runs_show_their_flips(make_engine, model_path, tmp_path):
    engine = make_engine(n_slots=4)
    runner = SessionRunner(EngineSubmitter(engine))
    engine.subscribe(runner.feed)
    before = evaluation_for(model_path, tmp_path, {"type": "contains", "value": "zzqx"})  # every cell fails
    before.source = str(tmp_path / "config.yaml")
    run(before, runner, tmp_path)
    assert {c.status for c in before.cells} == {"fail"}
    outputs = [c.output for c in before.cells]

    after = evaluation_for(model_path, tmp_path, {"type": "not-contains", "value": "zzqx"})  # the config, edited
    after.source = before.source
    eval_runs.carry_over(before, after)  # opened again: the run before is kept
    run(after, runner, tmp_path)
    assert len(after.runs) == 1 and [c.output for c in after.runs[0].cells] == outputs
    assert after.runs[0].cases[0]["assert"][0]["type"] == "contains"  # its matrix as it was
    assert after.runs[0].variants[0]["sampling"]["temperature"] == 0  # and its settings

    changed = run_history.compare_runs(after, 0, 1)
    [variant] = changed.variants
    assert (len(variant.better), len(variant.worse), variant.old_passed, variant.new_passed) == (6, 0, 0, 6)
    assert abs(variant.p_value - 2 * 0.5 ** 6) < 1e-12  # two-sided exact: 2 · (1/2)^6
    assert run_history.verdict(variant, changed.alpha).startswith("Significantly better")

    run_history.keep_and_restart(after)  # Run again, nothing changed: greedy gives the same verdicts
    assert all(c.status == "pending" and not c.output for c in after.cells)
    run(after, runner, tmp_path)
    same = run_history.compare_runs(after, 1, 2)
    assert not run_history.flips(same) and run_history.verdict(same.variants[0], same.alpha) == "No detectable change"

    Session(evaluation=after).save(tmp_path / "s.chorus.json")
    back = Session.load(tmp_path / "s.chorus.json").evaluation
    assert [[c.status for c in r.cells] for r in back.runs] == [["fail"] * 6, ["pass"] * 6]
    assert len(run_history.flips(run_history.compare_runs(back, 0, 2))) == 6


def hand_made(statuses: list[str]) -> EvalRun:
    return EvalRun(cases=[{"vars": {"i": i}} for i in range(len(statuses))],
                   variants=[{"label": "model", "prompt": {"label": "p"}}],
                   cells=[RunCell(i, 0, 0, s) for i, s in enumerate(statuses)])


def test_mcnemar_on_hand_checked_tables():
    """7 fail → pass against 1 pass → fail: p = 2 · P(X ≥ 7 | n 8) = 2 · 9/256 = 0.0703, cannot tell at 0.05;
    8 against 0: 2/256 = 0.0078, significantly better."""
    old = hand_made(["fail"] * 7 + ["pass"] + ["fail"] * 2)
    new = hand_made(["pass"] * 7 + ["fail"] + ["fail"] * 2)
    [v] = run_history.compare(run_history.as_run(old, "old"), run_history.as_run(new, "new")).variants
    assert (len(v.better), len(v.worse)) == (7, 1) and abs(v.p_value - 18 / 256) < 1e-12
    assert run_history.verdict(v, 0.05) == "No detectable change"
    assert run_history.rate_change(v) == "1/10 10% → 7/10 70% (+60 pts)"
    [v] = run_history.compare(run_history.as_run(hand_made(["fail"] * 8), "old"),
                              run_history.as_run(hand_made(["pass"] * 8), "new")).variants
    assert abs(v.p_value - 2 / 256) < 1e-12 and run_history.verdict(v, 0.05).startswith("Significantly better")
