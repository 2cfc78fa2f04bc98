"""llama.cpp's own parse cases (tests/test-chat.cpp, extracted to data/chat_parse_cases.json by
data/extract_chat_cases.py): each template's replies parsed by app.engine.chat.parse give the message llama.cpp
expects (content and reasoning compared stripped, arguments as JSON, as its assert_msg_equals does), one-shot and
fed character by character. Cases the extractor cannot read run as strict xfails."""

import json
import os
from pathlib import Path

import pytest

from app.engine.chat.parse import ToolCall, detect, opened_thinking, parse
from app.engine.chat.template.render import ChatTemplate
from tests.fixtures.servers import llama_cpp_templates

DATA = json.loads(Path(__file__).with_name("data").joinpath("chat_parse_cases.json").read_text())
TEMPLATES = llama_cpp_templates()
USER = [{"role": "user", "content": "Hey there!"}]


def _cases():
    for case in DATA:
        for template in case["templates"] or ["?"]:
            stem = Path(template).stem
            key = f"{case['line']}:{stem}"
            reason = case.get("unread") and f"the extractor cannot read this C++ chain ({case['unread']})"
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            yield pytest.param(case, stem, id=key, marks=marks)


def _tools(case) -> list[dict]:
    return [{"type": "function", "function": tool} for tool in case["params"].get("tools") or []]


def _setting(case):
    """(format, opened, reasoning_format, tools, calls) for the case, as llama.cpp's test sets them up."""
    if not TEMPLATES:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    source = TEMPLATES[case["stem"]]
    params = case["params"]
    fmt, tools = detect(source), _tools(case)
    thinking = params.get("enable_thinking", True)
    prompt = ChatTemplate(source, "", "").render(USER, enable_thinking=thinking, tools=tools or None)
    reasoning = "none" if params.get("reasoning_format", "COMMON_REASONING_FORMAT_NONE").endswith("NONE") else "auto"
    calls = bool(tools) and params.get("tool_choice", "") != "COMMON_CHAT_TOOL_CHOICE_NONE"
    return fmt, opened_thinking(prompt, fmt), reasoning, tools, calls


def _resumed_thinking(case, thought: str, fmt, opened):
    """(reply prefix, opened) resuming the prefilled thinking where its handler's own generation prompt does
    (gpt-oss.cpp: `<|start|>assistant<|channel|>analysis<|message|>` + the thinking; the auto-parser's: the
    prompt cut at its thinking tag + the thinking, for Apriel 1.6 `<|begin_assistant|>\n` + the thinking, its
    "Here are my reasoning steps:" left out; both seen from llama-server's /apply-template, 2026-11-27): the
    template's rendering of the prefilled message cut after its thinking, less the prompt it continues. When that
    rendering rewrites the generation prompt's end and opens no thinking tag, the turn's start opened the
    thinking (`opened` True). None when the rendering does not show the thinking."""
    source = TEMPLATES[case["stem"]]
    template, thinking = ChatTemplate(source, "", ""), case["params"].get("enable_thinking", True)
    rendered = template.render([*USER, {"role": "assistant", "content": "", "reasoning_content": thought}],
                               add_generation_prompt=False, enable_thinking=thinking)
    prompt = template.render(USER, enable_thinking=thinking)
    if not thought or thought not in rendered:
        return None
    cut = rendered[:rendered.rindex(thought) + len(thought)]
    if cut.startswith(prompt):
        return cut[len(prompt):], opened
    turn = cut[len(os.path.commonprefix([cut, prompt])):]
    if not fmt.think or fmt.think[0] in turn:
        return None
    return turn, True


def _json_or_none(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def _same_args(want: str, got: str) -> bool:
    """As test-chat.cpp's renormalize_json compares them: partial JSON is not compared (llama.cpp's mapper writes
    "{" as soon as a call is named, its tests expect ""); no arguments at all read as {}."""
    want_json, got_json = _json_or_none(want), _json_or_none(got)
    return want_json == got_json or (want == "" and got_json == {})


def _continued(case, fmt, opened, reasoning, **kw):
    """A parse that continues the case's prefilled assistant message (llama.cpp's continue_final_message) as the
    engine continues a reply prefix: thinking continued is parsed with the rest (the block open), content
    continued is the prefill's followed by the reply's."""
    params, text = case["params"], case["input"]
    how, prefill = params.get("continue_final_message", ""), params.get("prefill") or {}
    if how.endswith("REASONING") and reasoning != "none":
        resumed = _resumed_thinking(case, prefill["reasoning_content"], fmt, opened)
        if resumed is not None:
            return parse(resumed[0] + text, fmt, opened=resumed[1], reasoning_format=reasoning, **kw)
    if how.endswith("REASONING") and fmt.think and reasoning != "none":
        return parse(prefill["reasoning_content"] + text, fmt, opened=fmt.think[0], reasoning_format=reasoning, **kw)
    got = parse(text, fmt, opened="" if how else opened, reasoning_format=reasoning, **kw)
    if how.endswith("CONTENT"):
        thought = prefill.get("reasoning_content", "") if reasoning != "none" else ""
        return type(got)(prefill["content"] + got.content, (thought + got.reasoning_content).strip(), got.tool_calls)
    return got


@pytest.mark.parametrize(("case", "stem"), list(_cases()))
def test_llama_cpp_parse_case(case, stem):
    fmt, opened, reasoning, tools, calls = _setting({**case, "stem": stem})
    partial = bool(case["params"].get("is_partial"))
    schema = bool(case["params"].get("json_schema"))  # llama.cpp parses a response format instead of calls
    got = _continued({**case, "stem": stem}, fmt, opened, reasoning, partial=partial, tools=tools, calls=calls,
                     response_format=schema)
    want = case["expect"]
    assert (got.content.strip(), got.reasoning_content.strip()) == (want["content"].strip(),
                                                                     want["reasoning_content"].strip()), got
    assert [c.name for c in got.tool_calls] == [c["name"] for c in want["tool_calls"]], got
    pairs = zip(want["tool_calls"], got.tool_calls, strict=False)
    assert all(_same_args(w["arguments"], g.arguments) for w, g in pairs), got
    assert [c.id for c in got.tool_calls] == [c["id"] for c in want["tool_calls"]], got
    if not partial:  # fed character by character: calls only grow, ending at the one-shot parse
        text, last = case["input"], ()
        for end in range(1, len(text) + 1):
            step = parse(text[:end], fmt, partial=True, reasoning_format=reasoning, opened=opened, tools=tools,
                         calls=calls, response_format=schema).tool_calls
            grown = all(_grows(a, b) for a, b in zip(last, step, strict=False))
            assert len(step) >= len(last) and grown, (end, last, step)
            last = step
        assert all(_grows(a, b) for a, b in zip(last, got.tool_calls, strict=False))


def _grows(before: ToolCall, after: ToolCall) -> bool:
    return before.name == after.name and after.arguments.startswith(before.arguments)
