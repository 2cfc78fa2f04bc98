"""Evaluations on local models that wait on standby (issue 33, defect 6): their run loads the models as Run all
does for panes, on the real engine. Before the fix every such cell ended "error" with "…loads when Run all runs
its panes". SmolLM2 (a copy) and Gemma 3 270M, with the memory limit set so only one fits at a time."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from app.backends.registry import BackendRegistry, BackendSpec
from app.evaluate import read_config
from app.evaluate.routes import Routes
from app.evaluate.runner import EvaluationRunner
from app.evaluate.shifts import EvaluationShifts
from app.models import estimate_memory
from app.models.fit import MIB
from app.session import SessionRunner
from tests.conftest import TEST_THREADS

ENGINE = {"n_slots": 2, "n_ctx_per_slot": 512, "n_threads": TEST_THREADS}


class Harness:
    """A registry and a SessionRunner pumped on an asyncio loop, as the window's are; loads and unloads logged."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.registry = BackendRegistry(lambda event: self.runner.feed(event))
        self.runner = SessionRunner(self.registry, notify=lambda: self.loop.call_soon_threadsafe(self.runner.pump))
        self.routes = Routes(lambda: "", lambda: self.registry.specs() + self.registry.standby_specs())
        self.log: list[str] = []
        self.loaded: set[str] = set()
        self.most_at_once = 0
        self.registry.events.loaded.connect(self._loaded)
        self.registry.events.unloaded.connect(lambda name: (self.loaded.discard(name), self.log.append(f"-{name}")))

    def _loaded(self, name: str) -> None:
        self.loaded.add(name)
        self.log.append(f"+{name}")
        self.most_at_once = max(self.most_at_once, len(self.loaded))

    def standby(self, path) -> str:
        return self.registry.add_standby(BackendSpec(kind="local", path=str(path)), engine=ENGINE).name

    def run(self, evaluation, base_dir) -> EvaluationShifts:
        runner = EvaluationRunner(evaluation, self.runner, self.routes.name, base_dir)
        shifts = EvaluationShifts(runner, self.registry)
        self.loop.run_until_complete(asyncio.wait_for(shifts.run(), 600))
        assert runner.done
        return shifts

    def close(self) -> None:
        self.registry.close_all()
        self.loop.close()


@pytest.fixture
def harness():
    h = Harness()
    yield h
    h.close()


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
