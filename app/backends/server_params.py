"""What a GenerationRequest becomes on an OpenAI-compatible server, and what a server will not apply.

Standard OpenAI fields go as themselves; llama.cpp's extras (top_k, min_p, repeat_penalty, repeat_last_n,
ignore_eos, cache_prompt) go in the body, with vLLM's names beside them where they differ (repetition_penalty,
continue_final_message). The other samplers (DRY, XTC, typical-p, mirostat, top-nσ, dynamic temperature) go under
llama-server's names (tools/server/server-schema.cpp: `SAMPLER_FIELDS`), and mirostat also as llama-cpp-python's
`mirostat_mode`; vLLM has none of them, so it is not sent them. An output format goes the way the server's kind
takes it (`owned_by` in GET /v1/models; tools/server/server-common.cpp and server-schema.cpp in llama.cpp,
vLLM's "Structured Outputs" page):

- llama-server: chat `response_format: {type: json_schema}`; raw prompt `json_schema`; grammar `grammar`.
- vLLM: chat `response_format`; raw prompt `structured_outputs.json` (>= 0.12) and `guided_json` (before);
  grammar `structured_outputs.grammar` and `guided_grammar`.
- llama-cpp-python's server: chat `response_format: {type: json_object, schema}` (it takes no other type); raw
  prompt `grammar`, the schema as GBNF from its own converter (llama_grammar); grammar `grammar`.
- any other server: OpenAI's `response_format` on chat, every spelling above otherwise.

A server ignores fields it does not know, so `unapplied_keys` names the settings in use that the server's kind is
not known to apply, and the Completion says so (`note`, `unapplied`) instead of dropping them silently. Token
probabilities are asked for on chat requests only (servers' raw-completion logprobs come in another shape), so a
raw prompt's are always reported as not applied.
"""

from __future__ import annotations

import json
from pathlib import Path

from llama_cpp.llama_grammar import json_schema_to_gbnf

from app.engine import SAMPLER_FIELDS, GenerationRequest
from app.engine.sampling.grammar import GrammarError
from app.engine.types import TOOL_CHOICES
from app.engine.vision.media import MEDIA_PARTS

TEMPLATE_KEYS = ("thinking", "chat_template_kwargs")  # sent as chat_template_kwargs, which both servers pass on
FORMAT_KEYS = ("grammar", "json_schema")  # the output-format settings (session/output_format.py reads these)
SAMPLER_KEYS = ("dry", "xtc", "typical_p", "mirostat", "top_n_sigma", "dynatemp")  # in_use's keys for them
# owned_by in GET /v1/models -> the settings beyond OpenAI's own that the server applies ("tools": tools,
# tool_choice and parallel_tool_calls, OpenAI's own fields, which llama-server applies only when run with --jinja)
APPLIED = {"llamacpp": {"top_k", "min_p", "repeat_penalty", "penalty_last_n", *TEMPLATE_KEYS,  # llama-server
                        *FORMAT_KEYS, *SAMPLER_KEYS, "tools"},
           "vllm": {"top_k", "min_p", "repeat_penalty", *TEMPLATE_KEYS, *FORMAT_KEYS, "tools"},
           "me": {"top_k", "min_p", "repeat_penalty", "penalty_last_n", *FORMAT_KEYS,  # llama-cpp-python's server
                  "mirostat"}}
KNOWN = {"llamacpp": "llama-server", "vllm": "vLLM", "me": "llama-cpp-python's server"}


