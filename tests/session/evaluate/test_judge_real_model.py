"""The judge requests on the real local model (SmolLM2 through the real engine): the JSON-schema constraint makes
even a 135M model's reply parse as promptfoo's verdict, so its reason reaches the cell."""

import pytest

from app.session.evaluate.checks import Output
from app.session.evaluate.model import TestCase
from app.session.evaluate.scoring import CellGrader


@pytest.mark.slow
def test_llm_rubric_and_factuality_verdicts_parse_on_the_real_model(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=2048)
    case = TestCase.model_validate({"vars": {"q": "What is the capital of France?"}, "assert": [
        {"type": "llm-rubric", "value": "The output names the capital of France"},
        {"type": "factuality", "value": "The capital of France is Paris."}]})
    grader = CellGrader(case, Output(text="Paris is the capital of France."), prompt="What is the capital of France?")
    pending = grader.start()
    assert len(pending) == 2
    handles = [(call, engine.submit(call.request)) for call in pending]  # both judges batch together
    for call, handle in handles:
        completion = handle.result(timeout=240)
        assert completion.finish_reason == "stop", completion
        assert grader.reply(call.key, completion.text, completion.error) == []
    assert grader.done
    result = grader.result()
    rubric, factuality = result.component_results
    assert not rubric.reason.startswith("Could not extract JSON"), rubric.judge[0].reply
    assert rubric.reason and isinstance(rubric.passed, bool) and rubric.judge[0].reply.lstrip().startswith("{")
    assert factuality.reason and not factuality.reason.startswith(("Invalid category", "Factuality checker"))
    assert factuality.score in (0.0, 1.0)
