"""Token log-probabilities and constrained output (GBNF, JSON schema) on the real model."""

import json
import math

import jsonschema
import pytest

from app.engine import GenerationRequest, SamplingParams
from tests.conftest import GREEDY, ask, assert_kv_accounted


def test_greedy_tokens_are_their_own_top_alternative(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    result = engine.submit(ask("Name three rivers.", max_tokens=24, logprobs=5)).result(timeout=60)
    entries = result.token_logprobs
    assert len(entries) == result.generated_tokens > 0
    assert [e.token_id for e in entries] == result.token_ids
    for entry in entries:
        top_ids = [t for t, _, _ in entry.top]
        top_logprobs = [lp for _, _, lp in entry.top]
        assert len(entry.top) == 5 and entry.token_id == top_ids[0]
        assert entry.logprob == pytest.approx(top_logprobs[0]) and entry.logprob <= 0
        assert top_logprobs == sorted(top_logprobs, reverse=True) and all(lp <= 0 for lp in top_logprobs)
        assert sum(math.exp(lp) for lp in top_logprobs) <= 1 + 1e-6
    assert "".join(e.text for e in entries) == result.text


def test_a_sampled_token_outside_the_top_k_still_has_its_logprob(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    wild = SamplingParams(temperature=2.0, top_k=0, top_p=1.0, min_p=0.0, seed=11)
    result = engine.submit(ask("Write anything.", max_tokens=48, logprobs=1, sampling=wild)).result(timeout=60)
    outside = [e for e in result.token_logprobs if e.token_id != e.top[0][0]]
    assert outside, "at temperature 2 some sampled token should not be the most likely one"
    assert all(e.logprob < e.top[0][2] for e in outside)


def test_requests_without_logprobs_carry_none_and_events_stream_them(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    streamed: dict[int, list] = {}
    engine.subscribe(lambda event: [streamed.setdefault(i, []).extend(v) for i, v in event.logprobs.items()])
    plain = engine.submit(ask("Hi.", max_tokens=4))
    asked = engine.submit(ask("Hello.", max_tokens=12, logprobs=2))
    assert plain.result(timeout=60).token_logprobs is None
    result = asked.result(timeout=60)
    assert engine.wait_idle(10)
    assert streamed[asked.id] == result.token_logprobs and plain.id not in streamed


def test_logprobs_are_the_same_from_the_cache_and_as_a_follower(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    request = ask("Name a planet.", max_tokens=10, logprobs=3)
    cold = engine.submit(request).result(timeout=60)
    handles = [engine.submit(request) for _ in range(2)]  # the first from the cache, the second follows it
    results = [h.result(timeout=60) for h in handles]
    assert results[0].cached_tokens == results[0].prompt_tokens and engine.stats().coalesced == 1
    assert all(r.token_logprobs == cold.token_logprobs for r in results)


SCHEMAS = [
    {"type": "object", "properties": {"answer": {"enum": ["yes", "no", "maybe"]}}, "required": ["answer"]},
    {"type": "object",
     "properties": {"name": {"type": "string", "maxLength": 24}, "age": {"type": "integer", "minimum": 0},
                    "address": {"type": "object",
                                "properties": {"city": {"type": "string", "maxLength": 24},
                                               "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                                "required": ["city", "zip"]}},
     "required": ["name", "age", "address"]},
    {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=["enum", "nested", "array"])
def test_json_schema_output_parses_and_validates(make_engine, schema):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    result = engine.submit(ask("Give me an example as JSON.", max_tokens=160, json_schema=schema)).result(timeout=120)
    assert result.finish_reason == "stop", result
    jsonschema.validate(json.loads(result.text), schema)


def test_a_yes_no_grammar_only_ever_says_yes_or_no(make_engine):
    engine = make_engine(n_slots=4, n_ctx_per_slot=512)
    questions = ["Is water wet?", "Is fire cold?", "Do cats bark?", "Are you sure?"]
    handles = [engine.submit(ask(q, max_tokens=8, grammar='root ::= "yes" | "no"',
                                 sampling=SamplingParams(temperature=1.0, seed=seed)))
               for seed, q in enumerate(questions)]
    assert {h.result(timeout=60).text for h in handles} <= {"yes", "no"}


def test_a_broken_grammar_errors_that_request_only(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    broken = engine.submit(ask("Answer.", max_tokens=8, grammar='root ::= "yes" | ('))
    schema = engine.submit(ask("Answer.", max_tokens=8, json_schema={"type": "nonsense"}))
    fine = engine.submit(ask("Answer.", max_tokens=8, sampling=GREEDY))
    failed = broken.result(timeout=60)
    assert failed.finish_reason == "error" and failed.error_kind == "grammar"
    assert "Expected ')'" in failed.error  # the GBNF parser's own words (test_grammar_messages.py has more)
    bad_schema = schema.result(timeout=60)
    assert bad_schema.finish_reason == "error" and "nonsense" in bad_schema.error
    assert fine.result(timeout=60).finish_reason in ("stop", "length")
    assert_kv_accounted(engine)


def test_invalid_combinations_are_refused_where_they_are_made():
    with pytest.raises(ValueError, match="logprobs"):
        GenerationRequest(prompt="x", logprobs=21)
    with pytest.raises(ValueError, match="not both"):
        GenerationRequest(prompt="x", grammar='root ::= "a"', json_schema={})
