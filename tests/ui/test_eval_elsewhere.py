"""A promptfoo config whose providers are servers out of reach (the README's `openai:chat:…` with no key) is not
run as written: the Evaluation dock first offers to run them on the loaded model or a GGUF file, as `eval --model`
does, each keeping its label and settings; declined, they stay as written. The dock's Where line says where each
provider runs. Accepted, the cells run on the real embedded model."""

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.evaluate import read_config
from app.evaluate.routes import elsewhere
from tests.ui.conftest import wait_until
from tests.ui.test_eval_view import finished, header, write_config

CONFIG = {
    "description": "fruit",
    "prompts": ["Is {{thing}} a fruit? Answer yes or no."],
    "providers": [{"id": "openai:chat:gpt-4o-mini", "label": "greedy", "config": {"temperature": 0, "max_tokens": 6}},
                  {"id": "openai:chat:gpt-4o-mini", "label": "warm",
                   "config": {"temperature": 0.8, "seed": 1, "max_tokens": 5}}],
    "tests": [{"vars": {"thing": "an apple"}, "assert": [{"type": "icontains", "value": "yes"}]},
              {"vars": {"thing": "a stone"}, "assert": [{"type": "icontains", "value": "no"}]}],
}


@pytest.fixture(autouse=True)
def no_openai_key(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE_URL", "OPENAI_TEMPERATURE",
                 "OPENAI_MAX_TOKENS"):
        monkeypatch.delenv(name, raising=False)


def shoot(window, name: str) -> None:
    if os.environ.get("CHORUS_SHOTS"):
        window.grab().save(str(Path(os.environ["CHORUS_SHOTS"]) / name))


def test_remote_providers_are_offered_to_the_loaded_model_and_run_there_keeping_their_settings(
        loaded_window, loop, qtbot, tmp_path):
    window = loaded_window
    view = window.evals.view
    assert window.evals.open_config(write_config(tmp_path, CONFIG)), window.messages
    evaluation = window.session.evaluation
    assert view.offer.pending and not window.evals.running  # nothing runs before the answer
    assert not view.resume_button.isEnabled() and view.resume_button.text() == "Run"
    text = view.offer.text.text()
    assert "greedy (openai:chat:gpt-4o-mini): api.openai.com is not this computer, and no API key is set " \
           "($OPENAI_API_KEY)" in text and "warm (openai:chat:gpt-4o-mini)" in text
    assert "the loaded model (SmolLM2-135M-Instruct" in text and "Nothing runs until you choose" in text
    assert "api.openai.com" in view.where.text() and all(c.status == "pending" for c in evaluation.cells)
    shoot(window, "eval-offer.png")

    qtbot.mouseClick(view.offer.loaded_button, Qt.LeftButton)
    assert not view.offer.pending
    wait_until(loop, lambda: finished(window), timeout=300)
    greedy, warm = evaluation.variants
    assert (greedy.label, warm.label) == ("greedy", "warm") and greedy.provider_id == "openai:chat:gpt-4o-mini"
    assert greedy.target.kind == warm.target.kind == "local" and not greedy.target.path  # the main model
    assert (greedy.sampling["temperature"], greedy.max_tokens) == (0, 6)
    assert (warm.sampling["temperature"], warm.sampling["seed"], warm.max_tokens) == (0.8, 1, 5)
    for cell in evaluation.cells:
        assert cell.status in ("pass", "fail"), (cell.status, cell.error)
        assert cell.output.strip() and 0 < cell.generated_tokens <= evaluation.variants[cell.variant].max_tokens
    assert window.bridge.backends.specs() == []  # no server was opened: everything ran on the main model
    assert view.where.text().startswith("Where: greedy, warm → the loaded model (SmolLM2-135M-Instruct")
    assert view.where.text().endswith("instead of their servers")
    view.model.flush()
    assert header(window, 0).startswith("[greedy]") and header(window, 1).startswith("[warm]")
    assert "on local · main model" in view.model.headerData(1, Qt.Horizontal, Qt.ToolTipRole)
    view.resume_button.click()  # nothing left to run, and no second offer
    assert not view.offer.pending
    shoot(window, "eval-after-run.png")


