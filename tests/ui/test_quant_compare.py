"""Compare quantizations… on the real embedded model and two real requantizations of it
(tests/fixtures/quant_files.py): the candidates found by discovery, their panes, the fidelity run in the
background, the ranking, the diff view's KLD tint; and what is refused before anything runs."""

import asyncio

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QDialogButtonBox

from app.models import ScanCache, discover, estimate_memory
from app.models.fit import MIB
from app.session import RunState, sweep
from app.ui.compare.quant_dialog import QuantDialog
from app.ui.compare.quant_tools import VocabularyCheck
from app.ui.compare.variants_dialog import VariantsDialog
from app.ui.widgets.token_tint import KLD_BANDS, kld_color
from tests.fixtures.gguf_variants import write_vocab_variant
from tests.fixtures.quant_files import requantize
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare

STEM = "SmolLM2-135M-Instruct"


@pytest.fixture(scope="session")
def quant_folder(model_path, tmp_path_factory):
    """Q8_0 (nearly the reference's numbers) and Q4_0 (further away) of the embedded Q4_1 model."""
    folder = tmp_path_factory.mktemp("quants")
    for kind in ("Q8_0", "Q4_0"):
        requantize(model_path, folder / f"{STEM}.{kind}.gguf", kind)
    return folder


def panes_of(window, comparison) -> list:
    return [window.session.pane_by_id(i) for ids in comparison.panes.values() for i in ids]


def isolate(window, settings, folder, tmp_path) -> None:
    """Discovery reads only `folder` (and the reference's own), never this machine's apps."""
    settings.set_model_folders([str(folder)])
    window.quants.dialog_kwargs = {"scan_kwargs": {"home": tmp_path / "home", "env": {}},
                                   "cache": ScanCache(tmp_path / "scan.json")}


def test_compare_quantizations_ranks_the_candidates_and_tints_the_diff(loaded_window, loop, quant_folder, settings,
                                                                      tmp_path):
    window = loaded_window
    isolate(window, settings, quant_folder, tmp_path)
    source = prepare(window, ["Name three colours."], max_tokens=12, temperature=0.7)[0]
    panes_before = len(window.session.panes)
    dialog = window.quants.open_dialog(source)
    wait_until(loop, lambda: dialog.scanning.done() and dialog.candidates.count() == 2)
    assert sorted(dialog.candidate_paths()) == sorted(str(quant_folder / f"{STEM}.{k}.gguf") for k in ("Q4_0", "Q8_0"))
    dialog.buttons.button(QDialogButtonBox.Ok).click()
    wait_until(loop, lambda: window.quants.comparisons)
    comparison = window.quants.comparisons[0]
    panes = panes_of(window, comparison)
    assert len(window.session.panes) == panes_before + 3 and len({p.group for p in panes}) == 1
    assert [p.backend for p in panes] == ["local", f"local · {STEM}.Q8_0", f"local · {STEM}.Q4_0"] or \
        [p.backend for p in panes] == ["local", f"local · {STEM}.Q4_0", f"local · {STEM}.Q8_0"]
    assert all(p.sampling.temperature == 0 for p in panes)  # greedy: where replies part is the model's doing
    wait_until(loop, lambda: not comparison.running, timeout=600)
    assert comparison.stage == "done", comparison.error
    ranking = window.quants.views[0]
    wait_until(loop, lambda: all(r.decode_tps for r in ranking.rows))
    rows = ranking.rows
    assert rows[0].reference and rows[0].name == f"{STEM}.Q4_1"
    assert [r.name for r in rows[1:]] == [f"{STEM}.Q8_0", f"{STEM}.Q4_0"]  # by mean KLD: Q8_0 keeps Q4_1's numbers
    assert 0 <= rows[1].kld_mean < rows[2].kld_mean and rows[1].same_top_p >= rows[2].same_top_p
    assert all(r.memory_bytes and r.size_bytes for r in rows) and all(r.diverged is not None for r in rows[1:])
    assert ranking.table.item(0, 4).text() == "reference" and ranking.table.item(1, 4).text() != "–"
    assert not ranking.progress.isVisible() and not ranking.cancel_button.isVisible()

    diff = window.quants.show_diff(comparison, rows[2].path)
    assert diff.tint_kld.isChecked() and "KLD per token" in diff.kld_legend.text()
    pieces, kld = comparison.token_kld(rows[2].path, comparison.prompts[0])
    base = diff.palette().color(QPalette.Base)
    tinted = {kld_color(k, base).name() for k in kld} - {kld_color(0, base).name()}
    assert tinted and all(colour in diff.right_view.toHtml() for colour in tinted)
    assert "".join(pieces).strip() and len(pieces) == len(kld)  # the reference's reply, as the candidate read it
    assert "line-through" not in diff.left_view.toHtml()  # the same reply on the left: shown plain
    diff.tint_kld.setChecked(False)  # back to the word diff
    assert "KLD per token" not in diff.kld_legend.text() and KLD_BANDS


