"""cost from a provider's configured prices, `functions` offered as tools, the provider transform's place among
the transforms and under consent, and the note a webhook to another machine gets. (Verdicts against promptfoo's
own are in test_assert_parity.py.)"""

from app.evaluate import cells, code_checks, results_json
from app.evaluate.checks import CheckError
from app.session.evaluation import CellResult
from app.session.result import PaneResult, RunState
from tests.evaluate.test_config import config, problems


def _graded(suite, prompt_tokens: int, generated_tokens: int, text: str = "hi"):
    evaluation = suite.evaluation()
    cell = CellResult(case=0, variant=0, status="grading", prompt="p",
                      result=PaneResult(state=RunState.DONE, text=text, prompt_tokens=prompt_tokens,
                                        generated_tokens=generated_tokens))
    grader = cells.grader(evaluation, cell)
    assert grader.start() == []
    return grader.result()


def test_cost_is_tokens_times_the_configured_prices(tmp_path):
    suite = config(tmp_path, {"prompts": ["p"], "providers": [
        {"id": "openai:chat:m", "config": {"cost": 0.5, "outputCost": 0.002}}],
        "tests": [{"assert": [{"type": "cost", "threshold": 5.01}, {"type": "not-cost", "threshold": 5.02}]}]})
    assert suite.variants[0].prices == {"input": 0.5, "output": 0.002}
    result = _graded(suite, prompt_tokens=10, generated_tokens=5)  # 10 × 0.5 + 5 × 0.002 = 5.01
    assert [c.passed for c in result.component_results] == [True, False]
    assert result.component_results[1].reason == "Cost 5.0 is less than or equal to threshold 5.02"
    cell = CellResult(case=0, variant=0, status="pass", result=PaneResult(state=RunState.DONE, text="hi",
                                                                           prompt_tokens=10, generated_tokens=5))
    assert results_json.cell_record(suite.evaluation(), cell)["cost"] == 5.01  # results.json's `cost` too


def test_no_prices_no_cost(tmp_path):
    suite = config(tmp_path, {"prompts": ["p"], "providers": ["openai:chat:m"],
                              "tests": [{"assert": [{"type": "cost", "threshold": 1}]}]})
    try:
        _graded(suite, 10, 5)
    except CheckError as exc:
        assert str(exc) == "Cost assertion does not support providers that do not return cost"
    else:
        raise AssertionError("a cost without prices must be an error")
    found = problems(tmp_path, {"prompts": ["p"], "providers": [{"id": "echo", "config": {"cost": "cheap"}}]})
    assert any("a price per token is a number of dollars" in line for line in found)


def test_functions_are_offered_as_tools_and_checked(tmp_path):
    weather = {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}
    suite = config(tmp_path, {"prompts": ["p"], "providers": [
        {"id": "openai:chat:m", "config": {"functions": [weather], "function_call": {"name": "get_weather"}}}],
        "tests": [{"assert": [{"type": "is-valid-openai-function-call"}]}]})
    variant = suite.variants[0]
    assert variant.functions == [weather] and variant.tools[0]["function"]["name"] == "get_weather"
    assert variant.tool_choice == "get_weather"
    evaluation = suite.evaluation()
    cell = CellResult(case=0, variant=0, status="grading", prompt="p", result=PaneResult(
        state=RunState.DONE, text="", tool_calls=[{"id": "1", "name": "get_weather", "arguments": '{"city": "Oslo"}'}]))
    grader = cells.grader(evaluation, cell)
    grader.start()
    assert grader.result().passed


def test_provider_transform_runs_first_and_needs_consent(tmp_path):
    suite = config(tmp_path, {"prompts": ["say {{w}}"], "providers": [{"id": "echo", "transform": "file://t.js"}],
                              "tests": [{"vars": {"w": "x"}, "options": {"transform": "output + '!'"},
                                         "assert": [{"type": "equals", "value": "SAY X!"}]}]},
                   t__js="module.exports = (output) => output.toUpperCase();\n")
    assert suite.variants[0].transform == "file://t.js"
    assert any(line.startswith("provider echo transform: the file ") for line in suite.code)
    cell = CellResult(case=0, variant=0, status="grading", prompt="say x",
                      result=PaneResult(state=RunState.DONE, text="say x"))
    try:
        cells.grader(suite.evaluation(), cell, tmp_path)
    except CheckError as exc:
        assert "the provider's transform runs code, which was not allowed" in str(exc)
    else:
        raise AssertionError("a provider transform must not run without consent")
    runner = code_checks.CodeRunner(tmp_path)
    try:
        grader = cells.grader(suite.evaluation(), cell, tmp_path, code=runner)
        grader.start()
        assert grader.result().passed, grader.result()
    finally:
        runner.close()


def test_webhooks_to_other_machines_are_named_once(tmp_path):
    def suite_for(url):
        return config(tmp_path, {"prompts": ["p"], "providers": ["echo"],
                                 "tests": [{"assert": [{"type": "webhook", "value": url}]}] * 2})
    assert [n for n in suite_for("http://127.0.0.1:8/hook").notes if "webhook" in n] == []
    notes = [n for n in suite_for("https://hooks.example.com/grade").notes if "webhook" in n]
    assert notes == ["webhook assertions send each output, its prompt and its vars to "
                     "https://hooks.example.com/grade"]


def test_judge_map_text_judges(tmp_path):
    suite = config(tmp_path, {"prompts": ["p"], "providers": ["echo"], "defaultTest": {"options": {"provider": {
        "text": {"id": "openai:chat:judge", "config": {"temperature": 0.1}},
        "embedding": "openai:embeddings:text-embedding-3-small"}}},
        "tests": [{"assert": [{"type": "llm-rubric", "value": "ok",
                               "provider": {"text": "openai:chat:other", "embedding": "x"}},
                              {"type": "answer-relevance", "provider": {"embedding": "x"}}]}]})
    case = suite.cases[0]
    assert case.options.provider == {"id": "openai:chat:judge", "config": {"temperature": 0.1}}
    assert case.assertions[0].provider == "openai:chat:other"
    assert case.assertions[1].provider is None  # only an embedding: the evaluation's judge
    found = problems(tmp_path, {"prompts": ["p"], "providers": ["echo"], "tests": [{"options": {"provider": {
        "text": "openai:chat:j", "embeding": "x"}}}]})
    assert any("unknown key 'embeding' in a judge map" in line for line in found)
