"""The output formats llama.cpp parses, each as a Format (app/engine/chat/parse/types.py). Names follow
llama.cpp's common_chat_format / its specialized-template handlers in common/chat.cpp; the markers are the ones
its handlers and its differential analysis (common/chat-diff-analyzer.cpp) find in those templates."""

from __future__ import annotations

from app.engine.chat.parse import dsml
from app.engine.chat.parse.types import Format

CONTENT_ONLY = Format("content-only", think=("<think>", "</think>"))
HERMES = Format("hermes", "json", call=("<tool_call>", "</tool_call>"))  # Hermes 2 Pro, Qwen 2.5, Qwen3, QwQ
QWEN3_CODER = Format("qwen3-coder", "tagged", call=("<tool_call>", "</tool_call>"), name_prefix="<function=",
                     name_suffix=">", param=("<parameter=", ">", "</parameter>"),
                     extra={"close": "</function>", "lined": True}, optional_start=True, think_ends_at_call=True)
SEED_OSS = Format("seed-oss", "tagged", think=("<seed:think>", "</seed:think>"),
                  call=("<seed:tool_call>", "</seed:tool_call>"), name_prefix="<function=", name_suffix=">",
                  param=("<parameter=", ">", "</parameter>"), extra={"close": "</function>"})
MINIMAX_M2 = Format("minimax-m2", "tagged", section=("<minimax:tool_call>", "</minimax:tool_call>"),
                    name_prefix='<invoke name="', name_suffix='">', param=('<parameter name="', '">', "</parameter>"),
                    extra={"close": "</invoke>"})
GLM_4_5 = Format("glm-4.5", "tagged", call=("<tool_call>", "</tool_call>"), name_suffix="\n",
                 param=("<arg_key>", "</arg_key>", "</arg_value>"), extra={"value_prefix": "<arg_value>"})
HY3_TAG = ":opensource"  # Tencent Hy3 spells every marker with this tag (its template's HYTK)
HY3 = Format("hy3", "tagged", think=(f"<think{HY3_TAG}>", f"</think{HY3_TAG}>"),
             section=(f"<tool_calls{HY3_TAG}>\n", f"</tool_calls{HY3_TAG}>"), call=(f"<tool_call{HY3_TAG}>", ""),
             name_suffix=f"<tool_sep{HY3_TAG}>",
             param=(f"<arg_key{HY3_TAG}>", f"</arg_key{HY3_TAG}>\n", f"</arg_value{HY3_TAG}>\n"),
             extra={"value_prefix": f"<arg_value{HY3_TAG}>", "close": f"</tool_call{HY3_TAG}>\n",
                    "atomic_open": True})  # the analysis' markers, newlines kept (grammar/server.py)
LLAMA_3 = Format("llama-3.x", "json", think=None, section=("<|python_tag|>", ""), args_key="parameters",
                 start_json=True)
MISTRAL_NEMO = Format("mistral-nemo", "json", think=None, section=("[TOOL_CALLS]", ""), array=True, id_key="id")
MAGISTRAL = Format("magistral", "tag_json", think=("[THINK]", "[/THINK]"), call=("[TOOL_CALLS]", ""),
                   name_suffix="[ARGS]", extra={"id_marker": "[CALL_ID]"})
FUNCTIONARY_V3_1 = Format("functionary-v3.1-llama-3.1", "tag_json", think=None, call=("<function=", "</function>"),
                          name_suffix=">")
FUNCTIONARY_V3_2 = Format("functionary-v3.2", "functionary-v3.2", think=None)
FIREFUNCTION_V2 = Format("firefunction-v2", "json", think=None, section=(" functools", ""), array=True)
COMMAND_R7B = Format("command-r7b", "json", think=("<|START_THINKING|>", "<|END_THINKING|>"),
                     section=("<|START_ACTION|>", "<|END_ACTION|>"), array=True, name_key="tool_name",
                     args_key="parameters", id_key="tool_call_id", wrap=("<|START_RESPONSE|>", "<|END_RESPONSE|>"),
                     extra={"calls_first": True, "wrapped_text_first": True})  # cohere2moe.py
