"""Speculative decoding on the real model: the same tokens as without it (reproducible mode), drafts accepted on a
copy task, max_tokens and stop strings honoured inside an accepted draft, cancel mid-draft, KV trimmed."""

import threading

import pytest

from app.bench.speculative import copy_request, extract_request
from app.engine import GenerationRequest, SamplingParams, Speculation
from app.engine.speculative.drafts import (
    AUTO_MAX_BATCH,
    AUTO_PROBE,
    AUTO_PROBE_RUNS,
    DRAFT_MIN,
    DRAFT_START,
    WEAK_MATCH_DRAFT,
    DraftVocab,
    NgramDrafter,
    SpecState,
)
from tests.conftest import assert_kv_accounted

PASSAGE = ("The river bends twice before it reaches the old mill at the edge of town. Every spring the orchard "
           "fills with bees and the farmers count the blossoms. A lighthouse keeper writes down the colour of the "
           "sea each morning.")
COPY = f"Repeat this text exactly, changing 'river' to 'stream':\n\n{PASSAGE}"
FREE = "Write a short story about a cat who learns to sail."
ON = Speculation(mode="on")
GREEDY = SamplingParams(temperature=0.0)


def request(text: str, spec=None, sampling=GREEDY, **kwargs) -> GenerationRequest:
    kwargs.setdefault("max_tokens", 60)
    return GenerationRequest(messages=[{"role": "user", "content": text}], sampling=sampling, speculative=spec,
                             **kwargs)


def cases(spec) -> list[GenerationRequest]:
    """Greedy and seeded requests, copying and free, one with penalties and one with log-probabilities."""
    out = []
    for text in (COPY, FREE):
        out.append(request(text, spec))
        out.append(request(text, spec, SamplingParams(temperature=0.9, seed=7)))
        out.append(request(text, spec, SamplingParams(temperature=0.7, seed=11, repeat_penalty=1.1)))
    out.append(request(COPY, spec, logprobs=2))
    return out


def run_all(engine, requests, together: bool):
    if together:
        return [h.result(600) for h in [engine.submit(r) for r in requests]]
    return [engine.submit(r).result(600) for r in requests]


def test_speculation_gives_the_same_tokens_in_reproducible_mode(make_engine):
    engine = make_engine(n_slots=4, reproducible=True)
    plain = run_all(engine, cases(None), together=False)
    alone = run_all(engine, cases(ON), together=False)
    batched = run_all(engine, cases(ON), together=True)
    for reference, *spec in zip(plain, alone, batched, strict=True):
        assert reference.finish_reason in ("stop", "length")
        for completion in spec:
            assert completion.token_ids == reference.token_ids
            assert completion.text == reference.text
            assert completion.token_logprobs == reference.token_logprobs
            assert completion.accepted_tokens <= completion.drafted_tokens
    assert alone[0].accepted_tokens > 10  # the greedy copy really drafted
    assert sum(c.accepted_tokens for c in alone) > sum(c.accepted_tokens for c in alone[:1])  # sampled ones too
    stats = engine.stats()
    assert stats.accepted_tokens == sum(c.accepted_tokens for c in alone + batched)
    assert stats.drafted_tokens == sum(c.drafted_tokens for c in alone + batched)
    assert_kv_accounted(engine)


@pytest.mark.parametrize("reproducible", [True, False])
def test_max_tokens_and_stop_inside_an_accepted_draft(make_engine, reproducible):
    engine = make_engine(n_slots=2, reproducible=reproducible)
    for kwargs in ({"max_tokens": 23}, {"max_tokens": 120, "stop": ["the farmers"]}):
        plain = engine.submit(request(COPY, **kwargs)).result(600)
        spec = engine.submit(request(COPY, ON, **kwargs)).result(600)
        assert spec.accepted_tokens > 5
        assert spec.token_ids == plain.token_ids and spec.text == plain.text
        assert spec.generated_tokens <= kwargs["max_tokens"]
    assert plain.finish_reason == "stop" and "farmers" not in plain.text and "orchard" in plain.text
    assert_kv_accounted(engine)


