"""The storm: thousands of random operations from 4 threads over 4 slots, then a clean engine.

The seed is printed (and can be set with CHORUS_STORM_SEED) so a failure can be replayed.
"""

import os
import random
import threading
from collections import Counter

from app.engine import GenerationRequest, SamplingParams
from app.engine.types import FINISH_REASONS
from tests.conftest import ask, assert_kv_accounted

OPERATIONS = 2400  # across all threads
THREADS = 4
WORDS = ["owl", "river", "🙂", "مرحبا", "שלום", "zebra", "\n", "quantum", "ß", "42"]


def random_request(rng: random.Random) -> GenerationRequest:
    """Valid or not, raw or chat, tiny or oversize, with or without stop strings."""
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
    kind = rng.random()
    if kind < 0.05:
        text = "word " * 400  # larger than a 256-token slot
    sampling = SamplingParams(temperature=rng.choice([0.0, 0.7]), seed=rng.randint(0, 9),
                              repeat_penalty=rng.choice([1.0, 1.1]))
    stop = rng.choice([(), ("\n",), ("the", "a")])
    max_tokens = rng.randint(1, 6)
    if rng.random() < 0.5:
        return GenerationRequest(prompt=text, sampling=sampling, max_tokens=max_tokens, stop=stop)
    return ask(text, max_tokens=max_tokens, sampling=sampling, stop=stop)


def invalid_request(rng: random.Random) -> None:
    """Construction must refuse it with a ValueError naming the problem; nothing reaches the engine."""
    make = rng.choice([
        lambda: SamplingParams(temperature=-1),
        lambda: SamplingParams(top_p=0),
        lambda: GenerationRequest(prompt="x", max_tokens=0),
        lambda: GenerationRequest(messages=[], max_tokens=4),
        lambda: GenerationRequest(prompt="x", messages=[{"role": "user", "content": "x"}]),
    ])
    try:
        make()
    except ValueError as exc:
        assert str(exc)
    else:
        raise AssertionError("an invalid request was accepted")


def test_storm_from_four_threads_ends_every_request_exactly_once(make_engine):
    seed = int(os.environ.get("CHORUS_STORM_SEED", random.randrange(2**32)))
    print(f"storm seed: {seed} (replay with CHORUS_STORM_SEED={seed})")
    threads_before = set(threading.enumerate())
    engine = make_engine(n_slots=4, n_ctx_per_slot=256)
    finished = Counter()
    steps = threading.Condition()
    step_count = [0]

    def on_step(event) -> None:
        finished.update(c.request_id for c in event.finished)
        with steps:
            step_count[0] += 1
            steps.notify_all()

    def next_step() -> None:
        """Let the engine take a step (if it has work), so operations land between and during decodes."""
        with steps:
            seen = step_count[0]
            steps.wait_for(lambda: step_count[0] > seen or engine.wait_idle(0), timeout=5)

    engine.subscribe(on_step)
    handles, handles_lock = [], threading.Lock()
    ops = Counter()
    barrier = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        rng = random.Random(seed * 31 + index)
        unsubscribers = []
        barrier.wait()
        for _ in range(OPERATIONS // THREADS):
            if rng.random() < 0.3:
                next_step()
            roll = rng.random()
            with handles_lock:
                some = rng.choice(handles) if handles else None
            if roll < 0.38:
                handle = engine.submit(random_request(rng))
                with handles_lock:
                    handles.append(handle)
                ops["submit"] += 1
            elif roll < 0.45:
                invalid_request(rng)
                ops["invalid"] += 1
            elif roll < 0.6:
                if some:
                    some.cancel()
                ops["cancel"] += 1
            elif roll < 0.602:
                engine.cancel_all()
                ops["cancel_all"] += 1
            elif roll < 0.90:
                snap = engine.stats()  # active includes coalesced followers, which hold no slot
                with handles_lock:  # each other thread may have one submit not yet in the list
                    submitted = len(handles) + THREADS - 1
                assert 0 <= snap.active and snap.queued >= 0 and snap.active + snap.queued <= submitted
                ops["stats"] += 1
            elif unsubscribers and roll < 0.95:
                unsubscribers.pop(rng.randrange(len(unsubscribers)))()
                ops["unsubscribe"] += 1
            else:
                unsubscribers.append(engine.subscribe(lambda ev: None))
                ops["subscribe"] += 1
        for unsubscribe in unsubscribers:
            unsubscribe()

    workers = [threading.Thread(target=worker, args=(i,), name=f"storm-{i}") for i in range(THREADS)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    print(f"operations: {dict(ops)}")
    results = [h.result(timeout=180) for h in handles]
    assert engine.wait_idle(60)
    assert sum(ops.values()) == OPERATIONS
    assert all(finished[h.id] == 1 for h in handles)  # exactly once each, seen by a subscriber
    assert all(r.finish_reason in FINISH_REASONS for r in results)
    reasons = Counter(r.finish_reason for r in results)
    print(f"finish reasons: {dict(reasons)}")
    assert reasons["cancelled"] and reasons["error"] and (reasons["stop"] + reasons["length"])
    errors = {r.error for r in results if r.finish_reason == "error"}
    assert all("but a slot holds 256" in e for e in errors), errors  # only the oversize prompts failed
    snap = engine.stats()
    assert snap.active == 0 and snap.queued == 0 and snap.completed == len(handles)
    assert_kv_accounted(engine)  # every slot free, every KV cell accounted for (the prompt cache is on)
    assert engine.close() is True
    assert set(threading.enumerate()) <= threads_before  # no thread left behind
