"""Ported llama.cpp parse cases (tests/engine/test_chat_parse_ported.py) not passed yet, each with its reason:
keyed by "<line in test-chat.cpp>:<template>", or by a template's name for all of its cases."""

EXCLUDED: dict[str, str] = {}
