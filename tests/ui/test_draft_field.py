"""A pane's draft kind in the window: n-gram or a draft model with its file, written to PaneSpec.speculative_kind and
draft_model through the form, shown back from the spec, and a draft-model pane's run on the real engine giving the
tokens of a plain pane (SmolLM2 drafting for itself: the same vocabulary) with its drafts counted in its status."""

from app.session import PaneSpec
from app.session.conversation import plan_run
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare


def test_the_draft_kind_and_file_are_set_in_the_form_and_shown_from_the_spec(window):
    pane = window.grid.add_pane()
    field = pane.sampling.draft
    assert (pane.spec.speculative_kind, pane.spec.draft_model) == ("ngram", "")
    assert field.kind.currentText() == "n-gram" and field.path.isHidden()
    field.kind.setCurrentIndex(field.kind.findData("draft"))
    assert pane.spec.speculative_kind == "draft" and not field.path.isHidden() and not field.browse.isHidden()
    field.path.setText("/models/small.gguf")
    assert pane.spec.draft_model == "/models/small.gguf"
    pane.spec.speculative_kind = "ngram"  # the spec changes under the view (an undo, a script)
    assert field.kind.currentData() == "ngram" and field.path.isHidden()
    loaded = window.grid.add_pane(PaneSpec(speculative="on", speculative_kind="draft", draft_model="/d.gguf"))
    assert loaded.sampling.draft.read() == ("draft", "/d.gguf")
    loaded.sampling.temperature.setValue(0.5)  # committing another field keeps the draft settings
    assert (loaded.spec.speculative_kind, loaded.spec.draft_model) == ("draft", "/d.gguf")


def test_a_pane_request_carries_its_draft_model_only_for_kind_draft():
    pane = PaneSpec(draft="Hi", speculative="auto", speculative_kind="draft", draft_model=" /m/d.gguf ")
    spec = plan_run(pane)[0].speculative
    assert (spec.mode, spec.kind, spec.draft_model) == ("auto", "draft", "/m/d.gguf")
    pane.speculative_kind = "ngram"  # the file stays in the pane but is not sent
    spec = plan_run(pane)[0].speculative
    assert (spec.kind, spec.draft_model) == ("ngram", None)
    pane.speculative = "off"
    assert plan_run(pane)[0].speculative is None


def test_a_draft_model_pane_gives_the_plain_panes_tokens(loaded_window, loop, model_path):
    text = "Repeat exactly: The river bends twice before it reaches the old mill at the edge of town."
    plain, drafted = prepare(loaded_window, [text, text], max_tokens=30)
    drafted.sampling.max_tokens.setValue(31)  # identical requests would coalesce: one decodes for both
    drafted.sampling.speculative.setCurrentIndex(drafted.sampling.speculative.findData("on"))
    drafted.sampling.draft.kind.setCurrentIndex(drafted.sampling.draft.kind.findData("draft"))
    drafted.sampling.draft.path.setText(str(model_path))
    assert loaded_window.run_all() == 2
    wait_until(loop, lambda: not (plain.busy or drafted.busy), timeout=300)
    assert drafted.spec.result.error is None and drafted.spec.result.text.startswith(plain.spec.result.text)
    assert drafted.spec.result.accepted_tokens > 0 and plain.spec.result.drafted_tokens == 0
    assert "drafted accepted" in drafted.spec.result.summary()
