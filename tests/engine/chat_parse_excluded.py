"""Ported llama.cpp parse cases (tests/engine/test_chat_parse_ported.py) not passed yet, each with its reason:
keyed by "<line in test-chat.cpp>:<template>", or by a template's name for all of its cases."""

GEMMA4_STRAY = ("Gemma 4's stray <|channel> / <channel|> tokens around the content (common/parsers/gemma4.cpp) are "
                'not dropped yet')
KIMI_K3 = ("Kimi K3's <|open|>/<|close|> format (common/parsers/kimi-k3.cpp) is not ported yet")
EXCLUDED: dict[str, str] = {
    '4869:Kimi-K3': KIMI_K3,
    '4875:Kimi-K3': KIMI_K3,
    '4883:Kimi-K3': KIMI_K3,
    '4889:Kimi-K3': KIMI_K3,
    '4895:Kimi-K3': KIMI_K3,
    '4907:Kimi-K3': KIMI_K3,
    '4920:Kimi-K3': KIMI_K3,
    '4933:Kimi-K3': KIMI_K3,
    '4951:Kimi-K3': KIMI_K3,
}