def test_another_vocabulary_or_a_missing_file_is_refused_before_anything_runs(window, loop, model_path, tmp_path,
                                                                             qtbot):
    other = write_vocab_variant(model_path, tmp_path / f"{STEM}.Q4_1-other-vocab.gguf")
    dialog = QuantDialog(str(model_path), VocabularyCheck(), window, scan=lambda **_: [])
    qtbot.addWidget(dialog)
    wait_until(loop, dialog.scanning.done)
    ok = dialog.buttons.button(QDialogButtonBox.Ok)
    assert "Tick at least one candidate" in dialog.problem.text() and not ok.isEnabled()
    dialog.add_candidate(str(other))
    assert "does not share" in dialog.problem.text() and "vocabulary" in dialog.problem.text()
    assert not ok.isEnabled()
    dialog.candidates.item(0).setCheckState(Qt.Unchecked)
    dialog.add_candidate(str(tmp_path / "gone.gguf"))
    assert "gone.gguf does not exist" in dialog.problem.text() and not ok.isEnabled()

    before = [p.id for p in window.session.panes]
    source = window.grid.panes[0]
    started = loop.run_until_complete(window.quants.start(source.spec, str(model_path), [str(other)]))
    assert started is None and [p.id for p in window.session.panes] == before  # nothing added, nothing run
    assert "does not share" in source.status.text()
    assert window.bridge.backend_names() == ["local"]  # no backend opened for it


def test_the_sweep_grid_sweeps_the_models_quantizations(loaded_window, loop, model_path, quant_folder, tmp_path):
    """The Models dialog's last scan found the other quantizations: the sweep grid offers them beside the pane's
    own file, and the panes it makes run each on its file (the main model's on the main model)."""
    window = loaded_window
    window.quants.scan_cache = cache = ScanCache(tmp_path / "scan.json")
    discover(home=tmp_path / "home", env={}, folders=[str(quant_folder)], cache=cache)
    source = prepare(window, ["Name a colour."], max_tokens=4)[0]
    files, names = window.quants.quantizations(source.spec)
    q8 = str(quant_folder / f"{STEM}.Q8_0.gguf")
    assert files[0] == str(model_path) and sorted(files[1:]) == sorted([q8, str(quant_folder / f"{STEM}.Q4_0.gguf")])
    dialog = VariantsDialog(source.spec, window, window.bridge.backend_names(), files, names)
    dialog.tabs.setCurrentIndex(1)
    dialog.quantizations[files[0]].setChecked(True)
    dialog.quantizations[q8].setChecked(True)
    assert dialog.summary.text().startswith("Creates 2 pane(s)")
    specs = dialog.panes()
    assert [s.backend for s in specs] == ["local", f"local · {STEM}.Q8_0"]
    views = []
    loop.run_until_complete(window.quants.open_then(source.spec, dialog.axes()["quantization"],
                                                    lambda: views.extend(window.compare.add_variants(source, specs))))
    assert f"local · {STEM}.Q8_0" in window.bridge.backend_names()
    wait_until(loop, lambda: len(views) == 2 and not any(v.busy for v in views), timeout=120)
    assert all(v.spec.result.finish_reason in ("stop", "length") and v.spec.result.text for v in views)


def test_cancel_stops_the_panes_and_nothing_is_measured(loaded_window, loop, quant_folder):
    """Cancel while the panes run: they stop, stay in the session with what they have, and no measurement
    starts; the ranking says so and its Cancel button goes."""
    window = loaded_window
    source = prepare(window, ["Count from one to fifty in words."], max_tokens=200)[0]
    q8 = str(quant_folder / f"{STEM}.Q8_0.gguf")
    comparison = loop.run_until_complete(window.quants.start(source.spec, window.quants.reference_of(source.spec),
                                                             [q8]))
    ranking = window.quants.views[-1]
    assert comparison.stage == "panes" and ranking.cancel_button.isVisible()
    ranking.cancel_button.click()
    panes = panes_of(window, comparison)
    wait_until(loop, lambda: not any(window.controller.busy(p) for p in panes))
    assert comparison.stage == "cancelled" and comparison.report is None
    assert all(p in window.session.panes for p in panes) and not ranking.cancel_button.isVisible()
    assert ranking.status.text().startswith("Cancelled")


