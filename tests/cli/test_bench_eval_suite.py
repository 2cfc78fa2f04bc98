"""`bench --eval`'s suite: the same cases plain and judged, on Chorus's providers or on a server's (promptfoo)."""

import yaml

from app.bench.eval_suite import CASES, RUBRIC, write_suite
from app.evaluate import load_config
from app.models import default_model_path


def test_the_plain_and_the_judged_suite_have_the_same_cells_and_only_one_is_graded(tmp_path):
    model = default_model_path()
    plain = load_config(write_suite(tmp_path / "plain", model, judged=False)).evaluation()
    judged = load_config(write_suite(tmp_path / "judged", model, judged=True)).evaluation()
    assert len(plain.cells) == len(judged.cells) == 2 * CASES
    assert [v.label for v in plain.variants] == [v.label for v in judged.variants] == ["greedy", "sampled"]
    config = yaml.safe_load((tmp_path / "judged" / "promptfooconfig.yaml").read_text())
    assert config["defaultTest"]["assert"] == [{"type": "llm-rubric", "value": RUBRIC}]
    assert "defaultTest" not in yaml.safe_load((tmp_path / "plain" / "promptfooconfig.yaml").read_text())


def test_promptfoos_suite_names_the_servers_providers(tmp_path):
    providers = [{"id": "openai:chat:smollm2", "label": "greedy", "config": {"apiBaseUrl": "http://x/v1"}}]
    path = write_suite(tmp_path, default_model_path(), judged=False, providers=providers)
    assert yaml.safe_load(path.read_text())["providers"] == providers
    assert (tmp_path / "cases.csv").read_text().count("\n") == CASES + 1


def test_the_suite_as_written_renders_the_same_system_prompt_and_keeps_its_judges_settings(tmp_path):
    """The held-out shape: a system prompt file, providers with their settings written, cases inline, a judge
    asking for 96 tokens; Chorus runs it as `eval --judge local`, which keeps the judge's settings."""
    from app.bench.eval_suite import JUDGE_MAX_TOKENS, SYSTEM, WRITTEN, write_written_suite
    from app.evaluate import cells
    from app.evaluate.checks import Output
    from app.evaluate.scoring import CellGrader

    path = write_written_suite(tmp_path / f"{WRITTEN}_judged", judged=True)
    evaluation = load_config(path, judge_given=True).evaluation(judge="local")
    assert len(evaluation.cells) == 2 * CASES
    request = cells.prepare(evaluation, evaluation.cells[0]).request
    assert request.messages[0] == {"role": "system", "content": SYSTEM}
    [call] = CellGrader(evaluation.cases[0], Output(text="Rivers flow."), "p").start()
    assert call.request.max_tokens == JUDGE_MAX_TOKENS
    plain = load_config(write_written_suite(tmp_path / f"{WRITTEN}_plain", judged=False), judge_given=True)
    assert all(not case.assertions for case in plain.cases)
