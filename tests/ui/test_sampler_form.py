"""The other samplers in the window: the pane's folded "More samplers" section reads and shows every setting, the
sweep grid has each as an axis, and a pane's setting reaches the engine."""

from PySide6.QtWidgets import QDialogButtonBox

from app.engine import SamplingParams
from app.session import PaneSpec
from app.ui.compare.variants_dialog import VariantsDialog
from app.ui.pane.sampling_form import SamplingForm
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare

SET = SamplingParams(temperature=0.9, seed=4, dry_multiplier=0.8, dry_base=1.5, dry_allowed_length=3,
                     dry_penalty_last_n=128, dry_sequence_breakers=("\n", ","), xtc_probability=0.4,
                     xtc_threshold=0.2, typical_p=0.8, mirostat=2, mirostat_tau=3.5, mirostat_eta=0.05,
                     top_n_sigma=1.2, dynatemp_range=0.4, dynatemp_exponent=2.0)


def test_the_form_reads_and_shows_every_sampler(qtbot):
    form = SamplingForm()
    qtbot.addWidget(form)
    assert form.samplers.isHidden() and not form.samplers_toggle.isChecked()  # folded until wanted
    form.samplers_toggle.click()
    assert not form.samplers.isHidden()
    fields = form.samplers
    with qtbot.waitSignal(form.sig_changed):
        fields.boxes["dry_multiplier"].setValue(0.8)
    fields.boxes["top_n_sigma"].setValue(1.5)
    fields.mirostat.setCurrentIndex(2)
    fields.breakers.setText(r"\n, \,, ::")
    params, _, _ = form.read(SamplingParams(frequency_penalty=0.5))
    assert (params.dry_multiplier, params.top_n_sigma, params.mirostat) == (0.8, 1.5, 2)
    assert params.dry_sequence_breakers == ("\n", ",", "::") and params.frequency_penalty == 0.5  # base kept
    form.load(SET, 64, ())
    assert form.read()[0] == SET and fields.breakers.text() == r"\n, \,"
    assert fields.mirostat.currentText() == "Mirostat 2.0"
    fields.breakers.setText(" ")
    try:
        form.read()
    except ValueError as error:
        assert "DRY breakers: give at least one" in str(error)
    else:
        raise AssertionError("no breakers must be refused")


def test_the_sweep_grid_has_every_sampler_as_an_axis(qtbot):
    dialog = VariantsDialog(PaneSpec(sampling=SamplingParams(seed=1)))
    qtbot.addWidget(dialog)
    dialog.tabs.setCurrentIndex(1)
    dialog.axis_edits["xtc_probability"].setText("0 0.5")
    dialog.axis_edits["mirostat"].setText("0, 2")
    dialog.breakers.setPlainText("\\n\n\\n, :")
    assert dialog.summary.text().startswith("Creates 8 pane(s)")
    panes = dialog.panes()
    assert {p.sampling.dry_sequence_breakers for p in panes} == {("\n",), ("\n", ":")}
    assert {(p.sampling.xtc_probability, p.sampling.mirostat) for p in panes} == {(0, 0), (0, 2), (0.5, 0), (0.5, 2)}
    dialog.axis_edits["mirostat"].setText("3")
    assert "mirostat = 3" in dialog.summary.text()
    assert not dialog.buttons.button(QDialogButtonBox.Ok).isEnabled()
    assert {"dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n", "xtc_threshold", "typical_p",
            "mirostat_tau", "mirostat_eta", "top_n_sigma", "dynatemp_range", "dynatemp_exponent"} <= set(
        dialog.axis_edits)


def test_a_panes_sampler_reaches_the_engine(loaded_window, loop):
    plain, cut = prepare(loaded_window, ["Write one sentence about the sea."] * 2, max_tokens=24, temperature=0.9)
    for pane in (plain, cut):
        pane.sampling.seed.setText("5")
    cut.sampling.samplers.boxes["xtc_probability"].setValue(1.0)  # always cut the likeliest tokens
    cut.sampling.samplers.boxes["xtc_threshold"].setValue(0.05)
    assert loaded_window.run_all() == 2
    wait_until(loop, lambda: not (plain.busy or cut.busy), timeout=120)
    assert cut.spec.sampling.xtc_probability == 1.0 and plain.spec.sampling.xtc_probability == 0.0
    assert plain.spec.result.text and cut.spec.result.text != plain.spec.result.text
    assert "XTC 1 above 0.05" in cut.title.toolTip()  # the header says what sets it apart


def test_a_panes_speculative_mode_is_set_in_its_form_and_shown_from_its_spec(window):
    """The form writes PaneSpec.speculative through its commit and renders it back when the spec changes."""
    pane = window.grid.add_pane()
    choice = pane.sampling.speculative
    assert pane.spec.speculative == "off" and choice.currentText() == "off"  # SPEC_MODE_DEFAULT
    choice.setCurrentIndex(choice.findData("auto"))  # the user picks auto
    assert pane.spec.speculative == "auto"
    pane.spec.speculative = "on"  # the spec changes under the view (an undo, a script)
    assert choice.currentText() == "on" and pane.sampling.speculative_mode() == "on"
    loaded = window.grid.add_pane(PaneSpec(speculative="on"))  # a pane restored from a session file
    assert loaded.sampling.speculative.currentText() == "on"
    loaded.sampling.temperature.setValue(0.5)  # committing another field keeps the mode
    assert (loaded.spec.sampling.temperature, loaded.spec.speculative) == (0.5, "on")


def test_the_variants_dialog_names_its_pane_and_each_axis_has_a_fitting_example(qtbot):
    dialog = VariantsDialog(PaneSpec(number=3, sampling=SamplingParams(seed=1)))
    qtbot.addWidget(dialog)
    assert dialog.windowTitle() == "Variants and sweeps of Pane 3"
    shown = {axis: dialog.axis_edits[axis].placeholderText() for axis in ("temperature", "seed", "max_tokens")}
    assert shown == {"temperature": "values, e.g. 0, 0.7, 1.2 (empty: keep the pane's)",
                     "seed": "values, e.g. 1, 2, 3 (empty: keep the pane's)",
                     "max_tokens": "values, e.g. 64, 256 (empty: keep the pane's)"}  # all read "0, 0.7, 1.2"
    dialog.tabs.setCurrentIndex(1)
    for axis, edit in dialog.axis_edits.items():  # every example is a sweep the dialog takes
        example = edit.placeholderText().partition("e.g. ")[2].partition(" (")[0]
        if example:
            edit.setText(example)
            assert dialog.buttons.button(QDialogButtonBox.Ok).isEnabled(), (axis, dialog.summary.text())
            edit.clear()
