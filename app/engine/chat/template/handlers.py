"""llama.cpp's per-format handlers (common/chat.cpp common_chat_try_specialized_template, common/parsers/*), as far
as they change the prompt text: which handler a template gets, its source patches, whether it declares thinking
support, how it rewrites the messages before rendering and what it appends to the rendered prompt.

The output parsers, grammars and continuation of a final assistant message are not reproduced here.
"""

from __future__ import annotations

import json

# Source patches common_chat_templates_init applies before compiling (templates that would raise otherwise).
_PATCHES = (
    ("<|channel|>", "in message.content or",
     '{%- if "<|channel|>analysis<|message|>" in message.content or '
     '"<|channel|>final<|message|>" in message.content %}', "{%- if false %}"),
    ("[TOOL_CALLS]", "if (message['content'] is none or",
     "{%- if (message['content'] is none or message['content'] == '' or message['content']|length == 0) and "
     "(message['tool_calls'] is not defined or message['tool_calls'] is none or "
     "message['tool_calls']|length == 0) %}", "{%- if false %}"),
)


def patch_source(src: str) -> str:
    for marker, probe, old, new in _PATCHES:
        if marker in src and probe in src:
            src = src.replace(old, new)
    return src


def _has(src: str, *needles: str) -> bool:
    return all(n in src for n in needles)


def specialized_format(src: str) -> str | None:
    """The handler llama.cpp picks for this template source, in its order of tests; None = the autoparser."""
    tests = (
        ("ministral-3", _has(src, "[SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]") and "[CALL_ID]" not in src),
        ("gpt-oss", "<|channel|>" in src),
        ("muse-glimmer", _has(src, "<atem:function_calls>", "<|eom|>")),
        ("functionary-v3.2", _has(src, ">>>all", ">>>${recipient}")),
        ("kimi-k2", _has(src, "<|tool_calls_section_begin|>", "<|tool_call_begin|>")),
        ("kimi-k3", _has(src, "<|open|>", "<|close|>", "<|end_of_msg|>")),
        ("ling3", _has(src, "<role>ASSISTANT</role>", "<arg_key>")),
        ("cohere2moe", _has(src, "<|START_TEXT|>", "<|START_ACTION|>")),
        ("lfm2", _has(src, "<|tool_list_start|>", "<|tool_list_end|>")),
        ("lfm2.5", "List of tools: [" in src and "<|tool_list_start|>" not in src),
        ("gigachat-v3", _has(src, "<|role_sep|>", "<|message_sep|>") and "<|function_call|>" not in src),
        ("minimax-m3", _has(src, "]<]minimax[>[", "<tool_call>", "<invoke name=")),
        ("deepseek-v3.2", _has(src, "dsml_token", "DSML") and ("function_calls" in src or "tool_calls" in src)),
        ("gemma4", "'<|tool_call>call:'" in src),
        ("minicpm5", _has(src, "Tool usage guidelines:", '<function name="', '<param name="')),
        ("qwen3-coder", _has(src, "<tool_call>", "<function=", "<parameter=")
         and "'<tool_call><function=' ~ tool_call.name ~ '>'" not in src),
    )
    return next((name for name, hit in tests if hit), None)


def declared_thinking(fmt: str | None, src: str) -> bool | None:
    """The thinking support a specialized handler declares (None: the autoparser decides)."""
    if fmt is None:
        return None
    if fmt == "qwen3-coder":
        return "<think>" in src
    return fmt not in ("functionary-v3.2", "gigachat-v3")


def adjust_messages(fmt: str | None, src: str, messages: list[dict]) -> list[dict]:
    """The handler's rewrite of the (already normalized) messages before rendering."""
    if fmt in ("gpt-oss", "lfm2", "lfm2.5"):
        out = []
        for msg in messages:
            msg = dict(msg)
            if isinstance(msg.get("reasoning_content"), str):
                msg["thinking"] = msg["reasoning_content"]
                if fmt == "gpt-oss" and msg.get("tool_calls"):
                    msg.pop("content", None)
            out.append(msg)
        return out
    if fmt == "ministral-3":
        return [_ministral_blocks(m) if m.get("role") in ("system", "assistant") else m for m in messages]
    if fmt == "deepseek-v3.2" and "function_calls" not in src:
        return _deepseek_v4_tool_order(messages)
    if fmt == "gemma4" and "{#- OpenAI Chat Completions:" not in src:
        return _gemma4_model_turns(messages)
    return messages


