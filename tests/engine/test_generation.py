"""Generation on the real model: parity under batching, interleaving, templates, stops and text."""

import threading

from app.engine import GenerationRequest, RequestState
from tests.conftest import GREEDY, ask

PROMPTS = [
    "Write a short poem about the sea.",
    "List three facts about the planet Mars.",
    "Explain what a compiler does in two sentences.",
    "Give me a recipe for pancakes.",
]


def test_default_model_generates_tokens(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=512)
    result = engine.submit(ask("Say hello.", max_tokens=8)).result(timeout=60)
    assert result.generated_tokens > 0 and result.text.strip()
    assert result.finish_reason in ("stop", "length")
    assert engine.model_info.architecture == "llama"


def test_greedy_tokens_are_identical_alone_and_batched(make_engine):
    engine = make_engine(n_slots=4, n_ctx_per_slot=512)
    requests = [ask(p, max_tokens=40, ignore_eos=True) for p in PROMPTS]
    alone = [engine.submit(r).result(timeout=120).token_ids for r in requests]
    handles = [engine.submit(r) for r in requests]
    batched = [h.result(timeout=120).token_ids for h in handles]
    assert all(len(ids) == 40 for ids in alone)
    assert batched == alone


def test_second_request_streams_before_the_first_finishes(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    arrivals, generating = [], threading.Event()

    def on_step(ev):
        arrivals.extend((rid, ev.step) for rid in ev.deltas)
        if RequestState.GENERATING in ev.states.values():
            generating.set()

    engine.subscribe(on_step)
    first = engine.submit(ask(PROMPTS[0], max_tokens=48, ignore_eos=True))
    assert generating.wait(30)
    assert first.state == RequestState.GENERATING
    second = engine.submit(ask(PROMPTS[1], max_tokens=48, ignore_eos=True))
    first.result(timeout=120), second.result(timeout=120)
    first_last = max(t for rid, t in arrivals if rid == first.id)
    second_first = min(t for rid, t in arrivals if rid == second.id)
    assert second_first < first_last


def test_messages_are_rendered_with_the_gguf_template(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=512)
    rendered = engine._renderer.render([{"role": "user", "content": "Hi"}])
    # SmolLM2's own Jinja template adds its default system prompt; llama.cpp's built-in chatml would not.
    assert "You are a helpful AI assistant named SmolLM" in rendered
    assert rendered.endswith("<|im_start|>assistant\n")
    assert engine.model_info.chat_format == "template from the GGUF"
    templated = engine.submit(ask("Hi", max_tokens=1)).result(timeout=60)
    assert templated.prompt_tokens == len(engine._model.tokenize(rendered, add_special=False))


def test_raw_prompt_is_tokenized_as_given(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=512)
    result = engine.submit(GenerationRequest(prompt="The capital of France is", max_tokens=4,
                                             sampling=GREEDY)).result(timeout=60)
    assert result.prompt_tokens == len(engine._model.tokenize("The capital of France is", add_special=True))
    assert result.generated_tokens >= 1


def test_a_reply_prefix_is_tokenized_with_the_prompt_as_one_string(make_engine):
    # llama-server tokenizes a continued reply (prefill) and its prompt as one string: a prefix that ends a word
    # the prompt began must give the tokens, and so the greedy reply, of that whole text given as the prompt.
    engine = make_engine(n_slots=1, n_ctx_per_slot=512)
    joined = engine.submit(GenerationRequest(prompt="Once upon a ti", reply_prefix="me, there", max_tokens=12,
                                             sampling=GREEDY)).result(timeout=60)
    whole = engine.submit(GenerationRequest(prompt="Once upon a time, there", max_tokens=12,
                                            sampling=GREEDY)).result(timeout=60)
    apart = engine._model.tokenize("Once upon a ti", add_special=True) + engine._model.tokenize("me, there", False)
    assert len(apart) != whole.prompt_tokens  # the seam matters for this text
    assert (joined.prompt_tokens, joined.token_ids) == (whole.prompt_tokens, whole.token_ids)


def test_stop_strings_never_leak(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    free = engine.submit(ask("Count from 1 to 20, separated by commas.", max_tokens=60)).result(timeout=60)
    stop = "\n5."
    assert stop in free.text  # the free run passes the stop point, so the stop below really cuts
    handle = engine.submit(ask("Count from 1 to 20, separated by commas.", max_tokens=60, stop=[stop]))
    streamed = "".join(handle.stream(timeout=60))
    result = handle.result(timeout=1)
    assert result.finish_reason == "stop"
    assert "5." not in streamed and "5." not in result.text and streamed.endswith("4. 4")
    assert streamed == result.text and free.text.startswith(result.text)


def test_emoji_and_cjk_arrive_as_whole_characters(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    handles = [engine.submit(ask(p, max_tokens=48)) for p in (
        "Reply with five emoji that describe happiness, like 😀🎉.",
        "Translate 'good morning, my friend' into Japanese and Chinese: 日本語 中文.")]
    results = [h.result(timeout=60) for h in handles]
    texts = [r.text for r in results]
    assert any(ord(ch) > 0x2E80 for text in texts for ch in text)  # multi-byte characters were produced
    assert all("\ufffd" not in text for text in texts)
