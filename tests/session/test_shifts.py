"""Local models that do not fit in memory together run in shifts: the plan (Qt-free, no model loaded), the memory
cap it reads, and the driver on the real engine with the cap set low — SmolLM2 and Gemma 3 270M, never both
loaded at once, every pane answered."""

from __future__ import annotations

import asyncio
import shutil
from contextlib import closing

import pytest

from app.backends import LocalBackend
from app.backends.shifts import ModelUse, plan, plan_for
from app.engine import EngineConfig
from app.models import estimate_memory
from app.models.fit import MIB, available_ram, memory_limit, parse_size
from app.session import (
    MAIN,
    BackendRegistry,
    BackendSpec,
    PaneSpec,
    SessionModel,
    SessionRunner,
    conversation,
    sweep,
)
from app.session.shifts import ModelShifts, PaneShifts, controller_for
from app.session.state import RunState
from tests.conftest import GREEDY, TEST_THREADS

ENGINE = {"n_slots": 2, "n_ctx_per_slot": 256, "n_threads": TEST_THREADS}


def panes_on(*backends: str) -> list[PaneSpec]:
    return [PaneSpec(draft=f"question {i}", backend=name) for i, name in enumerate(backends)]


def uses(**models) -> dict[str, ModelUse]:
    """ModelUse by name from (MiB needed, loaded) pairs."""
    return {name: ModelUse(name, name.upper(), mib * MIB, loaded) for name, (mib, loaded) in models.items()}


# --- the plan -----------------------------------------------------------------------------------------------------
def test_loaded_models_and_servers_just_run():
    panes = panes_on("a", "server", "a")
    result = plan(panes, uses(a=(500, True)), free=100 * MIB)
    assert result.now == tuple(panes) and not result.needed and not result.in_shifts


def test_standby_models_that_fit_beside_the_loaded_ones_load_in_one_shift():
    panes = panes_on("a", "b", "c", "server")
    result = plan(panes, uses(a=(100, True), b=(100, False), c=(100, False)), free=300 * MIB)
    assert result.needed and not result.in_shifts and result.restore == ()
    assert result.now == (panes[0], panes[3])  # the loaded model's panes and the server's start at once
    [shift] = result.shifts
    assert shift.models == ("b", "c") and shift.load == ("b", "c") and shift.panes == (panes[1], panes[2])
    assert "Loading B+C" in result.describe()


def test_models_that_do_not_fit_together_run_in_shifts_and_the_loaded_one_comes_back():
    panes = panes_on("a", "b", "c", "server", "b", "d")
    result = plan(panes, uses(a=(300, True), b=(300, False), c=(200, False), d=(100, False)), free=400 * MIB)
    assert result.in_shifts and result.now == (panes[3],)
    assert [t.models for t in result.shifts] == [("a", "d"), ("b",), ("c",)]  # first fit, in the panes' order
    assert [t.load for t in result.shifts] == [("d",), ("b",), ("c",)]  # a is loaded already
    assert result.shifts[1].panes == (panes[1], panes[4])
    assert result.restore == ("a",)
    assert "do not fit in 400 MiB together" in result.describe() and "A+D → B → C" in result.describe()


def test_two_standby_models_with_room_for_one_run_one_after_the_other():
    panes = panes_on("a", "b", "a", "b")
    result = plan(panes, uses(a=(200, False), b=(250, False)), free=300 * MIB)
    assert [t.models for t in result.shifts] == [("a",), ("b",)]
    assert [t.panes for t in result.shifts] == [(panes[0], panes[2]), (panes[1], panes[3])]
    assert result.restore == () and result.now == ()


def test_a_model_larger_than_the_memory_alone_is_refused_with_the_numbers():
    panes = panes_on("huge", "b", "huge")
    result = plan(panes, uses(huge=(4096, False), b=(100, False)), free=1024 * MIB, limit=1024 * MIB)
    assert [p for p, _ in result.refused] == [panes[0], panes[2]]
    why = result.refused[0][1]
    assert "HUGE needs about 4.0 GiB" in why and "only 1.0 GiB" in why and "CHORUS_MEMORY_LIMIT" in why
    assert [t.models for t in result.shifts] == [("b",)]  # the rest still runs


def test_plan_for_measures_each_model_at_its_own_engine_settings(model_path, monkeypatch):
    registry = BackendRegistry(lambda event: None)
    spec = registry.add_standby(BackendSpec(kind="local", path=str(model_path)), engine=ENGINE)
    assert registry.offered() == [MAIN, spec.name] and registry.config(spec.name).n_slots == 2
    with pytest.raises(RuntimeError, match="not loaded: it loads when Run all or Run group runs"):
        registry.submit(None, spec.name)
    need = estimate_memory(model_path, 2, 256).total
    panes = [*panes_on(spec.name, "10.0.0.1:8080 · qwen"), PaneSpec(backend=spec.name)]  # the last is empty
    result = plan_for(panes, registry, runnable=conversation.can_run, free_ram=need)
    assert result.shifts[0].panes == (panes[0],) and result.now == (panes[1],)
    assert plan_for(panes, registry, runnable=conversation.can_run, free_ram=need - 1).refused[0][0] is panes[0]
    monkeypatch.setenv("CHORUS_MEMORY_LIMIT", str(need - 1))
    assert available_ram() == need - 1
    assert plan_for(panes, registry).refused  # the cap is what the planner reads


