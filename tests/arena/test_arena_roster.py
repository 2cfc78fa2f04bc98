"""An arena's variants made from panes: keyed by their settings, never by pane number or title."""

import pytest

from app.arena.roster import build, candidate_sets, settings
from app.engine import SamplingParams
from app.session import PaneSpec, Session
from app.session.votes import variant_key

PROMPT = "Name a fruit."


def pane(t=0.0, **kwargs):
    return PaneSpec(draft=kwargs.pop("draft", PROMPT), sampling=SamplingParams(temperature=t), **kwargs)


def test_a_variant_key_is_its_settings_not_its_pane():
    first = build([pane(0.0, title="Greedy"), pane(0.7)])
    again = build([pane(0.7, title="Warm", number=9), pane(0.0, number=4)])
    assert set(first.keys) == set(again.keys) and len(first.keys) == 2
    assert first.case_text == PROMPT and first.case_id == again.case_id


def test_equal_settings_are_one_variant_and_one_variant_is_no_arena():
    arena = build([pane(0.0), pane(0.0), pane(0.7)])
    assert len(arena.contenders) == 2
    with pytest.raises(ValueError, match="at least two panes whose settings differ"):
        build([pane(0.5), pane(0.5)])
    with pytest.raises(ValueError, match="has a prompt"):
        build([PaneSpec(), PaneSpec()])


def test_the_model_system_prompt_and_backend_are_part_of_the_variant():
    base = build([pane(0.0), pane(0.7)])
    other_model = build([pane(0.0), pane(0.7)], model_of=lambda backend: "another.gguf")
    assert not set(base.keys) & set(other_model.keys)
    system = build([pane(0.0), pane(0.0, system="Answer like a pirate.")])
    assert len(system.contenders) == 2 and "system" in system.contenders[1].label


def test_a_pane_that_already_ran_is_asked_its_question_again():
    done = pane(0.0, draft="", turns=[{"role": "user", "content": PROMPT}, {"role": "assistant", "content": "Fig."}])
    arena = build([done, pane(0.7)])
    assert arena.case_text == PROMPT  # the same case as the pane still holding the draft
    assert arena.contenders[0].request().messages == [{"role": "user", "content": PROMPT}]
    assert arena.contenders[0].request().logprobs == 0


def test_prompt_variants_put_the_prompt_in_the_key():
    arena = build([pane(0.0, draft="Name a fruit."), pane(0.0, draft="Name a vegetable.")])
    assert len(arena.contenders) == 2 and arena.case_text == "" and arena.case_id.startswith("prompts:")
    assert "conversation" not in settings(pane(0.0))


def test_candidate_sets_are_groups_then_all_panes_and_name_no_pane():
    session = Session(panes=[pane(0.0, group="g", title="Greedy"), pane(0.7, group="g", title="Warm"),
                             pane(1.0, title="Hot")])
    sets = candidate_sets(session)
    assert [len(panes) for _title, panes in sets] == [2, 3]
    assert all(label not in title for title, _ in sets for label in ("Greedy", "Warm", "Hot", "Pane"))
    assert PROMPT[:10] in sets[0][0]


def test_a_variants_key_is_the_one_it_had_before_the_samplers_it_does_not_use():
    """Votes saved before DRY, XTC & co. existed keep meeting their variants: a sampler at its default is no part
    of the key (9c07af2a3257 was computed by Chorus before them); one that is set is."""
    warm = PaneSpec(draft=PROMPT, sampling=SamplingParams(temperature=0.7, seed=3, top_k=20))
    assert variant_key(settings(warm, "m.gguf")) == "9c07af2a3257"
    dry = PaneSpec(draft=PROMPT, sampling=SamplingParams(temperature=0.7, seed=3, top_k=20, dry_multiplier=0.8))
    assert variant_key(settings(dry, "m.gguf")) != "9c07af2a3257"
