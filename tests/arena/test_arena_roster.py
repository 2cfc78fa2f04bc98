"""An arena's variants made from panes: keyed by their settings, never by pane number or title."""

import pytest

from app.arena.roster import NoArena, build, candidate_sets, refusals, settings
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


def test_a_pane_its_backend_refuses_is_left_out_with_the_reason():
    def refusal(backend, request):
        return "this model cannot read images" if backend == "text-only" else None

    arena = build([pane(0.0), pane(0.7), pane(1.0, backend="text-only", title="Photo")], refusal=refusal)
    assert len(arena.contenders) == 2 and arena.case_text == PROMPT  # the rest still share one case
    assert [(item.pane.title, item.why) for item in arena.left_out] == [("Photo", "this model cannot read images")]
    assert str(arena.left_out[0]).startswith("Photo: ")
    with pytest.raises(NoArena, match="can run their prompt") as refused:
        build([pane(0.0), pane(0.7, backend="text-only")], refusal=refusal)
    assert [item.why for item in refused.value.left_out] == ["this model cannot read images"]
    with pytest.raises(NoArena, match="None of these panes can run its prompt"):
        build([pane(0.0, backend="text-only"), pane(0.7, backend="text-only")], refusal=refusal)


def test_an_image_for_a_model_without_a_projector_is_refused_up_front(model_path, tmp_path):
    """The window's rule on the real model: loaded as the main model, and waiting on standby, without a vision
    projector; a pane that asks it about an image is left out, one that asks in words is not."""
    from app.backends.registry import BackendRegistry
    from app.backends.spec import MAIN, BackendSpec
    from app.session import images
    from tests.conftest import TEST_THREADS
    from tests.fixtures.images import png

    registry = BackendRegistry(lambda event: None)
    standby = registry.add_standby(BackendSpec(kind="local", path=str(model_path)), engine={"n_slots": 1})
    registry.open_main(BackendSpec(kind="local", path=str(model_path)),
                       engine={"n_slots": 1, "n_ctx_per_slot": 256, "n_threads": TEST_THREADS})
    try:
        photo = images.add_bytes(png(), "photo.png")
        panes = [pane(0.0), pane(0.7), pane(0.3, draft_images=(photo,), title="Photo"),
                 pane(0.9, draft_images=(photo,), backend=standby.name, title="Photo on standby"),
                 pane(1.1, backend=standby.name)]
        arena = build(panes, refusal=refusals(registry))
        assert [item.pane.title for item in arena.left_out] == ["Photo", "Photo on standby"]
        assert all("without a vision projector" in item.why for item in arena.left_out)
        assert {c.pane.backend for c in arena.contenders} == {MAIN, standby.name} and len(arena.contenders) == 3
    finally:
        registry.close_all()
