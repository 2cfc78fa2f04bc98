"""Tool calls against a real llama-server (`--jinja`, SmolLM2 135M): tools and tool_choice go out, streamed
`tool_calls` deltas come back assembled into Completion.tool_calls, finish reason "tool_calls".

SmolLM2's own template does not show tools to the model, so llama-server ignores them (the last test); the
calls use a variant carrying Qwen2.5's template (llama.cpp's models/templates). llama-server's grammar for
tool_choice "required" allows free text before the first `<tool_call>`, and the 135M model rambles on there, so
the reply starts with `<tool_call>` (a reply prefix, the final assistant message llama-server continues); from
there the grammar makes even this model write a well-formed call."""

import json

import httpx
import pytest

from app.backends import OpenAIBackend
from app.engine import GenerationRequest, SamplingParams
from tests.fixtures.gguf_variants import write_variant
from tests.fixtures.servers import llama_cpp_templates, llama_server

pytestmark = pytest.mark.servers

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


PREFIX = "<tool_call>\n"


def tool_request(**fields) -> GenerationRequest:
    return GenerationRequest(**{"messages": QUESTION, "sampling": SamplingParams(temperature=0.0),
                                "max_tokens": 120, "tools": (WEATHER,), **fields})


@pytest.fixture(scope="module")
def jinja_server(model_path, tmp_path_factory):
    template = llama_cpp_templates().get("Qwen-Qwen2.5-7B-Instruct")
    if template is None:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    variant = write_variant(model_path, tmp_path_factory.mktemp("tools") / "smollm2-qwen-template.gguf", template)
    server = llama_server(variant, "--jinja").start()
    yield server
    server.kill()


def test_a_required_call_comes_back_as_tool_calls_equal_to_the_unstreamed_reply(jinja_server):
    backend = OpenAIBackend(jinja_server.url)
    backend.connect()
    result = backend.submit(tool_request(tool_choice="required", reply_prefix=PREFIX)).result(timeout=120)
    assert result.error is None and result.finish_reason == "tool_calls", result
    assert len(result.tool_calls) >= 1 and result.note == "", result
    call = result.tool_calls[0]
    assert call["name"] == "get_weather" and call["id"]
    assert isinstance(json.loads(call["arguments"]), dict)  # JSON arguments, assembled from the deltas
    # The same request unstreamed (the server's own assembly) gives the same calls.
    body = {"messages": [*QUESTION, {"role": "assistant", "content": PREFIX}], "tools": [WEATHER],
            "tool_choice": "required", "temperature": 0, "max_tokens": 120}
    whole = httpx.post(f"{jinja_server.url}/chat/completions", json=body, timeout=120).json()["choices"][0]
    assert whole["finish_reason"] == "tool_calls"
    expected = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in whole["message"]["tool_calls"]]
    assert [(c["name"], json.loads(c["arguments"])) for c in result.tool_calls] == expected
    assert backend.close()


def test_tool_choice_none_gives_text(jinja_server):
    backend = OpenAIBackend(jinja_server.url)
    backend.connect()
    text = backend.submit(tool_request(tool_choice="none", max_tokens=24)).result(timeout=120)
    assert text.tool_calls == () and text.finish_reason in ("stop", "length") and text.text, text
    assert backend.close()


def test_a_server_that_ignores_tools_is_named(start_llama_server):
    """SmolLM2's own template never shows tools: llama-server answers in text, with no grammar and no call."""
    backend = OpenAIBackend(start_llama_server("--jinja").url)
    backend.connect()
    result = backend.submit(tool_request(tool_choice="required", max_tokens=24)).result(timeout=120)
    assert result.error is None and result.tool_calls == () and result.finish_reason == "length", result
    assert "the server ignored the tools" in result.note, result.note
    assert backend.close()


def test_eval_scores_the_servers_calls_with_promptfoos_tool_assertions(jinja_server, tmp_path):
    """`eval` on the server: config.tools from a file, tool_choice; a valid call passes is-valid-openai-tools-call
    and tool-call-f1 for the function it called, and fails tool-call-f1 for another (score 0); with
    tool_choice none there is no call, so the validity check fails."""
    import subprocess
    import sys

    import yaml

    from tests.cli.test_eval_cli import ROOT, results

    (tmp_path / "tools.json").write_text(json.dumps([WEATHER]))
    (tmp_path / "prompt.json").write_text(json.dumps([{"role": "user", "content": "{{question}}"},
                                                      {"role": "assistant", "content": PREFIX}]))
    provider = {"id": "openai:chat:smollm2", "config": {"apiBaseUrl": jinja_server.url, "temperature": 0,
                                                         "max_tokens": 120, "tools": "file://tools.json"}}
    config = {"prompts": ["file://prompt.json"],
              "providers": [{**provider, "label": "required", "config": {**provider["config"],
                                                                         "tool_choice": "required"}},
                            {**provider, "label": "none", "config": {**provider["config"], "tool_choice": "none"}}],
              "tests": [{"vars": {"question": "What is the weather in Paris?"},
                         "assert": [{"type": "is-valid-openai-tools-call"},
                                    {"type": "tool-call-f1", "value": ["get_weather"], "metric": "right"},
                                    {"type": "tool-call-f1", "value": "get_time", "metric": "wrong",
                                     "weight": 0}]}]}
    (tmp_path / "promptfooconfig.yaml").write_text(yaml.safe_dump(config))
    done = subprocess.run([sys.executable, "-m", "app", "eval", str(tmp_path / "promptfooconfig.yaml"), "-o",
                           str(tmp_path / "results.json")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    cells = {c["provider"]["label"]: c for c in results(tmp_path / "results.json")}
    assert done.returncode == 100, done.stderr  # the "none" column fails
    called = cells["required"]
    assert called["success"] and called["response"]["finishReason"] == "tool_calls", called
    assert called["response"]["toolCalls"][0]["name"] == "get_weather"
    assert called["namedScores"] == {"right": 1.0, "wrong": 0.0}
    text = cells["none"]
    reasons = [r["reason"] for r in text["gradingResult"]["componentResults"]]
    assert not text["success"] and "did not return a valid-looking tools response" in reasons[0], reasons
