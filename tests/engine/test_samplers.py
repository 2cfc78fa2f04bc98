"""The samplers beyond top-k, top-p and min-p (DRY, XTC, typical-p, mirostat, top-nσ, dynamic temperature) on the
real model: each one changes a seeded text and is reproducible, greedy stays greedy (DRY aside, as a repetition
penalty), and each works under a constraint. Token-for-token parity with llama-server:
tests/backends/test_sampler_parity.py."""

import pytest

from app.engine import GenerationRequest, SamplingParams

# A raw prompt that invites repeating itself, so DRY has something to punish.
REPEATING = "The list: red, green, blue, red, green, blue, red, green, blue, red, green,"
PLAIN = dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=11)  # nothing truncates: every sampler bites
SAMPLERS = {
    "dry": dict(dry_multiplier=1.5, dry_allowed_length=1),
    "xtc": dict(xtc_probability=0.7, xtc_threshold=0.05),
    "typical": dict(typical_p=0.3),
    "mirostat 1": dict(mirostat=1, mirostat_tau=2.0),
    "mirostat 2": dict(mirostat=2, mirostat_tau=2.0),
    "top-n-sigma": dict(top_n_sigma=0.5),
    "dynatemp": dict(dynatemp_range=0.9, dynatemp_exponent=0.5),
}


def raw(prompt: str = REPEATING, max_tokens: int = 24, **sampling) -> GenerationRequest:
    return GenerationRequest(prompt=prompt, sampling=SamplingParams(**sampling), max_tokens=max_tokens,
                             ignore_eos=True)


def test_each_sampler_changes_a_seeded_text_and_the_same_seed_repeats_it(make_engine):
    engine = make_engine(n_slots=4, n_ctx_per_slot=256)
    base = engine.submit(raw(**PLAIN)).result(timeout=120).token_ids
    texts = {}
    for name, setting in SAMPLERS.items():
        first, again = (engine.submit(raw(**PLAIN, **setting)) for _ in range(2))
        texts[name] = first.result(timeout=120).token_ids
        assert again.result(timeout=120).token_ids == texts[name], name
    assert len(base) == 24
    assert [name for name, ids in texts.items() if ids == base] == []


def test_greedy_sees_dry_and_no_other_sampler(make_engine):
    engine = make_engine(n_slots=4, n_ctx_per_slot=256)
    plain = engine.submit(raw(temperature=0.0)).result(timeout=120).token_ids
    others = dict(xtc_probability=1.0, typical_p=0.2, top_n_sigma=0.3, dynatemp_range=1.0, mirostat=2)
    assert engine.submit(raw(temperature=0.0, **others)).result(timeout=120).token_ids == plain
    # Submitted together, two greedy requests that differ only by DRY must not share one decode.
    handles = [engine.submit(raw(temperature=0.0)), engine.submit(raw(temperature=0.0, dry_multiplier=1.5))]
    same, dry = (h.result(timeout=120).token_ids for h in handles)
    assert same == plain and dry != plain


@pytest.mark.parametrize("name", ["xtc", "typical", "mirostat 2", "top-n-sigma", "dynatemp", "dry"])
def test_a_constrained_request_keeps_to_its_grammar_with_each_sampler(make_engine, name):
    engine = make_engine(n_slots=1, n_ctx_per_slot=256)
    request = GenerationRequest(prompt="Is the sky blue? Answer:", grammar='root ::= " yes" | " no" | " maybe"',
                                sampling=SamplingParams(**{**PLAIN, "top_k": 40, **SAMPLERS[name]}), max_tokens=8)
    result = engine.submit(request).result(timeout=120)
    assert result.finish_reason == "stop" and result.text in (" yes", " no", " maybe")


def test_bad_sampler_values_name_the_field():
    for fields, words in ((dict(mirostat=3), "mirostat"), (dict(mirostat=1.5), "mirostat"),
                          (dict(xtc_probability=1.5), "xtc_probability"), (dict(dry_base=0.5), "dry_base"),
                          (dict(dry_sequence_breakers=[]), "dry_sequence_breakers"),
                          (dict(dry_sequence_breakers="\n"), "dry_sequence_breakers"),
                          (dict(dry_sequence_breakers=["\n", ""]), "dry_sequence_breakers"),
                          (dict(typical_p=-0.1), "typical_p"), (dict(top_n_sigma=-2), "top_n_sigma")):
        with pytest.raises(ValueError, match=words):
            SamplingParams(**fields)
    assert SamplingParams(dry_sequence_breakers=["\n", "::"]).dry_sequence_breakers == ("\n", "::")  # JSON lists


def test_every_default_is_llama_servers_and_turns_its_sampler_off():
    s = SamplingParams()
    assert (s.dry_multiplier, s.dry_base, s.dry_allowed_length, s.dry_penalty_last_n) == (0.0, 1.75, 2, 64)
    assert s.dry_sequence_breakers == ("\n", ":", '"', "*")
    assert (s.xtc_probability, s.xtc_threshold, s.typical_p, s.top_n_sigma) == (0.0, 0.1, 1.0, -1.0)
    assert (s.mirostat, s.mirostat_tau, s.mirostat_eta, s.dynatemp_range, s.dynatemp_exponent) == (0, 5.0, 0.1,
                                                                                                   0.0, 1.0)
    assert not s.uses_dry and not s.uses_penalties
