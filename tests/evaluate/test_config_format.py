"""The parts of promptfoo's config format read as promptfoo reads them: prompt files per row, `exec:` prompts
(run only once allowed), chat prompts written in YAML, a prompt's own config, scenarios, `$ref` to
assertionTemplates, an assertion's description, derived metrics. Echo cells: no model is needed to check what
the config means."""

import stat

import pytest
import yaml

from app.evaluate import ConfigError, load_config
from app.evaluate.code_checks import CodeRunner
from app.evaluate.runner import EvaluationRunner
from app.evaluate.templates import chat_messages
from app.session import SessionRunner


def _write(tmp_path, config, **files):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _run(suite, tmp_path, code=None):
    evaluation = suite.evaluation()
    runner = EvaluationRunner(evaluation, SessionRunner(None), lambda target: "none", tmp_path, code=code)
    runner.start()
    assert runner.drive(timeout=60)
    return evaluation


def test_a_csv_prompt_file_is_one_labelled_prompt_per_row(tmp_path):
    csv_text = 'prompt,label\n"Translate to French: {{text}}",French\n"Translate to German: {{text}}",\n'
    suite = load_config(_write(tmp_path, {"prompts": ["file://prompts.csv"], "providers": ["echo"]},
                               **{"prompts.csv": csv_text}))
    assert [(p.raw, p.label) for p in suite.prompts] == [
        ("Translate to French: {{text}}", "French"),
        ("Translate to German: {{text}}", "Prompt 2 - Translate to German: {{text}}")]


def test_a_csv_prompt_file_without_commas_is_one_prompt_per_line_and_an_entry_label_prefixes_rows(tmp_path):
    _write(tmp_path, {}, **{"lines.csv": "prompt\nSay hi to {{name}}\n\nSay bye to {{name}}\n"})
    suite = load_config(_write(tmp_path, {"prompts": [{"id": "file://lines.csv", "label": "Greet"}],
                                          "providers": [{"id": "echo", "prompts": ["Greet"]}]}))
    assert [(p.raw, p.label) for p in suite.prompts] == [("Say hi to {{name}}", "Greet: Say hi to {{name}}"),
                                                         ("Say bye to {{name}}", "Greet: Say bye to {{name}}")]
    assert len(suite.variants) == 2


def _script(tmp_path, text="#!/bin/sh\necho \"Tell me about {{topic}} $1\"\n"):
    script = tmp_path / "make-prompt.sh"
    script.write_text(text, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_an_exec_prompt_is_code_the_user_must_allow_and_never_runs_without_it(tmp_path):
    marker = tmp_path / "ran"
    _script(tmp_path, f"#!/bin/sh\ntouch {marker}\necho hello\n")
    suite = load_config(_write(tmp_path, {"prompts": ["exec:./make-prompt.sh"], "providers": ["echo"]}))
    assert suite.code == [f"prompt: the command {tmp_path / 'make-prompt.sh'}"]
    evaluation = _run(suite, tmp_path)  # no CodeRunner: the user has not agreed
    assert evaluation.cells[0].status == "error" and "not allowed" in evaluation.cells[0].error
    assert not marker.exists()


def test_an_exec_prompt_s_output_is_the_template_rendered_with_the_vars(tmp_path):
    _script(tmp_path)
    suite = load_config(_write(tmp_path, {
        "prompts": [{"raw": "exec:./make-prompt.sh", "label": "generated", "config": {"style": "short"}}],
        "providers": ["echo"], "tests": [{"vars": {"topic": "owls"}}]}))
    assert suite.prompts[0].raw.startswith("#!/bin/sh")  # what promptfoo shows: the script
    code = CodeRunner(tmp_path)
    try:
        cell = _run(suite, tmp_path, code).cells[0]
    finally:
        code.close()
    context = '{"vars":{"topic":"owls"},"provider":{"id":"echo","label":"echo"},"config":{"style":"short"}}'
    assert cell.status == "pass", cell.error
    assert cell.result.text == f"Tell me about owls {context}"


def test_a_failing_exec_prompt_is_that_cell_s_error(tmp_path):
    _script(tmp_path, "#!/bin/sh\necho broken >&2\nexit 3\n")
    suite = load_config(_write(tmp_path, {"prompts": ["file://make-prompt.sh"], "providers": ["echo"]}))
    code = CodeRunner(tmp_path)
    try:
        cell = _run(suite, tmp_path, code).cells[0]
    finally:
        code.close()
    assert cell.status == "error" and "exited with 3: broken" in cell.error


def test_a_chat_prompt_written_as_yaml_messages_is_a_chat():
    prompt = "- role: system\n  content: Be brief.\n- role: user\n  content: Hi Ann"
    assert chat_messages(prompt) == [{"role": "system", "content": "Be brief."},
                                     {"role": "user", "content": "Hi Ann"}]


def test_a_prompt_s_own_config_goes_over_its_provider_s(tmp_path):
    suite = load_config(_write(tmp_path, {
        "prompts": [{"raw": "hot {{x}}", "label": "hot", "config": {"temperature": 0.9, "max_tokens": 7}}, "cold"],
        "providers": [{"id": "openai:chat:m", "config": {"temperature": 0.1, "apiBaseUrl": "http://127.0.0.1:9/v1"}}]}))
    hot, cold = suite.variants
    assert (hot.sampling["temperature"], hot.max_tokens) == (0.9, 7)
    assert cold.sampling["temperature"] == 0.1


def test_a_prompt_s_config_with_a_setting_its_provider_does_not_take_is_named(tmp_path):
    with pytest.raises(ConfigError, match="with prompt 'p'.*provider setting 'bogus'"):
        load_config(_write(tmp_path, {"prompts": [{"raw": "x", "label": "p", "config": {"bogus": 1}}],
                                      "providers": ["openai:chat:m"]}))
