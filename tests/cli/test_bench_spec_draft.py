"""`bench --spec`'s draft-model row on the real model (SmolLM2 drafting for itself), one small workload."""

import dataclasses

from app.bench import spec_draft, speculative
from tests.conftest import TEST_THREADS


def test_draft_bench_pairs_a_small_copy_workload(model_path, monkeypatch):
    def small(spec):
        return [dataclasses.replace(speculative.copy_request(0, spec), max_tokens=24)]

    monkeypatch.setattr(spec_draft, "WORKLOADS", {"copy N=1": small})
    labels = []
    result = spec_draft.draft_bench(model_path, threads=TEST_THREADS, repetitions=2, on_run=labels.append)
    assert result["draft_model"] == result["target"] == str(model_path)
    figure = result["workloads"]["copy N=1"]
    assert len(labels) == 4 and labels[0].endswith("plain") and labels[2].endswith("spec")  # order alternates
    assert len(figure["pairs"]) == 2 and figure["median"] > 0
    assert all(run["spec"]["tokens"] == run["plain"]["tokens"] for run in figure["runs"])  # same tokens
    assert figure["runs"][0]["spec"]["accepted"] > 0 and figure["runs"][0]["plain"]["drafted"] == 0
    table = spec_draft.format_draft(result)
    assert "the target drafting for itself" in table and "copy N=1" in table
