"""The parser's vocabulary: a parsed assistant message, its tool calls, and the description of one output
format (llama.cpp's analysis result: reasoning, content and tool-call markers; common/chat-auto-parser.h)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ToolCall:
    """One call. `arguments` is JSON text (an object); while streaming, the prefix seen so far. `id` is the one
    the model wrote ("" when its format has none)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ParsedMessage:
    """An assistant reply split as llama.cpp's common_chat_msg: answer text, thinking, calls."""

    content: str = ""
    reasoning_content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class Format:
    """How one family of templates writes a reply. `kind` says how a call is written:

    - "none": content only (a template that shows no tools);
    - "json": a JSON object per call ({name_key: ..., args_key: {...}}), `array`: the calls are a JSON list;
      `name_is_key`: {"<name>": {args}}; `extra["comma_calls"]`: the objects follow each other with "," between
      them, not in a list (MiniMax-M1);
    - "tag_json": `name_prefix` NAME `name_suffix` then JSON arguments (Kimi, DeepSeek, Functionary, Mistral);
    - "tagged": `name_prefix` NAME `name_suffix` then parameters `param` = (before key, after key, after value)
      (Qwen3-Coder, Seed-OSS, MiniMax-M2, GLM 4.5);
    - "pythonic": [name(key=value, ...)] (LFM2);
    - "gemma4": NAME{key:value} in Gemma 4's own syntax (gemma4.py);
    - "harmony": GPT-OSS channels (harmony.py); "functionary-v3.2": `>>>` blocks (functionary.py);
    - "ling3": GLM 4.5's tagged calls in Ling 3's turn (ling3.py); "muse-glimmer": ` to=` messages (muse_glimmer.py).

    `section` = (start, end) around all calls ("" for none: then the call's own start triggers), `call` = (start,
    end) around each. `think` = reasoning (start, end); `wrap` = content markers to drop (start, end)."""

    name: str
    kind: str = "none"
    think: tuple[str, str] | None = ("<think>", "</think>")
    section: tuple[str, str] = ("", "")
    call: tuple[str, str] = ("", "")
    name_prefix: str = ""
    name_suffix: str = ""
    param: tuple[str, str, str] = ("", "", "")
    name_key: str = "name"
    args_key: str = "arguments"
    id_key: str = ""
    array: bool = False
    name_is_key: bool = False
    id_suffix: str = ""  # tag_json: text after the name up to name_suffix is the call id (Kimi's ":0")
    wrap: tuple[str, str] = ("", "")
    think_ends_at_call: bool = False  # with tools, a call's start also ends the thinking (Qwen3.5)
    optional_start: bool = False  # a call may omit call[0] and begin at name_prefix (Qwen3-Coder)
    start_json: bool = False  # json: a reply that starts with "{" is a call even without a section marker
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def trigger(self) -> str:
        """The marker that starts the calls."""
        return self.section[0] or self.call[0] or self.name_prefix

    @property
    def triggers(self) -> tuple[str, ...]:
        """Every marker that may start the calls: with `optional_start`, also the next one in (section, call,
        name prefix), which models sometimes begin with."""
        if not self.optional_start:
            return (self.trigger,)
        later = [m for m in (self.call[0], self.name_prefix) if m and m != self.trigger]
        return (self.trigger, *later[:1])


def offered_parameters(tools, name: str) -> dict | None:
    """The parameters schema of the offered function `name` ({} when it declares none); None when `tools` (the
    request's, OpenAI-style: {"type": "function", "function": {...}} or the function itself) do not offer it."""
    for tool in tools or ():
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        if function.get("name") == name:
            return function.get("parameters") or {}
    return None


def offered_properties(tools, name: str) -> dict | None:
    """The offered function's properties ({} when it takes none); None for a function not offered."""
    parameters = offered_parameters(tools, name)
    return None if parameters is None else parameters.get("properties") or {}
