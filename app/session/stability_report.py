"""Answer clusters in documents: a Markdown section, an HTML section and each pane's JSONL field.

`Clusters` is what a document shows: every answer set (stability.AnswerSet: a seed group, or an evaluation cell's
repeats) with its clusters, or None where they are not known (not embedded yet, or the embedder failed: `note`
says which), and the embedder that placed them. `clustered(sets, embed)` computes them at once with an
embedder's `embed` (the CLI); the window builds them from its Meaning's vectors. Qt-free.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass

from app.session.stability import AnswerSet, Stability, stability

WIDTH = 80  # characters of a representative answer in a table row


@dataclass(frozen=True)
class Clusters:
    sets: tuple[tuple[AnswerSet, Stability | None], ...]
    embedder: str
    note: str = ""  # a weak embedder's caveat, or why clusters are missing


def clustered(sets: list[AnswerSet], embed, embedder: str, note: str = "", threshold: float | None = None) -> Clusters:
    """Each set's clusters from `embed(texts) -> vectors`; an embedder failure leaves them None and says why."""
    found = []
    for answers in sets:
        if not answers.texts:
            found.append((answers, None))
            continue
        try:
            kwargs = {} if threshold is None else {"threshold": threshold}
            found.append((answers, stability(list(answers.texts), embed, **kwargs)))
        except Exception as exc:  # noqa: BLE001 - the embedder's failure is reported; the document stands
            note = f"not clustered: {exc}"
            found.append((answers, None))
    return Clusters(tuple(found), embedder, note)


def _one_line(text: str, width: int = WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def headline(answers: AnswerSet, found: Stability | None) -> str:
    if found is None:
        return "not clustered yet" if answers.texts else "no finished answers"
    return (f"largest cluster {found.clusters[0].size}/{found.n} ({found.top_share:.0%}), "
            f"{len(found.clusters)} cluster{'s' if len(found.clusters) != 1 else ''}")


def _intro(clusters: Clusters) -> str:
    threshold = next((s.threshold for _a, s in clusters.sets if s is not None), None)
    parts = [f"Answers that should agree, clustered by meaning (embedder {clusters.embedder}"
             + (f", cluster distance {threshold:g})." if threshold is not None else ").")]
    if clusters.note:
        parts.append(f"Note: {clusters.note}.")
    return " ".join(parts)


def markdown(clusters: Clusters | None) -> str:
    """"## Stability": per set its headline, then a table of clusters (size, share, representative)."""
    if clusters is None or not clusters.sets:
        return ""
    lines = ["## Stability", "", _intro(clusters), ""]
    for answers, found in clusters.sets:
        lines += [f"### {answers.title}", "", f"*{headline(answers, found)}*", ""]
        if found is None:
            continue
        lines += ["| cluster | answers | share | representative | who |", "|---|---|---|---|---|"]
        for number, cluster in enumerate(found.clusters, 1):
            who = ", ".join(answers.labels[m] for m in cluster.members)
            text = _one_line(answers.texts[cluster.representative]).replace("|", "\\|")
            lines.append(f"| {number} | {cluster.size} | {cluster.size / found.n:.0%} | {text} | {who} |")
        lines.append("")
    return "\n".join(lines)


def to_html(clusters: Clusters | None) -> str:
    if clusters is None or not clusters.sets:
        return ""
    esc = html.escape
    parts = [f"<h2>Stability</h2><p>{esc(_intro(clusters))}</p>"]
    for answers, found in clusters.sets:
        parts.append(f"<h3>{esc(answers.title)}</h3><p><em>{esc(headline(answers, found))}</em></p>")
        if found is None:
            continue
        rows = "".join(
            f"<tr><td>{number}</td><td>{cluster.size}</td><td>{cluster.size / found.n:.0%}</td>"
            f"<td>{esc(_one_line(answers.texts[cluster.representative]))}</td>"
            f"<td>{esc(', '.join(answers.labels[m] for m in cluster.members))}</td></tr>"
            for number, cluster in enumerate(found.clusters, 1))
        parts.append("<table><tr><th>cluster</th><th>answers</th><th>share</th><th>representative</th>"
                     f"<th>who</th></tr>{rows}</table>")
    return "".join(parts)


def pane_fields(clusters: Clusters | None) -> dict[str, dict]:
    """pane id -> its "stability" field: its seed group, its cluster (1 = the largest) and the cluster's size,
    the group's size and the largest cluster's share, and the embedder."""
    fields: dict[str, dict] = {}
    for answers, found in clusters.sets if clusters is not None else ():
        if found is None:
            continue
        for number, cluster in enumerate(found.clusters, 1):
            for member in cluster.members:
                if member < len(answers.ids):
                    fields[answers.ids[member]] = {
                        "group": answers.title, "cluster": number, "cluster_size": cluster.size,
                        "answers": found.n, "top_share": round(found.top_share, 4),
                        "representative": cluster.representative == member, "embedder": clusters.embedder}
    return fields


def from_vectors(sets: list[AnswerSet], stability_of: Callable[[list[str]], Stability | None], embedder: str,
                 note: str = "") -> Clusters:
    """Clusters from vectors already computed (the window's Meaning: `stability_of` is None for a set not yet
    embedded)."""
    return Clusters(tuple((a, stability_of(list(a.texts)) if a.texts else None) for a in sets), embedder, note)
