"""Reading promptfoo configs: prompts, providers, CSV tests, defaultTest, expansion, and one error for all problems."""

import textwrap

import pytest
import yaml

from app.evaluate import cells, load_config, read_vars_file
from app.evaluate.assertion_strings import assertion_from_string
from app.evaluate.errors import ConfigError


def write(tmp_path, name, text, encoding="utf-8"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n") if isinstance(text, str) else text, encoding=encoding)
    return path


def config(tmp_path, data, **files):
    for name, text in files.items():
        write(tmp_path, name.replace("__", "."), text)
    return load_config(write(tmp_path, "promptfooconfig.yaml", yaml.safe_dump(data)))


def problems(tmp_path, data, **files):
    with pytest.raises(ConfigError) as caught:
        config(tmp_path, data, **files)
    return caught.value.problems


# --- prompts ---------------------------------------------------------------------------------------------------
def test_prompt_forms(tmp_path):
    suite = config(tmp_path, {
        "prompts": ["Hello {{name}}", "file://prompts.txt", "file://chat.json", "file://long.md",
                    {"raw": "What is 1/2?", "label": "half"}, {"id": "file://tpl.j2", "label": "jinja"}],
        "providers": ["echo"]},
        prompts__txt="---\nFirst {{x}}\n  ---  \n\nSecond\nline\n---\n",
        chat__json='[{"role": "user", "content": "{{q}}"}]', long__md="# Title\n" + "x" * 80, tpl__j2="T {{x}}")
    labels = [p.label for p in suite.prompts]
    raws = [p.raw for p in suite.prompts]
    assert raws[:3] == ["Hello {{name}}", "First {{x}}", "Second\nline"]
    assert labels[:3] == ["Hello {{name}}", "prompts.txt: First {{x}}", "prompts.txt: Second\nline"]
    assert raws[3] == '[{"role":"user","content":"{{q}}"}]' and labels[3] == f"chat.json: {raws[3]}"
    assert labels[4] == "long.md: " + ("# Title\n" + "x" * 80)[:50] + "..."
    assert (raws[5], labels[5]) == ("What is 1/2?", "half")
    assert (raws[6], labels[6]) == ("T {{x}}", "jinja")


def test_legacy_prompt_map_and_glob(tmp_path):
    write(tmp_path, "a.txt", "A {{x}}")
    write(tmp_path, "b.txt", "B {{x}}")
    suite = config(tmp_path, {"prompts": {"file://a.txt": "first"}, "providers": ["echo"]})
    assert [(p.raw, p.label) for p in suite.prompts] == [("A {{x}}", "first: a.txt: A {{x}}")]
    suite = config(tmp_path, {"prompts": ["file://*.txt"], "providers": ["echo"]})
    assert [p.raw for p in suite.prompts] == ["A {{x}}", "B {{x}}"]


def test_prompts_promptfoo_reads_as_templates(tmp_path):
    """promptfoo's maybeFilePath and its glob fallback: a "." at the very end, a ":" part that is no file name, or a
    path pattern ("?", "{{x}}") that matches no file leave the string a template."""
    written = ["Name the capital city of {{country}}.", "What is 1/2?", "Is {{a}}/{{b}} whole?",
               "Open notes.txt: summarise: briefly", {"raw": "Ratio: 3/4 [exact]", "label": "ratio"}]
    suite = config(tmp_path, {"prompts": written, "providers": ["echo"]})
    assert [(p.raw, p.label) for p in suite.prompts] == [(w, w) for w in written[:-1]] + [
        ("Ratio: 3/4 [exact]", "ratio")]


def test_prompts_promptfoo_reads_as_paths_are_reported(tmp_path):
    found = problems(tmp_path, {"prompts": ["Compare a/b", "Use e.g.", "file://gen.py", "Hi {{ x",
                                            {"raw": "Say e.g.", "label": "eg"}],
                                "providers": ["echo"]}, gen__py="def f(): pass")
    assert any("'Compare a/b': no such prompt file" in p and "`file://prompt.txt`" in p for p in found)
    assert any("'Use e.g.': no such prompt file" in p for p in found)
    assert any("'Say e.g.': no such prompt file" in p for p in found)
    assert problems(tmp_path, {"prompts": ["langfuse://greeting"], "providers": ["echo"]}) == [
        "prompts[0]: a prompt kept in Langfuse, Portkey or Helicone is not supported by Chorus"]
    assert any("a prompt function" in p for p in found)
    assert any("template error" in p for p in found)


# --- providers -------------------------------------------------------------------------------------------------
def test_provider_mapping(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:11500")
    monkeypatch.delenv("LLAMA_BASE_URL", raising=False)
    for name in ("OPENAI_TEMPERATURE", "OPENAI_MAX_TOKENS", "OPENAI_TOP_P"):
        monkeypatch.delenv(name, raising=False)
    write(tmp_path, "m.gguf", "not really a model")
    suite = config(tmp_path, {"prompts": ["p"], "providers": [
        {"id": "openai:chat:gpt-4o-mini", "config": {"apiBaseUrl": "http://127.0.0.1:8080/v1/"}},
        {"id": "openai:chat:gpt-4o-mini", "label": "warm", "config": {"temperature": 0.7, "max_tokens": 32,
                                                                      "seed": 3, "stop": "END"}},
        {"ollama:chat:llama3": {"config": {"num_predict": 40, "top_k": 5, "repeat_last_n": 32}}},
        "llama:local", "echo", "file://m.gguf",
        {"id": "openai:chat:x", "config": {"response_format": {"type": "json_schema", "json_schema": {
            "schema": {"type": "object"}}}}}]})
    cold, warm, ollama, llama, echo, gguf, schema = suite.variants
    assert cold.target.url == "http://127.0.0.1:8080/v1" and cold.target.model == "gpt-4o-mini"
    assert (cold.sampling["temperature"], cold.sampling["top_p"], cold.max_tokens) == (0.0, 1.0, 1024)
    assert cold.label == "openai:chat:gpt-4o-mini" and warm.label == "warm"
    assert (warm.sampling["temperature"], warm.sampling["seed"], warm.max_tokens, warm.stop) == (0.7, 3, 32, ["END"])
    assert ollama.target.url == "http://127.0.0.1:11500/v1" and ollama.target.model == "llama3"
    assert (ollama.max_tokens, ollama.sampling["top_k"], ollama.sampling["penalty_last_n"]) == (40, 5, 32)
    assert llama.target.url == "http://localhost:8080/v1" and llama.target.raw_prompt and llama.max_tokens == 512
    assert echo.target.kind == "echo"
    assert gguf.target.kind == "local" and gguf.target.path == str(tmp_path / "m.gguf")
    assert schema.json_schema == {"type": "object"}
    assert warm.request("p", None).messages == [{"role": "user", "content": "p"}]
    assert llama.request("raw text", None).prompt == "raw text"


def test_provider_prompt_restriction(tmp_path):
    suite = config(tmp_path, {"prompts": [{"raw": "A", "label": "short"}, {"raw": "B", "label": "long"},
                                          "file://p.txt"],
                              "providers": [{"id": "echo", "prompts": ["short"]},
                                            {"id": "echo", "label": "e2", "prompts": ["p.txt"]}]}, p__txt="C")
    assert [v.title for v in suite.variants] == ["[echo] short", "[e2] p.txt: C"]  # exact label or "label:" prefix


def test_provider_problems(tmp_path):
    found = problems(tmp_path, {"prompts": ["p"], "providers": [
        "anthropic:messages:claude-3", {"id": "openai:chat:m", "config": {"apiKey": "sk-x", "mirostat": 1}},
        {"id": "echo", "transform": 3}, {"id": "openai:chat:m", "config": {"temperature": 9}},
        {"id": "echo", "prompts": ["nope"]}, {"label": "no id"}, "file://missing.gguf"]})
    text = "\n".join(found)
    for expected in ("'anthropic:messages:claude-3' cannot run here as written: run it on a local model with --model",
                     "'mirostat' is not supported",
                     "providers[2].transform: a transform is JavaScript, or a file:// path",
                     "temperature must be in [0, 2], got 9", "no prompt is labelled nope",
                     "providers[5].id: missing", "model file not found"):
        assert expected in text, (expected, text)


# --- tests: CSV --------------------------------------------------------------------------------------------------
CSV = ('\ufeffquestion ,__expected,__expected2,__expected3,__description,__metric,__threshold,'
       '__metadata:topic,__metadata:tags[],__config:__expected2:threshold\n'
       '"What is 2+2, roughly?",contains:4,"not-icontains:FIVE",,sum,math,0.5,arith,"a,b\\,c",0.9\n'
       '"Two\nlines",  llm-rubric: is polite ,"contains-any:x, y",equals me,,,,,,\n'
       'plain,levenshtein(2):abc,icontains-all:A,ruby:output.length > 1,,,abc,,,\n')


def test_csv_tests(tmp_path):
    write(tmp_path, "tests.csv", CSV)
    *_, third = config(tmp_path, {"prompts": ["Q: {{question}}"], "providers": ["echo"],
                                  "tests": "file://tests.csv"}).cases
    assert (third.assertions[2].type, third.assertions[2].value) == ("ruby", "output.length > 1")  # as promptfoo
    write(tmp_path, "tests.csv", CSV.replace("ruby:output.length > 1", "starts-with:p"))
    first, second, third = config(tmp_path, {"prompts": ["Q: {{question}}"], "providers": ["echo"],
                                             "tests": "file://tests.csv"}).cases
    assert first.vars == {"question": "What is 2+2, roughly?"}  # header trimmed, BOM dropped, quotes honoured
    assert first.description == "sum" and first.threshold == 0.5
    assert [(a.type, a.value, a.metric, a.threshold) for a in first.assertions] == [
        ("contains", "4", "math", None), ("not-icontains", "FIVE", "math", 0.9)]
    assert first.metadata == {"topic": "arith", "tags": ["a", "b,c"], "threshold": 0.9}
    assert second.vars == {"question": "Two\nlines"} and second.description == "Row #2"
    assert [(a.type, a.value) for a in second.assertions] == [
        ("llm-rubric", " is polite"), ("contains-any", ["x", "y"]), ("equals", "equals me")]  # rubric not trimmed
    assert second.threshold is None
    assert third.threshold is None  # "abc" is not a number: unset
    assert [(a.type, a.value, a.threshold) for a in third.assertions] == [
        ("levenshtein", "abc", 2.0), ("icontains-all", ["A"], None), ("starts-with", "p", 0.75)]


def test_csv_threshold_zero_is_kept_and_bad_rows_are_named(tmp_path):
    write(tmp_path, "t.csv", "x,__threshold\na,0\nb,\nc,d,e\n")
    found = problems(tmp_path, {"prompts": ["{{x}}"], "providers": ["echo"], "tests": "file://t.csv"})
    assert found == [f"{tmp_path / 't.csv'}:4: 3 fields, but the header has 2"]
    write(tmp_path, "t.csv", "x,__threshold\na,0\nb,\n")
    cases = config(tmp_path, {"prompts": ["{{x}}"], "providers": ["echo"], "tests": "file://t.csv"}).cases
    assert [c.threshold for c in cases] == [0.0, None]


def test_csv_delimiter(tmp_path, monkeypatch):
    monkeypatch.setenv("PROMPTFOO_CSV_DELIMITER", ";")
    write(tmp_path, "t.csv", "x;__expected\na,b;contains:a\n")
    (case,) = config(tmp_path, {"prompts": ["{{x}}"], "providers": ["echo"], "tests": "file://t.csv"}).cases
    assert case.vars == {"x": "a,b"} and case.assertions[0].value == "a"


@pytest.mark.parametrize("cell, expected", [
    ("contains:foo", {"type": "contains", "value": "foo"}),
    ("not-contains:foo", {"type": "not-contains", "value": "foo"}),
    ("contains: foo ", {"type": "contains", "value": "foo"}),
    ("contains-all:a, b ,c", {"type": "contains-all", "value": ["a", "b", "c"]}),
    ("is-json", {"type": "is-json", "value": None}),
    ("is-json: {\"type\": \"object\"}", {"type": "is-json", "value": ' {"type": "object"}'}),  # raw value
    ("levenshtein:foo", {"type": "levenshtein", "value": "foo", "threshold": 0.75}),
    ("similar(0.9):foo", {"type": "similar", "value": "foo", "threshold": 0.9}),
    ("similar:foo", {"type": "similar", "value": "foo", "threshold": 0.8}),
    ("latency(500)", {"type": "latency", "value": None, "threshold": 500.0}),
    ("grade:Is it kind?", {"type": "llm-rubric", "value": "Is it kind?"}),
    ("llm-rubric: Is it kind?", {"type": "llm-rubric", "value": " Is it kind?"}),
    ("fn:output.length", {"type": "javascript", "value": "output.length"}),
    ("file://check.py", {"type": "python", "value": "check.py"}),
    ("file://check.js", {"type": "javascript", "value": "file://check.js"}),
    ("Paris", {"type": "equals", "value": "Paris"}),
    ("contains", {"type": "contains", "value": None}),
    ("unknown-type:x", {"type": "equals", "value": "unknown-type:x"}),
])
def test_assertion_strings(cell, expected):
    assert assertion_from_string(cell) == expected


# --- tests: YAML, defaultTest, expansion --------------------------------------------------------------------------
def test_default_test_merge_and_var_expansion(tmp_path):
    suite = config(tmp_path, {
        "prompts": ["{{a}} {{b}} {{n}}"], "providers": ["echo"],
        "defaultTest": {"vars": {"b": "B0", "n": "N"}, "assert": [{"type": "contains", "value": "x"}],
                        "threshold": 0.5, "metadata": {"m": 1}, "options": {"prefix": "P:"}},
        "tests": [{"vars": {"a": ["1", "2"], "b": ["x", "y"], "n": [1, 2]},
                   "assert": [{"type": "equals", "value": "z"}], "metadata": {"k": 2}},
                  {"vars": {"a": ["3", "4"]}, "threshold": 0.9, "options": {"disableVarExpansion": True,
                                                                            "disableDefaultAsserts": True}}]})
    expanded, whole = suite.cases[:4], suite.cases[4]
    # the default's vars come first in the merged vars (b, n, a), and the first var varies slowest, as in promptfoo
    assert [(c.vars["a"], c.vars["b"]) for c in expanded] == [("1", "x"), ("2", "x"), ("1", "y"), ("2", "y")]
    assert all(c.vars["n"] == [1, 2] for c in expanded)  # not a list of strings: kept whole
    first = expanded[0]
    assert [a.type for a in first.assertions] == ["contains", "equals"]  # the default's come first
    assert first.threshold == 0.5 and first.metadata == {"m": 1, "k": 2} and first.options.prefix == "P:"
    assert whole.vars == {"b": "B0", "n": "N", "a": ["3", "4"]} and whole.threshold == 0.9
    assert [a.type for a in whole.assertions] == [] and whole.options.prefix == "P:"
    evaluation = suite.evaluation()
    prepared = cells.prepare(evaluation, evaluation.cell(0, 0))
    assert prepared.given_output == "P:1 x [1,2]"  # echo: the rendered prompt, prefix included


def test_no_tests_is_one_empty_test_and_provider_output(tmp_path):
    suite = config(tmp_path, {"prompts": ["hi"], "providers": ["openai:chat:m"]})
    assert len(suite.cases) == 1 and suite.cases[0].vars == {}
    suite = config(tmp_path, {"prompts": ["hi"], "providers": ["openai:chat:m"],
                              "tests": [{"providerOutput": {"a": 1}}, {"vars": {"v": "x"}}]})
    evaluation = suite.evaluation()
    assert cells.prepare(evaluation, evaluation.cell(0, 0)).given_output == '{"a": 1}'
    second = cells.prepare(evaluation, evaluation.cell(1, 0))
    assert second.given_output is None and second.request.messages == [{"role": "user", "content": "hi"}]


def test_test_files(tmp_path):
    write(tmp_path, "t.yaml", "- vars: {x: a}\n- vars: {x: b}\n  assert: [{type: contains, value: b}]\n")
    write(tmp_path, "t.jsonl", '{"vars": {"x": "c"}}\n\n{"vars": {"x": "d"}}\n')
    suite = config(tmp_path, {"prompts": ["{{x}}"], "providers": ["echo"],
                              "tests": ["file://t.yaml", {"vars": {"x": "inline"}}, "file://t.jsonl"]})
    assert [c.vars["x"] for c in suite.cases] == ["a", "b", "inline", "c", "d"]


def test_perplexity_asks_for_logprobs_and_chat_prompts_become_messages(tmp_path):
    suite = config(tmp_path, {"prompts": ['[{"role": "system", "content": "S"}, {"role": "user", "content": "{{q}}"}]'],
                              "providers": ["openai:chat:m"],
                              "tests": [{"vars": {"q": 'say "hi"\n'}, "assert": [
                                  {"type": "perplexity", "threshold": 10}]}]})
    evaluation = suite.evaluation()
    prepared = cells.prepare(evaluation, evaluation.cell(0, 0))
    assert prepared.request.logprobs == 1
    assert prepared.request.messages == [{"role": "system", "content": "S"}, {"role": "user", "content": 'say "hi"'}]


def test_every_problem_in_one_error(tmp_path):
    found = problems(tmp_path, {
        "prompts": ["ok {{x}}"], "providers": ["echo", "bedrock:claude"], "outputPat": "x",
        "tests": [{"vars": {"x": 1}, "assert": [{"type": "ruby", "value": "1", "transform": "file://t.rb"},
                                                {"type": "similar:manhattan", "value": "a"},
                                                {"type": "contains", "valeu": "typo"},
                                                {"type": "cost", "threshold": "cheap"}, {"type": "foo-bar"}]},
                  {"assert": [{"type": "select-best", "value": "best"}], "options": {"transform": "file://none.js"}},
                  "file://missing.csv"]})
    text = "\n".join(found)
    for expected in ("unknown key 'outputPat'", "'bedrock:claude' cannot run here as written",
                     "the transform 't.rb' is Ruby, which promptfoo does not run as a transform",
                     "unknown similarity metric 'manhattan'",
                     "tests[0].assert[2]: unknown key 'valeu'", "tests[0].assert[3].threshold",
                     "'foo-bar' is not supported by Chorus (not a promptfoo assertion type)",
                     "no such file: ", "test file not found"):
        assert expected in text, (expected, text)
    assert len(found) >= 9


def test_plain_vars_files(tmp_path):
    csv_path = write(tmp_path, "v.csv", "name,topic\nAda,maths\nAlan,logic\n")
    assert [t["vars"] for t in read_vars_file(csv_path)] == [{"name": "Ada", "topic": "maths"},
                                                              {"name": "Alan", "topic": "logic"}]
    jsonl = write(tmp_path, "v.jsonl", '{"name": "Ada"}\n{"vars": {"name": "Alan"}, "assert": []}\n')
    assert read_vars_file(jsonl) == [{"vars": {"name": "Ada"}}, {"vars": {"name": "Alan"}, "assert": []}]
    with pytest.raises(ConfigError, match="not JSON"):
        read_vars_file(write(tmp_path, "bad.jsonl", "{oops\n"))


def test_file_vars_are_loaded(tmp_path):
    write(tmp_path, "doc.txt", "Some long document.\n")
    write(tmp_path, "data.json", '{"k": [1, 2]}')
    suite = config(tmp_path, {"prompts": ["{{doc}} {{ data.k }}"], "providers": ["echo"],
                              "tests": [{"vars": {"doc": "file://doc.txt", "data": "file://data.json",
                                                  "many": ["file://doc.txt", "x"]}}]})
    first, second = suite.cases  # a list var whose first item is a string expands, after loading
    assert first.vars["doc"] == "Some long document.\n" and first.vars["data"] == {"k": [1, 2]}
    assert (first.vars["many"], second.vars["many"]) == ("Some long document.\n", "x")
    evaluation = suite.evaluation()
    assert cells.prepare(evaluation, evaluation.cell(0, 0)).given_output == "Some long document. [1,2]"
    found = problems(tmp_path, {"prompts": ["{{a}}"], "providers": ["echo"],
                                "tests": [{"vars": {"a": "file://gen.py", "b": "file://nope.txt"}}]})
    assert any("a var computed by gen.py" in p for p in found) and any("no such file" in p for p in found)
