"""The step policy: decode tokens first, prompt chunks in the remaining budget, never over n_batch."""

import numpy as np

from app.engine.request import RequestHandle, Sequence
from app.engine.scheduler import PrefillPacer, plan_step
from app.engine.types import EngineConfig, GenerationRequest

# The default-mode planner (token-budget chunks); reproducible mode's aligned chunks: test_reproducible.py.
CONFIG = EngineConfig(model_path="unused.gguf", n_slots=8, step_budget=16, min_prefill_per_step=4,
                      max_batch_tokens=128, reproducible=False)


def seq(prompt_len: int, done: int = 0, generating: bool = False) -> Sequence:
    s = Sequence(RequestHandle(0, GenerationRequest(prompt="x"), lambda _id: None))
    s.prompt = np.zeros(prompt_len, np.int32)
    s.n_prompt_done = done
    s.pending_token = 7 if generating else None
    return s


def test_decode_tokens_first_then_prefill_fills_the_budget():
    running = [seq(10, 10, True), seq(10, 10, True), seq(500)]
    plan = plan_step(running, CONFIG, n_batch=128)
    assert plan.n_decode == 2
    assert plan.prefill == [(running[2], 14)]  # 16 - 2 decode tokens


def test_prefill_keeps_a_minimum_share_when_many_sequences_decode():
    running = [seq(10, 10, True) for _ in range(14)] + [seq(500)]
    plan = plan_step(running, CONFIG, n_batch=128)
    assert plan.n_decode == 14 and plan.n_prefill == 4  # over the 16-token budget, by design


def test_idle_engine_prefills_a_whole_batch_fcfs():
    first, second = seq(100), seq(100)
    plan = plan_step([first, second], CONFIG, n_batch=128)
    assert plan.prefill == [(first, 100), (second, 28)]
    assert plan.n_tokens == 128


def test_prefill_cap_shrinks_only_the_prompt_part():
    running = [seq(10, 10, True), seq(500)]
    plan = plan_step(running, CONFIG, n_batch=128, prefill_cap=3)
    assert plan.n_decode == 1 and plan.n_prefill == 3
    assert plan_step(running, CONFIG, n_batch=128, prefill_cap=0).n_prefill == 0


def test_never_more_than_n_batch_tokens():
    running = [seq(10, 10, True) for _ in range(8)] + [seq(1000)]
    plan = plan_step(running, CONFIG, n_batch=10)
    assert plan.n_tokens == 10


def test_pacer_uses_the_token_budget_until_it_has_timings():
    pacer = PrefillPacer(CONFIG)
    running = [seq(10, 10, True), seq(10, 10, True), seq(500)]
    assert plan_step(running, CONFIG, n_batch=128, pacer=pacer).n_prefill == 14


def test_pacer_keeps_mixed_steps_within_the_time_factor():
    config = EngineConfig(model_path="unused.gguf", mixed_step_factor=2.5, min_prefill_per_step=4, reproducible=False)
    pacer = PrefillPacer(config)
    pacer.observe(n_decode=4, n_prefill=0, seconds=0.020)  # pure decode step: 20 ms
    pacer.observe(n_decode=4, n_prefill=10, seconds=0.070)  # 50 ms for 10 prompt tokens: 5 ms each
    # (2.5 - 1) * 20 ms of room / 5 ms per token = 6 tokens
    assert pacer.prefill_allowance(4) == 6
    running = [seq(10, 10, True) for _ in range(4)] + [seq(1500)]
    assert plan_step(running, config, n_batch=128, pacer=pacer).n_prefill == 6


def test_one_slow_step_does_not_change_the_next_steps_prompt_part():
    """A step slowed by something outside the engine (another process on a core, a collector pause) leaves the
    pacer's allowance as it was: with moving averages the decode estimate rose with it, and the next mixed step
    planned more prompt tokens into the same noise (docs/benchmarks.md, "Images"). A lasting change is followed."""
    pacer = PrefillPacer(CONFIG)
    for _ in range(PrefillPacer.WINDOW):
        pacer.observe(4, 0, 0.020)  # 4 streams: 20 ms a step
        pacer.observe_piece(8, 0.032)  # 4 ms a row
    before = pacer.prefill_allowance(4)
    pacer.observe(4, 0, 0.045)  # one decode step with a 25 ms stall
    assert pacer.prefill_allowance(4) == before
    pacer.observe_piece(8, 0.016)  # one piece oddly fast
    assert pacer.prefill_allowance(4) == before
    for _ in range(PrefillPacer.WINDOW // 2 + 1):
        pacer.observe(4, 0, 0.030)  # the streams' step really is slower now
    assert pacer.decode_step_s[4] == 0.030 and pacer.prefill_allowance(4) > before


def test_pacer_never_starves_the_prompt():
    config = EngineConfig(model_path="unused.gguf", mixed_step_factor=1.1, min_prefill_per_step=4, reproducible=False)
    pacer = PrefillPacer(config)
    pacer.observe(4, 0, 0.020)
    pacer.observe(4, 8, 0.200)  # prompt tokens are very expensive: the allowance rounds to 0
    running = [seq(10, 10, True) for _ in range(4)] + [seq(1500)]
    assert pacer.prefill_allowance(4) == 0
    assert plan_step(running, config, n_batch=128, pacer=pacer).n_prefill == 4


def test_the_text_of_a_prompt_with_an_image_is_paced_like_its_image_pieces():
    """Beside generating panes the text of a prompt with images (its question after the image) takes what the
    pacer allows at `image_step_factor`, as its image pieces do (vision_step.py), not the text prompts'
    `mixed_step_factor`: the step that decodes that question was the largest planned while an image was
    prefilled, and a burst from another process on top of it took the streams' gap over 3 x steady
    (docs/benchmarks.md, "Images"). A text prompt beside it keeps its own share."""
    config = EngineConfig(model_path="unused.gguf", mixed_step_factor=2.5, image_step_factor=2.0,
                          min_prefill_per_step=4, reproducible=False)
    pacer = PrefillPacer(config)
    pacer.observe(n_decode=4, n_prefill=0, seconds=0.020)  # 4 streams: 20 ms a step
    pacer.observe(n_decode=4, n_prefill=10, seconds=0.040)  # 2 ms a prompt token
    image_prompt = seq(60, 30)  # a question of 30 tokens after an image
    image_prompt.prompt[5:25] = -np.arange(1, 21)  # the image's placeholders, already decoded
    streams = [seq(10, 10, True) for _ in range(4)]
    assert image_prompt.has_images and not seq(60).has_images
    plan = plan_step(streams + [image_prompt], config, n_batch=128, pacer=pacer)
    assert plan.prefill == [(image_prompt, 10)]  # (2.0 - 1) x 20 ms / 2 ms, not (2.5 - 1) x 20 / 2 = 15
    text_prompt = seq(100)
    plan = plan_step(streams + [image_prompt, text_prompt], config, n_batch=128, pacer=pacer)
    assert plan.n_prefill == 10 + 15
