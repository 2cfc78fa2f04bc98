"""Render a conversation with a GGUF's Jinja chat template exactly as `llama-server --jinja` does (its
/apply-template answer), following common/chat.cpp common_chat_templates_apply_jinja step by step:

1. messages as the server parses and re-serializes them (role, content, reasoning_content, name, tool_call_id,
   tool_calls; content "" when absent), tools as {"type": "function", "function": {name, description,
   parameters}};
2. content as string or typed parts, whichever the template takes (`chat_caps.probe_caps`); "developer" becomes
   "system" (not for gpt-oss); a system message the template cannot take is folded into the next message;
3. the per-format handler's rewrite of the messages (`chat_handlers`);
4. variables: messages, bos_token, eos_token, enable_thinking, tools (only when there are some), datetime,
   date_string, the chat_template_kwargs (the server's default preserve_reasoning=true first), and
   add_generation_prompt (only when true); strftime_now() tells the same day;
5. the handler's change to the rendered text, then a leading BOS / trailing EOS dropped when the vocabulary adds
   them itself.

enable_thinking=None means the server's default: on when the template supports thinking (the handler's word, or
llama.cpp's differential analysis for the others), off otherwise. Rendering is sandboxed (`jinja.py`).
"""

from __future__ import annotations

import copy
import json
from datetime import datetime

import jinja2

from app.engine.chat import handler
from app.engine.chat.template import caps as chat_caps
from app.engine.chat.template import handlers as chat_handlers
from app.engine.chat.template import thinking as chat_thinking
from app.engine.chat.template.jinja import LlamaEnvironment, TemplateRaised, c_strftime


class TemplateError(ValueError):
    """The template does not compile, or refused these messages (the message says which and why)."""


def _parse_messages(messages: list[dict]) -> list[dict]:
    """common_chat_msgs_parse_oaicompat then to_json_oaicompat: the server's view of the messages."""
    out = []
    for m in messages:
        if not isinstance(m, dict) or "role" not in m:
            raise TemplateError(f"a message needs a role (one with keys {sorted(m) if isinstance(m, dict) else []})")
        msg: dict = {"role": m["role"]}
        content = m.get("content")
        if isinstance(content, list) and content:
            parts = []
            for part in content:
                if not isinstance(part, dict) or part.get("type") not in ("text", "media_marker"):
                    kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                    raise TemplateError(f"unsupported content part type {kind!r}")  # never its data
                parts.append({"type": part["type"], "text": part.get("text", "")})
            media = any(p["type"] == "media_marker" for p in parts)
            msg["content"] = _join_parts(parts) if media else parts
        elif content is None or isinstance(content, (str, list)):
            msg["content"] = content or ""
        else:
            raise TemplateError(f"content must be a string or a list of parts, not {type(content).__name__}")
        for key in ("reasoning_content", "name", "tool_call_id"):
            if m.get(key):
                msg[key] = m[key]
        if m.get("tool_calls"):
            msg["tool_calls"] = [_parse_call(call) for call in m["tool_calls"]]
        out.append(msg)
    return out


def _parse_call(call: dict) -> dict:
    fn = call.get("function") or {}
    args = fn.get("arguments", "")
    if not isinstance(args, str):
        args = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    out = {"type": "function", "function": {"name": fn.get("name", ""), "arguments": args}}
    if call.get("id"):
        out["id"] = call["id"]
    return out


def _join_parts(parts: list[dict]) -> str:
    """Typed parts as one string: newline-joined, no newline around media markers."""
    text, after_media = "", False
    for part in parts:
        if part.get("type") == "text":
            if text and not after_media:
                text += "\n"
            text += part.get("text", "")
            after_media = False
        elif part.get("type") == "media_marker":
            text += part.get("text", "")
            after_media = True
    return text


def _parse_tools(tools: list | None) -> list[dict]:
    out = []
    for tool in tools or []:
        fn = tool.get("function") if isinstance(tool, dict) and tool.get("type") == "function" else None
        if not isinstance(fn, dict) or "name" not in fn:
            raise TemplateError(f"a tool must be {{'type': 'function', 'function': {{'name': ...}}}}: {tool!r}")
        out.append({"type": "function", "function": {"name": fn["name"], "description": fn.get("description", ""),
                                                     "parameters": fn.get("parameters") or {}}})
    return out


def _shape_content(messages: list[dict], caps: chat_caps.Caps) -> list[dict]:
    """Content as the template takes it: string-only templates get joined parts, typed-only ones get parts."""
    only_string = caps.string_content and not caps.typed_content
    only_typed = caps.typed_content and not caps.string_content
    out = []
    for msg in messages:
        content = msg.get("content")
        if only_typed and isinstance(content, str):
            msg = {**msg, "content": [{"type": "text", "text": content}]}
        elif only_string and isinstance(content, list):
            msg = {**msg, "content": _join_parts(content)}
        out.append(msg)
    return out