def test_models_that_do_not_fit_together_run_in_shifts_and_are_measured_one_at_a_time(loaded_window, loop,
                                                                                      quant_folder, monkeypatch):
    """A memory limit with room for the main model and Q4_0 but not Q8_0 beside them: Q8_0 waits on standby, the
    panes run in shifts (the window's one mechanism), and the measurement keeps the reference's tokens in a file
    and loads one model at a time; the ranking says so."""
    window = loaded_window
    q8, q4 = (str(quant_folder / f"{STEM}.{k}.gguf") for k in ("Q8_0", "Q4_0"))
    main = window.quants.reference_of(window.grid.panes[0].spec)
    small, mid = (estimate_memory(p, 4, 512).total for p in (main, q4))
    monkeypatch.setenv("CHORUS_MEMORY_LIMIT", str(small + mid + MIB))
    source = prepare(window, ["Name a colour."], max_tokens=6)[0]
    plans = []
    window.controller.loader.events.started.connect(plans.append)
    # one wait to the end: the loop never stops while the plan runs (a test's stop is no user's)
    asyncio.ensure_future(window.quants.start(source.spec, main, [q4, q8]))
    wait_until(loop, lambda: window.quants.comparisons and not window.quants.comparisons[0].running
               and window.controller.loader.current is None, timeout=600)
    comparison = window.quants.comparisons[0]
    registry = window.bridge.backends
    assert registry.get(f"local · {STEM}.Q4_0") is not None  # fits beside the main model: loaded
    assert len(plans) == 1 and len(plans[0].shifts) >= 1  # Q8_0 did not: it ran in a shift of its own
    assert comparison.stage == "done", comparison.error
    assert comparison.report.path == "topk-file" and "one model at a time" in window.quants.views[-1].status.text()
    panes = panes_of(window, comparison)
    assert all(p.result.state == RunState.DONE and p.result.text for p in panes)
    assert registry.on_standby(f"local · {STEM}.Q8_0")  # unloaded again after its shift


def test_cancel_while_measuring_ends_the_run_and_keeps_the_panes(loaded_window, loop, quant_folder):
    """The window closing as the measurement starts (what Cancel does too, for every running comparison): the
    worker stops at its next check (every model it loaded closed), the ranking says cancelled with no figures, and
    the panes keep their replies."""
    window = loaded_window
    source = prepare(window, ["Name a colour."], max_tokens=4)[0]
    stages = []

    def watch(comparison):
        def changed():
            stages.append(comparison.stage)
            if comparison.stage == "measuring":
                window.quants.close()
        comparison.changed.connect(changed)

    asyncio.ensure_future(window.quants.start(source.spec, window.quants.reference_of(source.spec),
                                              [str(quant_folder / f"{STEM}.Q4_0.gguf")]))
    wait_until(loop, lambda: window.quants.comparisons)
    comparison = window.quants.comparisons[0]
    watch(comparison)
    wait_until(loop, lambda: comparison.stage in ("done", "cancelled", "error"), timeout=300)
    assert "measuring" in stages and comparison.stage == "cancelled" and comparison.report is None
    panes = panes_of(window, comparison)
    assert all(p.result.state == RunState.DONE and p.result.text for p in panes)
    assert window.quants.views[-1].status.text().startswith("Cancelled")


def test_a_group_is_compared_prompt_by_prompt(loaded_window, loop, quant_folder):
    """On a group (three system prompts of one question): every pane of the group gets a pane per file, the
    measurement scores every prompt's reference reply, the ranking says on how many replies each candidate
    differs, and the diff tints each prompt's own reply."""
    window = loaded_window
    source = prepare(window, ["Name a colour."], max_tokens=6)[0]
    source.commit_form()
    window.compare.add_variants(source, sweep.expand(source.spec, {"system": ["Answer in French.",
                                                                              "Answer in one word."]}), run=False)
    assert len(window.quants.group_sources(source.spec)) == 3
    q4 = str(quant_folder / f"{STEM}.Q4_0.gguf")
    asyncio.ensure_future(window.quants.start(source.spec, window.quants.reference_of(source.spec), [q4],
                                              group=True))
    wait_until(loop, lambda: window.quants.comparisons and not window.quants.comparisons[0].running, timeout=600)
    comparison = window.quants.comparisons[0]
    assert comparison.stage == "done", comparison.error
    assert len(comparison.prompts) == 3 and all(len(ids) == 3 for ids in comparison.panes.values())
    assert len(comparison.report.sequences) == 3
    ranking = window.quants.views[-1]
    wait_until(loop, lambda: ranking.rows[1].diverged is not None)
    assert ranking.table.item(1, 9).text().endswith("of 3 replies differ)") or \
        ranking.table.item(1, 9).text() == "identical"
    last = comparison.prompts[2]
    diff = window.quants.show_diff(comparison, q4, last)
    assert diff.chosen()[1].id == comparison.pane_for(q4, last) and "KLD per token" in diff.kld_legend.text()
    assert comparison.token_kld(q4, last)[0] != comparison.token_kld(q4, comparison.prompts[0])[0]
