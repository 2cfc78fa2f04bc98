"""Tool calls for a model whose prompt format has none: llama.cpp's generic format (common/chat.cpp
`common_chat_params_init_generic` and `common_chat_parse_generic`, with minja's tool polyfills, as llama-server
used them for any template without a tool-call format before its differential autoparser).

- Prompt: the tools are described in the system message (added, or appended to the first one), with the JSON
  reply the model must give; an assistant's earlier calls become that JSON as its content, a tool's result a user
  message holding `{"tool_response": ...}`. The template itself is given no tools.
- Reply: one JSON object, `{"tool_call": {"name", "arguments"}}` (`{"tool_calls": [{"name", "arguments", "id"},
  ...]}` when parallel calls are allowed) or `{"response": "..."}`; with tool_choice "required" (or one function)
  only the call. A grammar from the first token holds the model to it (not lazy: there is no trigger word):
  app/engine/chat/grammar/generic.py; the reply is read by app/engine/chat/parse/generic.py.
"""

from __future__ import annotations

import json

LABEL = "generic JSON format"
RESPOND = ("Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to "
           "the user's request")
EXAMPLE = {"tool_calls": [{"name": "tool_name", "arguments": {"arg1": "some_value"}, "id": "call_1___"}]}


def prompt_messages(messages: list[dict], tools) -> list[dict]:
    """The messages the template renders instead of `messages` when `tools` are offered in the generic format."""
    listed = [{"type": "function", "function": {"name": t["function"]["name"],
                                                "description": t["function"].get("description", ""),
                                                "parameters": t["function"].get("parameters") or {}}}
              for t in tools]
    described = ("You can call any of the following tools to satisfy the user's requests: "
                 + _dump(listed) + "\n\nExample tool call syntax:\n\n" + _dump(EXAMPLE) + "\n\n")
    return _add_system(_add_system([_written(m) for m in messages], RESPOND), described)


def _dump(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _add_system(messages: list[dict], text: str) -> list[dict]:
    """minja's add_system: appended to a leading system message after a blank line, else a new first message."""
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        return [{"role": "system", "content": messages[0]["content"] + "\n\n" + text}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def _written(msg: dict) -> dict:
    """An assistant's calls as the JSON it would have answered, a tool's result as a user message."""
    if msg.get("role") == "assistant" and msg.get("tool_calls"):
        calls = []
        for call in msg["tool_calls"]:
            fn = call.get("function") or {}
            args = fn.get("arguments", {})
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    pass  # written as given
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
        return {"role": "user", "content": _dump({"tool_response": response})}
    return msg
