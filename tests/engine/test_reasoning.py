"""Reasoning: thinking split from the answer while it streams, the thinking switch, the budget, answer TTFT.

The splitter's own rules are fuzzed (any chunking gives the same split); everything else runs through the real
engine. SmolLM2 does not think by itself, so a thinking block is forced in three ways: a GGUF
variant (written with the `gguf` package) whose template opens `<think>` as DeepSeek R1's and Qwen3's do, a
`reply_prefix` that opens it, or a GBNF grammar that makes the model write one.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine import GenerationRequest
from app.engine.chat.template.reasoning import CLOSE, OPEN, ReasoningSplit, opens_thinking
from tests.conftest import GREEDY, ask
from tests.fixtures.gguf_variants import THINKING_TEMPLATE, write_variant

THINK_GRAMMAR = 'root ::= "<think>" [a-z ]{3,24} "</think>" " "? [A-Za-z ,.]{3,30}'


def split_all(pieces: list[str], opened: bool = False, stops=()) -> tuple[str, str, str, str]:
    split = ReasoningSplit(opened=opened, stops=stops)
    answer = thought = ""
    for piece in pieces:
        a, t = split.feed(piece)
        answer, thought = answer + a, thought + t
    a, t = split.finish()
    return answer + a, thought + t, split.answer, split.reasoning_text


@given(st.text(alphabet="<>/thinkab_c \n", max_size=40), st.lists(st.integers(0, 40), max_size=6), st.booleans(),
       st.sampled_from([(), ("<tk_call>",)]))
def test_any_chunking_splits_the_same(text, cuts, opened, stops):
    whole = split_all([text], opened, stops)
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    assert split_all(pieces, opened, stops) == whole
    answer, thought, final_answer, _ = whole
    assert answer == final_answer  # what streamed is what the completion holds


def test_split_rules():
    assert split_all(["  <thi", "nk>plan", " this</th", "ink>\n\n The", " answer"])[2:] == ("The answer", "plan this")
    assert split_all(["Just", " text <think>x</think>"])[2] == "Just text <think>x</think>"  # only at the start
    assert split_all(["never closed"], opened=True)[2:] == ("", "never closed")  # a length limit: all thinking
    assert split_all(["<", "b>bold"])[2] == "<b>bold"
    call = "<tool_call>\n<function=f>\n</function>\n</tool_call>"  # a call before </think>: thinking_end_tags
    assert split_all(["plan it\n<tool", call[5:]], opened=True, stops=("<tool_call>",))[2:] == (call, "plan it")
    assert split_all(["plan it\n" + call], opened=True)[2:] == ("", "plan it\n" + call)  # without: all thinking
    assert split_all(["a</think>b <tool_call>"], opened=True, stops=("<tool_call>",))[2:] == ("b <tool_call>", "a")
    assert opens_thinking("<|im_start|>assistant\n<think>\n")
    assert not opens_thinking("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert opens_thinking("<|im_start|>assistant\n", "<think>\nFirst,")
    assert not opens_thinking("<|im_start|>assistant\n", "<think>x</think>Sure")
    assert not opens_thinking("user said <think> long ago" + "x" * 40)


@pytest.fixture(scope="module")
def thinking_model(model_path, tmp_path_factory):
    return write_variant(model_path, tmp_path_factory.mktemp("think") / "smollm2-think.gguf", THINKING_TEMPLATE)


def test_thinking_switch_renders_and_splits(make_engine, thinking_model):
    engine = make_engine(model_path=thinking_model, n_slots=2)
    default, on, off = (ask("What is 2+2?", 24, thinking=value) for value in (None, True, False))
    assert engine.render_prompt(on).endswith("assistant\n<think>\n")
    assert engine.render_prompt(off).endswith("<think>\n\n</think>\n\n")
    # llama-server's default for a template that does not say it supports thinking (its own probe): off
    assert engine.render_prompt(default) == engine.render_prompt(off)
    thought, plain = engine.submit(on).result(120), engine.submit(off).result(120)
    assert thought.reasoning_text and thought.reasoning_tokens == thought.generated_tokens  # never closed
    assert thought.text == "" and thought.answer_ttft_s is None
    assert plain.reasoning_text == "" and plain.reasoning_tokens == 0 and plain.text
    assert plain.answer_ttft_s == pytest.approx(plain.ttft_s, abs=0.5)


@pytest.mark.parametrize("budget", [0, 6])
def test_budget_closes_the_block_and_the_answer_follows(make_engine, thinking_model, budget):
    engine = make_engine(model_path=thinking_model, n_slots=2)
    closing = len(engine._closing_tokens)
    events = []
    engine.subscribe(events.append)
    done = engine.submit(ask("Name a fruit.", 40, thinking=True, thinking_budget=budget)).result(120)
    assert budget <= done.reasoning_tokens <= budget + closing
    assert done.text.strip() and not done.text.startswith((OPEN, CLOSE, "\n"))  # the block closed before it
    assert CLOSE not in done.reasoning_text and OPEN not in done.reasoning_text
    assert done.answer_ttft_s is not None and done.answer_ttft_s >= done.ttft_s
    streamed = "".join(e.reasoning.get(done.request_id, "") for e in events)
    assert streamed.strip() == done.reasoning_text
    assert "".join(e.deltas.get(done.request_id, "") for e in events) == done.text


def test_reply_prefix_opens_thinking_like_the_template(make_engine):
    engine = make_engine(n_slots=2)
    done = engine.submit(ask("Name a colour.", 30, reply_prefix="<think>\nThe user", thinking_budget=4)).result(120)
    assert done.reasoning_tokens >= 4 and done.reasoning_text and done.text.strip()


def test_grammar_forced_block_splits_exactly_as_the_raw_text(make_engine):
    request = ask("Say hello.", 60, grammar=THINK_GRAMMAR)
    raw = make_engine(reasoning_format="none").submit(request).result(120)
    split = make_engine().submit(request).result(120)
    assert raw.text.startswith(OPEN) and CLOSE in raw.text and raw.reasoning_tokens == 0
    inner, _, after = raw.text[len(OPEN):].partition(CLOSE)
    assert (split.reasoning_text, split.text) == (inner.strip(), after.lstrip())
    assert split.token_ids == raw.token_ids
    assert 0 < split.reasoning_tokens < split.generated_tokens


def test_coalesced_requests_share_the_split(make_engine):
    engine = make_engine(n_slots=2)
    request = ask("Say hello.", 40, grammar=THINK_GRAMMAR)
    first, second = engine.submit(request), engine.submit(request)
    a, b = first.result(120), second.result(120)
    assert engine.stats().coalesced >= 1
    assert (a.text, a.reasoning_text, a.reasoning_tokens) == (b.text, b.reasoning_text, b.reasoning_tokens)


def test_budget_is_validated():
    with pytest.raises(ValueError, match="thinking_budget"):
        GenerationRequest(prompt="x", thinking_budget=-1)
    with pytest.raises(ValueError, match="grammar"):
        GenerationRequest(prompt="x", thinking_budget=4, grammar='root ::= "a"')
    assert GREEDY.greedy
