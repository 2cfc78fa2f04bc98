"""`python -m app eval` with `similar` assertions on the real embedded model, generation and embeddings both.

The default embedder is the main model (SmolLM2, a generative model and so a weak embedder): the assertions are
chosen so they hold whatever a weak embedder does (an answer against the two answers it can be, and against a
sentence it cannot be near), and the run must say that the embedder is weak."""

import json

from tests.cli.test_eval_cli import YES_NO, chorus_eval, results, write_config


def config(model_path) -> str:
    return (
        "prompts: ['Is {{thing}} a fruit? Reply in JSON']\n"
        "providers:\n"
        f"  - id: file://{model_path}\n"
        f"    config: {{temperature: 0, max_tokens: 48, {YES_NO}}}\n"
        "tests:\n"
        "  - vars: {thing: an apple}\n"
        "    assert:\n"
        "      - type: similar\n"
        "        value: ['{\"answer\": \"yes\"}', '{\"answer\": \"no\"}']\n"
        "        threshold: 0.8\n"
        "      - type: not-similar:cosine\n"
        "        value: The French Revolution began in 1789 with the storming of the Bastille in Paris.\n"
        "        threshold: 0.99\n"
        "      - type: similar:euclidean\n"
        "        value: Photosynthesis turns light into chemical energy.\n"
        "        threshold: 0.01\n"
        "        weight: 0\n")


def test_similar_runs_on_the_main_model_and_says_it_is_a_weak_embedder(model_path, tmp_path):
    path = write_config(tmp_path, config(model_path))
    run = chorus_eval(path, "-o", tmp_path / "results.json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "weak embedder" in run.stderr
    [cell] = results(tmp_path / "results.json")
    assert json.loads(cell["response"]["output"])["answer"] in ("yes", "no")
    parts = cell["gradingResult"]["componentResults"]
    assert [p["pass"] for p in parts] == [True, True, True]
    assert parts[0]["reason"].startswith("Similarity ") and parts[0]["score"] >= 0.8
    assert parts[1]["score"] > 0.01  # 1 - cosine
    assert parts[2]["reason"].startswith("Distance ") and "greater than threshold 0.01" in parts[2]["reason"]


def test_unknown_metric_and_a_missing_embedder_file_are_refused_before_anything_runs(model_path, tmp_path):
    bad = write_config(tmp_path, config(model_path).replace("not-similar:cosine", "not-similar:manhattan"))
    run = chorus_eval(bad)
    assert run.returncode == 2 and "unknown similarity metric 'manhattan'" in run.stderr, run.stderr
    good = write_config(tmp_path, config(model_path))
    run = chorus_eval(good, "--embedder", tmp_path / "missing.gguf")
    assert run.returncode == 2 and "missing.gguf" in run.stderr, run.stderr


def test_repeat_prints_each_cells_answers_clustered_by_meaning(model_path, tmp_path):
    """Greedy repeats give the same answer every time: one cluster holding all of them (weak embedder or not,
    identical texts are one point)."""
    path = write_config(tmp_path, (
        "prompts: ['Name one colour of the sky']\n"
        "providers:\n"
        f"  - id: file://{model_path}\n"
        "    config: {temperature: 0, max_tokens: 12}\n"
        "tests:\n"
        "  - description: sky\n"))
    run = chorus_eval(path, "--repeat", 3)
    assert run.returncode in (0, 100), run.stdout + run.stderr
    assert "Stability: the repeats of each cell clustered by meaning" in run.stdout
    line = next(line for line in run.stdout.splitlines() if "/ sky:" in line)
    assert "largest cluster 3/3 (100%), 1 cluster: 3×" in line
    assert "weak embedder" in run.stderr
