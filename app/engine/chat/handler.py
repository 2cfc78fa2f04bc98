"""Which llama.cpp handler a chat template gets: the one place that decides it, for rendering the prompt
(template/), parsing the reply (parse/) and constraining tool calls (grammar/).

llama.cpp decides it once per request (common/chat.cpp `common_chat_templates_apply_jinja`): on the template's
source as `common_chat_templates_init` patched it (`source`), `common_chat_try_specialized_template` tests for
16 handlers of their own (common/parsers/*.cpp), in its order; every other template goes to the differential
autoparser (None here), whose markers parse/detect.py recognises.
"""

from __future__ import annotations

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


def source(src: str) -> str:
    """The template source llama.cpp keeps (and decides on): `src` with common_chat_templates_init's patches."""
    for marker, probe, old, new in _PATCHES:
        if marker in src and probe in src:
            src = src.replace(old, new)
    return src


def has(src: str, *needles: str) -> bool:
    """Whether `src` holds every one of `needles` (the form of llama.cpp's template tests)."""
    return all(n in src for n in needles)


# common_chat_try_specialized_template's tests, in its order: the first that holds names the handler.
SPECIALIZED = (
    ("ministral-3", lambda s: has(s, "[SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]") and "[CALL_ID]" not in s),
    ("gpt-oss", lambda s: "<|channel|>" in s),
    ("muse-glimmer", lambda s: has(s, "<atem:function_calls>", "<|eom|>")),
    ("functionary-v3.2", lambda s: has(s, ">>>all", ">>>${recipient}")),
    ("kimi-k2", lambda s: has(s, "<|tool_calls_section_begin|>", "<|tool_call_begin|>")),
    ("kimi-k3", lambda s: has(s, "<|open|>", "<|close|>", "<|end_of_msg|>")),
    ("ling3", lambda s: has(s, "<role>ASSISTANT</role>", "<arg_key>")),
    ("cohere2moe", lambda s: has(s, "<|START_TEXT|>", "<|START_ACTION|>")),
    ("lfm2", lambda s: has(s, "<|tool_list_start|>", "<|tool_list_end|>")),  # parsers/lfm2.cpp is_lfm2_template
    ("lfm2.5", lambda s: "List of tools: [" in s and "<|tool_list_start|>" not in s),
    ("gigachat-v3", lambda s: has(s, "<|role_sep|>", "<|message_sep|>") and "<|function_call|>" not in s),
    ("minimax-m3", lambda s: has(s, "]<]minimax[>[", "<tool_call>", "<invoke name=")),
    ("deepseek-v3.2", lambda s: has(s, "dsml_token", "DSML") and ("function_calls" in s or "tool_calls" in s)),
    ("gemma4", lambda s: "'<|tool_call>call:'" in s),
    ("minicpm5", lambda s: has(s, "Tool usage guidelines:", '<function name="', '<param name="')),
    ("qwen3-coder", lambda s: has(s, "<tool_call>", "<function=", "<parameter=")
     and "'<tool_call><function=' ~ tool_call.name ~ '>'" not in s),
)
HANDLERS = tuple(name for name, _ in SPECIALIZED)


def of(src: str | None) -> str | None:
    """The handler llama.cpp gives this template source (one of HANDLERS), or None: the differential autoparser."""
    src = source(src or "")
    return next((name for name, test in SPECIALIZED if test(src)), None)


def deepseek_v4(src: str) -> bool:
    """Whether the DeepSeek V3.2 handler runs as V4 (common/parsers/deepseek.cpp: V4 names its block tool_calls,
    V3.2 function_calls): its tool results ordered as called, its own block name and reasoning."""
    return "function_calls" not in src
