"""The window runs local models in shifts when they do not fit in memory together: tested with CHORUS_MEMORY_LIMIT
set low, on the real engine — the main SmolLM2, a copy of it added beside it, and Gemma 3 270M, which fits
only alone and so waits on standby. Never is Gemma loaded with another model; every pane gets its answer; the
main model comes back."""

from __future__ import annotations

import shutil
import threading

import pytest
import yaml

from app.models import estimate_memory
from app.models.fit import MIB
from app.session import MAIN, BackendSpec, PaneSpec, sweep
from app.session.state import RunState
from tests.conftest import GREEDY, TEST_THREADS
from tests.ui.conftest import wait_until
from tests.ui.test_arena_window import open_arena


class Loads:
    """What the registry had loaded each time a model finished loading (its events come from worker threads)."""

    def __init__(self, registry):
        self.registry, self.lock, self.seen = registry, threading.Lock(), []
        registry.events.loaded.connect(self.loaded)

    def loaded(self, name: str) -> None:
        with self.lock:
            self.seen.append((name, sorted(self.registry.loaded_local())))


@pytest.fixture
def three_models(loaded_window, loop, model_path, gemma, tmp_path, monkeypatch):
    """The main SmolLM2 plus a copy of it, loaded, and Gemma on standby: the memory limit leaves room for the
    two small ones together or Gemma alone."""
    window = loaded_window
    copy = shutil.copy(model_path, tmp_path / "SmolLM2-copy.gguf")
    small, big = (estimate_memory(p, 4, 512).total for p in (model_path, gemma))
    monkeypatch.setenv("CHORUS_MEMORY_LIMIT", str(small + big + MIB))
    assert 2 * small <= small + big < small + small + big
    specs = [BackendSpec(kind="local", path=str(p)) for p in (copy, gemma)]
    for spec in specs:
        assert loop.run_until_complete(window.backends.add(spec)) is None
    registry = window.bridge.backends
    assert registry.get(specs[0].name) is not None  # fits beside the main model: loaded
    assert registry.on_standby(specs[1].name) and registry.get(specs[1].name) is None  # does not: standby
    assert window.bridge.backend_names() == [MAIN, specs[0].name, specs[1].name]
    assert specs[1] in window.settings.backend_specs()  # remembered like any backend
    view = window.grid.panes[0]
    view.spec.max_tokens = 8
    return window, [spec.name for spec in specs], view


def test_a_sweep_over_models_that_do_not_fit_together_runs_them_in_shifts(three_models, loop):
    window, (copy, gemma), view = three_models
    loads = Loads(window.bridge.backends)
    added = window.compare.add_variants(view, sweep.expand(view.spec, {"backend": [copy, gemma]}),
                                     include_source=True)
    group = [view.spec, *(v.spec for v in added)]
    assert [p.backend for p in group] == [MAIN, copy, gemma]
    assert window.shifts.isVisible() and "do not fit in" in window.shifts.label.text()
    wait_until(loop, lambda: window.shifts.last is not None and window.shifts.last.stage == "running", timeout=120)
    assert window.shifts.label.text().startswith("Running models in shifts: 1 of 2 (SmolLM2-135M-Instruct.Q4_1, "
                                                "SmolLM2-copy)")
    wait_until(loop, lambda: window.shifts.last.finished, timeout=600)
    assert window.shifts.last.stage == "done" and not window.shifts.isVisible()
    for pane in group:
        assert pane.result.state == RunState.DONE and pane.result.generated_tokens > 0, pane.result.summary()
    assert (gemma, [gemma]) in loads.seen  # Gemma ran alone...
    assert [name for name, _ in loads.seen] == [gemma, MAIN, copy]  # ...then the two small ones came back
    registry = window.bridge.backends
    assert registry.on_standby(gemma) and registry.get(copy) is not None and window.bridge.model_info is not None
    assert "unloaded" not in window.model_status.label.text() and "SmolLM2" in window.model_status.label.text()


def test_stop_all_cancels_the_rest_of_the_plan(three_models, loop):
    window, (copy, gemma), view = three_models
    loads = Loads(window.bridge.backends)
    view.spec.max_tokens = 400
    window.compare.add_variants(view, sweep.expand(view.spec, {"backend": [gemma]}), include_source=True)
    wait_until(loop, lambda: window.shifts.last is not None and window.shifts.last.stage == "running", timeout=120)
    window.act_stop_all.trigger()
    wait_until(loop, lambda: window.shifts.last.finished, timeout=120)
    assert window.shifts.last.stage == "cancelled"
    wait_until(loop, lambda: view.spec.result.state == RunState.CANCELLED, timeout=30)
    assert gemma not in [name for name, _ in loads.seen]  # never loaded
    assert window.bridge.backends.on_standby(gemma) and window.bridge.model_info is not None


