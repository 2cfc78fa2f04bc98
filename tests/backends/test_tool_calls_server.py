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
from tests.gguf_variants import write_variant
from tests.servers import llama_cpp_templates, llama_server

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
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-server`")
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
