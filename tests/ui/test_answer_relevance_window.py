"""answer-relevance in the window: the judge (the loaded model) writes three questions, and their vectors come
from the window's embedder on its own thread; the check goes on when they are in (a spy on the real
LocalEmbedder records the thread of every embedding: never the GUI thread), and every cell ends with a verdict."""

import threading

from app.backends.embedding import LocalEmbedder
from tests.ui.conftest import wait_until
from tests.ui.test_eval_view import finished, write_config


def test_answer_relevance_embeds_off_the_gui_thread_and_finishes(loaded_window, loop, tmp_path, monkeypatch):
    seen = []
    real = LocalEmbedder.embed

    def spy(self, texts):
        seen.append(threading.current_thread() is threading.main_thread())
        return real(self, texts)

    monkeypatch.setattr(LocalEmbedder, "embed", spy)
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
