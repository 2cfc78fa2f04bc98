"""`bench --spec`'s peer on the real llama-server: Chorus's drafts beside llama-server's n-gram --spec-types."""

import dataclasses

import pytest

from app.bench import spec_server
from app.bench.eval_suite import llama_server_path
from app.bench.speculative import copy_request
from tests.conftest import TEST_THREADS

pytestmark = pytest.mark.servers


def test_spec_server_bench_pairs_chorus_with_each_ngram_spec_type(model_path, monkeypatch):
    if not llama_server_path().is_file():
        pytest.skip(f"llama-server is not built: run `make llama-server` (expected at {llama_server_path()})")

    def small(spec):
        return dataclasses.replace(copy_request(0, spec), max_tokens=24)

    monkeypatch.setattr(spec_server, "WORKLOADS", {"copy N=1": small})
    monkeypatch.setattr(spec_server, "SPEC_TYPES", ("none", "ngram-simple"))
    labels = []
    result = spec_server.spec_server_bench(model_path, threads=TEST_THREADS, repetitions=2, on_run=labels.append)
    assert labels[0] == "rep 1: Chorus spec on" and labels[-1] == "rep 2: Chorus spec on"  # the order alternates
    copy = result["copy N=1"]
    assert copy["best_spec_type"] == "ngram-simple" and len(copy["pairs"]) == 2 and copy["median"] > 0
    chorus, server = copy["runs"]["chorus"][0], copy["runs"]["ngram-simple"][0]
    assert chorus["tokens"] == server["tokens"] == 24  # the same greedy work on both sides
    assert chorus["accepted"] > 0 and server["drafted"] > 0  # both drafted: the comparison is of drafting engines
    off = copy["runs"]["chorus, reproducible off"][0]  # the profile: Chorus again with reproducible mode off
    assert off["tokens"] == 24 and off["accepted"] > 0 and len(copy["reproducible_off"]["pairs"]) == 2
    assert "rep 1: Chorus spec on, reproducible off" in labels
    assert all(copy["ttft_s"][kind] > 0 for kind in ("chorus", "chorus, reproducible off", "ngram-simple"))
    text = spec_server.format_spec_server(result)
    assert "vs ngram-simple" in text and "reproducible off" in text and "first token, ms" in text
