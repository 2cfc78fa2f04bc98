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


def test_scenarios_cross_each_data_item_with_each_test_after_the_tests(tmp_path):
    suite = load_config(_write(tmp_path, {
        "prompts": ["Say {{greeting}} in {{language}}"], "providers": ["echo"],
        "defaultTest": {"vars": {"greeting": "hi"}, "assert": [{"type": "contains", "value": "Say"}]},
        "tests": [{"vars": {"language": "Latin"}}],
        "scenarios": [{"description": "languages",
                       "config": [{"vars": {"language": "French"}, "options": {"prefix": "dropped "}},
                                  {"vars": {"language": "German"}, "assert": [{"type": "icontains", "value": "g"}]}],
                       "tests": [{"vars": {"greeting": "hello"}, "description": "hello"},
                                 {"vars": {"greeting": "bye"}, "assert": [{"type": "contains", "value": "bye"}]}]}]}))
    got = [(c.vars, [a.type for a in c.assertions], c.options.prefix) for c in suite.cases]
    assert got == [
        ({"greeting": "hi", "language": "Latin"}, ["contains"], ""),
        ({"greeting": "hello", "language": "French"}, ["contains"], ""),
        ({"greeting": "bye", "language": "French"}, ["contains", "contains"], ""),
        ({"greeting": "hello", "language": "German"}, ["contains", "icontains"], ""),
        ({"greeting": "bye", "language": "German"}, ["contains", "icontains", "contains"], "")]
    assert suite.cases[1].description == "hello"


def test_scenarios_without_tests_add_no_empty_test(tmp_path):
    suite = load_config(_write(tmp_path, {"prompts": ["{{x}}"], "providers": ["echo"],
                                          "scenarios": [{"config": [{"vars": {"x": "a"}}, {"vars": {"x": "b"}}]}]}))
    assert [c.vars for c in suite.cases] == [{"x": "a"}, {"x": "b"}]


def test_a_ref_to_an_assertion_template_is_the_template_with_the_keys_beside_it(tmp_path):
    suite = load_config(_write(tmp_path, {
        "assertionTemplates": {"polite": {"type": "icontains", "value": "please", "metric": "manners"}},
        "prompts": ["{{x}}"], "providers": ["echo"],
        "tests": [{"vars": {"x": "please"}, "assert": [{"$ref": "#/assertionTemplates/polite"},
                                                       {"$ref": "#/assertionTemplates/polite", "weight": 2}]}]}))
    first, second = suite.cases[0].assertions
    assert (first.type, first.value, first.metric, first.weight) == ("icontains", "please", "manners", 1.0)
    assert second.weight == 2


def test_a_ref_that_points_at_nothing_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"tests\[0\].assert\[0\]: \$ref '#/assertionTemplates/gone' points at"):
        load_config(_write(tmp_path, {"prompts": ["x"], "providers": ["echo"],
                                      "tests": [{"assert": [{"$ref": "#/assertionTemplates/gone"}]}]}))


def test_an_assertion_s_description_is_kept_and_shown_with_its_verdict(tmp_path):
    from app.ui.evaluate.notes import cell_tooltip, verdict_note

    suite = load_config(_write(tmp_path, {"prompts": ["hello"], "providers": ["echo"], "tests": [
        {"assert": [{"type": "contains", "value": "hell", "description": "greets the user"},
                    {"type": "contains", "value": "bye", "description": "says goodbye"}]}]}))
    cell = _run(suite, tmp_path).cells[0]
    assert cell.grading.component_results[0].assertion.description == "greets the user"
    assert "greets the user (contains): pass" in cell_tooltip(cell)
    assert verdict_note(cell) == 'says goodbye (contains): Expected output to contain "bye"'


def test_derived_metrics_are_computed_on_each_column_s_named_score_sums(tmp_path):
    from app.evaluate import results_json, stats

    has = [{"type": "contains", "value": "a", "metric": "hasA"}, {"type": "contains", "value": "b", "metric": "hasB"}]
    suite = load_config(_write(tmp_path, {
        "prompts": ["{{x}}"], "providers": ["echo"], "tests": [{"vars": {"x": x}, "assert": has} for x in
                                                               ("ab", "a", "c")],
        "derivedMetrics": [{"name": "ratio", "value": "hasB / hasA"}, {"name": "both", "value": "2^hasA - ratio"}]}))
    evaluation = _run(suite, tmp_path)
    named = results_json.results_document(evaluation)["results"]["prompts"][0]["metrics"]["namedScores"]
    assert named == {"hasA": 2.0, "hasB": 1.0, "ratio": 0.5, "both": 3.5}
    column = stats.matrix(evaluation).columns[0].stats
    assert (column.named_scores["ratio"], column.named_scores["hasA"]) == (0.5, 2 / 3)  # means beside derived


def test_a_derived_metric_mathjs_cannot_read_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"derivedMetrics\[0\]: f1: cannot read '2 \* \(a'"):
        load_config(_write(tmp_path, {"prompts": ["x"], "providers": ["echo"],
                                      "derivedMetrics": [{"name": "f1", "value": "2 * (a"}]}))


