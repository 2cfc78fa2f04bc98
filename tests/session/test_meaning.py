"""Meaning on the real SmolLM2 GGUF (the main model as a weak embedder: the wiring is tested, not the quality):
vectors come from the worker thread and reach the owner only through `pump`; a bad path or URL is one clear
error and nothing more is asked of it; reconfiguring drops what the old embedder was still embedding."""

import threading

import pytest

from app.models import model_name
from app.session.meaning import WORKER, Meaning
from tests.conftest import TEST_THREADS


class Owner:
    """The owner's side: `notify` from the worker sets an event, `settle` pumps on this thread until `done()`."""

    def __init__(self):
        self.woken = threading.Event()
        self.meaning = Meaning(notify=self.woken.set)

    def settle(self, done, timeout=60.0):
        while not done():
            assert self.woken.wait(timeout), "the worker never answered"
            self.woken.clear()
            self.meaning.pump()


@pytest.fixture
def owner():
    found = Owner()
    yield found
    found.meaning.close()


def test_vectors_are_embedded_on_the_worker_and_applied_by_pump(owner, model_path):
    meaning = owner.meaning
    meaning.configure("local", model_path, n_threads=TEST_THREADS)
    assert meaning.weak and "weak embedder" in meaning.note and model_name(model_path) in meaning.name
    changes = []
    meaning.events.changed.connect(lambda: changes.append(threading.current_thread().name))
    a, b = "The cat sat on the mat.", "def add(a, b): return a + b"
    assert meaning.similarity(a, a) is None and meaning.pending == 1  # identical texts: embedded once
    assert meaning.similarity(a, b) is None and meaning.pending == 2
    owner.settle(lambda: meaning.pending == 0)
    assert meaning.similarity(a, a) == pytest.approx(1.0, abs=1e-5)
    assert -1.0 <= meaning.similarity(a, b) < 0.999
    assert meaning.embedded_on and all(name.startswith(WORKER) for name in meaning.embedded_on)
    assert threading.current_thread().name not in meaning.embedded_on
    assert changes and set(changes) == {threading.current_thread().name}  # events only on the owner's thread
    found = meaning.stability([a, b, a])
    assert found is not None and found.n == 3 and sum(c.size for c in found.clusters) == 3


def test_prefetch_answers_on_the_owner_thread_once_the_vectors_are_in(owner, model_path):
    meaning = owner.meaning
    meaning.configure("local", model_path, n_threads=TEST_THREADS)
    answered = []
    texts = ["Paris is the capital of France.", "It is Paris."]
    assert meaning.will_wait(texts)
    meaning.prefetch(texts, lambda: answered.append(threading.current_thread().name))
    assert answered == []
    owner.settle(lambda: answered)
    assert answered == [threading.current_thread().name] and meaning.ready(texts)
    assert meaning.embed_cached(texts).shape[0] == 2
    meaning.prefetch(texts, lambda: answered.append("again"))  # ready: answered at once
    assert answered[-1] == "again" and not meaning.will_wait(texts)


def test_a_missing_gguf_is_one_clear_error_and_is_not_asked_again(owner, tmp_path):
    meaning = owner.meaning
    missing = tmp_path / "no-such-embedder.gguf"
    meaning.configure(str(missing), None)
    assert meaning.similarity("a", "b") is None
    owner.settle(lambda: meaning.error)
    assert "no-such-embedder.gguf" in meaning.error and "could not be opened" in meaning.error
    assert meaning.similarity("c", "d") is None and meaning.pending == 0  # nothing more is queued
    answered = []
    meaning.prefetch(["e"], lambda: answered.append(True))  # a waiter is answered at once, to fail `similar`
    assert answered == [True]
    with pytest.raises(Exception, match="no-such-embedder.gguf"):
        meaning.embed_cached(["e"])


def test_a_server_that_is_down_is_named(owner):
    from tests.fixtures.servers import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    owner.meaning.configure(url, None)
    owner.meaning.request(["hello"])
    owner.settle(lambda: owner.meaning.error, timeout=120)
    assert url in owner.meaning.error


def test_reconfiguring_drops_what_the_old_embedder_was_embedding(owner, model_path, tmp_path):
    meaning = owner.meaning
    meaning.configure("local", model_path, n_threads=TEST_THREADS)
    meaning.request(["one answer"])
    meaning.configure(str(tmp_path / "other.gguf"), None)  # before the first answer came back
    assert meaning.pending == 0 and not meaning.error
    meaning.request(["one answer"])
    owner.settle(lambda: meaning.error)
    assert meaning.vector("one answer") is None and "other.gguf" in meaning.error
    meaning.configure("local", model_path, n_threads=TEST_THREADS)  # named again: asked again
    assert not meaning.error
    meaning.request(["one answer"])
    owner.settle(lambda: meaning.vector("one answer") is not None)


def test_a_closed_meaning_asks_nothing_even_when_configured_again(owner, model_path):
    """Before the fix, closing the window closed the Meaning and then unloading the model configured it again
    ("main model" changed), so a comparison table's pending refresh submitted to the shut-down worker and raised
    RuntimeError in the Qt event loop."""
    meaning = owner.meaning
    meaning.configure(str(model_path), None, n_threads=TEST_THREADS)
    meaning.close()
    meaning.configure("local", None, n_threads=TEST_THREADS)  # the window's model goes away after close
    assert meaning.similarity("a lighthouse", "a harbour light") is None  # nothing queued, nothing raised
    assert meaning.pending == 0