def test_declined_the_providers_stay_as_written_and_nothing_runs(window, loop, qtbot, tmp_path):
    view = window.evals.view
    assert window.evals.open_config(write_config(tmp_path, CONFIG)), window.messages
    evaluation = window.session.evaluation
    assert view.offer.pending and not view.resume_button.isEnabled()
    qtbot.mouseClick(view.offer.keep_button, Qt.LeftButton)
    assert not view.offer.pending and not window.evals.running
    for variant in evaluation.variants:
        assert variant.target.kind == "server" and variant.target.url == "https://api.openai.com/v1"
        assert variant.target.model == "gpt-4o-mini"
    assert view.where.text() == "Where: greedy, warm → api.openai.com"
    assert view.resume_button.isEnabled() and all(c.status == "pending" for c in evaluation.cells)
    assert "kept as written" in window.statusBar().currentMessage()
    assert window.evals.elsewhere.ask(evaluation) is False  # kept: Run runs them there, with no second offer


def test_which_providers_are_out_of_reach(tmp_path, monkeypatch):
    """Another computer always (saying whether a key is set); this computer only when nothing answers there;
    only variants with cells to run."""
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9")
    config = {"prompts": ["Hi"], "tests": [{"vars": {}}],
              "providers": ["openai:chat:a", {"id": "openai:chat:b", "config": {"apiKeyEnvar": "B_KEY"}},
                            "ollama:chat:c", {"id": "openai:chat:d", "config": {"apiBaseUrl": "http://localhost:1/v1"}},
                            "echo"]}
    monkeypatch.setenv("B_KEY", "sk-something")
    evaluation = read_config(config, tmp_path).evaluation()
    probed = []
    found = elsewhere(evaluation, None, probe=lambda url: probed.append(url) or url.startswith("http://localhost"))
    assert [(f.variant, f.provider, f.why) for f in found] == [
        (0, "openai:chat:a", "api.openai.com is not this computer, and no API key is set ($OPENAI_API_KEY)"),
        (1, "openai:chat:b", "api.openai.com is not this computer (a key is set in $B_KEY)"),
        (2, "ollama:chat:c", "nothing answers at 127.0.0.1:9"),
    ]
    assert probed == ["http://127.0.0.1:9/v1", "http://localhost:1/v1"]  # this computer only, each once
    for cell in evaluation.cells:
        if cell.variant == 0:
            cell.status = "pass"
    assert [f.variant for f in elsewhere(evaluation, None, probe=lambda url: False)] == [1, 2, 3]


def test_another_services_provider_is_offered_to_the_loaded_model_and_runs_there(loaded_window, loop, qtbot,
                                                                                 tmp_path):
    window = loaded_window
    view = window.evals.view
    config = {**CONFIG, "providers": [{"id": "anthropic:messages:claude-3-5-sonnet", "label": "claude",
                                       "config": {"temperature": 0, "max_tokens": 4, "region": "eu"}}]}
    assert window.evals.open_config(write_config(tmp_path, config)), window.messages
    evaluation = window.session.evaluation
    assert view.offer.pending and not window.evals.running
    assert "claude (anthropic:messages:claude-3-5-sonnet): Chorus does not call anthropic's service" in \
        view.offer.text.text()
    shoot(view.offer, "eval-offer-anthropic.png")
    qtbot.mouseClick(view.offer.loaded_button, Qt.LeftButton)
    wait_until(loop, lambda: finished(window), timeout=300)
    (claude,) = evaluation.variants
    assert claude.label == "claude" and claude.target.kind == "local" and claude.max_tokens == 4
    assert all(cell.status in ("pass", "fail") for cell in evaluation.cells), [c.error for c in evaluation.cells]
    assert "claude → the loaded model" in view.where.text(), view.where.text()