class _RowsServer:
    """The dataset viewer's /rows on 127.0.0.1: 250 rows of a real-shaped answer, paged as asked."""

    def __init__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import parse_qs, urlparse

        self.asked = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                import json

                query = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
                server.asked.append(query)
                offset, length = int(query["offset"]), int(query["length"])
                rows = [{"row_idx": i, "row": {"question": f"q{i}", "answer": str(i * 2)}, "truncated_cells": []}
                        for i in range(offset, min(offset + length, 250))]
                body = json.dumps({"features": [], "rows": rows, "num_rows_total": 250,
                                   "num_rows_per_page": 100}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_port}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self):
        self.http.shutdown()
        self.http.server_close()


def test_huggingface_dataset_tests_are_the_rows_of_the_dataset_viewer(tmp_path, monkeypatch):
    rows = _RowsServer()
    monkeypatch.setenv("CHORUS_HF_DATASETS_SERVER", rows.url)
    try:
        suite = load_config(_write(tmp_path, {"prompts": ["{{question}}"], "providers": ["echo"],
                                              "tests": "huggingface://datasets/org/qa?split=train&limit=150"}))
    finally:
        rows.close()
    assert len(suite.cases) == 150 and suite.cases[149].vars == {"question": "q149", "answer": "298"}
    assert [(q["dataset"], q["split"], q["config"], q["offset"], q["length"]) for q in rows.asked] == [
        ("org/qa", "train", "default", "0", "100"), ("org/qa", "train", "default", "100", "50")]


def test_huggingface_dataset_tests_without_network_are_one_clear_refusal(tmp_path, monkeypatch):
    import socket

    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("CHORUS_HF_DATASETS_SERVER", f"http://127.0.0.1:{port}")
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, {"prompts": ["{{q}}"], "providers": ["echo"],
                                      "tests": ["huggingface://datasets/org/qa"]}))
    assert caught.value.problems == [
        f"tests[0]: huggingface://datasets/org/qa: cannot reach http://127.0.0.1:{port}: "
        + caught.value.problems[0].split(f"{port}: ", 1)[1]]
    assert "\n" not in caught.value.problems[0]


@pytest.mark.parametrize("entry, language", [("file://make.py:tests", "Python"), ("file://make.js", "JavaScript"),
                                             ("file://make.ts:generate", "TypeScript")])
def test_a_test_generator_is_refused_by_name_whether_or_not_it_names_a_function(tmp_path, entry, language):
    (tmp_path / entry.removeprefix("file://").split(":")[0]).write_text("// makes tests\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, {"prompts": ["x"], "providers": ["echo"], "tests": [entry]}))
    (problem,) = caught.value.problems
    name = entry.removeprefix("file://")
    assert f"the test generator '{name}', in {language} (tests made by code), is not supported by Chorus" in problem


def test_tests_kept_elsewhere_are_refused_by_name(tmp_path):
    with pytest.raises(ConfigError, match=r"tests\[0\]: reading tests from 'langfuse://traces' is not supported"):
        load_config(_write(tmp_path, {"prompts": ["x"], "providers": ["echo"], "tests": ["langfuse://traces?limit=5"]}))


def test_nunjucks_filters_are_code_the_user_must_allow_then_run_in_the_embedded_v8(tmp_path):
    config = {"nunjucksFilters": {"shout": "./shout.js"}, "prompts": ["Dear {{ name | shout('!') }}"],
              "providers": ["echo"], "tests": [{"vars": {"name": "ann"}}]}
    path = _write(tmp_path, config, **{"shout.js": "module.exports = (s, end) => s.toUpperCase() + end;"})
    suite = load_config(path)
    assert suite.code == [f"nunjucks filter shout: the file {tmp_path / 'shout.js'}"]
    cell = _run(suite, tmp_path).cells[0]  # not allowed: nothing runs
    assert cell.status == "error" and "not allowed" in cell.error
    code = CodeRunner(tmp_path)
    try:
        cell = _run(load_config(path), tmp_path, code).cells[0]
    finally:
        code.close()
    assert cell.status == "pass" and cell.result.text == "Dear ANN!"


def test_a_nunjucks_filter_that_is_not_javascript_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"nunjucksFilters.up: a filter in up.py is not supported"):
        load_config(_write(tmp_path, {"nunjucksFilters": {"up": "up.py"}, "prompts": ["x"], "providers": ["echo"]},
                           **{"up.py": "def up(s): return s"}))


def test_what_the_format_adds_is_kept_in_the_session_file(tmp_path):
    from app.session import evaluation_file

    (tmp_path / "f.js").write_text("module.exports = s => s;", encoding="utf-8")
    evaluation = load_config(_write(tmp_path, {
        "prompts": [{"raw": "exec:./x.sh", "label": "made", "config": {"temperature": 0.5}}], "providers": ["echo"],
        "derivedMetrics": [{"name": "r", "value": "a / b"}], "nunjucksFilters": {"f": "f.js"},
        "tests": [{"assert": [{"type": "contains", "value": "x", "description": "has x"}]}]})).evaluation()
    again = evaluation_file.decode(evaluation_file.encode(evaluation))
    assert [(m.name, m.value) for m in again.derived_metrics] == [("r", "a / b")]
    assert again.nunjucks_filters == {"f": str(tmp_path / "f.js")}
    assert (again.variants[0].prompt.exec, again.variants[0].prompt.config) == (str(tmp_path / "x.sh"),
                                                                                {"temperature": 0.5})
    assert again.cases[0].assertions[0].description == "has x"
