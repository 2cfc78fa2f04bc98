"""LoRA adapters on the real model: they change its text, scale 0 is the base model, one adapter set per
llama_decode with the sets taking turns, the prompt cache never crosses sets, and a bad file ends only its own
request. The adapters are random (tests/fixtures/lora_adapter.py); llama-server parity is
tests/backends/test_lora_server.py."""

from types import SimpleNamespace

import pytest

from app.engine import GenerationRequest, LoraAdapter
from app.engine.scheduler import adapter_group
from tests.conftest import GREEDY, assert_kv_accounted
from tests.fixtures.lora_adapter import write_lora

PROMPT = [{"role": "user", "content": "Tell me about the sea."}]


@pytest.fixture(scope="module")
def adapters(model_path, tmp_path_factory):
    folder = tmp_path_factory.mktemp("lora")
    return {"a": write_lora(model_path, folder / "a.gguf", seed=0),
            "b": write_lora(model_path, folder / "b.gguf", seed=1),
            "arch": write_lora(model_path, folder / "qwen2.gguf", arch="qwen2"),
            "vocab": write_lora(model_path, folder / "vocab.gguf", embd_vocab=32000)}


def req(*lora: tuple, max_tokens: int = 16) -> GenerationRequest:
    return GenerationRequest(messages=PROMPT, sampling=GREEDY, max_tokens=max_tokens, ignore_eos=True,
                             lora=tuple(LoraAdapter(str(path), scale) for path, scale in lora))


def test_an_adapter_changes_the_text_by_its_scale_and_scale_zero_is_the_base_model(make_engine, adapters):
    engine = make_engine(n_slots=1, prompt_cache=False)
    run = lambda *lora: engine.submit(req(*lora)).result(timeout=120).token_ids  # noqa: E731
    base, full, half, off = run(), run((adapters["a"], 1.0)), run((adapters["a"], 0.5)), run((adapters["a"], 0.0))
    assert off == base
    assert len({tuple(base), tuple(full), tuple(half)}) == 3
    assert run((adapters["b"], 1.0)) != full


@pytest.mark.parametrize("reproducible", [False, True])
def test_sets_never_share_a_decode_take_turns_and_give_each_request_its_own_tokens(make_engine, adapters,
                                                                                   reproducible):
    engine = make_engine(n_slots=4, reproducible=reproducible)
    sets = [(), ((adapters["a"], 1.0),), ((adapters["a"], 0.5),), ((adapters["b"], 1.0),)]
    alone = [engine.submit(req(*lora)).result(timeout=120).token_ids for lora in sets]
    engine.clear_prompt_cache()
    real_decode, steps = engine._step.decode, []

    def recording_decode():
        batch = engine._ctx.batch
        slots = set(batch.seq[:batch.n_tokens].tolist())
        keys = {seq.request.lora_key for seq in engine._running if seq.slot in slots}
        steps.append((keys, engine._adapters._applied, len(engine._running)))
        return real_decode()

    engine._step.decode = recording_decode
    handles = [engine.submit(req(*lora)) for lora in sets]
    together = [h.result(timeout=120).token_ids for h in handles]
    assert together == alone
    if reproducible:  # its placeholder tokens sit in neighbouring slots, whatever their set, and are dropped
        return
    assert all(keys == {applied} for keys, applied, _ in steps)  # one set per decode, the one llama.cpp applies
    served = [applied for _, applied, running in steps if running == 4]  # a step may make several decodes
    turns = [key for i, key in enumerate(served) if i == 0 or key != served[i - 1]]
    assert len(turns) > 12
    assert all(len(set(turns[i:i + 4])) == 4 for i in range(len(turns) - 3))  # round-robin: each set in turn
    assert_kv_accounted(engine)


def test_the_prompt_cache_never_reuses_kv_across_adapter_sets(make_engine, adapters):
    engine = make_engine(n_slots=2)
    base = engine.submit(req()).result(timeout=120)
    adapted = engine.submit(req((adapters["a"], 1.0))).result(timeout=120)  # the same prompt: not base's KV
    assert adapted.cached_tokens == 0 and adapted.token_ids != base.token_ids
    for first in (base, adapted):  # each set reuses its own slot's KV, and gets its own tokens again
        again = engine.submit(req(*(((adapters["a"], 1.0),) if first is adapted else ()))).result(timeout=120)
        assert again.token_ids == first.token_ids and again.cached_tokens > 0


@pytest.mark.parametrize("bad, says", [("arch", "made for qwen2, this model is llama"),
                                       ("vocab", "another model (a different vocabulary"),
                                       ("missing", "no such file"),
                                       ("garbage", "failed to read header")])
def test_a_bad_adapter_ends_its_request_with_a_message_and_the_model_stays(make_engine, adapters, tmp_path, bad,
                                                                           says):
    engine = make_engine(n_slots=2)
    path = adapters.get(bad, tmp_path / f"{bad}.gguf")
    if bad == "garbage":
        path.write_bytes(b"GGUF" + bytes(range(256)) * 4)
    good = engine.submit(req((adapters["a"], 1.0)))
    result = engine.submit(req((path, 1.0))).result(timeout=120)
    assert result.finish_reason == "error" and result.error_kind == "adapter"
    assert path.name in result.error and says in result.error
    assert good.result(timeout=120).finish_reason == "length"
    assert engine.alive and engine.submit(req(max_tokens=4)).result(timeout=120).finish_reason == "length"


def _seq(key, generating=True, prompt_left=0, donor=None):
    return SimpleNamespace(request=SimpleNamespace(lora_key=key), pending_token=1 if generating else None,
                           prompt_remaining=prompt_left, donor=donor)


def test_adapter_groups_take_turns_in_a_fixed_order_and_skip_sets_with_no_work():
    a, b, c = (("a", 1.0),), (("b", 1.0),), (("c", 0.5),)
    running = [_seq(b), _seq(a), _seq(()), _seq(b), _seq(c, generating=False, donor=object(), prompt_left=5)]
    order, last = [], None
    for _ in range(6):
        last, members = adapter_group(running, last)
        assert {m.request.lora_key for m in members} == {last}
        order.append(last)
    assert order == [(), a, b, (), a, b]  # c only waits on a donor: no work this step
    assert adapter_group(running[:2], a) == (b, [running[0]])
    assert adapter_group([running[1]], a) == (a, [running[1]])  # one set: every sequence, no filtering