def test_a_slot_after_speculation_gives_a_correct_follow_up(make_engine):
    """One slot: rejected drafts' KV is dropped at once (the slot holds what the records say), and a follow-up
    turn reusing the reply's KV from the prompt cache gives the tokens of an engine without a cache."""
    engine = make_engine(n_slots=1)
    hot = SamplingParams(temperature=1.2, top_k=0, top_p=1.0, min_p=0.0, seed=3)  # wanders off the copy
    first = engine.submit(request(COPY, Speculation(mode="on", max_draft=16), hot, max_tokens=60)).result(600)
    assert first.drafted_tokens > first.accepted_tokens  # some drafts were rejected, so there was KV to trim
    assert engine.wait_idle(30) and engine.kv_positions() == engine.kv_expected()
    messages = [{"role": "user", "content": COPY}, {"role": "assistant", "content": first.text},
                {"role": "user", "content": "Go on."}]
    follow_up = GenerationRequest(messages=messages, max_tokens=40, sampling=GREEDY)
    second = engine.submit(follow_up).result(600)
    expected = make_engine(n_slots=1, prompt_cache=False).submit(follow_up).result(600).token_ids
    assert second.cached_tokens > first.prompt_tokens and second.token_ids == expected
    assert_kv_accounted(engine)


def test_cancel_mid_draft(make_engine):
    engine = make_engine(n_slots=1)
    seen = threading.Event()
    handle = None

    def on_step(event):
        if handle is not None and event.tokens.get(handle.id, 0) >= 12:
            seen.set()

    engine.subscribe(on_step)
    handle = engine.submit(request(PASSAGE * 3 + "\n\nRepeat it.", ON, max_tokens=1000, ignore_eos=True))
    assert seen.wait(600)
    handle.cancel()
    completion = handle.result(600)
    assert completion.finish_reason == "cancelled" and completion.drafted_tokens > 0
    assert_kv_accounted(engine)
    again = engine.submit(request(COPY, max_tokens=20)).result(600)
    assert again.finish_reason in ("stop", "length") and again.generated_tokens > 0


def test_constrained_requests_do_not_draft(make_engine):
    engine = make_engine(n_slots=1)
    completion = engine.submit(request(COPY, ON, grammar='root ::= "The river" [a-z ]*', max_tokens=20)).result(600)
    assert completion.finish_reason in ("stop", "length") and completion.drafted_tokens == 0
    assert completion.text.startswith("The river")


def test_ngram_drafts_follow_the_longest_most_recent_match():
    drafter = NgramDrafter([1, 2, 3, 4, 5, 9, 2, 3, 7, 8])
    drafter.extend([2, 3])
    assert drafter.draft(3) == [7, 8, 2]  # (2, 3) last followed by 7 at index 8
    assert drafter.draft(6) == [7, 8, 2, 3, 7, 8]  # then with the match's period
    drafter.extend([4])
    assert drafter.draft(2) == [5, 9]  # (2, 3, 4) occurred once: longest match wins
    assert NgramDrafter([1, 2, 3]).draft(4) == []


def test_vocab_keys_match_across_case_and_space_and_drafts_stop_at_a_line_end():
    vocab = DraftVocab(["Name", ":", " Bob", "\n", "Age", " name", " 7"])
    record = [0, 1, 2, 3, 4, 1, 6, 3]  # "Name: Bob\nAge: 7\n"
    drafter = NgramDrafter(record, vocab)
    drafter.extend([5, 1])  # " name:" in the reply
    assert drafter.draft(8) == [2, 3]  # " Bob\n", not on into "Age"
    assert NgramDrafter(record).draft(8) == [] and NgramDrafter(record + [5, 1]).draft(8) == []


def test_draft_length_grows_after_whole_runs_and_shrinks_after_rejections():
    state = SpecState(Speculation(mode="on", max_draft=32), list(range(50)) * 2)
    assert state.length == DRAFT_START and len(state.draft([], 64, batched=1)) == DRAFT_START
    for drafted, accepted, length in ((8, 8, 16), (16, 16, 32), (32, 32, 32), (32, 5, 6), (6, 0, DRAFT_MIN)):
        state.record(drafted, accepted)
        state.review()
        assert state.length == length
    assert len(state.draft([], 64, batched=1)) == DRAFT_MIN