def create_arguments(request: GenerationRequest, model: str | None,
                     server_kind: str | None = None) -> tuple[str, dict]:
    """("chat" | "completions", keyword arguments for the openai client's create()). Raises GrammarError when a
    schema must become GBNF here (llama-cpp-python's server, raw prompt) and cannot."""
    s = request.sampling
    extra = {"top_k": s.top_k, "min_p": s.min_p, "repeat_penalty": s.repeat_penalty,
             "repetition_penalty": s.repeat_penalty, "repeat_last_n": s.penalty_last_n, "cache_prompt": True}
    if server_kind != "vllm":  # vLLM has none of these samplers
        extra.update({name: getattr(s, name) for name in SAMPLER_FIELDS},
                     dry_sequence_breakers=list(s.dry_sequence_breakers), mirostat_mode=s.mirostat)
    if request.ignore_eos:
        extra["ignore_eos"] = True
    kwargs = dict(request.chat_template_kwargs)
    if request.thinking is not None:  # llama-server and vLLM both pass these to the chat template
        kwargs["enable_thinking"] = request.thinking
    if kwargs:
        extra["chat_template_kwargs"] = kwargs
    common = {"model": model or "default", "stream": True, "max_tokens": request.max_tokens,
              "temperature": s.temperature, "top_p": s.top_p, "frequency_penalty": s.frequency_penalty,
              "presence_penalty": s.presence_penalty, "stop": list(request.stop) or None,
              "stream_options": {"include_usage": True}, "extra_body": extra}
    if s.seed is not None:
        common["seed"] = s.seed
    chat = request.messages is not None
    common.update(_format_fields(request, chat, server_kind, extra))
    if not chat:
        return "completions", {"prompt": request.prompt + request.reply_prefix, **common}
    if request.logprobs:
        common.update(logprobs=True, top_logprobs=request.logprobs)
    if request.tools:
        common.update(tools=[dict(t) for t in request.tools], tool_choice=tool_choice(request.tool_choice))
        if request.parallel_tool_calls is not None:
            common["parallel_tool_calls"] = request.parallel_tool_calls
    messages = [_as_sent(m) for m in request.messages]
    if request.reply_prefix:  # continue this reply (llama-server: a final assistant message is a prefill)
        messages.append({"role": "assistant", "content": request.reply_prefix})
        extra.update(continue_final_message=True, add_generation_prompt=False)
    return "chat", {"messages": messages, **common}


def _as_sent(message: dict) -> dict:
    """A message as OpenAI's schema takes it: the file names Chorus keeps on image, audio and video parts (for its own
    messages) are not sent."""
    content = message.get("content")
    if not isinstance(content, list) or not any(isinstance(p, dict) and p.get("type") in MEDIA_PARTS
                                                for p in content):
        return message
    parts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in MEDIA_PARTS:
            inner = part.get(part["type"])
            part = {k: v for k, v in part.items() if k != "name"}
            if isinstance(inner, dict):
                part[part["type"]] = {k: v for k, v in inner.items() if k != "name"}
        parts.append(part)
    return {**message, "content": parts}


def tool_choice(choice: str) -> str | dict:
    """A request's tool_choice as OpenAI spells it: a word, or one function by name."""
    return choice if choice in TOOL_CHOICES else {"type": "function", "function": {"name": choice}}


def _format_fields(request: GenerationRequest, chat: bool, kind: str | None, extra: dict) -> dict:
    """The request's grammar or JSON schema as this kind of server takes it: top-level create() arguments are
    returned, body fields are added to `extra`."""
    grammar, schema = request.grammar, request.json_schema
    if grammar is None and schema is None:
        return {}
    python = kind == "me"
    llama = kind == "llamacpp" or kind not in KNOWN  # an unknown server gets every known spelling
    vllm = kind == "vllm" or kind not in KNOWN
    if grammar is not None:
        if llama or python:
            extra["grammar"] = grammar
        if vllm:
            extra.update(structured_outputs={"grammar": grammar}, guided_grammar=grammar)
        return {}
    if chat:
        if python:  # its response_format takes "text" or "json_object" (with a schema), nothing else
            return {"response_format": {"type": "json_object", "schema": schema}}
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}}
    if python:
        extra["grammar"] = _python_server_gbnf(schema)
    if llama:
        extra["json_schema"] = schema
    if vllm:
        extra.update(structured_outputs={"json": schema}, guided_json=schema)
    return {}


def _python_server_gbnf(schema: dict) -> str:
    """The schema as GBNF by llama-cpp-python's own converter, the one its server applies to chat schemas."""
    try:
        return json_schema_to_gbnf(json.dumps(schema))
    except (AssertionError, KeyError, TypeError, ValueError, RecursionError) as exc:
        raise GrammarError(f"llama-cpp-python's server cannot take this JSON schema as a grammar: {exc}") from exc


