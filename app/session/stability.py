"""Stability: does a prompt give the same answer every time? Answers of one seed group (copies that differ only by
seed), or the repeats of one evaluation cell, clustered by meaning.

Average-linkage agglomerative clustering (scipy.cluster.hierarchy) on cosine distance between the answers'
embeddings: two groups join while the mean distance between their members is at most `threshold`
(`CLUSTER_DISTANCE`, default 0.15, i.e. a mean cosine similarity of at least 0.85; tuned for embedding models,
whose paraphrases score well above 0.85 and whose different answers below; the main model as a weak embedder scores
nearly everything on one topic above it, so it separates topics rather than answers).
Invariants: every answer is in exactly one cluster; clusters are listed largest first (ties: earliest member);
a cluster's representative is its medoid (the member with the least total distance to the others; ties: earliest);
`top_share` is the largest cluster's size over the number of answers (1.0 for one answer, 0.0 for none).
`seed_groups` finds the panes that differ only by seed, `cell_repeats` an evaluation's repeats of each cell.
A zero vector (an embedder's answer for nothing) is at distance 1 from every other answer. Qt-free.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from app.engine import limits
from app.session.compare import setup_of
from app.session.evaluation import Evaluation
from app.session.state import PaneSpec

# The cosine distance under which two answers join one cluster (the settings store and the window clamp to it).
CLUSTER_DISTANCE = limits.Limit(0.01, 1.0, 0.15, decimals=2, step=0.05)

@dataclass(frozen=True)
class Cluster:
    members: tuple[int, ...]  # indices into the answers, ascending
    representative: int  # the medoid's index

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class Stability:
    clusters: tuple[Cluster, ...]
    n: int
    threshold: float

    @property
    def top_share(self) -> float:
        return self.clusters[0].size / self.n if self.n else 0.0

    def summary(self, texts: list[str], width: int = 60) -> list[tuple[int, float, str]]:
        """(size, share, the representative's text cut to `width` characters) per cluster, largest first."""
        rows = []
        for cluster in self.clusters:
            text = " ".join(texts[cluster.representative].split())
            rows.append((cluster.size, cluster.size / self.n,
                         text if len(text) <= width else text[:width - 1] + "…"))
        return rows


def cosine_distances(vectors) -> np.ndarray:
    """The square matrix of cosine distances (1 − cos, clipped to [0, 2]; a zero vector is at 1 from others)."""
    vectors = np.asarray(vectors, np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    distances = np.clip(1.0 - unit @ unit.T, 0.0, 2.0)
    np.fill_diagonal(distances, 0.0)
    return distances


def cluster_vectors(vectors, threshold: float = CLUSTER_DISTANCE.default) -> Stability:
    """The answers' clusters from their embeddings (one row per answer)."""
    vectors = np.asarray(vectors, np.float64)
    n = len(vectors)
    if n == 0:
        return Stability(clusters=(), n=0, threshold=threshold)
    distances = cosine_distances(vectors)
    if n == 1:
        labels = np.array([1])
    else:
        tree = linkage(squareform(distances, checks=False), method="average")
        labels = fcluster(tree, t=threshold, criterion="distance")
    clusters = []
    for label in dict.fromkeys(labels.tolist()):
        members = tuple(int(i) for i in np.flatnonzero(labels == label))
        totals = distances[np.ix_(members, members)].sum(axis=1)
        clusters.append(Cluster(members=members, representative=members[int(np.argmin(totals))]))
    clusters.sort(key=lambda c: (-c.size, c.members[0]))
    return Stability(clusters=tuple(clusters), n=n, threshold=threshold)


def stability(texts: list[str], embed: Callable[[list[str]], np.ndarray],
              threshold: float = CLUSTER_DISTANCE.default) -> Stability:
    """Cluster answers by meaning: `embed(texts) -> vectors` (an embedder's `embed`); identical texts are
    embedded once."""
    distinct = list(dict.fromkeys(texts))
    vectors = np.asarray(embed(distinct)) if distinct else np.zeros((0, 1))
    row = {text: i for i, text in enumerate(distinct)}
    return cluster_vectors(vectors[[row[t] for t in texts]] if texts else vectors, threshold)


def _seedless_key(pane: PaneSpec) -> str:
    setup = setup_of(pane)
    setup = dataclasses.replace(setup, sampling=dataclasses.replace(setup.sampling, seed=None))
    asked = [turn for turn in pane.turns if turn.get("role") != "assistant"]  # the replies are the answers
    return json.dumps([repr(setup), asked, pane.reply_prefix], sort_keys=True, default=repr)


def seed_groups(panes: list[PaneSpec]) -> list[list[int]]:
    """Indices of panes asked the same thing with the same settings but the seed, groups of two or more, each
    in pane order, groups ordered by their first pane."""
    groups: dict[str, list[int]] = {}
    for index, pane in enumerate(panes):
        groups.setdefault(_seedless_key(pane), []).append(index)
    return [members for members in groups.values() if len(members) > 1]


def cell_repeats(evaluation: Evaluation) -> dict[tuple[int, int], list[str]]:
    """(case, variant) -> the outputs of its finished repeats (an ERROR cell with no output left out), in repeat
    order; {} when the evaluation does not repeat."""
    found: dict[tuple[int, int], list[tuple[int, str]]] = {}
    if evaluation.repeat < 2:
        return {}
    for cell in evaluation.cells:
        if cell.finished and (cell.status != "error" or cell.output):
            found.setdefault((cell.case, cell.variant), []).append((cell.repeat, cell.output))
    return {key: [text for _repeat, text in sorted(items)] for key, items in sorted(found.items())}


@dataclass(frozen=True)
class AnswerSet:
    """Answers that should agree: a seed group's replies, or the repeats of one evaluation cell. `texts` are the
    finished answers in order, `labels` who gave each; `waiting` counts members still running."""

    key: str  # "seeds:<first pane's id>" or "cell:<case>:<variant>"
    kind: str  # "seeds" or "repeats"
    title: str
    texts: tuple[str, ...]
    labels: tuple[str, ...]
    waiting: int = 0
    ids: tuple[str, ...] = ()  # the panes' ids (seed groups)


def _asked(pane: PaneSpec) -> str:
    users = [t["content"] for t in pane.turns if t.get("role") == "user"]
    return " ".join((users[-1] if users else pane.draft).split())


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def answer_sets(panes: list[PaneSpec], evaluation: Evaluation | None = None) -> list[AnswerSet]:
    """Every seed group of `panes` (its finished, non-empty replies), then every repeated evaluation cell."""
    found = []
    for members in seed_groups(panes):
        group = [panes[i] for i in members]
        done = [p for p in group if not p.result.busy and p.result.text]
        seeds = ", ".join("random" if p.sampling.seed is None else str(p.sampling.seed) for p in group)
        found.append(AnswerSet(
            key=f"seeds:{group[0].id}", kind="seeds",
            title=f"\u201c{_cut(_asked(group[0]), 48)}\u201d · {len(group)} seeds ({seeds})",
            texts=tuple(p.result.text for p in done),
            labels=tuple(f"{p.label} · seed {p.sampling.seed}" for p in done),
            waiting=sum(p.result.busy for p in group), ids=tuple(p.id for p in done)))
    if evaluation is not None:
        for (case, variant), texts in cell_repeats(evaluation).items():
            test = evaluation.cases[case]
            name = f"test #{case + 1}" + (f" {test.description}" if test.description else "")
            found.append(AnswerSet(
                key=f"cell:{case}:{variant}", kind="repeats",
                title=f"[{evaluation.variants[variant].label}] {_cut(name, 48)} · {evaluation.repeat} repeats",
                texts=tuple(texts), labels=tuple(f"repeat {i + 1}" for i in range(len(texts))),
                waiting=evaluation.repeat - len(texts)))
    return found