def test_the_engine_grows_drafts_on_accepted_runs_and_shrinks_them_on_rejections(make_engine):
    """Seen through engine stats: each request's verified runs, (drafted, accepted) each, in order. bench --spec's
    copy is accepted whole run after run; its extraction (fields renumbered and reworded) has rejections."""
    engine = make_engine(n_slots=1)
    seen = {}
    for name, make in (("copy", lambda: copy_request(0, ON)), ("extract", lambda: extract_request(ON))):
        engine.reset_stats()
        completion = engine.submit(make()).result(600)
        assert engine.wait_idle(60)  # the step that ended it has recorded its run
        runs = seen[name] = engine.stats().recent_draft_runs
        assert completion.drafted_tokens == sum(d for d, _ in runs)
        assert completion.accepted_tokens == sum(a for _, a in runs)
        assert runs[0][0] <= DRAFT_START
        for (drafted, accepted), (following, _) in zip(runs, runs[1:], strict=False):
            if accepted < drafted:  # a rejection: the next draft is at most one more than the accepted part
                assert following <= max(DRAFT_MIN, accepted + 1), (name, runs)
            assert following <= ON.max_draft, (name, runs)
    copy, extract = seen["copy"], seen["extract"]
    # doubling up to max_draft 48 (llama-server's n-gram drafts), kept below prefill_chunk (48) in reproducible mode
    assert ON.max_draft == 48 and [d for d, _ in copy[1:4]] == [16, 32, 47], copy
    rejected = [i for i, (d, a) in enumerate(extract[:-1]) if a < d]
    assert rejected and any(extract[i + 1][0] < extract[i][0] for i in rejected), extract  # and the next shorter


def test_a_draft_from_a_two_token_match_is_short_and_a_longer_match_drafts_in_full():
    """bench --spec's extraction: "Account Number" in the reply matched the instructions' "account number, plan and
    the invoice numbers ..." (the most recent place) and drafted 23 tokens, all rejected."""
    record = list(range(100, 130))
    weak = SpecState(Speculation(mode="on"), [7, 8, *record, 1, 2, *range(40, 70)])  # "1 2" then 30 tokens
    assert weak.draft([1, 2], 64, batched=1) == list(range(40, 40 + WEAK_MATCH_DRAFT))
    strong = SpecState(Speculation(mode="on"), [7, 8, *record, 3, 1, 2, *range(40, 70)])
    assert strong.draft([3, 1, 2], 64, batched=1) == list(range(40, 40 + DRAFT_START))  # a 3-token match


def test_auto_mode_turns_off_when_drafts_do_not_pay_and_beside_many_requests():
    state = SpecState(Speculation(mode="auto"), [1, 2, 1, 2, 1])
    assert state.draft([2], 4, batched=1) == [1, 2, 1, 2]
    assert state.draft([2], 4, batched=AUTO_MAX_BATCH + 1) == []
    state.record(AUTO_PROBE, AUTO_PROBE // 10)
    state.review()
    assert state.active and AUTO_PROBE_RUNS == 2  # one run is not enough evidence, however long
    state.record(DRAFT_MIN, 0)
    state.review()
    assert not state.active and "turned itself off" in state.note
    assert state.draft([2], 4, batched=1) == []
    forced_on = SpecState(Speculation(mode="on"), [1, 2, 1, 2, 1])
    forced_on.record(AUTO_PROBE, 0)
    forced_on.review()
    assert forced_on.active and forced_on.draft([2], 4, batched=AUTO_MAX_BATCH + 1) == [1, 2]  # DRAFT_MIN now


def test_drafts_share_a_small_batch_with_prompts_in_the_default_mode(make_engine):
    """Batched mode (reproducible off), a 16-token batch: 4 drafting streams, a long prompt joining them. Drafts
    only take the room left (a batch overflow would end the requests "error"), and every slot is accounted."""
    engine = make_engine(n_slots=5, reproducible=False, max_batch_tokens=16, step_budget=8)
    spec = Speculation(mode="on", max_draft=16)
    handles = [engine.submit(request(COPY, spec, max_tokens=50)) for _ in range(3)]
    handles.append(engine.submit(request(COPY + " Twice.", spec, SamplingParams(temperature=0.8, seed=5))))
    handles.append(engine.submit(request(PASSAGE * 4 + "\n\nWhat is this about?", max_tokens=20)))
    results = [h.result(600) for h in handles]
    assert all(r.finish_reason in ("stop", "length") for r in results), [r.error for r in results]
    assert sum(r.accepted_tokens for r in results[:4]) > 20
    assert engine.stats().accepted_tokens == sum(r.accepted_tokens for r in results)
    assert_kv_accounted(engine)
