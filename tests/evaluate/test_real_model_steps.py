"""A promptfoo config with CSV tests and llm-rubric, through the pure cell steps on the real local model (the
real engine: generation, log-probabilities for perplexity, the judges' constrained verdicts, which even a 135M
model writes as JSON that parses), then its outputs.
The executor that will drive these steps concurrently is phase 2; this drives them the simplest way."""

import json
import time

import pytest

from app.evaluate import cells, load_config, stats, write_outputs


@pytest.mark.slow
def test_csv_config_with_llm_rubric_on_the_real_model(make_engine, model_path, tmp_path):
    (tmp_path / "tests.csv").write_text(
        "question,__expected1,__expected2,__expected3,__expected4\n"
        "What is the capital of France?,icontains:paris,llm-rubric:The answer names a city,perplexity-score(0.01),"
        "factuality:The capital of France is Paris.\n"
        "Name a colour.,latency(600000),finish-reason:stop,,\n")
    (tmp_path / "promptfooconfig.yaml").write_text(
        "description: real model\n"
        "prompts: ['Answer in one short sentence: {{question}}']\n"
        f"providers:\n  - id: file://{model_path}\n    label: greedy\n    config: {{temperature: 0, max_tokens: 24}}\n"
        f"  - id: file://{model_path}\n    label: warm\n    config: {{temperature: 0.7, seed: 7, max_tokens: 24}}\n"
        "tests: file://tests.csv\n")
    evaluation = load_config(tmp_path / "promptfooconfig.yaml").evaluation()
    engine = make_engine(n_slots=4, n_ctx_per_slot=2048)
    running = []
    for cell in evaluation.cells:  # every generation at once: they batch together in the engine
        prepared = cells.prepare(evaluation, cell)
        cells.start(cell, prepared)
        running.append((cell, engine.submit(prepared.request)))
    judged = []
    for cell, handle in running:
        completion = handle.result(timeout=300)
        cells.record(cell, completion, (time.perf_counter() - handle.t_submit) * 1000)
        grader = cells.grader(evaluation, cell)
        judged.append((cell, grader, [(call, engine.submit(call.request)) for call in grader.start()]))
    for cell, grader, calls in judged:
        for call, handle in calls:
            reply = handle.result(timeout=300)
            assert grader.reply(call.key, reply.text, reply.error) == []
        cells.conclude(cell, grader)
    assert all(cell.finished for cell in evaluation.cells)
    assert not [c.error for c in evaluation.cells if c.status == "error"]
    capital = evaluation.cell(0, 0)
    assert capital.output and capital.logprobs and len(capital.logprobs) == capital.generated_tokens
    rubric, factuality = capital.grading.component_results[1], capital.grading.component_results[3]
    assert rubric.assertion.type == "llm-rubric" and rubric.judge and not rubric.reason.startswith("Could not")
    assert factuality.assertion.type == "factuality" and factuality.score in (0.0, 1.0)
    assert not factuality.reason.startswith(("Invalid category", "Factuality checker"))  # the schema held
    colour = evaluation.cell(1, 1)
    assert [c.passed for c in colour.grading.component_results] == [True, colour.finish_reason == "stop"]
    write_outputs(evaluation, [tmp_path / "results.json", tmp_path / "junit.xml"])
    document = json.loads((tmp_path / "results.json").read_text())
    assert len(document["results"]["results"]) == 4
    assert document["results"]["stats"]["successes"] == stats.totals(evaluation).successes
    assert stats.exit_code(evaluation) in (0, 100)
    assert stats.exit_code(evaluation) == (0 if all(c.status == "pass" for c in evaluation.cells) else 100)