def in_use(request: GenerationRequest) -> dict[str, str]:
    """The non-OpenAI settings this request relies on, with their values as shown to the user."""
    s = request.sampling
    used = {}
    if s.top_k:
        used["top_k"] = f"top-k {s.top_k}"
    if s.min_p:
        used["min_p"] = f"min-p {s.min_p:g}"
    if s.repeat_penalty != 1.0:
        used["repeat_penalty"] = f"repeat penalty {s.repeat_penalty:g}"
        used["penalty_last_n"] = f"penalty window {s.penalty_last_n}"
    used.update(samplers_in_use(s))
    if request.thinking is not None:
        used["thinking"] = f"thinking {'on' if request.thinking else 'off'}"
    if request.chat_template_kwargs:
        used["chat_template_kwargs"] = "chat template variables"
    if request.thinking_budget is not None:
        used["thinking_budget"] = f"a thinking budget of {request.thinking_budget} tokens"
    if request.grammar is not None:
        used["grammar"] = "the GBNF grammar"
    if request.json_schema is not None:
        used["json_schema"] = "the JSON schema"
    if request.tools:
        used["tools"] = f"tools ({len(request.tools)}, tool_choice {request.tool_choice})"
    if request.tools and request.tool_call_first and request.tool_choice not in ("auto", "none"):
        used["tool_call_first"] = "the call first (tool_call_first: Chorus's own grammar, the local engine only)"
    if request.lora_key:  # local adapter files: a server has its own, loaded at its start (--lora)
        used["lora"] = "LoRA adapters (" + ", ".join(f"{Path(p).name} × {s:g}" for p, s in request.lora_key) + ")"
    if request.logprobs and request.messages is None:
        used["raw logprobs"] = "token probabilities on a raw prompt (asked of servers for chat requests only)"
    return used


def samplers_in_use(s) -> dict[str, str]:
    """The samplers beyond top-k/top-p/min-p that are on, by their `in_use` keys, as shown to the user."""
    used = {}
    if s.uses_dry:
        used["dry"] = (f"DRY (multiplier {s.dry_multiplier:g}, base {s.dry_base:g}, allowed length "
                       f"{s.dry_allowed_length}, window {s.dry_penalty_last_n})")
    if s.xtc_probability > 0 and s.xtc_threshold <= 0.5:
        used["xtc"] = f"XTC (probability {s.xtc_probability:g}, threshold {s.xtc_threshold:g})"
    if s.typical_p < 1.0:
        used["typical_p"] = f"typical-p {s.typical_p:g}"
    if s.mirostat:
        used["mirostat"] = f"mirostat {s.mirostat} (tau {s.mirostat_tau:g}, eta {s.mirostat_eta:g})"
    if s.top_n_sigma > 0:
        used["top_n_sigma"] = f"top-nσ {s.top_n_sigma:g}"
    if s.dynatemp_range > 0:
        used["dynatemp"] = f"dynamic temperature ±{s.dynatemp_range:g} (exponent {s.dynatemp_exponent:g})"
    return used


def unapplied_keys(request: GenerationRequest, server_kind: str | None) -> tuple[str, ...]:
    """The keys of `in_use` that this kind of server is not known to apply."""
    applied = APPLIED.get(server_kind or "", set())
    return tuple(key for key in in_use(request) if key not in applied)


def unapplied(request: GenerationRequest, server_kind: str | None) -> str:
    """A sentence naming the settings this server is not known to apply ("" when it applies them all)."""
    used = in_use(request)
    missing = [used[key] for key in unapplied_keys(request, server_kind)]
    if not missing:
        return ""
    if server_kind in KNOWN:
        return f"not applied on {KNOWN[server_kind]}: {', '.join(missing)}"
    return f"sent, but this server may ignore them (not llama-server, vLLM or llama-cpp-python): {', '.join(missing)}"
