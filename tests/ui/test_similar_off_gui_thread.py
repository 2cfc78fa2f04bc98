"""The window's `similar` assertions never embed on the GUI thread (before: each `similar` cell embedded its output
there as it was graded, 0.1-0.3 s a cell with the main model): a spy on the real LocalEmbedder records the thread
of every embedding, and the verdicts are the same as before."""

import threading

from app.backends.embedding import LocalEmbedder
from tests.ui.conftest import wait_until
from tests.ui.test_eval_view import finished, write_config


def test_similar_cells_are_embedded_on_a_worker_and_graded_as_before(loaded_window, loop, tmp_path, monkeypatch):
    seen = []
    real = LocalEmbedder.embed

    def spy(self, texts):
        seen.append(threading.current_thread() is threading.main_thread())
        return real(self, texts)

    monkeypatch.setattr(LocalEmbedder, "embed", spy)
    window = loaded_window
    config = {"prompts": ["Say {{word}}"], "providers": ["echo"],
              "tests": [{"vars": {"word": "rain"}, "assert": [{"type": "similar", "value": "Say rain"}]},
                        {"vars": {"word": "snow"}, "assert": [{"type": "not-similar", "value": "Say snow"}]},
                        {"vars": {"word": "sun"}, "assert": [{"type": "similar", "value": ["Say sun", "x"],
                                                              "threshold": 0.99}]}]}
    assert window.evals.open_config(write_config(tmp_path, config)), window.messages
    wait_until(loop, lambda: finished(window), timeout=120)
    evaluation = window.session.evaluation
    assert [evaluation.cell(i, 0).status for i in range(3)] == ["pass", "fail", "pass"]
    assert seen and not any(seen), "an embedding ran on the GUI thread"