def _gemma4_model_turns(messages: list[dict]) -> list[dict]:
    """Older Gemma 4 templates: an assistant's tool calls, the tool results and the assistant's answer become one
    model turn with `tool_responses` (llama.cpp's convert_tool_responses_gemma4)."""
    out, i = [], 0
    while i < len(messages):
        msg = messages[i]
        if msg.get("role") != "assistant" or not msg.get("tool_calls"):
            out.append(msg)
            i += 1
            continue
        calls, responses, i = list(msg["tool_calls"]), [], i + 1
        while i < len(messages) and messages[i].get("role") == "tool":
            result = messages[i].get("content")
            if isinstance(result, str):
                try:
                    result = json.loads(result)
                except ValueError:
                    pass
            name = calls[len(responses)].get("function", {}).get("name", "") if len(responses) < len(calls) else ""
            responses.append({"name": name or messages[i].get("tool_call_id", ""), "response": result})
            i += 1
        turn = {"role": "assistant", "tool_calls": calls}
        if responses:
            turn["tool_responses"] = responses
        if i < len(messages) and messages[i].get("role") == "assistant" and not messages[i].get("tool_calls") \
                and messages[i].get("content"):
            turn["content"] = messages[i]["content"]
            i += 1
        if isinstance(msg.get("reasoning_content"), str):
            turn["reasoning_content"] = msg["reasoning_content"]
        out.append(turn)
    return out


def _ministral_blocks(msg: dict) -> dict:
    blocks = []
    if isinstance(msg.get("reasoning_content"), str):
        blocks.append({"type": "thinking", "thinking": msg["reasoning_content"]})
    content = msg.get("content")
    if isinstance(content, str):
        blocks.append({"type": "text", "text": content})
    elif isinstance(content, list):
        blocks.extend(content)
    out = {k: v for k, v in msg.items() if k != "reasoning_content"}
    out["content"] = blocks
    return out


def _deepseek_v4_tool_order(messages: list[dict]) -> list[dict]:
    """DeepSeek V4: a run of tool results is ordered as the preceding assistant message called the tools."""
    out, order, i = list(messages), {}, 0
    while i < len(out):
        role = out[i].get("role")
        if role == "assistant" and out[i].get("tool_calls"):
            order = {c.get("id"): n for n, c in enumerate(out[i]["tool_calls"]) if c.get("id")}
            i += 1
            continue
        if role not in ("user", "tool"):
            i += 1
            continue
        end = i
        while end < len(out) and out[end].get("role") in ("user", "tool"):
            end += 1
        slots = [k for k in range(i, end) if out[k].get("role") == "tool"]
        if len(slots) > 1 and order:
            ranked = sorted((out[k] for k in slots), key=lambda m: order.get(m.get("tool_call_id", ""), 0))
            for k, msg in zip(slots, ranked, strict=True):
                out[k] = msg
        i = end
    return out


def adjust_prompt(fmt: str | None, prompt: str, add_generation_prompt: bool) -> str:
    """What the handler changes in the rendered prompt."""
    if fmt == "gemma4" and add_generation_prompt and prompt.endswith("<turn|>\n"):
        return prompt + "<|turn>model\n"  # the template left the model's turn unopened (after a tool call)
    if fmt == "gpt-oss" and not add_generation_prompt:
        at = prompt.rfind("<|return|>")  # a finished reply in history ends with <|end|> (llama.cpp #15417)
        if at >= 0:
            return prompt[:at] + "<|end|>" + prompt[at + len("<|return|>"):]
    return prompt
