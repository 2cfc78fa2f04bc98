"""Ported llama.cpp parse cases (tests/engine/test_chat_parse_ported.py) not passed yet, each with its reason:
keyed by "<line in test-chat.cpp>:<template>", or by a template's name for all of its cases."""

COMMAND_R_PLUS = ("Command R+'s `Action: ```json` format comes from the auto-parser's analysis, not ported "
                  'for this template')
GEMMA4_STRAY = ("Gemma 4's stray <|channel> / <channel|> tokens around the content (common/parsers/gemma4.cpp) are "
                'not dropped yet')
KIMI_K3 = ("Kimi K3's <|open|>/<|close|> format (common/parsers/kimi-k3.cpp) is not ported yet")
MINICPM5 = ("MiniCPM5's <function name=...> format (common/parsers/minicpm5.cpp) is not ported yet")
EXCLUDED: dict[str, str] = {
    '5893:CohereForAI-c4ai-command-r-plus-tool_use': COMMAND_R_PLUS,
    '5895:CohereForAI-c4ai-command-r-plus-tool_use': COMMAND_R_PLUS,
    '4869:Kimi-K3': KIMI_K3,
    '4875:Kimi-K3': KIMI_K3,
    '4883:Kimi-K3': KIMI_K3,
    '4889:Kimi-K3': KIMI_K3,
    '4895:Kimi-K3': KIMI_K3,
    '4907:Kimi-K3': KIMI_K3,
    '4920:Kimi-K3': KIMI_K3,
    '4933:Kimi-K3': KIMI_K3,
    '4951:Kimi-K3': KIMI_K3,
    '6880:openbmb-MiniCPM5-1B': MINICPM5,
    '6887:openbmb-MiniCPM5-1B': MINICPM5,
    '6894:openbmb-MiniCPM5-1B': MINICPM5,
    '6903:openbmb-MiniCPM5-1B': MINICPM5,
    '6910:openbmb-MiniCPM5-1B': MINICPM5,
    '6918:openbmb-MiniCPM5-1B': MINICPM5,
}
