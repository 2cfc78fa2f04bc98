"""The grammar of a reply in llama.cpp's generic tool format (app/engine/chat/template/generic.py says when it is
used).

Reference: `common_chat_params_init_generic` in llama.cpp's common/chat.cpp, before its autoparser replaced it (as
vendored by ollama/ollama at llama/llama.cpp/common/chat.cpp). Its JSON schema, built into GBNF with
json-schema-to-grammar's converter (`build_grammar` ... `add_schema("root", schema)`), from the first token
(`grammar_lazy = false`):
- each tool: {"type": "object", "properties": {"name": {"type": "string", "const": NAME}, "arguments":
  PARAMETERS}, "required": ["name", "arguments"], "description": ...}, with an `id` ({"type": "string",
  "minLength": 4}, required) when parallel calls are allowed; several tools are an `anyOf`;
- the call: {"tool_call": TOOL} or, parallel, {"tool_calls": [TOOL, ...]} (at least one);
- unless tool_choice is "required": `anyOf` the call and {"response": {"type": "string"}}.
Parallel calls are allowed only when the request asks for them and the template renders two calls
(`common_chat_templates_apply_jinja`; app/engine/chat/grammar/tool_choice.py decides).
"""

from __future__ import annotations

from app.engine.chat.grammar.build import Builder


def schema(tools, parallel: bool, required: bool) -> dict:
    """common_chat_params_init_generic's JSON schema of the reply."""
    schemas = []
    for tool in tools:
        fn = tool["function"]
        one = {"type": "object", "properties": {"name": {"type": "string", "const": fn["name"]},
                                                "arguments": fn.get("parameters") or {"type": "object"}},
               "required": ["name", "arguments"]}
        one["description"] = fn.get("description", "")  # always there once llama-server has read the tools
        if parallel:
            one["properties"]["id"] = {"type": "string", "minLength": 4}
            one["required"].append("id")
        schemas.append(one)
    each = schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    if parallel:
        call = {"type": "object", "properties": {"tool_calls": {"type": "array", "items": each, "minItems": 1}},
                "required": ["tool_calls"]}
    else:
        call = {"type": "object", "properties": {"tool_call": each}, "required": ["tool_call"]}
    if required:
        return call
    return {"anyOf": [call, {"type": "object", "properties": {"response": {"type": "string"}},
                             "required": ["response"]}]}


def gbnf(tools, parallel: bool, required: bool) -> str:
    """The reply's grammar: the call (or calls), or, unless required, a `response` string instead."""
    b = Builder(tuple(tools))
    return b.text(b.schema(schema(tools, parallel, required), "reply"))
