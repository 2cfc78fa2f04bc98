"""Evaluations on local models that wait on standby: their run loads the models as Run all
does for panes, on the real engine. Before the fix every such cell ended "error" with "…loads when Run all runs
its panes". SmolLM2 (a copy) and Gemma 3 270M, with the memory limit set so only one fits at a time."""

from __future__ import annotations

import asyncio
import shutil
from contextlib import closing

import pytest

from app.backends.registry import BackendSpec
from app.evaluate import read_config
from app.evaluate.routes import Routes
from app.evaluate.runner import EvaluationRunner
from app.evaluate.shifts import EvaluationShifts
from app.models import estimate_memory
from app.models.fit import MIB
from tests.conftest import TEST_THREADS
from tests.session.test_shifts import Harness as PaneHarness

ENGINE = {"n_slots": 2, "n_ctx_per_slot": 512, "n_threads": TEST_THREADS}


class Harness(PaneHarness):
    """The panes' harness (a registry and a SessionRunner pumped on an asyncio loop, as the window's are; loads and
    unloads logged), with the routes an evaluation runs on."""

    def __init__(self):
        super().__init__()
        self.routes = Routes(lambda: "", lambda: self.registry.specs() + self.registry.standby_specs())

    def standby(self, path) -> str:
        return self.registry.add_standby(BackendSpec(kind="local", path=str(path)), engine=ENGINE).name

    def run(self, evaluation, base_dir) -> EvaluationShifts:
        runner = EvaluationRunner(evaluation, self.runner, self.routes.name, base_dir)
        shifts = EvaluationShifts(runner, self.registry)
        self.loop.run_until_complete(asyncio.wait_for(shifts.run(), 600))
        assert runner.done
        return shifts


@pytest.fixture
def harness():
    with closing(Harness()) as h:
        yield h


def config_on(*paths, asserts: list) -> dict:
    return {"prompts": [{"raw": "Name one {{thing}}."}],
            "providers": [{"id": f"file://{path}", "config": {"temperature": 0, "max_tokens": 6}} for path in paths],
            "tests": [{"vars": {"thing": thing}, "assert": asserts} for thing in ("fruit", "colour")]}


def test_an_evaluation_on_a_model_on_standby_loads_it_runs_and_unloads_it(harness, model_path, tmp_path):
    copy = shutil.copy(model_path, tmp_path / "SmolLM2-standby.gguf")
    name = harness.standby(copy)
    evaluation = read_config(config_on(copy, asserts=[{"type": "not-icontains", "value": "zqxj"}]),
                             tmp_path).evaluation()
    shifts = harness.run(evaluation, tmp_path)
    assert [cell.status for cell in evaluation.cells] == ["pass", "pass"], [c.error for c in evaluation.cells]
    assert all(cell.output for cell in evaluation.cells)
    assert harness.log == [f"+{name}", f"-{name}"]  # loaded for the run, back on standby after it
    assert harness.registry.on_standby(name) and not shifts.plans[0].in_shifts


def test_models_that_do_not_fit_together_run_in_shifts_and_a_judge_unloaded_by_a_shift_loads_again(
        harness, model_path, gemma, tmp_path, monkeypatch):
    """Variants on SmolLM2 and Gemma, judged by SmolLM2: SmolLM2's shift generates and judges its cells, Gemma's
    shift generates its own, whose judge calls wait until SmolLM2 is loaded again."""
    copy = shutil.copy(model_path, tmp_path / "SmolLM2-standby.gguf")
    smol, big = harness.standby(copy), harness.standby(gemma)
    needs = [estimate_memory(p, ENGINE["n_slots"], ENGINE["n_ctx_per_slot"]).total for p in (copy, gemma)]
    monkeypatch.setenv("CHORUS_MEMORY_LIMIT", str(max(needs) + MIB))  # room for either, not both
    rubric = [{"type": "llm-rubric", "value": "The reply names a {{thing}}"}]
    evaluation = read_config(config_on(copy, gemma, asserts=rubric), tmp_path).evaluation(judge=str(copy))
    shifts = harness.run(evaluation, tmp_path)
    assert all(cell.status in ("pass", "fail") for cell in evaluation.cells), [c.error for c in evaluation.cells]
    assert all(cell.grading.component_results[0].judge for cell in evaluation.cells)  # every cell was judged
    assert shifts.plans[0].in_shifts and harness.most_at_once == 1
    assert harness.log == [f"+{smol}", f"-{smol}", f"+{big}", f"-{big}", f"+{smol}", f"-{smol}"]
    assert harness.registry.on_standby(smol) and harness.registry.on_standby(big)


def test_a_model_too_big_for_the_memory_fails_its_cells_with_the_numbers(harness, model_path, tmp_path,
                                                                        monkeypatch):
    copy = shutil.copy(model_path, tmp_path / "SmolLM2-standby.gguf")
    name = harness.standby(copy)
    monkeypatch.setenv("CHORUS_MEMORY_LIMIT", str(MIB))
    evaluation = read_config(config_on(copy, asserts=[{"type": "not-icontains", "value": "zqxj"}]),
                             tmp_path).evaluation()
    harness.run(evaluation, tmp_path)
    assert [cell.status for cell in evaluation.cells] == ["error", "error"]
    assert all("needs about" in cell.error and "was not loaded" in cell.error for cell in evaluation.cells)
    assert harness.log == [] and harness.registry.on_standby(name)
