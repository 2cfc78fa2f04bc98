"""Answer clusters in the session's exports (Markdown section, each pane's JSONL "stability" field), from fixed
vectors: the clustering itself is tested in test_stability.py; here, which panes form a set and what is written."""

import json

import numpy as np

from app.engine import SamplingParams
from app.session import PaneSpec, RunState, Session, export
from app.session.stability import answer_sets
from app.session.stability_report import clustered, pane_fields, to_html

VECTORS = {"Blue.": [1.0, 0.0], "Blue!": [0.99, 0.05], "Red.": [0.0, 1.0]}


def embed(texts):
    return np.asarray([VECTORS[t] for t in texts])


def seeded(text: str | None, seed: int) -> PaneSpec:
    pane = PaneSpec(turns=[{"role": "user", "content": "Name a colour."}],
                    sampling=SamplingParams(temperature=1.0, seed=seed))
    if text is not None:
        pane.result.text, pane.result.state = text, RunState.DONE
    else:
        pane.result.state = RunState.GENERATING
    return pane


def session() -> Session:
    other = PaneSpec(turns=[{"role": "user", "content": "Something else."}])  # in no seed group
    return Session(panes=[seeded("Blue.", 1), seeded("Red.", 2), seeded("Blue!", 3), seeded(None, 4), other])


def test_a_seed_group_is_its_finished_answers_and_counts_those_still_running():
    s = session()
    [found] = answer_sets(list(s.panes))
    assert found.kind == "seeds" and found.texts == ("Blue.", "Red.", "Blue!") and found.waiting == 1
    assert found.labels == ("Pane 1 · seed 1", "Pane 2 · seed 2", "Pane 3 · seed 3")
    assert "4 seeds (1, 2, 3, 4)" in found.title and "Name a colour." in found.title


def test_markdown_and_jsonl_carry_the_clusters():
    s = session()
    clusters = clustered(answer_sets(list(s.panes)), embed, "test vectors")
    markdown = export.to_markdown(s, clusters)
    assert "## Stability" in markdown and "embedder test vectors" in markdown
    assert "largest cluster 2/3 (67%), 2 clusters" in markdown
    assert "| 1 | 2 | 67% | Blue. | Pane 1 · seed 1, Pane 3 · seed 3 |" in markdown
    assert "| 2 | 1 | 33% | Red. | Pane 2 · seed 2 |" in markdown
    assert "## Stability" not in export.to_markdown(s)  # without clusters: as before
    lines = [json.loads(line) for line in export.to_jsonl(s, clusters).splitlines()]
    assert [line.get("stability", {}).get("cluster") for line in lines] == [1, 2, 1, None, None]
    assert lines[0]["stability"]["cluster_size"] == 2 and lines[0]["stability"]["top_share"] == 0.6667
    assert "<h2>Stability</h2>" in to_html(clusters) and "Pane 2 · seed 2" in to_html(clusters)
    assert set(pane_fields(clusters)) == {s.panes[i].id for i in range(3)}


def test_an_embedder_failure_is_said_and_the_export_stands():
    def broken(_texts):
        raise RuntimeError("http://127.0.0.1:9/v1/embeddings: connection refused")

    s = session()
    clusters = clustered(answer_sets(list(s.panes)), broken, "http://127.0.0.1:9/v1")
    markdown = export.to_markdown(s, clusters)
    assert "not clustered: http://127.0.0.1:9/v1/embeddings: connection refused" in markdown
    assert "Blue." in markdown and "stability" not in export.to_jsonl(s, clusters)