class ChatTemplate:
    """A compiled chat template. `add_bos`/`add_eos`: the vocabulary adds BOS/EOS itself (llama-server then drops
    a BOS the template wrote at the start, an EOS at the end)."""

    def __init__(self, source: str, bos_token: str, eos_token: str, *, add_bos: bool = False,
                 add_eos: bool = False):
        self.source = handler.source(source)
        self.bos_token, self.eos_token = bos_token, eos_token
        self.add_bos, self.add_eos = add_bos, add_eos
        env = LlamaEnvironment()
        env.tests["string"] = chat_caps.note_string_test
        env.filters["selectattr"] = chat_caps.noting_selectattr(env.filters["selectattr"])
        try:
            self._template = env.from_string(self.source)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(f"the chat template does not compile (line {exc.lineno}): {exc.message}") from exc
        self.caps = chat_caps.probe_caps(self._template.render)
        self.format = handler.of(self.source)  # llama.cpp's handler of the template (None: its autoparser)
        declared = chat_handlers.declared_thinking(self.format, self.source)
        self.supports_thinking = declared if declared is not None else chat_thinking.autoparser_thinks(
            lambda ctx: self._template.render({**ctx, "messages": _shape_content(ctx["messages"], self.caps)}),
            self.source, self.caps.tool_calls)

    def render(self, messages: list[dict], *, add_generation_prompt: bool = True,
               enable_thinking: bool | None = None, tools: list | None = None, extra: dict | None = None,
               now: datetime | None = None) -> str:
        now = now or datetime.now()
        msgs = _parse_messages(messages)
        if "You have access to the following functions in JSONSchema format" in self.source:  # StepFun
            msgs = [_trimmed(m) for m in msgs]
        msgs = _shape_content(msgs, self.caps)
        if "<|channel|>" not in self.source:
            msgs = [{**m, "role": "system"} if m["role"] == "developer" else m for m in msgs]
        if not self.caps.system_role and msgs and msgs[0]["role"] == "system":
            msgs = self._fold_system(msgs)
        if self.caps.object_arguments:
            msgs = [_object_arguments(m) for m in msgs]
        msgs = chat_handlers.adjust_messages(self.format, self.source, msgs)

        kwargs = {"preserve_reasoning": True, **(extra or {})}
        if enable_thinking is not None:
            kwargs["enable_thinking"] = enable_thinking
        thinking = kwargs.get("enable_thinking", self.supports_thinking)
        if not isinstance(thinking, bool):
            raise TemplateError(f"enable_thinking must be true or false, not {thinking!r}")
        context: dict = {}
        if isinstance(kwargs["preserve_reasoning"], bool):
            keep = kwargs["preserve_reasoning"]
            context.update(preserve_thinking=keep, clear_thinking=not keep, truncate_history_thinking=not keep,
                           drop_thinking=not keep)
        if isinstance(kwargs.get("reasoning_effort"), str) and kwargs["reasoning_effort"]:
            context.update(reasoning_effort=kwargs["reasoning_effort"], reasoning_strength=kwargs["reasoning_effort"])
        context.update(messages=copy.deepcopy(msgs), bos_token=self.bos_token, eos_token=self.eos_token,
                       enable_thinking=thinking)
        if tools:
            context["tools"] = copy.deepcopy(_parse_tools(tools))
        context.update(datetime=c_strftime(now, "%b %d %Y"), date_string=c_strftime(now, "%d %b %Y"))
        context.update(copy.deepcopy(kwargs))
        if add_generation_prompt:
            context["add_generation_prompt"] = True
        context["strftime_now"] = lambda fmt: c_strftime(now, fmt)
        try:
            prompt = self._template.render(context)
        except TemplateRaised as exc:
            raise TemplateError(f"the chat template refused these messages: {exc}") from exc
        except Exception as exc:  # Jinja2 runtime errors, sandbox refusals, type errors in the template
            raise TemplateError(f"the chat template failed to render: {type(exc).__name__}: {exc}") from exc
        prompt = chat_handlers.adjust_prompt(self.format, prompt, add_generation_prompt)
        if self.add_bos and prompt.startswith(self.bos_token):
            prompt = prompt[len(self.bos_token):]
        if self.add_eos and self.eos_token and prompt.endswith(self.eos_token):
            prompt = prompt[:-len(self.eos_token)]
        return prompt

    @staticmethod
    def _fold_system(msgs: list[dict]) -> list[dict]:
        """llama.cpp's fallback for a template without a system role: system text + "\\n" + the next message."""
        if len(msgs) == 1:
            return []
        first, second = msgs[0], msgs[1]
        if not isinstance(first["content"], str) or not isinstance(second["content"], str):
            raise TemplateError("this template has no system role, and typed content cannot be folded into the "
                                "next message")
        return [{**second, "content": first["content"] + "\n" + second["content"]}, *msgs[2:]]


def _trimmed(msg: dict) -> dict:
    out = dict(msg)
    for key in ("content", "reasoning_content"):
        if isinstance(out.get(key), str):
            out[key] = out[key].strip(" \t\n\v\f\r")
        elif isinstance(out.get(key), list):
            out[key] = [{**p, "text": p["text"].strip(" \t\n\v\f\r")} if p.get("type") == "text" else p
                        for p in out[key]]
    return out


def _object_arguments(msg: dict) -> dict:
    """Templates that read arguments as an object get them parsed (llama.cpp's func_args_not_string)."""
    if not msg.get("tool_calls"):
        return msg
    calls = []
    for call in msg["tool_calls"]:
        args = call["function"]["arguments"]
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError as exc:
                raise TemplateError(f"tool call arguments are not JSON: {args!r}") from exc
        calls.append({**call, "function": {**call["function"], "arguments": args}})
    return {**msg, "tool_calls": calls}
