"""Tool calls for a model whose prompt format has none: llama.cpp's generic format, as llama-server used it for
any template without a tool-call format before its autoparser replaced it.

References (the llama.cpp that ollama/ollama vendors):
- llama/llama.cpp/common/chat.cpp, `common_chat_params_init_generic`: the system message gets
  "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the
  user's request" (minja's `add_system`: after the first system message's text and a blank line, else as a new
  first message); the grammar (app/engine/chat/grammar/generic.py) holds the whole reply, not lazily; the reply is
  read by `common_chat_parse_generic` (app/engine/chat/parse/generic.py). `common_chat_templates_apply_jinja`
  turns parallel calls off for a template that does not render two calls (`supports_parallel_tool_calls`).
- llama/llama.cpp/vendor/minja/chat-template.hpp (google/minja include/minja/chat-template.hpp),
  `chat_template::apply`'s polyfills for a template that cannot show tools: the tools are described in the system
  message ("You can call any of the following tools to satisfy the user's requests: " + the tools dumped by
  minja's `Value::dump(2, to_json)`, then "Example tool call syntax:" and the example the constructor renders:
  what the template writes for an assistant message calling `tool_name` with {"arg1": "some_value"}); an
  assistant's earlier calls become its content, `{"tool_calls": [{"name", "arguments", "id"}], "content"}`
  dumped with an indent of 2 (string arguments parsed back to objects); a tool's result becomes a user message
  `{"tool_response": {"tool", "content", "tool_call_id"}}`, likewise dumped.

The template itself is given no tools: Chorus offers the generic format to templates that show tools their own
way too (tool_format "generic"), and describes them the polyfill's way for all.
"""

from __future__ import annotations

import json
from collections.abc import Callable

LABEL = "generic JSON format"
RESPOND = ("Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to "
           "the user's request")
DESCRIBE = "You can call any of the following tools to satisfy the user's requests: "
# chat-template.hpp's example call (the constructor's `tool_call_msg`)
EXAMPLE_CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1___", "type": "function", "function": {"name": "tool_name", "arguments": '{"arg1": "some_value"}'}}]}
EXAMPLE = json.dumps({"tool_calls": [{"name": "tool_name", "arguments": {"arg1": "some_value"}, "id": "call_1___"}]},
                     indent=2, ensure_ascii=False)  # the example as a template that adds nothing around it shows it


def prompt_messages(messages: list[dict], tools, example: str | None = EXAMPLE) -> list[dict]:
    """The messages the template renders instead of `messages` when `tools` are offered in the generic format.
    `example`: the example call as the template writes it (`call_example`); None or "": none shown."""
    listed = [{"type": "function", "function": {"name": t["function"]["name"],
                                                "description": t["function"].get("description", ""),
                                                "parameters": t["function"].get("parameters") or {}}}
              for t in tools]
    described = DESCRIBE + minja_dump(listed) + (f"\n\nExample tool call syntax:\n\n{example}\n\n" if example else "")
    return add_system(add_system([written(m) for m in messages], RESPOND), described)


def call_example(render: Callable[[list[dict], bool], str], eos_token: str) -> str | None:
    """chat-template.hpp's `tool_call_example_`: what `render(messages, add_generation_prompt)` adds for the
    example call after a user's "Hey" (the prompt that ends in the generation prompt left out, the end-of-sequence
    token dropped where the template ends the call with it), or None when it shows neither "tool_name" nor
    "some_value" (minja: a possible template bug)."""
    user = {"role": "user", "content": "Hey"}
    try:
        prefix = render([user], True)
        full = render([user, written(EXAMPLE_CALL)], False)
    except Exception:  # minja: "Failed to generate tool call example"
        return None
    last = full.rfind(eos_token) if eos_token else -1
    if last >= 0 and (last == len(prefix) - len(eos_token)
                      or (full.endswith("\n") and last == len(full) - len(eos_token) - 1)):
        full = full[:last]
    common = 0
    for i, (a, b) in enumerate(zip(prefix, full, strict=False)):
        if a != b:
            break
        if a != "<":  # minja does not end the common part on a '<' (DeepSeek R1's <think> vs its call marker)
            common = i + 1
    example = full[common:]
    return example if "tool_name" in example or "some_value" in example else None


def minja_dump(value, indent: int = 2, level: int = 0) -> str:
    """minja's `Value::dump(indent, to_json=true)`: JSON as nlohmann writes it (non-ASCII kept), "key": value,
    except that an empty array or object still gets its line breaks ("[\\n    \\n  ]")."""
    def newline(at: int) -> str:
        return "\n" + " " * (at * indent)
    if isinstance(value, list | dict):
        items = ([minja_dump(v, indent, level + 1) for v in value] if isinstance(value, list) else
                 [json.dumps(k, ensure_ascii=False) + ": " + minja_dump(v, indent, level + 1)
                  for k, v in value.items()])
        open_, close = "[]" if isinstance(value, list) else "{}"
        return open_ + newline(level + 1) + ("," + newline(level + 1)).join(items) + newline(level) + close
    return json.dumps(value, ensure_ascii=False)


def add_system(messages: list[dict], text: str) -> list[dict]:
    """minja's `chat_template::add_system`: appended to a leading system message after a blank line, else a new
    first message."""
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        return [{"role": "system", "content": messages[0]["content"] + "\n\n" + text}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def written(msg: dict) -> dict:
    """minja's tool-call and tool-response polyfills: an assistant's calls as the JSON it would have answered, a
    tool's result as a user message."""
    if msg.get("role") == "assistant" and msg.get("tool_calls"):
        calls = []
        for call in msg["tool_calls"]:
            if call.get("type", "function") != "function":
                continue
            fn = call.get("function") or {}
            args = fn.get("arguments", {})
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    pass  # minja: "Failed to parse arguments", written as given
            calls.append({"name": fn.get("name", ""), "arguments": args, **({"id": call["id"]} if call.get("id")
                                                                          else {})})
        body: dict = {"tool_calls": calls}
        if msg.get("content"):
            body["content"] = msg["content"]
        return {k: v for k, v in msg.items() if k != "tool_calls"} | {"content": _dump(body)}
    if msg.get("role") == "tool":
        response: dict = {}
        if msg.get("name"):
            response["tool"] = msg["name"]
        response["content"] = msg.get("content", "")
        if msg.get("tool_call_id"):
            response["tool_call_id"] = msg["tool_call_id"]
        rest = {k: v for k, v in msg.items() if k not in ("role", "content", "name")}
        return {"role": "user", "content": _dump({"tool_response": response}), **rest}
    return msg


def _dump(value) -> str:
    """nlohmann's `json::dump(2)`, which writes as Python's json.dumps(indent=2) does, non-ASCII kept."""
    return json.dumps(value, indent=2, ensure_ascii=False)
