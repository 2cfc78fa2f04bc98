"""llama.cpp's per-format handlers (common/parsers/*), as far as they change the prompt text: whether one declares
thinking support, how it rewrites the messages before rendering and what it appends to the rendered prompt.
Which handler a template gets (and the source patches it is decided on) is app/engine/chat/handler.py's.

The output parsers, grammars and continuation of a final assistant message are not reproduced here.
"""

from __future__ import annotations

import json

from app.engine.chat.handler import deepseek_v4


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
    if fmt == "deepseek-v3.2" and deepseek_v4(src):
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
