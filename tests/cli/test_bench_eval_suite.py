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