@pytest.mark.parametrize("text, size", [("2G", 2 << 30), ("900M", 900 * MIB), ("1.5GiB", 3 << 29),
                                        ("512 mb", 512 * MIB), ("123456", 123456)])
def test_the_memory_cap_reads_sizes(text, size):
    assert parse_size(text) == size
    assert memory_limit({"CHORUS_MEMORY_LIMIT": text}) == size


def test_a_memory_cap_that_is_not_a_size_is_ignored():
    assert memory_limit({"CHORUS_MEMORY_LIMIT": "lots"}) is None
    assert memory_limit({}) is None


# --- the driver on the real engine --------------------------------------------------------------------------------


class Harness:
    """A registry, a session and a runner pumped on an asyncio loop (as the window's RunPump does), with the
    registry's load and unload events recorded."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.registry = BackendRegistry(lambda event: self.runner.feed(event))
        self.runner = SessionRunner(self.registry, notify=lambda: self.loop.call_soon_threadsafe(self.runner.pump))
        self.session = SessionModel()
        self.controller = controller_for(self.session, self.runner, self.registry)
        self.loaded: set[str] = set()
        self.most_at_once = 0
        self.log: list[str] = []
        self.registry.events.loaded.connect(self._loaded)
        self.registry.events.unloaded.connect(self._unloaded)

    def _loaded(self, name: str) -> None:
        self.loaded.add(name)
        self.log.append(f"+{name}")
        self.most_at_once = max(self.most_at_once, len(self.loaded))

    def _unloaded(self, name: str) -> None:
        self.loaded.discard(name)
        self.log.append(f"-{name}")

    def sweep(self, backends: list[str]) -> list[PaneSpec]:
        base = self.controller.add_pane(PaneSpec(draft="Name a colour.", sampling=GREEDY, max_tokens=8,
                                                 backend=backends[0]))
        return [base, *self.controller.add_variants(base, sweep.expand(base, {"backend": backends[1:]}),
                                                    run=False)]

    def run(self, panes: list[PaneSpec]):
        result = plan_for(panes, self.registry)
        driver = PaneShifts(result, self.controller, self.registry)
        progress = []
        driver.events.progress.connect(progress.append)
        last = self.loop.run_until_complete(asyncio.wait_for(driver.run(), 300))
        return result, last, progress

    def run_group(self, pane: PaneSpec):
        """Run the group as Run group does: the controller hands the plan to its ModelShifts."""
        shifts = self.controller.loader
        progress, finished = [], []
        shifts.events.progress.connect(progress.append)
        shifts.events.finished.connect(finished.append)

        async def run_group():  # on the loop, as a click is on the window's
            report = self.controller.run_group(pane)
            await asyncio.wait_for(shifts.task, 300)
            return report

        return self.loop.run_until_complete(run_group()), finished[-1], progress

    def close(self):
        self.registry.close_all()
        self.loop.close()


@pytest.fixture
def harness():
    with closing(Harness()) as h:
        yield h


def test_two_models_with_room_for_one_run_in_shifts(harness, model_path, gemma, tmp_path, monkeypatch):
    smol = shutil.copy(model_path, tmp_path / "SmolLM2-copy.gguf")
    names = [harness.registry.add_standby(BackendSpec(kind="local", path=str(p)), engine=ENGINE).name
             for p in (smol, gemma)]
    needs = [estimate_memory(p, 2, 256).total for p in (smol, gemma)]
    monkeypatch.setenv("CHORUS_MEMORY_LIMIT", str(max(needs) + MIB))  # room for either, not both
    assert sum(needs) > max(needs) + MIB
    panes = harness.sweep([names[0], names[1], names[0], names[1]])
    result = plan_for(panes, harness.registry)
    assert result.in_shifts and [t.models for t in result.shifts] == [(names[0],), (names[1],)]
    report, last, progress = harness.run_group(panes[0])
    assert report.started == 4 and not report.problems
    assert harness.log == [f"+{names[0]}", f"-{names[0]}", f"+{names[1]}", f"-{names[1]}"]
    assert harness.most_at_once == 1
    for pane in panes:
        assert pane.result.state == RunState.DONE and pane.result.generated_tokens > 0, pane.result.summary()
    assert last.stage == "done" and last.panes_done == last.panes_total == 4
    assert [p.shift for p in progress if p.stage == "loading"] == [1, 2]
    assert any(p.eta_s is not None for p in progress)  # measured once the first pane ended
    running = next(p for p in progress if p.stage == "running")
    assert running.describe().startswith("Running models in shifts: 1 of 2 (SmolLM2-copy)")
    assert harness.registry.offered() == [MAIN, *names]  # both back on standby, still offered to panes


def test_the_main_model_makes_room_and_comes_back(harness, model_path, gemma, monkeypatch):
    gemma_name = harness.registry.add_standby(BackendSpec(kind="local", path=str(gemma)), engine=ENGINE).name
    harness.registry.set_main(LocalBackend(EngineConfig(model_path=model_path, **ENGINE)))
    harness.loaded = {MAIN}
    needs = [estimate_memory(p, 2, 256).total for p in (model_path, gemma)]
    monkeypatch.setenv("CHORUS_MEMORY_LIMIT", str(max(needs) + MIB))  # Gemma fits once SmolLM2 is unloaded
    panes = harness.sweep([MAIN, gemma_name])
    result, last, _ = harness.run(panes)
    assert [t.models for t in result.shifts] == [(MAIN,), (gemma_name,)] and result.restore == (MAIN,)
    assert harness.log == [f"-{MAIN}", f"+{gemma_name}", f"-{gemma_name}", f"+{MAIN}"]
    assert harness.most_at_once == 1 and harness.registry.main is not None
    assert all(p.result.state == RunState.DONE and p.result.text for p in panes)
    assert last.stage == "done"


def test_a_model_that_fails_to_load_marks_its_panes_and_the_next_one_runs(harness, model_path, tmp_path,
                                                                          monkeypatch):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(model_path.read_bytes()[: 4 * MIB])  # a truncated download
    names = [harness.registry.add_standby(BackendSpec(kind="local", path=str(p)), engine=ENGINE).name
             for p in (broken, model_path)]
    monkeypatch.setenv("CHORUS_MEMORY_LIMIT", str(estimate_memory(model_path, 2, 256).total + MIB))
    panes = harness.sweep(names)
    _, last, _ = harness.run(panes)
    assert panes[0].result.state == RunState.ERROR and "Could not load broken" in panes[0].result.error
    assert panes[0].draft == "Name a colour."  # kept for a later run
    assert panes[1].result.state == RunState.DONE and panes[1].result.text
    assert last.failed and last.panes_done == 2


def test_cancel_stops_the_rest_of_the_plan(harness, model_path, gemma, tmp_path, monkeypatch):
    names = [harness.registry.add_standby(BackendSpec(kind="local", path=str(p)), engine=ENGINE).name
             for p in (model_path, gemma)]
    monkeypatch.setenv("CHORUS_MEMORY_LIMIT", str(estimate_memory(gemma, 2, 256).total + MIB))
    panes = harness.sweep(names)
    panes[0].max_tokens = 512
    result = plan_for(panes, harness.registry)
    driver = PaneShifts(result, harness.controller, harness.registry)
    driver.events.progress.connect(lambda p: p.stage == "running" and driver.cancel())
    last = harness.loop.run_until_complete(asyncio.wait_for(driver.run(), 300))
    assert last.stage == "cancelled"
    assert panes[0].result.state == RunState.CANCELLED
    assert panes[1].result.state == RunState.IDLE and panes[1].draft  # never started
    assert harness.log == [f"+{names[0]}", f"-{names[0]}"] and not harness.loaded


def test_the_controller_owns_its_models_in_shifts_with_no_view_at_all(harness):
    """Models in shifts belong to the session layer: the controller is built with its ModelShifts (before, a
    status-bar widget's constructor created it, so a front end without that widget could not run a standby
    model). The run below goes through it with no UI."""
    loader = harness.controller.loader
    assert isinstance(loader, ModelShifts) and loader.controller is harness.controller
    assert loader.registry is harness.registry


def test_a_pane_s_own_run_loads_its_model_for_it_and_one_plan_runs_at_a_time(harness, model_path):
    name = harness.registry.add_standby(BackendSpec(kind="local", path=str(model_path)), engine=ENGINE).name
    shifts = harness.controller.loader
    finished = []
    shifts.events.finished.connect(finished.append)
    first, second = (harness.controller.add_pane(PaneSpec(draft=f"Say {w}.", sampling=GREEDY, max_tokens=8,
                                                          backend=name)) for w in ("yes", "no"))

    async def run_both():
        assert harness.controller.run(first) is None  # it runs once its model has loaded
        assert shifts.current is not None and shifts.current.progress.in_shifts is False
        with pytest.raises(RuntimeError, match="Other models are running in shifts"):
            harness.controller.run(second)
        await asyncio.wait_for(shifts.task, 300)

    harness.loop.run_until_complete(run_both())
    assert first.result.state == RunState.DONE and first.result.text
    assert second.result.state == RunState.IDLE and second.draft == "Say no."  # refused, nothing changed
    assert finished[-1].describe().startswith("Models on standby: done, 1 pane in")
    assert harness.log == [f"+{name}", f"-{name}"] and harness.registry.on_standby(name)
