"""detect(template source) -> Format: which output format a chat template's replies use.

Mirrors common/chat.cpp's choice: the format of the handler llama.cpp gives the template (app/engine/chat/handler.py,
the same decision the renderer asks), else, for every other template, the markers its differential auto-parser
(common/chat-diff-analyzer.cpp) would find by rendering tool calls; here those markers are recognised in the
source (as common_chat_templates_init patched it). `opened_thinking` tells whether a generation prompt leaves a
thinking block open.
"""

from __future__ import annotations

from app.engine.chat import handler
from app.engine.chat.handler import has as _has
from app.engine.chat.parse import formats as F
from app.engine.chat.parse.types import Format

# The format each of llama.cpp's own handlers parses (app/engine/chat/handler.py decides which one a template gets):
# LFM2 and LFM2.5 share a parser (common/parsers/lfm2.cpp), DeepSeek V3.2's handler parses V4's blocks too.
HANDLER_FORMATS = {
    "ministral-3": F.MAGISTRAL, "gpt-oss": F.GPT_OSS, "muse-glimmer": F.MUSE_GLIMMER,
    "functionary-v3.2": F.FUNCTIONARY_V3_2, "kimi-k2": F.KIMI_K2, "kimi-k3": F.KIMI_K3, "ling3": F.LING3,
    "cohere2moe": F.COHERE2MOE, "lfm2": F.LFM2, "lfm2.5": F.LFM2, "gigachat-v3": F.GIGACHAT_V3,
    "minimax-m3": F.MINIMAX_M3, "deepseek-v3.2": F.DEEPSEEK_V3_2, "gemma4": F.GEMMA4, "minicpm5": F.MINICPM5,
    "qwen3-coder": F.QWEN3_CODER,
}
_AUTO = (  # what the differential analysis finds in the remaining reference templates
    (lambda s: _has(s, "<|tool_call:begin|>", "<|tool_call:name|>", "<|tool_call:args|>"), F.SOLAR_OPEN),
    (lambda s: _has(s, "<seed:tool_call>"), F.SEED_OSS),
    (lambda s: _has(s, "<|function_call|>", "<|role_sep|>"), F.GIGACHAT_V3_1),
    (lambda s: _has(s, "<tool_calls>", "Here are my reasoning steps:"), F.APRIEL_THINKER),
    (lambda s: _has(s, "<tool_calls>[") or _has(s, "<tool_calls>", "[BEGIN FINAL RESPONSE]"), F.APRIEL),
    (lambda s: _has(s, "<tool_calls>", "</tool_calls>"), F.MINIMAX_M1),  # JSON lines, no list
    (lambda s: _has(s, "<minimax:tool_call>"), F.MINIMAX_M2),
    (lambda s: _has(s, "<arg_key>", "<tool_call>"), F.GLM_4_5),
    (lambda s: _has(s, "'<tool_calls{}>'.format(HYTK)", "'<arg_key{}>'.format(HYTK)"), F.HY3),
    (lambda s: _has(s, "<｜tool▁calls▁begin｜>", "<｜tool▁sep｜>") and "function<｜tool▁sep｜>" not in s
     and "tool['type'] + '<｜tool▁sep｜>'" not in s, F.DEEPSEEK_V3_1),
    (lambda s: _has(s, "<｜tool▁calls▁begin｜>"), F.DEEPSEEK_R1),
    (lambda s: _has(s, "<|START_ACTION|>"), F.COMMAND_R7B),
    (lambda s: _has(s, "<|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "Action:\\n```json"), F.COMMAND_R_PLUS),
    (lambda s: _has(s, "<|tools_prefix|>"), F.APERTUS),
    (lambda s: _has(s, "<TOOLCALL>"), F.NEMOTRON_V2),
    (lambda s: _has(s, "<|tool_call|>"), F.GRANITE),
    (lambda s: _has(s, " functools["), F.FIREFUNCTION_V2),
    (lambda s: _has(s, "<function=") and "<|python_tag|>" in s or _has(s, "<function=", "</function>"),
     F.FUNCTIONARY_V3_1),
    (lambda s: _has(s, "[TOOL_CALLS]", "[ARGS]"), F.MAGISTRAL),
    (lambda s: _has(s, "[TOOL_CALLS]"), F.MISTRAL_NEMO),
    (lambda s: _has(s, "<tool_call>"), F.HERMES),
    (lambda s: _has(s, "<|python_tag|>") or _has(s, '"parameters"', "<|start_header_id|>ipython"), F.LLAMA_3),
)


def detect(template_source: str | None) -> Format:
    """The format of replies written under this chat template (CONTENT_ONLY when it has no tool calls)."""
    src = handler.source(template_source or "")
    name = handler.of(src)
    if name is not None:
        return F.DEEPSEEK_V4 if name == "deepseek-v3.2" and handler.deepseek_v4(src) else HANDLER_FORMATS[name]
    return next((fmt for test, fmt in _AUTO if test(src)), F.CONTENT_ONLY)


def opened_thinking(prompt_text: str, fmt: Format) -> str:
    """The end of the rendered prompt from the thinking tag it leaves open (e.g. "<think>\n"), or "" when its
    generation prompt does not open `fmt`'s thinking block."""
    if not fmt.think:
        return ""
    tail = prompt_text[-64:]
    at = tail.rfind(fmt.think[0])
    return tail[at:] if at > tail.rfind(fmt.think[1]) else ""


# Stop strings llama.cpp's chat handlers add to every request on these templates (common_chat_params
# .additional_stops, appended to the request's stops by llama-server's server-common.cpp): the model may spell its
# end-of-turn control token out as text tokens, which no end-of-generation check catches.
_STOPS = (
    (lambda s: "laguna_glm_thinking" in s, ("</assistant>",)),  # chat-diff-analyzer.cpp, the Laguna patch
    (lambda s: detect(s) is F.LING3, ("<|role_end|>",)),  # parsers/ling3.cpp, wherever its handler is chosen
)


def template_stops(template_source: str | None) -> tuple[str, ...]:
    """The stop strings a chat request rendered with this template gets besides its own (llama.cpp's)."""
    src = template_source or ""
    return next((stops for test, stops in _STOPS if test(src)), ())