def test_an_evaluation_on_a_model_on_standby_loads_it_for_its_run(loaded_window, loop, model_path, tmp_path):
    """Before the fix the cell ended "error" (its model "is already connected", or "loads
    when Run all runs its panes") and the model never loaded."""
    window = loaded_window
    registry = window.bridge.backends
    copy = shutil.copy(model_path, tmp_path / "SmolLM2-standby.gguf")
    name = window.bridge.add_standby(BackendSpec(kind="local", path=str(copy)),
                                     engine={"n_slots": 2, "n_ctx_per_slot": 512, "n_threads": TEST_THREADS}).name
    config = {"prompts": [{"raw": "Name one {{thing}}."}],
              "providers": [{"id": f"file://{copy}", "config": {"temperature": 0, "max_tokens": 6}}],
              "tests": [{"vars": {"thing": "fruit"}, "assert": [{"type": "not-icontains", "value": "zqxj"}]}]}
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    loads = Loads(registry)
    assert window.evals.open_config(path)
    evaluation = window.session.evaluation
    wait_until(loop, lambda: not window.evals.running and not evaluation.unfinished() and registry.on_standby(name),
               timeout=300)
    assert [cell.status for cell in evaluation.cells] == ["pass"], [cell.error for cell in evaluation.cells]
    assert [loaded for loaded, _ in loads.seen] == [name]  # loaded for the run, back on standby after it


def test_the_arena_loads_a_pairs_model_on_standby_and_unloads_it_when_it_closes(loaded_window, loop, model_path,
                                                                               tmp_path):
    """Before the fix the pair said "Could not generate: … loads when Run all runs its
    panes" and nothing ran."""
    window = loaded_window
    registry = window.bridge.backends
    copy = shutil.copy(model_path, tmp_path / "SmolLM2-standby.gguf")
    name = window.bridge.add_standby(BackendSpec(kind="local", path=str(copy)),
                                     engine={"n_slots": 2, "n_ctx_per_slot": 512, "n_threads": TEST_THREADS}).name
    source = window.controller.add_pane(PaneSpec(draft="Name a fruit.", sampling=GREEDY, max_tokens=8))
    panes = [source, *window.controller.add_variants(source, [source.copy(backend=name)], run=False)]
    view = open_arena(window, loop, panes)
    wait_until(loop, lambda: view.ready() or "Could not" in view.status.text(), timeout=120)
    assert view.ready(), view.status.text()
    assert all(result.error is None and result.text for result in view.results.values())
    assert registry.get(name) is not None  # loaded for the pair
    assert view.vote("tie") is not None
    view.done(0)
    wait_until(loop, view.loading.done, timeout=60)
    assert registry.on_standby(name) and registry.get(name) is None  # unloaded when the arena closed


def test_a_standby_model_runs_in_shifts_without_the_status_readout(qtbot, settings, loop, model_path, tmp_path,
                                                                  monkeypatch):
    """Models in shifts are the session's, not the status bar's: before, the readout's constructor created them
    (setting `controller.loader`), so a window without it could not run a pane on a model on standby."""
    from app.ui import settings as keys
    from app.ui.bridge import EngineBridge
    from app.ui.window import main_window

    monkeypatch.setattr(main_window, "ShiftsStatus", lambda *args, **kwargs: None)
    for setting, value in ((keys.SLOTS, 2), (keys.CONTEXT_PER_SLOT, 512), (keys.THREADS, TEST_THREADS)):
        settings.set(setting, value)
    window = main_window.MainWindow(EngineBridge(), settings, autosave_path=tmp_path / "autosave.chorus.json")
    qtbot.addWidget(window)
    name = window.bridge.add_standby(BackendSpec(kind="local", path=str(model_path)),
                                     engine=settings.engine_fields()).name
    pane = window.controller.add_pane(PaneSpec(draft="Say yes.", sampling=GREEDY, max_tokens=8, backend=name))

    async def run():  # on the loop, as a click is
        return window.controller.run(pane)

    assert loop.run_until_complete(run()) is None  # it runs once its model has loaded
    wait_until(loop, lambda: window.controller.loader.current is None, timeout=300)  # the plan is over
    assert pane.result.state == RunState.DONE and pane.result.generated_tokens > 0
    assert window.bridge.backends.on_standby(name)  # unloaded after its shift
    window.close()
