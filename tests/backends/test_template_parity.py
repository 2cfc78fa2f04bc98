"""ChatTemplate renders every template llama.cpp ships (models/templates in the vendored source) as
`llama-server --jinja` does: a system message, a user turn, an assistant turn and a second user turn, with the
server's default thinking and with chat_template_kwargs {"enable_thinking": false}, compared with the prompt the
server's POST /apply-template returns; then a few more conversations (tools, reasoning, typed parts...).

The server takes its template at startup only, so each template gets its own server (`-np 1 -c 512`), asked
both questions. Where the server is provably wrong, the template is named in SERVER_BUGS with the bug; its test
asserts the difference is still there (a fixed bug fails it, so the entry gets removed).
"""

from datetime import datetime

import httpx
import pytest

from app.engine.chat.template.render import ChatTemplate, TemplateError
from app.engine.native import LlamaModel
from tests.fixtures.servers import llama_cpp_templates

pytestmark = pytest.mark.servers


TEMPLATES = llama_cpp_templates()
CONVERSATION = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hi there"},
    {"role": "user", "content": "How are you?"},
]
# The required comparison: the conversation above with the server's default thinking, and with it off.
MODES = {"default": {}, "thinking off": {"thinking": False}}

# More of what a template meets, asked of the same server: tools with a call and its result; parallel calls
# with object and string arguments, reasoning in the history and chat_template_kwargs; typed content parts and
# a developer message; no generation prompt; an assistant speaking first. Both refusing counts as agreement.
WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city, ünïcode",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City"},
                                                    "days": {"type": "integer"}}, "required": ["city"]}}}]
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
MORE = {
    "tools": {"tools": WEATHER, "messages": [
        {"role": "system", "content": "Be terse."}, {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21.5}'},
        {"role": "user", "content": "And tomorrow?"}]},
    "parallel calls": {"tools": WEATHER, "extra": {"reasoning_effort": "high", "preserve_reasoning": False},
                       "messages": [
        {"role": "user", "content": "Two cities\n\twith a tab"},
        {"role": "assistant", "content": None, "reasoning_content": "Call both.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather",
                                                          "arguments": {"city": "Zürich", "days": 1}}},
            {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": '{"t": [1, 2.0, null, true]}'},
        {"role": "assistant", "content": "Both done."}, {"role": "user", "content": "Thanks"}]},
    "reasoning": {"messages": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4", "reasoning_content": "Add them."},
        {"role": "user", "content": "3+3?"}]},
    "typed parts": {"messages": [
        {"role": "developer", "content": "Dev note"},
        {"role": "user", "content": [{"type": "text", "text": "Part one"},
                                     {"type": "text", "text": 'Part "two" \\ é 😀'}]}]},
    "no generation prompt": {"add_generation_prompt": False, "messages": CONVERSATION},
    "assistant first": {"extra": {"enable_thinking": True}, "messages": [
        {"role": "assistant", "content": "Welcome!"}, {"role": "user", "content": "Hi  "}]},
}

# template -> the server's bug that makes its prompt differ from ours (kept in step with docs/engine.md).
SERVER_BUGS: dict[str, str] = {}


@pytest.fixture(scope="module")
def vocab(model_path):
    """BOS/EOS as llama-server passes them to templates (token pieces with special tokens shown), and whether
    the vocabulary adds them itself."""
    model = LlamaModel(model_path)
    try:
        return dict(bos_token=model.special_piece(model.bos_id), eos_token=model.special_piece(model.eos_id),
                    add_bos=model.add_bos, add_eos=model.add_eos)
    finally:
        model.close()


def server_prompt(url: str, case: dict) -> str | None:
    """The server's prompt for a case, None when it refuses it."""
    body: dict = {"messages": case["messages"]}
    if "thinking" in case:
        body["chat_template_kwargs"] = {"enable_thinking": case["thinking"]}
    for ours, theirs in (("tools", "tools"), ("add_generation_prompt", "add_generation_prompt"),
                         ("extra", "chat_template_kwargs")):
        if ours in case:
            body[theirs] = case[ours]
    response = httpx.post(f"{url}/apply-template", json=body, timeout=30)
    if response.status_code in (400, 500):  # the template raised, or llama.cpp could not handle its output
        return None
    response.raise_for_status()
    return response.json()["prompt"]


def our_prompt(template: ChatTemplate, case: dict) -> str | None:
    try:
        return template.render(case["messages"], enable_thinking=case.get("thinking"), tools=case.get("tools"),
                               extra=case.get("extra"),
                               add_generation_prompt=case.get("add_generation_prompt", True), now=datetime.now())
    except TemplateError:
        return None


@pytest.mark.skipif(not TEMPLATES, reason="llama.cpp's templates come with its source: run `make llama-source`")
@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_prompt_matches_llama_server(name, start_llama_server, vocab, tmp_path):
    path = tmp_path / f"{name}.jinja"
    path.write_text(TEMPLATES[name])
    server = start_llama_server("--jinja", "--chat-template-file", str(path), "-np", "1", "-c", "512", "-t", "1",
                                "--no-warmup")
    url = server.url.removesuffix("/v1")
    template = ChatTemplate(TEMPLATES[name], vocab["bos_token"], vocab["eos_token"], add_bos=vocab["add_bos"],
                            add_eos=vocab["add_eos"])
    differ = []
    for mode, case in [*((m, {"messages": CONVERSATION, **c}) for m, c in MODES.items()), *MORE.items()]:
        theirs, ours = server_prompt(url, case), our_prompt(template, case)
        if ours != theirs or (mode in MODES and theirs is None):
            differ.append(f"{mode}:\n  llama-server: {theirs!r}\n  Chorus:       {ours!r}")
    if name in SERVER_BUGS:
        assert differ, f"{name} now matches: the server bug ({SERVER_BUGS[name]}) is fixed, drop the exception"
    else:
        assert not differ, f"{name} renders differently\n" + "\n".join(differ)
