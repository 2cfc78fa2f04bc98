"""`bench --spec` on the real model, one small workload: pairs, figure and table."""

import dataclasses

from app.bench import speculative
from tests.conftest import TEST_THREADS


def test_spec_bench_pairs_a_small_copy_workload(model_path, monkeypatch):
    def small(spec):
        return [dataclasses.replace(speculative.copy_request(0, spec), max_tokens=30)]

    monkeypatch.setattr(speculative, "WORKLOADS", {"copy N=1": small})
    labels = []
    result = speculative.spec_bench(model_path, threads=TEST_THREADS, repetitions=2, on_run=labels.append)
    assert set(result) == {"copy N=1 auto", "copy N=1 on"}
    assert len(labels) == 8 and labels[0].endswith("plain") and labels[2].endswith("spec")  # order alternates
    for figure in result.values():
        assert len(figure["pairs"]) == 2 and figure["median"] > 0
        assert all(run["spec"]["tokens"] == run["plain"]["tokens"] for run in figure["runs"])  # same tokens
        assert figure["runs"][0]["spec"]["accepted"] > 0 and figure["runs"][0]["plain"]["drafted"] == 0
    assert "copy N=1 on" in speculative.format_spec(result)
