"""Meaning in the window on the real engine (the main model as the embedder, a weak one: the wiring is tested):
the comparison table's and the diff view's meaning similarity, the stability view over a seed group and over an
evaluation's repeats, and a bad embedder that is said once while the window keeps working. Every embedding runs on
the Meaning's worker thread, never on the GUI thread (a spy on the real embedder records the thread)."""

import threading

import pytest
from PySide6.QtCore import Qt

from app.backends.embedding import LocalEmbedder
from app.session import RunState, sweep
from app.session.meaning import WORKER
from app.session.table import COLUMNS
from app.ui import settings as keys
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare
from tests.ui.test_eval_view import finished, write_config


@pytest.fixture
def embed_threads(monkeypatch):
    """The name of the thread of every call of the real LocalEmbedder.embed."""
    seen = []
    real = LocalEmbedder.embed

    def spy(self, texts):
        seen.append(threading.current_thread().name)
        return real(self, texts)

    monkeypatch.setattr(LocalEmbedder, "embed", spy)
    return seen


def seed_group(window, loop, n=4, prompt="Name one colour.", max_tokens=8, temperature=1.2):
    source = prepare(window, [prompt], max_tokens=max_tokens, temperature=temperature)[0]
    source.commit_form()
    views = window.compare.add_variants(source, sweep.seeds(source.spec, n), include_source=True)  # all run
    wait_until(loop, lambda: all(v.state == RunState.DONE for v in [source, *views]), timeout=180)
    return source, views


def only_worker_embedded(seen) -> bool:
    return bool(seen) and all(name.startswith(WORKER) for name in seen)


def test_the_table_and_the_diff_view_show_meaning_beside_words(loaded_window, loop, embed_threads, tmp_path):
    window = loaded_window
    source, views = seed_group(window, loop, n=3)
    table = window.compare.open_table(source)
    column = COLUMNS.index("meaning")
    cells = lambda: [table.cell(r, column) for r in range(table.model.rowCount())]  # noqa: E731
    wait_until(loop, lambda: all(c.endswith("%") for c in cells()), timeout=60)
    reference = [r for r in table.rows() if r["id"] == source.spec.id][0]
    assert reference["meaning"] == pytest.approx(1.0, abs=1e-5) and reference["similarity"] == 1.0
    assert "weak embedder" in table.meaning_note.text()
    exported = table.export(str(tmp_path / "table.csv")).read_text(encoding="utf-8")
    assert ",similarity,meaning," in exported.splitlines()[0] and "1.0" in exported
    diff = window.compare.open_diff(source, views[-1])
    wait_until(loop, lambda: "meaning" in diff.similarity.text() and diff.similarity.text().endswith("%"),
               timeout=60)
    assert diff.similarity.text().startswith("Similarity: words ")
    assert only_worker_embedded(embed_threads), embed_threads
    assert threading.main_thread().name not in embed_threads


def test_the_stability_view_clusters_a_seed_group(loaded_window, loop, embed_threads):
    window = loaded_window
    source, views = seed_group(window, loop, n=4)
    dialog = window.compare.open_stability(source)
    tree = dialog.tree
    wait_until(loop, lambda: tree.topLevelItemCount() == 1 and "largest cluster" in tree.topLevelItem(0).text(2),
               timeout=60)
    top = tree.topLevelItem(0)
    assert top.isExpanded() and "5 seeds" in top.text(0) and top.text(1) == "5"
    sizes = [int(top.child(i).text(1)) for i in range(top.childCount())]
    assert sum(sizes) == 5 and sizes == sorted(sizes, reverse=True)
    assert f"{sizes[0]}/5" in top.text(2)
    member = top.child(0).child(0)
    tree.setCurrentItem(member)
    assert member.data(0, Qt.UserRole) in {v.spec.id for v in [source, *views]}
    dialog.distance.setValue(0.01)  # nearly nothing joins: as many clusters as distinct answers
    distinct = len({v.spec.result.text for v in [source, *views]})
    wait_until(loop, lambda: tree.topLevelItem(0).childCount() == distinct, timeout=10)
    assert window.settings.get(keys.CLUSTER_DISTANCE) == 0.01
    assert only_worker_embedded(embed_threads), embed_threads


def test_the_stability_view_clusters_an_evaluations_repeats(loaded_window, loop, tmp_path, embed_threads,
                                                           model_path):
    window = loaded_window
    config = {"prompts": ["Name one {{thing}}"],
              "providers": [{"id": f"file://{model_path}", "config": {"temperature": 1.2, "max_tokens": 8}}],
              "evaluateOptions": {"repeat": 3}, "tests": [{"vars": {"thing": "fruit"}}]}
    assert window.evals.open_config(write_config(tmp_path, config)), window.messages
    wait_until(loop, lambda: finished(window), timeout=180)
    dialog = window.compare.open_stability()
    tree = dialog.tree
    wait_until(loop, lambda: any("largest cluster" in tree.topLevelItem(i).text(2)
                                 for i in range(tree.topLevelItemCount())), timeout=60)
    row = next(tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
               if "3 repeats" in tree.topLevelItem(i).text(0))
    assert row.text(1) == "3" and "/3" in row.text(2)
    assert only_worker_embedded(embed_threads), embed_threads


def test_a_bad_embedder_is_said_once_and_the_window_keeps_working(loaded_window, loop, tmp_path):
    window = loaded_window
    window.settings.set(keys.EMBEDDER, str(tmp_path / "missing-embedder.gguf"))
    source, views = seed_group(window, loop, n=2)
    table = window.compare.open_table(source)
    wait_until(loop, lambda: "could not be opened" in table.meaning_note.text(), timeout=60)
    assert "missing-embedder.gguf" in table.meaning_note.text()
    column = COLUMNS.index("meaning")
    assert {table.cell(r, column) for r in range(table.model.rowCount())} == {"–"}
    dialog = window.compare.open_stability(source)
    assert "meaning unavailable" in dialog.tree.topLevelItem(0).text(2)
    # the window goes on: a pane still runs
    source.prompt.setPlainText("Say hi.")
    assert window.run_all() >= 1
    wait_until(loop, lambda: not any(v.busy for v in window.grid.panes), timeout=120)
    assert source.spec.result.state == RunState.DONE
    window.settings.set(keys.EMBEDDER, "local")  # named again: the next look embeds
    table.refresh()
    wait_until(loop, lambda: all(table.cell(r, column).endswith("%")
                                 for r in range(table.model.rowCount())), timeout=60)
