"""Stability clusters: on fixed vectors (exact geometry, every invariant), then on the real SmolLM2 pooled by
llama.cpp. SmolLM2 is a generative model and so a WEAK embedder: with it, paraphrases land together and answers
about different things land apart, but two contradicting answers on one topic ("Paris" / "Lyon") are not
reliably told apart; no embedding model is installed here to test that finer case."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.backends.embedding import LocalEmbedder
from app.session.stability import cluster_vectors, cosine_distances, stability
from tests.conftest import TEST_THREADS


def unit(degrees: float) -> list[float]:
    return [np.cos(np.radians(degrees)), np.sin(np.radians(degrees))]


def test_fixed_vectors_paraphrases_together_different_answers_apart():
    # Three answers within 10° of each other (cosine distance <= 0.015), two near 90°, one alone at 180°.
    vectors = [unit(0), unit(90), unit(5), unit(180), unit(10), unit(92)]
    result = cluster_vectors(vectors, threshold=0.15)
    assert [c.members for c in result.clusters] == [(0, 2, 4), (1, 5), (3,)]
    assert result.clusters[0].representative == 2  # the medoid: the middle one
    assert result.top_share == pytest.approx(0.5)
    assert [c.size for c in result.clusters] == [3, 2, 1]


def test_threshold_decides_what_joins():
    vectors = [unit(0), unit(30)]  # cosine distance 1 - cos 30° = 0.134
    assert len(cluster_vectors(vectors, threshold=0.15).clusters) == 1
    assert len(cluster_vectors(vectors, threshold=0.10).clusters) == 2


def test_edge_cases_empty_one_identical_and_zero_vectors():
    assert cluster_vectors(np.zeros((0, 3))).clusters == () and cluster_vectors(np.zeros((0, 3))).top_share == 0.0
    one = cluster_vectors([[1.0, 2.0]])
    assert one.top_share == 1.0 and one.clusters[0].members == (0,)
    same = cluster_vectors([[1.0, 0.0]] * 4)
    assert same.top_share == 1.0 and same.clusters[0].representative == 0
    zero = cluster_vectors([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    assert [c.members for c in zero.clusters] == [(1, 2), (0,)]
    assert cosine_distances([[0.0, 0.0], [1.0, 0.0]])[0, 1] == 1.0


@given(st.lists(st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1)), min_size=1, max_size=12),
       st.floats(0.01, 1.0))
def test_every_answer_in_exactly_one_cluster_largest_first(rows, threshold):
    result = cluster_vectors(rows, threshold)
    members = sorted(i for c in result.clusters for i in c.members)
    assert members == list(range(len(rows)))
    sizes = [c.size for c in result.clusters]
    assert sizes == sorted(sizes, reverse=True)
    assert all(c.representative in c.members for c in result.clusters)
    assert result.top_share == sizes[0] / len(rows)


def test_identical_texts_are_embedded_once_and_share_a_cluster():
    asked = []

    def embed(texts):
        asked.append(list(texts))
        return np.array([unit(0) if "yes" in t else unit(90) for t in texts])

    result = stability(["yes", "no", "yes", "yes"], embed)
    assert asked == [["yes", "no"]]
    assert [c.members for c in result.clusters] == [(0, 2, 3), (1,)]
    assert result.summary(["yes", "no", "yes", "yes"]) == [(3, 0.75, "yes"), (1, 0.25, "no")]


ANSWERS = ["The capital of France is Paris.", "Paris is the capital of France.", "France's capital city is Paris.",
           "Water boils at 100 degrees Celsius at sea level.", "At sea level, water boils at 100 °C.",
           "Photosynthesis converts sunlight into chemical energy in plants."]


def test_real_weak_embedder_groups_paraphrases_and_separates_topics(model_path):
    embedder = LocalEmbedder(model_path, n_threads=TEST_THREADS, weak=True)
    try:
        result = stability(ANSWERS, embedder.embed)
    finally:
        embedder.close()
    assert [c.members for c in result.clusters] == [(0, 1, 2), (3, 4), (5,)]
    assert result.top_share == pytest.approx(0.5)


def test_seed_groups_are_panes_that_differ_only_by_seed():
    from app.engine import SamplingParams
    from app.session.stability import seed_groups
    from app.session.state import PaneSpec

    asked = [{"role": "user", "content": "Name a colour"}]
    panes = [PaneSpec(title=f"s{seed}", turns=asked + [{"role": "assistant", "content": f"reply {seed}"}],
                      sampling=SamplingParams(temperature=0.8, seed=seed)) for seed in (1, 2, 3)]
    panes.insert(1, PaneSpec(turns=asked, sampling=SamplingParams(temperature=0.2, seed=1)))  # another temperature
    panes.append(PaneSpec(turns=[{"role": "user", "content": "Name a fruit"}],
                          sampling=SamplingParams(temperature=0.8, seed=9)))  # another question
    panes.append(PaneSpec(turns=asked, sampling=SamplingParams(temperature=0.2, seed=5)))
    assert seed_groups(panes) == [[0, 2, 3], [1, 5]]


def test_cell_repeats_group_an_evaluations_repeats_in_order():
    from app.session.evaluation import BackendTarget, EvalCase, Evaluation, PromptTemplate, Variant
    from app.session.stability import cell_repeats

    variant = Variant(provider_id="echo", label="echo", prompt=PromptTemplate(raw="hi", label="hi"),
                      target=BackendTarget(kind="echo"))
    evaluation = Evaluation(cases=[EvalCase(), EvalCase()], variants=[variant], repeat=3)
    for cell in evaluation.cells:
        cell.result.text = f"case {cell.case} repeat {cell.repeat}"
        cell.status = "pass" if (cell.case, cell.repeat) != (1, 2) else "pending"
    assert cell_repeats(evaluation) == {(0, 0): ["case 0 repeat 0", "case 0 repeat 1", "case 0 repeat 2"],
                                        (1, 0): ["case 1 repeat 0", "case 1 repeat 1"]}
    assert cell_repeats(Evaluation(cases=[EvalCase()], variants=[variant])) == {}
