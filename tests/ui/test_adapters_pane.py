"""LoRA adapters in the window: the pane's Adapters field writes PaneSpec.lora (a bad text is named and changes
nothing), the sweep grid makes base / adapter / adapter × 0.5 in one go, and on the real model an adapted pane
answers differently while a pane with a broken adapter gets its own message and the model stays loaded."""

from app.engine import LoraAdapter
from app.session import PaneSpec
from app.ui.compare.variants_dialog import VariantsDialog
from tests.fixtures.lora_adapter import write_lora
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare


def test_the_adapters_field_writes_the_spec_and_names_a_bad_text(window):
    pane = window.grid.add_pane()
    field = pane.sampling.adapters
    field.edit.setText("/m/a.gguf@0.5; /m/b.gguf")
    assert pane.spec.lora == (LoraAdapter("/m/a.gguf", 0.5), LoraAdapter("/m/b.gguf", 1.0))
    field.edit.setText("/m/a.gguf@half")
    assert not field.problem.isHidden() and "the scale after @ must be a number" in field.problem.text()
    assert pane.spec.lora == (LoraAdapter("/m/a.gguf", 0.5), LoraAdapter("/m/b.gguf", 1.0))  # the last good set
    pane.spec.lora = (LoraAdapter("/m/c.gguf", 2.0),)  # the spec changes under the view (a file, a script)
    assert field.edit.text() == "/m/c.gguf@2" and field.problem.isHidden()


def test_the_sweep_grid_makes_base_adapter_and_half_an_adapter(qtbot):
    dialog = VariantsDialog(PaneSpec())
    qtbot.addWidget(dialog)
    dialog.tabs.setCurrentIndex(1)
    dialog.adapters.setPlainText("none\n/m/a.gguf")
    dialog.axis_edits["scale"].setText("1, 0.5")
    assert dialog.summary.text().startswith("Creates 3 pane(s)")
    assert [p.lora for p in dialog.panes()] == [(), (LoraAdapter("/m/a.gguf"),), (LoraAdapter("/m/a.gguf", 0.5),)]


def test_an_adapted_pane_answers_otherwise_and_a_broken_adapter_is_that_panes_message(loaded_window, loop, model_path,
                                                                                      tmp_path):
    adapter = write_lora(model_path, tmp_path / "a.gguf")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a GGUF file")
    base, adapted, bad = prepare(loaded_window, ["Write one sentence about the sea."] * 3, max_tokens=16)
    adapted.sampling.adapters.edit.setText(str(adapter))
    bad.sampling.adapters.edit.setText(str(broken))
    assert loaded_window.run_all() == 3
    wait_until(loop, lambda: not any(p.busy for p in (base, adapted, bad)), timeout=120)
    assert base.spec.result.text and adapted.spec.result.text and adapted.spec.result.text != base.spec.result.text
    assert bad.spec.result.error_kind == "adapter" and "broken.gguf" in bad.spec.result.error
    assert "broken.gguf" in bad.status.text() or "broken.gguf" in bad.output.toPlainText()
    bad.sampling.adapters.edit.setText("")
    assert loaded_window.run_all() >= 1  # the model is still loaded: the pane runs again on the base model
    wait_until(loop, lambda: not bad.busy, timeout=120)
    assert bad.spec.result.error is None and bad.spec.result.text == base.spec.result.text
