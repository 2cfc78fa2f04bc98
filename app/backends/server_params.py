"""What a GenerationRequest becomes on an OpenAI-compatible server, and what a server will not apply.

Standard OpenAI fields go as themselves; llama.cpp's extras (top_k, min_p, repeat_penalty, repeat_last_n,
grammar, json_schema, ignore_eos, cache_prompt) go in the body, with vLLM's names beside them where they differ
(repetition_penalty, guided_grammar, guided_json, continue_final_message). A server ignores fields it does not
know, so `unapplied` names the settings in use that the server's kind (read from `owned_by` in GET /v1/models)
is not known to apply; the result says so instead of dropping them silently. Token probabilities are asked for
on chat requests only (servers' raw-completion logprobs come in another shape), so a raw prompt's are always
reported as not applied.
"""

from __future__ import annotations

from app.engine import GenerationRequest

# owned_by in GET /v1/models -> the extension settings that server applies
APPLIED = {"llamacpp": {"top_k", "min_p", "repeat_penalty", "penalty_last_n"},  # llama-server
           "vllm": {"top_k", "min_p", "repeat_penalty"},
           "me": {"top_k", "min_p", "repeat_penalty", "penalty_last_n"}}  # llama-cpp-python's server
KNOWN = {"llamacpp": "llama-server", "vllm": "vLLM", "me": "llama-cpp-python's server"}


def create_arguments(request: GenerationRequest, model: str | None) -> tuple[str, dict]:
    """("chat" | "completions", keyword arguments for the openai client's create())."""
    s = request.sampling
    extra = {"top_k": s.top_k, "min_p": s.min_p, "repeat_penalty": s.repeat_penalty,
             "repetition_penalty": s.repeat_penalty, "repeat_last_n": s.penalty_last_n, "cache_prompt": True}
    if request.ignore_eos:
        extra["ignore_eos"] = True
    if request.grammar:
        extra.update(grammar=request.grammar, guided_grammar=request.grammar)
    common = {"model": model or "default", "stream": True, "max_tokens": request.max_tokens,
              "temperature": s.temperature, "top_p": s.top_p, "frequency_penalty": s.frequency_penalty,
              "presence_penalty": s.presence_penalty, "stop": list(request.stop) or None,
              "stream_options": {"include_usage": True}, "extra_body": extra}
    if s.seed is not None:
        common["seed"] = s.seed
    if request.messages is None:
        if request.json_schema is not None:
            extra.update(json_schema=request.json_schema, guided_json=request.json_schema)
        return "completions", {"prompt": request.prompt + request.reply_prefix, **common}
    if request.json_schema is not None:
        common["response_format"] = {"type": "json_schema",
                                     "json_schema": {"name": "output", "schema": request.json_schema}}
    if request.logprobs:
        common.update(logprobs=True, top_logprobs=request.logprobs)
    messages = list(request.messages)
    if request.reply_prefix:  # continue this reply (llama-server: a final assistant message is a prefill)
        messages.append({"role": "assistant", "content": request.reply_prefix})
        extra.update(continue_final_message=True, add_generation_prompt=False)
    return "chat", {"messages": messages, **common}


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
    if request.logprobs and request.messages is None:
        used["raw logprobs"] = "token probabilities on a raw prompt (asked of servers for chat requests only)"
    return used


def unapplied(request: GenerationRequest, server_kind: str | None) -> str:
    """A sentence naming the settings this server is not known to apply ("" when it applies them all)."""
    used = in_use(request)
    missing = [text for key, text in used.items() if key not in APPLIED.get(server_kind or "", set())]
    if not missing:
        return ""
    if server_kind in KNOWN:
        return f"not applied on {KNOWN[server_kind]}: {', '.join(missing)}"
    return f"sent, but this server may ignore them (not llama-server, vLLM or llama-cpp-python): {', '.join(missing)}"
