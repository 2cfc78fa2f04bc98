"""The grammar of a reply in llama.cpp's generic tool format (app/engine/chat/template/generic.py says when it is
used): common/chat.cpp's `common_chat_params_init_generic` schema, built into GBNF from the first token."""

from __future__ import annotations

from app.engine.chat.grammar.build import Builder


def gbnf(tools, parallel: bool, required: bool) -> str:
    """The reply's grammar: the call (or calls), or, unless required, a `response` string instead."""
    schemas = []
    for tool in tools:
        fn = tool["function"]
        schema = {"type": "object", "properties": {"name": {"type": "string", "const": fn["name"]},
                                                   "arguments": fn.get("parameters") or {"type": "object"}},
                  "required": ["name", "arguments"]}
        if fn.get("description"):
            schema["description"] = fn["description"]
        if parallel:
            schema["properties"]["id"] = {"type": "string", "minLength": 4}
            schema["required"].append("id")
        schemas.append(schema)
    one = schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    if parallel:
        call = {"type": "object", "properties": {"tool_calls": {"type": "array", "items": one, "minItems": 1}},
                "required": ["tool_calls"]}
    else:
        call = {"type": "object", "properties": {"tool_call": one}, "required": ["tool_call"]}
    response = {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}
    b = Builder(tuple(tools))
    return b.text(b.schema(call if required else {"anyOf": [call, response]}, "reply"))
