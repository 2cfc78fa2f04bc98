"""`run --report`'s Stability section: requests (or a session's panes) that differ only by seed, their answers
clustered by meaning with `--embedder` (default: the main model, a weak embedder, and the report says so).

For a JSONL input, requests form a seed group when they ask the same messages (or prompt) with the same
settings but the seed, as a session's panes do (app.session.stability.seed_groups); an answer that ended in
error or is empty is left out. Nothing is embedded when there is no such group. An embedder that cannot be
opened or fails leaves the groups unclustered and the report says why; the run's results stand.
"""

from __future__ import annotations

import json

from app.backends.embedding import open_embedder
from app.session.meaning import describe
from app.session.stability import AnswerSet, answer_sets
from app.session.stability_report import Clusters, clustered


def seed_sets(records: list, session) -> list[AnswerSet]:
    """The seed groups among the run's requests (or its session's panes), in input order."""
    if session is not None:
        return answer_sets(list(session.panes))
    groups: dict[str, list] = {}
    for item, record in records:
        if item.request is None:
            continue
        asked = item.request.messages or item.request.prompt
        same = {k: v for k, v in item.settings.items() if k != "seed"}
        groups.setdefault(json.dumps([asked, same], sort_keys=True, default=repr), []).append((item, record))
    found = []
    for members in groups.values():
        if len(members) < 2:
            continue
        done = [(item, r) for item, r in members if r["text"] and r["finish_reason"] not in ("error", "cancelled")]
        seeds = ", ".join(item.settings.get("seed", "?") for item, _ in members)
        found.append(AnswerSet(
            key=f"seeds:{members[0][0].id}", kind="seeds",
            title=f"{members[0][0].id} and {len(members) - 1} more · {len(members)} seeds ({seeds})",
            texts=tuple(r["text"] for _item, r in done),
            labels=tuple(f"{item.id} · seed {item.settings.get('seed', '?')}" for item, _r in done)))
    return found


def report_clusters(records: list, session, spec: str, main_model: str | None, n_threads: int = 2) -> Clusters | None:
    """The seed groups' clusters for the report, or None when the run has no seed group."""
    sets = seed_sets(records, session)
    if not sets:
        return None
    name, note = describe(spec, main_model)
    try:
        embedder = open_embedder(spec, main_model, n_threads=n_threads)
    except Exception as exc:  # noqa: BLE001 - a bad path or URL: said in the report
        return Clusters(tuple((s, None) for s in sets), name, f"not clustered: {exc}")
    try:
        return clustered(sets, embedder.embed, name, note)
    finally:
        embedder.close()
