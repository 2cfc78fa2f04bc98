"""Which prompt format a model gets when its GGUF carries no chat template, and llama.cpp's built-in formats.

A blind ChatML fallback makes models trained on another format answer with garbage, so the format is read from
the model's own special tokens: a vocabulary with `<start_of_turn>` was trained on Gemma's turns, one with
`<|start_header_id|>` on Llama 3's, and so on. Base (pretrained) models share their family's vocabulary but
never learned to take turns, and continue raw text far better; a chat-tuned conversion gives itself away by
making the end-of-turn token its end-of-sequence token (`is_chat_tuned`). Formatting itself is llama.cpp's
(`llama_chat_apply_template` with a built-in template name), not a hand-written copy.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

import llama_cpp

AUTO = "auto"  # the GGUF's template, else a format detected from special tokens, else raw
GGUF = "gguf"  # the Jinja template stored in the GGUF
RAW = "raw"  # no template: the messages' text, one after another

# (special tokens that must each be one token in the vocabulary, the end-of-turn one among them, llama.cpp
# built-in template name), in order: the first match wins, so more specific markers come first.
TOKEN_MARKERS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("<start_of_turn>", "<end_of_turn>"), "<end_of_turn>", "gemma"),
    (("<|im_start|>", "<|im_sep|>", "<|im_end|>"), "<|im_end|>", "phi4"),
    (("<|im_start|>", "<|im_end|>"), "<|im_end|>", "chatml"),
    (("<|start_header_id|>", "<|eot_id|>"), "<|eot_id|>", "llama3"),
    (("<|header_start|>", "<|eot|>"), "<|eot|>", "llama4"),
    (("[SYSTEM_PROMPT]", "[INST]"), "</s>", "mistral-v7"),
    (("[INST]", "[/INST]"), "</s>", "mistral-v3"),
    (("<|user|>", "<|assistant|>", "<|end|>"), "<|end|>", "phi3"),
    (("<｜User｜>", "<｜Assistant｜>"), "<｜end▁of▁sentence｜>", "deepseek3"),
    (("<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>"), "<|END_OF_TURN_TOKEN|>", "command-r"),
    (("<|start|>", "<|channel|>", "<|end|>"), "<|return|>", "gpt-oss"),
)
# Words in a model's name, fine-tune label or file name that say it was tuned for chat.
CHAT_NAME = re.compile(r"(instruct|chat|assistant|(^|[-_. ])it($|[-_. ])|sft|dpo|rlhf)", re.IGNORECASE)


@dataclass(frozen=True)
class Detected:
    name: str  # llama.cpp built-in template name
    marker: str  # the token that revealed it
    end_of_turn: str


def utf8(text: str) -> bytes:
    """`text` as UTF-8, each lone surrogate (which UTF-8 cannot encode: JSON's "\\udcff") as U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text).encode("utf-8")


def builtin_names() -> list[str]:
    """Every template name this llama.cpp build formats itself (llama_chat_builtin_templates)."""
    count = llama_cpp.llama_chat_builtin_templates(None, 0)
    names = (ctypes.c_char_p * count)()
    llama_cpp.llama_chat_builtin_templates(names, count)
    return sorted(n.decode() for n in names if n)


def detect(is_single_token) -> Detected | None:
    """The turn format the vocabulary was built for, or None. `is_single_token(text)` asks the vocabulary."""
    for markers, end_of_turn, name in TOKEN_MARKERS:
        if all(is_single_token(m) for m in markers):
            return Detected(name, markers[0], end_of_turn)
    return None


def is_chat_tuned(found: Detected, eos_text: str, names: list[str]) -> bool:
    """Chat-tuned if its end-of-sequence token is the format's end-of-turn token, or its names say so."""
    return eos_text == found.end_of_turn or any(CHAT_NAME.search(n) for n in names if n)


def apply_builtin(name: str, messages: list[dict]) -> str:
    """Format chat messages with llama.cpp's built-in template `name`; ends with the assistant's turn opener."""
    keep = [(utf8(str(m["role"])), utf8(str(m["content"]))) for m in messages]
    chat = (llama_cpp.llama_chat_message * len(keep))()
    for entry, (role, content) in zip(chat, keep, strict=True):
        entry.role, entry.content = role, content
    size = 1024 + 2 * sum(len(c) for _, c in keep)
    while True:
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_chat_apply_template(name.encode(), chat, len(keep), True, buf, size)
        if n < 0:
            raise ValueError(f"llama.cpp has no built-in chat template named {name!r}")
        if n <= size:
            return buf.raw[:n].decode("utf-8", "replace")
        size = n + 1


def raw_text(messages: list[dict]) -> str:
    """No template: each message's text, separated by blank lines (what a base model continues)."""
    return "\n\n".join(str(m["content"]) for m in messages if str(m["content"]))
