"""Ported llama.cpp parse cases (tests/engine/test_chat_parse_ported.py) not passed yet, each with its reason:
keyed by "<line in test-chat.cpp>:<template>", or by a template's name for all of its cases."""

COMMAND_R_PLUS = ("Command R+'s `Action: ```json` format comes from the auto-parser's analysis, not ported "
                  'for this template')
DSML = ("DeepSeek V3.2/V4's DSML format (common/parsers/deepseek.cpp) is not ported yet")
GEMMA4_STRAY = ("Gemma 4's stray <|channel> / <channel|> tokens around the content (common/parsers/gemma4.cpp) are "
                'not dropped yet')
CONTINUED = ("continuing a prefilled message in this format takes its handler's own generation prompt, which "
             "the harness does not build")
LING3 = ("Ling 3.0's <|role_end|> turn end (common/parsers/ling3.cpp) is not ported yet")
MINICPM5 = ("MiniCPM5's <function name=...> format (common/parsers/minicpm5.cpp) is not ported yet")
MUSE_GLIMMER = ("Muse Glimmer's ` to=` recipients (common/parsers/muse-glimmer.cpp) are not ported yet")
EXCLUDED: dict[str, str] = {
    '6239:Apriel-1.6-15b-Thinker-fixed': CONTINUED,
    '6593:openai-gpt-oss-120b': CONTINUED,
    '3155:google-gemma-4-31B-it': GEMMA4_STRAY,
    '3161:google-gemma-4-31B-it': GEMMA4_STRAY,
    '3167:google-gemma-4-31B-it': GEMMA4_STRAY,
    '3173:google-gemma-4-31B-it': GEMMA4_STRAY,
    '5893:CohereForAI-c4ai-command-r-plus-tool_use': COMMAND_R_PLUS,
    '5895:CohereForAI-c4ai-command-r-plus-tool_use': COMMAND_R_PLUS,
    '4022:deepseek-ai-DeepSeek-V3.2': DSML,
    '4036:deepseek-ai-DeepSeek-V3.2': DSML,
    '4049:deepseek-ai-DeepSeek-V3.2': DSML,
    '4069:deepseek-ai-DeepSeek-V3.2': DSML,
    '4089:deepseek-ai-DeepSeek-V3.2': DSML,
    '4106:deepseek-ai-DeepSeek-V3.2': DSML,
    '4123:deepseek-ai-DeepSeek-V3.2': DSML,
    '4140:deepseek-ai-DeepSeek-V3.2': DSML,
    '4157:deepseek-ai-DeepSeek-V3.2': DSML,
    '4174:deepseek-ai-DeepSeek-V3.2': DSML,
    '4188:deepseek-ai-DeepSeek-V3.2': DSML,
    '4248:deepseek-ai-DeepSeek-V4': DSML,
    '4262:deepseek-ai-DeepSeek-V4': DSML,
    '4275:deepseek-ai-DeepSeek-V4': DSML,
    '4295:deepseek-ai-DeepSeek-V4': DSML,
    '4315:deepseek-ai-DeepSeek-V4': DSML,
    '4353:deepseek-ai-DeepSeek-V4': DSML,
    '4371:deepseek-ai-DeepSeek-V4-Flash-0731': DSML,
    '4742:inclusionai-ling-3.0-flash': LING3,
    '6365:muse-glimmer': MUSE_GLIMMER,
    '6880:openbmb-MiniCPM5-1B': MINICPM5,
    '6887:openbmb-MiniCPM5-1B': MINICPM5,
    '6894:openbmb-MiniCPM5-1B': MINICPM5,
    '6903:openbmb-MiniCPM5-1B': MINICPM5,
    '6910:openbmb-MiniCPM5-1B': MINICPM5,
    '6918:openbmb-MiniCPM5-1B': MINICPM5,
}
