"""The RAG assertions' judge prompts (promptfoo 0.123.1's, verbatim) and the parsing of the judge's replies,
with scripted judge replies and a toy embedder: the verdicts promptfoo's parsing gives on the same replies."""

import numpy as np
import pytest

from app.evaluate import rag_prompts
from app.evaluate.checks import CheckError, Output
from app.evaluate.scoring import grade
from app.session.evaluation import Assertion, EvalCase


def _grade(kind: str, replies: list[str], variables: dict, value=None, threshold=None, embed=None,
           output: str = "Paris is the capital. It is big."):
    asked = []

    def judge(request, _provider):
        asked.append(request.messages[-1]["content"])
        return replies.pop(0)
    case = EvalCase(vars=variables, assertions=[Assertion(type=kind, value=value, threshold=threshold)])
    result = grade(case, Output(text=output), "What is the capital?", judge=judge, embed=embed)
    return result.component_results[0], asked


def test_context_faithfulness_two_steps():
    verdict, asked = _grade("context-faithfulness", ["Paris is the capital.\nParis is big.",
                                                     "1. ... Verdict: Yes.\nFinal verdict for each statement in "
                                                     "order: Yes. No."],
                            {"query": "capital?", "context": "Paris is the capital of France."})
    assert asked[0].endswith("question:capital?\nanswer: Paris is the capital. It is big.\nstatements:\n")
    assert asked[0].startswith(rag_prompts.CONTEXT_FAITHFULNESS_LONGFORM.split("{{")[0])
    assert asked[1].endswith("context:\nParis is the capital of France.\nstatements:\nParis is the capital.\n"
                             "Paris is big.\nAnswer:\n")
    assert (verdict.passed, verdict.score, verdict.reason) == (True, 0.5, "Faithfulness 0.50 is >= 0.5")
    verdict, _ = _grade("not-context-faithfulness", ["a\nb", "verdict: yes verdict: no verdict: no"],
                        {"query": "q", "context": "c"}, threshold=0.6)
    assert (verdict.passed, verdict.score) == (True, 1.0)  # 1 − (2 no + 0 missing) / 2 = 0, flipped
    verdict, _ = _grade("not-context-faithfulness", ["a", "no idea"], {"query": "q", "context": "c"})
    assert (verdict.passed, verdict.score, verdict.reason) == (False, 0.0,
                                                              "Could not parse context-faithfulness verdicts")


def test_context_relevance_counts_quoted_sentences():
    context = "Paris is the capital of France. France is in Europe. Cheese is made of milk."
    verdict, asked = _grade("context-relevance", ["Paris is the capital of France."],
                            {"query": "capital?", "context": context})
    assert asked[0].endswith(f"query: capital?\ncontext: {context}\ncandidate sentences:\n")
    assert (verdict.passed, round(verdict.score, 4), verdict.reason) == (False, 0.3333,
                                                                         "Context relevance 0.33 is < 0.5")
    verdict, _ = _grade("context-relevance", ["Insufficient Information"], {"query": "q", "context": ["a", "b"]})
    assert (verdict.passed, verdict.score) == (False, 0.0)
    verdict, _ = _grade("context-relevance", ["Rome is nice."], {"query": "q", "context": context})
    assert verdict.reason == "Grader output does not quote the provided context"


def test_context_recall_counts_attributions():
    verdict, asked = _grade("context-recall", ["1. Paris is the capital. So [Attributed]\n"
                                               "2. It has 9 million people. So [Not Attributed]\nsummary"],
                            {"context": ["Paris is the capital.", "It is in France."]},
                            value="Paris is the capital. It has 9 million people.", threshold=0.5)
    assert "context:Paris is the capital.\n\nIt is in France.\nanswer:Paris is the capital. It has 9 million " \
           "people.\nclassification:\n" in asked[0]
    assert (verdict.passed, verdict.score, verdict.reason) == (True, 0.5, "Recall 0.50 is >= 0.5")
    verdict, _ = _grade("context-recall", ["nothing here"], {}, value="x")  # context: the prompt
    assert verdict.reason == "Grader returned no [Attributed]/[Not Attributed] classifications"


def test_answer_relevance_embeds_three_questions():
    vectors = {"What is the capital?": [1, 0], "Which city is the capital?": [1, 0], "How big is it?": [0, 1]}

    def embed(texts):
        return np.array([vectors[t] for t in texts], dtype=float)
    replies = ["Which city is the capital?", "Which city is the capital?", "How big is it?"]
    verdict, asked = _grade("answer-relevance", replies, {}, embed=embed)
    assert len(asked) == 3 and asked[0].endswith("Answer:Paris is the capital. It is big.\nQuestion:")
    assert (verdict.passed, round(verdict.score, 4)) == (True, 0.6667)
    assert verdict.reason == "Relevance 0.67 is greater than threshold 0.5"


def test_missing_query_or_context_is_an_error():
    with pytest.raises(CheckError, match='requires a "query" variable'):
        _grade("context-faithfulness", [], {"context": "c"})
    with pytest.raises(CheckError, match="Context is required"):
        _grade("context-relevance", [], {"query": "q"})


def test_context_transform_takes_the_context_from_the_output(tmp_path):
    """promptfoo's contextTransform: code over the output (before the test's transform) gives the context of a
    context-* check, a string or a list of strings; anything else fails the cell naming the expression."""
    import yaml

    from app.evaluate import load_config
    from app.evaluate.code_checks import CodeRunner
    from app.evaluate.errors import ConfigError
    from app.evaluate.scoring import CellGrader

    code = CodeRunner(tmp_path)

    def recall(transform: str):
        asked = []
        case = EvalCase(assertions=[Assertion(type="context-recall", value="Paris is the capital.",
                                              context_transform=transform)])
        grader = CellGrader(case, Output(text="Paris.|Paris is the capital of France."), "Q", code=code)
        calls = grader.start()
        for call in calls:
            asked.append(call.request.messages[-1]["content"])
            grader.reply(call.key, "1. Paris is the capital. [Attributed]")
        return grader, asked
    try:
        grader, asked = recall("output.split('|')[1]")
        assert "\ncontext:Paris is the capital of France.\nanswer:" in asked[0]
        assert grader.result().component_results[0].score == 1.0
        grader, asked = recall("output.split('|')")  # a list of strings: joined by blank lines
        assert "\ncontext:Paris.\n\nParis is the capital of France.\nanswer:" in asked[0]
        grader, asked = recall("output.length")
        assert asked == []
        with pytest.raises(CheckError, match="Failed to transform context using expression 'output.length': "
                                             "contextTransform must return a string or array of strings. Got number"):
            grader.result()
    finally:
        code.close()
    config = {"prompts": ["Q"], "providers": ["echo"], "tests": [{"assert": [
        {"type": "context-faithfulness", "contextTransform": "output", "threshold": 0.5}]}]}
    (tmp_path / "promptfooconfig.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    code_lines = load_config(tmp_path / "promptfooconfig.yaml").code
    assert any("contextTransform (inline): output" in line for line in code_lines)
    config["tests"][0]["assert"][0]["type"] = "llm-rubric"
    (tmp_path / "promptfooconfig.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(ConfigError, match="contextTransform belongs to the context-"):
        load_config(tmp_path / "promptfooconfig.yaml")