DEEPSEEK_R1 = Format("deepseek-r1", "tag_json", section=("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),
                     call=("<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"), name_prefix="function<｜tool▁sep｜>",
                     name_suffix="\n", extra={"fence": "```json"})
DEEPSEEK_V3_1 = Format("deepseek-v3.1", "tag_json", section=("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),
                       call=("<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"), name_suffix="<｜tool▁sep｜>")
GRANITE = Format("granite", "json", section=("<|tool_call|>", ""), array=True,
                 wrap=("<response>", "</response>"))
KIMI_K2 = Format("kimi-k2", "tag_json", section=("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
                 call=("<|tool_call_begin|>", "<|tool_call_end|>"), name_prefix="functions.",
                 name_suffix="<|tool_call_argument_begin|>", id_suffix=":", extra={"id_prefix": "functions."},
                 think_ends_at_call=True, optional_start=True)
APERTUS = Format("apertus", "json", think=("<|inner_prefix|>", "<|inner_suffix|>"),
                 section=("<|tools_prefix|>", "<|tools_suffix|>"), array=True, name_is_key=True)
LFM2 = Format("lfm2", "pythonic", section=("<|tool_call_start|>", "<|tool_call_end|>"))
NEMOTRON_V2 = Format("nemotron-v2", "json", section=("<TOOLCALL>", "</TOOLCALL>"), array=True)
APRIEL = Format("apriel", "json", think=None, section=("<tool_calls>", "</tool_calls>"), array=True)
# MiniMax-M1 (the auto-parser's JSON_NATIVE analysis: section "<tool_calls>\n" with the newline the template
# writes after it, no reasoning markers): JSON objects, "," between them (standard_json_tools), not a list
MINIMAX_M1 = Format("minimax-m1", "json", think=None, section=("<tool_calls>\n", "</tool_calls>"),
                    extra={"comma_calls": True})
APRIEL_THINKER = Format("apriel-thinker", "json", think=("Here are my reasoning steps:", "[BEGIN FINAL RESPONSE]"),
                        section=("<tool_calls>", "</tool_calls>"), array=True, extra={"keep_opening": True})
GIGACHAT_V3 = Format("gigachat-v3", "json", think=None, call=("<|message_sep|>\n\nfunction call<|role_sep|>", ""))
GIGACHAT_V3_1 = Format("gigachat-v3.1", "json", think=None, call=("<|function_call|>", ""))
GEMMA4 = Format("gemma4", "gemma4", think=("<|channel>thought", "<channel|>"),
                call=("<|tool_call>call:", "<tool_call|>"))
COHERE2MOE = Format("cohere2moe", "json", think=("<|START_THINKING|>", "<|END_THINKING|>"),
                    section=("<|START_ACTION|>", "<|END_ACTION|>"), array=True, name_key="tool_name",
                    args_key="parameters", id_key="tool_call_id", wrap=("<|START_TEXT|>", "<|END_TEXT|>"),
                    extra={"opened": "<|START_THINKING|>", "think_stops": ("<|START_TEXT|>", "<|START_ACTION|>"),
                           "calls_first": True})  # cohere2moe.py
GPT_OSS = Format("gpt-oss", "harmony", think=None)
MINIMAX_M3 = Format("minimax-m3", "minimax-m3", think=("<mm:think>", "</mm:think>"),
                    section=("]<]minimax[>[<tool_call>", "]<]minimax[>[</tool_call>"),
                    call=(']<]minimax[>[<invoke name="', ""),
                    extra={"bare_think_end": True})  # minimax_m3.py
DEEPSEEK_V3_2 = Format("deepseek-v3.2", "dsml", section=dsml.block("function_calls"), call=(dsml.INVOKE_START, ""),
                       think_ends_at_call=True, extra={"content_sep": dsml.SEPARATOR})  # dsml.py
DEEPSEEK_V4 = Format("deepseek-v4", "dsml", section=dsml.block("tool_calls"), call=(dsml.INVOKE_START, ""),
                     think_ends_at_call=True, extra={"content_sep": dsml.SEPARATOR})  # dsml.py
LING3 = Format("ling3", "ling3", call=("<tool_call>", "</tool_call>"), name_suffix="\n",
               param=("<arg_key>", "</arg_key>", "</arg_value>"), extra={"value_prefix": "<arg_value>"},
               think_ends_at_call=True)  # ling3.py: GLM 4.5's calls, <|role_end|> ends the turn
MUSE_GLIMMER = Format("muse-glimmer", "muse-glimmer", think=None)  # muse_glimmer.py
MINICPM5 = Format("minicpm5", "minicpm5", call=('<function name="', ""))  # minicpm5.py
COMMAND_R_PLUS = Format("command-r-plus", "json", think=None, section=("Action:\n```json\n", "```"), array=True,
                        name_key="tool_name", args_key="parameters",
                        wrap=("<|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
                        extra={"calls_first": True, "wrapped_text_first": True})  # cohere2moe.py
# Solar Open 100B: llama.cpp's analysis renders its probe call's id (call00001) before the name, where its parser
# builder reads no id (call_id PRE_FUNC_NAME), so the id stays in the name prefix: only calls whose id is call00001
# read as calls, in its parser and its grammar alike (chat-diff-analyzer.cpp extract_function_markers). No reasoning
# (the template renders `reasoning`, the analysis probes `reasoning_content`); the content is always wrapped in
# <|content|>...<|end|>, which only its parser without tools reads (with tools it is text up to <|tool_calls|>).
SOLAR_OPEN = Format("solar-open", "tag_json", think=None, section=("<|tool_calls|>", "<|calls|>"),
                    call=("<|tool_call:begin|>", "<|tool_call:end|>"), name_prefix="call00001<|tool_call:name|>",
                    name_suffix="<|tool_call:args|>")
KIMI_K3 = Format("kimi-k3", "kimi-k3", think=("<|open|>think<|sep|>", "<|close|>think<|sep|>"),
                 section=("<|open|>tools<|sep|>", "<|close|>tools<|sep|>"),
                 call=('<|open|>call tool="', "<|close|>call<|sep|>"))  # kimi_k3.py

ALL = (HERMES, QWEN3_CODER, LLAMA_3, MISTRAL_NEMO, MAGISTRAL, FUNCTIONARY_V3_1, FUNCTIONARY_V3_2, FIREFUNCTION_V2,
       COMMAND_R7B, COHERE2MOE, DEEPSEEK_R1, DEEPSEEK_V3_1, GRANITE, GPT_OSS, KIMI_K2, KIMI_K3, APERTUS, LFM2, SEED_OSS,
       NEMOTRON_V2, GLM_4_5, HY3, MINIMAX_M1, MINIMAX_M2, MINIMAX_M3, APRIEL, APRIEL_THINKER, GEMMA4, GIGACHAT_V3,
       GIGACHAT_V3_1, DEEPSEEK_V3_2, DEEPSEEK_V4, LING3, MUSE_GLIMMER, MINICPM5, COMMAND_R_PLUS, SOLAR_OPEN,
       CONTENT_ONLY)
BY_NAME = {f.name: f for f in ALL}
