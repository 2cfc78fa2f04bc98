"""The window's `similar` assertions never embed on the GUI thread (before: each `similar` cell embedded its output
there as it was graded, 0.1-0.3 s a cell with the main model): a spy on the real LocalEmbedder records the thread
of every embedding, and the verdicts are the same as before."""

import threading

import pytest

from app.backends.embedding import LocalEmbedder
from tests.ui.conftest import wait_until
from tests.ui.test_eval_view import finished, write_config


@pytest.fixture
def embedded_on_gui_thread(monkeypatch) -> list[bool]:
    """For every embedding the real LocalEmbedder makes, whether it ran on the GUI thread."""
    seen = []
    real = LocalEmbedder.embed

    def spy(self, texts):
        seen.append(threading.current_thread() is threading.main_thread())
        return real(self, texts)

    monkeypatch.setattr(LocalEmbedder, "embed", spy)
    return seen


def test_similar_cells_are_embedded_on_a_worker_and_graded_as_before(loaded_window, loop, tmp_path,
                                                                     embedded_on_gui_thread):
    seen = embedded_on_gui_thread
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


# answer-relevance in the window: the judge (the loaded model) writes three questions, and their vectors come from
# the window's embedder on its own thread; the check goes on when they are in, and every cell ends with a verdict.
def test_answer_relevance_embeds_off_the_gui_thread_and_finishes(loaded_window, loop, tmp_path,
                                                                  embedded_on_gui_thread):
    seen = embedded_on_gui_thread
    window = loaded_window
    config = {"prompts": ["{{query}}"], "providers": ["echo"],
              "defaultTest": {"options": {"provider": {"config": {"max_tokens": 16}}}},
              "tests": [{"vars": {"query": "What is the capital of France?"},
                         "providerOutput": "The capital of France is Paris.",
                         "assert": [{"type": "answer-relevance", "threshold": 0}]},
                        {"vars": {"query": "How do I boil an egg?"}, "providerOutput": "Boil it for 8 minutes.",
                         "assert": [{"type": "answer-relevance", "threshold": 0}]}]}
    assert window.evals.open_config(write_config(tmp_path, config)), window.messages
    wait_until(loop, lambda: finished(window), timeout=300)
    evaluation = window.session.evaluation
    for cell in evaluation.cells:
        assert cell.status == "pass", (cell.error, cell.grading)
        (component,) = cell.grading.component_results
        assert component.reason.startswith("Relevance ") and len(component.judge) == 3
    assert seen and not any(seen), "an embedding ran on the GUI thread"
