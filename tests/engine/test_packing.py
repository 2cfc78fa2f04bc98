"""Reproducible mode's packing (app/engine/reproducible/packing.py): the ubatch model, the grouping's invariants,
and on the real model the same tokens packed, unpacked and alone, with the stats showing pieces that shared a
llama_decode."""

from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import GenerationRequest, SamplingParams
from app.engine.reproducible.packing import has_lone_token, pack_pieces, safe_to_pack, ubatches
from tests.conftest import assert_kv_accounted

GREEDY = SamplingParams(temperature=0.0)
# A shared system prompt of ~715 tokens: the followers copy it, so their KV holds more than 512 cells, where a lone
# last token in a ubatch meets the split-KV kernel (other bits: scripts/probes/2026-11-26-packing.py).
SYSTEM = "You answer questions about a warehouse inventory. " + "; ".join(
    f"shelf {i} holds {i * 7 % 13} boxes of part {i * 31 % 97}" for i in range(50))
# Tails of equal length (packed: one ubatch) and, in slots 2 and 5, one token longer: packed beside the others,
# their last token would be alone in a ubatch (checked: this test fails if `safe_to_pack` allows that).
QUESTIONS = ["What is on shelf 1?", "What is on shelf 2?", "What is on shelf 3 now?", "What is on shelf 4?",
             "What is on shelf 5?", "What is on shelf 6 now?", "What is on shelf 7?", "What is on shelf 8?"]


def requests() -> list[GenerationRequest]:
    out = []
    for i, question in enumerate(QUESTIONS):
        sampling = GREEDY if i % 2 == 0 else SamplingParams(temperature=0.8, seed=50 + i)
        out.append(GenerationRequest(messages=[{"role": "system", "content": SYSTEM},
                                               {"role": "user", "content": question}],
                                     max_tokens=12, sampling=sampling))
    return out


def token_ids(engine, reqs) -> list[list[int]]:
    results = [h.result(timeout=600) for h in [engine.submit(r) for r in reqs]]
    assert all(r.finish_reason in ("stop", "length") for r in results), [r.error for r in results]
    return [r.token_ids for r in results]


def test_the_ubatch_model_follows_split_equal():
    """The cuts scripts/probes/2026-11-26-packing.py printed beside llama.cpp's own (bits identical except the lone
    token)."""
    assert ubatches([(0, 5), (1, 4)]) == [[(0, 4), (1, 4)], [(0, 1)]]
    assert ubatches([(0, 9), (2, 16), (5, 12)]) == [[(0, 9)], [(2, 16)], [(5, 12)]]
    assert ubatches([(3, 1), (4, 10)]) == [[(3, 1), (4, 1)], [(4, 9)]]
    assert ubatches([(s, 12) for s in range(8)]) == [[(s, 12) for s in range(8)]]
    assert has_lone_token(ubatches([(0, 5), (1, 4)]))
    assert not safe_to_pack([(0, 5), (1, 4)])  # its last token would be alone
    assert not safe_to_pack([(0, 9), (2, 16)])  # not consecutive: two passes either way
    assert safe_to_pack([(0, 7), (1, 7), (2, 3)]) and safe_to_pack([(3, 1), (4, 1)])


class Seq:
    def __init__(self, slot):
        self.slot = slot


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.lists(st.integers(1, 63), min_size=1, max_size=3)),
                min_size=1, max_size=8, unique_by=lambda t: t[0]), st.integers(64, 256))
def test_packing_keeps_its_invariants(prompts, n_batch):
    seqs = {slot: Seq(slot) for slot, _ in prompts}
    pieces = [(seqs[slot], n) for slot, lengths in prompts for n in lengths]
    groups = pack_pieces(pieces, lambda s: s.slot, n_batch)
    assert sorted((id(s), n) for g in groups for s, n in g) == sorted((id(s), n) for s, n in pieces)
    where = {}
    for index, group in enumerate(groups):
        assert sum(n for _, n in group) <= n_batch
        assert len({id(s) for s, _ in group}) == len(group)  # one piece of a sequence per decode
        if len(group) > 1:
            assert safe_to_pack([(s.slot, n) for s, n in group])
            assert not has_lone_token(ubatches([(s.slot, n) for s, n in group]))
        for seq, n in group:
            where.setdefault(id(seq), []).append((index, n))
    for slot, lengths in prompts:  # a prompt's pieces in order, in increasing groups
        placed = where[id(seqs[slot])]
        assert [n for _, n in placed] == lengths and [i for i, _ in placed] == sorted({i for i, _ in placed})


def test_packed_pieces_give_the_same_tokens_as_alone_and_unpacked(make_engine):
    alone_engine = make_engine(n_slots=8, reproducible=True, prompt_cache=False)
    alone = [token_ids(alone_engine, [r])[0] for r in requests()]
    unpacked_engine = make_engine(n_slots=8, reproducible=True, pack_pieces=False, one_decode=False)
    unpacked = token_ids(unpacked_engine, requests())
    assert unpacked_engine.stats().packed_pieces == 0
    packed_engine = make_engine(n_slots=8, reproducible=True, one_decode=False)  # the split path packs
    packed = token_ids(packed_engine, requests())
    stats = packed_engine.stats()
    assert stats.packed_decodes >= 1 and stats.packed_pieces >= 2 * stats.packed_decodes  # several in one
    assert packed == alone
    assert unpacked == alone
    assert_kv_accounted(packed_engine)
