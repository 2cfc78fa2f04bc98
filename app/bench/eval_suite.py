"""`bench --eval`: one evaluation suite run to the end on Chorus's engine, against the engine's own speed and
against llama-server (and promptfoo driving it, where promptfoo is installed).

The suite: CASES test cases × 2 variants (greedy; seeded at temperature 0.8) of one chat prompt whose system
message is the same ≥ 300-token text for every cell; run plain, then with every cell graded by an `llm-rubric`
judge on the same backend, at the default slots (limits.SLOTS.default). The same suite also runs as users write
it (`written_plain`, `written_judged`: the system prompt in a file, OpenAI-compatible provider ids with their
settings, cases inline, a judge provider asking for 96 tokens, run as `eval --judge local`). Three figures:
- `ratio_vs_engine`: Chorus's wall time ÷ the suite's own work at the engine's own rates: the prompt tokens it
  prefilled (judge prompts included) at the engine's prefill rate, plus the tokens it generated at its steady
  N = slots decode rate, both measured on prompts of the suite's length on the same engine right before and after
  the run; model load apart;
- `ratio_vs_llama_server`: Chorus's wall ÷ llama-server's (built by `make llama-server`, started here with the
  same model, threads and `-np slots`, prompt cache on), both driven by the same EvaluationRunner (Chorus at
  `eval`'s defaults, every cell queued in the engine; llama-server with `slots` requests in flight, as promptfoo's
  `-j slots`);
- `ratio_vs_promptfoo`: Chorus's wall ÷ `promptfoo eval -j slots` driving that llama-server (its wall time,
  node's start-up included), when a `promptfoo` executable is found ($CHORUS_PROMPTFOO, else PATH).
Where llama-server or promptfoo is missing the report says so and how to get it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

from app.backends import LocalBackend, OpenAIBackend
from app.backends.registry import MAIN, BackendRegistry
from app.backends.workload import fixed_length_request, prompt_of_length
from app.bench.llama_tools import tool_path, weight_args
from app.engine import EngineConfig, limits
from app.engine.native import LlamaModel
from app.evaluate import load_config, stats
from app.evaluate.runner import EvaluationRunner
from app.models import default_model_path
from app.session import SessionRunner

CASES = 48
MAX_TOKENS = 48
RATE_TOKENS = 96  # tokens each request of the engine-rate measurement generates
# Tokens of one cell's prompt as SmolLM2's chat template renders it: the 471-token system message, the question and
# the template's markers (the engine's prompt-token count ÷ cells, measured). The engine-rate prompts are this long.
SUITE_PROMPT_TOKENS = 497
TOPICS = ("rivers", "volcanoes", "bees", "glaciers", "comets", "forests", "deserts", "tides", "clouds", "coral",
          "owls", "salt", "bridges", "clocks", "maps", "bread")
SYSTEM = " ".join(
    f"Rule {i}: answer the question about the named topic in one plain sentence, without lists, headings or "
    f"markdown, using simple words a child would know, and never repeat the question back." for i in range(1, 13))
RUBRIC = "The reply states a fact about {{topic}}"


def llama_server_path() -> Path:
    return tool_path("llama-server")


def promptfoo_path() -> str | None:
    """$CHORUS_PROMPTFOO, else `promptfoo` on PATH; None when neither is there."""
    return os.environ.get("CHORUS_PROMPTFOO") or shutil.which("promptfoo")


def _providers(model: Path) -> list[dict]:
    return [{"id": f"file://{model}", "label": "greedy", "config": {"temperature": 0, "max_tokens": MAX_TOKENS}},
            {"id": f"file://{model}", "label": "sampled", "config": {"temperature": 0.8, "seed": 1,
                                                                    "max_tokens": MAX_TOKENS}}]


def write_suite(folder: Path, model: Path, judged: bool = True, providers: list[dict] | None = None) -> Path:
    """The promptfoo config (and its CSV of cases) in `folder`; returns the config's path. `judged`: every cell
    gets the `llm-rubric` assertion; `providers` replace the two local ones (promptfoo's run on a server)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["topic,aspect"] + [f"{TOPICS[i % len(TOPICS)]},{('size', 'colour', 'history')[i % 3]} {i}"
                               for i in range(CASES)]
    (folder / "cases.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    prompt = json.dumps([{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": "Tell me one fact about the {{aspect}} of {{topic}}"}])
    config = {"prompts": [prompt], "providers": providers or _providers(model), "tests": "file://cases.csv"}
    if judged:
        config["defaultTest"] = {"assert": [{"type": "llm-rubric", "value": RUBRIC}]}
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


# The suite as users write it (the shape of a held-out suite that was measured against promptfoo): the system
# prompt in its own file, providers by their OpenAI-compatible ids with their settings written out, cases inline,
# and a judge provider that asks for short verdicts; Chorus runs it as `eval --judge local` would.
WRITTEN = "written"
JUDGE_MAX_TOKENS = 96
PLACEHOLDER_URL = "http://127.0.0.1:8080/v1"  # Chorus runs every provider on its own backend (run_suite's route)


def write_written_suite(folder: Path, judged: bool, url: str = PLACEHOLDER_URL) -> Path:
    """The suite as users write it, for a server at `url` (promptfoo's run) or for Chorus (any URL: run_suite
    sends every request to its one backend, the judge's included)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "system.txt").write_text(SYSTEM, encoding="utf-8")  # no newline: it goes into a JSON string
    prompt = [{"role": "system", "content": "{{system}}"},
              {"role": "user", "content": "Tell me one fact about the {{aspect}} of {{topic}}"}]
    (folder / "prompt.json").write_text(json.dumps(prompt, indent=2), encoding="utf-8")
    server = {"apiBaseUrl": url, "apiKey": "none"}
    config = {
        "description": "one fact per topic, as written",
        "prompts": ["file://prompt.json"],
        "providers": [{"id": "openai:chat:smollm2", "label": "greedy",
                       "config": {**server, "temperature": 0, "max_tokens": MAX_TOKENS}},
                      {"id": "openai:chat:smollm2", "label": "sampled",
                       "config": {**server, "temperature": 0.8, "seed": 1, "max_tokens": MAX_TOKENS}}],
        "defaultTest": {"vars": {"system": "file://system.txt"}},
        "tests": [{"vars": {"topic": TOPICS[i % len(TOPICS)], "aspect": f"{('size', 'colour', 'history')[i % 3]} {i}"}}
                  for i in range(CASES)]}
    if judged:
        config["defaultTest"]["options"] = {"provider": {"id": "openai:chat:smollm2", "config": {
            **server, "temperature": 0, "max_tokens": JUDGE_MAX_TOKENS}}}
        config["defaultTest"]["assert"] = [{"type": "llm-rubric", "value": RUBRIC}]
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def run_suite(config: Path, backend, max_concurrency: int | None = None, code=None) -> dict:
    """Run the suite on `backend`; its wall time in seconds, the tokens generated and what the cells came to. A
    suite as written runs as `eval --judge local` would: its judge on the backend, with the settings it wrote.
    `max_concurrency`: the runner's bound on requests in flight; None runs the suite as `eval` does (the
    config's `evaluateOptions.maxConcurrency`, else no bound: the engine queues every cell and admits the next
    in the step a slot frees). `code`: the CodeRunner for a suite with code checks (app/bench/eval_code.py)."""
    suite = load_config(config, judge_given=config.parent.name.startswith(WRITTEN))
    if max_concurrency is None:
        max_concurrency = suite.max_concurrency
    evaluation = suite.evaluation(judge="local")
    runner: SessionRunner | None = None
    registry = BackendRegistry(lambda event: runner.feed(event))  # the runner exists before anything is submitted
    runner = SessionRunner(registry)
    registry.set_main(backend)  # every variant and the judge run on it
    backend.reset_stats()
    try:
        started = time.perf_counter()
        driver = EvaluationRunner(evaluation, runner, lambda target: MAIN, suite.base_dir, max_concurrency,
                                  code=code)
        driver.start()
        if not driver.drive(timeout=3600):
            raise TimeoutError("the evaluation suite did not finish within an hour")
        wall = time.perf_counter() - started
    finally:
        registry.set_main(None)  # the caller closes the backend
    total = stats.totals(evaluation)
    snap = backend.stats()
    return {"wall_s": wall, "generated_tokens": snap.generated_tokens_total, "cells": len(evaluation.cells),
            "passed": total.successes, "failed": total.failures, "errors": total.errors,
            "unreliable": total.unreliable,  # unreliable: the judge failed its calibration
            # what the backend prefilled and reused (a server's own counts where it reports them)
            "prompt_tokens": snap.prompt_tokens_total, "prompt_tokens_cached": snap.prompt_tokens_cached}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_llama_server(binary: Path, model: Path, threads: int, slots: int, n_ctx_per_slot: int, log: Path,
                       extra: list[str] | tuple[str, ...] = ()):
    port = _free_port()
    proc = subprocess.Popen([str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
                             "-np", str(slots), "-c", str(slots * n_ctx_per_slot), "-t", str(threads),
                             "--jinja", *weight_args(), *extra], stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-server exited with {proc.returncode}; its log: {log}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as reply:
                if reply.status == 200:
                    return proc, url + "/v1"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise TimeoutError(f"llama-server did not become ready; its log: {log}")


def run_promptfoo(binary: str, folder: Path, model: Path, url: str, slots: int, judged: bool) -> dict:
    """`promptfoo eval` of the same suite on llama-server at `url` (OpenAI chat, judge on the same server); its
    wall time, node's start-up included, as a user would see it."""
    server = {"apiBaseUrl": url, "apiKey": "none"}
    if folder.name.removeprefix("promptfoo-").startswith(WRITTEN):
        config_path = write_written_suite(folder, judged, url)
    else:
        providers = [{"id": "openai:chat:smollm2", "label": p["label"], "config": {**server, **p["config"]}}
                     for p in _providers(model)]
        config_path = write_suite(folder, model, judged, providers)
        config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
        if judged:
            config["defaultTest"]["options"] = {"provider": {"id": "openai:chat:smollm2", "config": server}}
        config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    out = folder / "promptfoo-results.json"
    env = {**os.environ, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1"}
    started = time.perf_counter()
    done = subprocess.run([binary, "eval", "-c", str(config_path), "-j", str(slots), "--no-cache", "--no-table",
                           "--no-progress-bar", "-o", str(out)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=3600)
    wall = time.perf_counter() - started
    if not out.is_file():
        raise RuntimeError(f"promptfoo eval wrote no results (exit {done.returncode}): {done.stderr[-400:]}")
    results = json.loads(out.read_text(encoding="utf-8")).get("results", {})
    counts = results.get("stats", {})
    # promptfoo's own count of the work: prompt and completion tokens of the cells, and of the judges under
    # "assertions" (what the server reported to it), so its wall can be read beside the tokens it spent
    return {"wall_s": wall, "passed": counts.get("successes"), "failed": counts.get("failures"),
            "errors": counts.get("errors"), "exit": done.returncode, "token_usage": counts.get("tokenUsage")}


def _engine_rate(backend, prompts: list[str]) -> tuple[float, float]:
    """(decode, prefill) t/s. Decode: over the steps in which every one of the requests produced a token (each
    step timed from the step before it): the engine's steady rate at N = len(prompts). The prompts are prefilled
    first, cold, so the measured requests start together from the prompt cache (paced admission would otherwise
    let the first finish before the last starts); that prefill is the prefill rate (the engine's pure-prefill
    steps, `StatsSnapshot.prefill_tps`)."""
    backend.reset_stats()
    for handle in [backend.submit(fixed_length_request(p, 1)) for p in prompts]:  # prefilled once, kept in the
        handle.result(timeout=600)  # slots' prompt cache: below, all of them start decoding in the same step
    prefill = backend.stats().prefill_tps
    times: list[tuple[float, int]] = []
    unsubscribe = backend.subscribe(lambda event: times.append((time.perf_counter(), len(event.tokens))))
    try:
        results = [h.result(timeout=600) for h in [backend.submit(fixed_length_request(p, RATE_TOKENS))
                                                     for p in prompts]]
    finally:
        unsubscribe()
    if any(r.finish_reason == "error" for r in results):
        raise RuntimeError(f"an engine-rate request failed: {next(r.error for r in results if r.error)}")
    full = [(now - before, n) for (before, _), (now, n) in zip(times, times[1:], strict=False)
            if n == len(prompts)]
    backend.clear_prompt_cache()  # the suite starts cold, as the first run did
    backend.wait_idle(30)
    if not prefill:
        raise RuntimeError("the engine reported no prefill rate for the engine-rate prompts")
    return sum(n for _, n in full) / sum(dt for dt, _ in full), prefill


def _chorus(model: Path, threads: int, slots: int, n_ctx_per_slot: int, configs: dict[str, Path]) -> dict:
    """Each suite on one engine, between two measurements of the engine's steady N = slots decode rate and its
    prefill rate on prompts of the suite's length; the ratio of its wall time to its prompt tokens at that
    prefill rate plus its generated tokens at that decode rate."""
    lm = LlamaModel(model)
    prompts = [prompt_of_length(lm, SUITE_PROMPT_TOKENS, 500 + i) for i in range(slots)]
    lm.close()
    out = {}
    started = time.perf_counter()
    with LocalBackend(EngineConfig(model_path=model, n_slots=slots, n_ctx_per_slot=n_ctx_per_slot,
                                   n_threads=threads)) as backend:
        load_s = time.perf_counter() - started
        _engine_rate(backend, prompts[:1])  # warm up: the first decode is slow
        for name, config in configs.items():
            before, prefill_before = _engine_rate(backend, prompts)
            run = run_suite(config, backend)  # at `eval`'s defaults: the engine queues the cells
            after, prefill_after = _engine_rate(backend, prompts)
            rate, prefill = (before + after) / 2, (prefill_before + prefill_after) / 2
            run.update(engine_tps=[before, after], engine_prefill_tps=[prefill_before, prefill_after],
                       ideal_s=run["prompt_tokens"] / prefill + run["generated_tokens"] / rate)
            run["ratio_vs_engine"] = run["wall_s"] / run["ideal_s"]
            out[name] = run
    out["load_s"] = load_s
    return out


def _server_side(model: Path, threads: int, slots: int, n_ctx_per_slot: int, folder: Path,
                 configs: dict[str, Path]) -> tuple[dict, dict, str | None]:
    """The suites on llama-server through the same runner, then through promptfoo when it is installed, each run
    on a freshly started server (llama-server keeps prompts in RAM: a second run would start warm); a note
    naming what was missing."""
    binary = llama_server_path()
    if not binary.is_file():
        return {}, {}, f"llama-server is not built ({binary}): run `make llama-server` for the comparisons"
    server, promptfoo, note = {}, {}, None
    pf = promptfoo_path()
    runs = [("runner", name) for name in configs] + ([("promptfoo", name) for name in configs] if pf else [])
    for driver, name in runs:
        proc, url = start_llama_server(binary, model, threads, slots, n_ctx_per_slot,
                                       folder / f"llama-server-{driver}-{name}.log")
        try:
            if driver == "runner":
                backend = OpenAIBackend(url, model=None, max_concurrency=slots)
                try:
                    server[name] = run_suite(configs[name], backend, slots)  # -np slots, as promptfoo's -j
                finally:
                    backend.close()
            else:
                try:
                    promptfoo[name] = run_promptfoo(pf, folder / f"promptfoo-{name}", model, url, slots,
                                                    judged=name.endswith("judged"))
                except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as exc:
                    note = f"promptfoo ({pf}) failed on the {name} suite: {exc}"
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    if pf is None:
        note = "promptfoo is not installed: `npm install -g promptfoo` (or set $CHORUS_PROMPTFOO) for those figures"
    return server, promptfoo, note


def eval_bench(threads: int, n_ctx_per_slot: int = 1024, slots: int | None = None) -> dict:
    """Chorus's runs (plain and judged) with their ratios to the engine's own speed, to llama-server and to
    promptfoo driving llama-server (None where that one was not run)."""
    slots = slots or limits.SLOTS.default
    model = default_model_path()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        configs = {name: write_suite(folder / name, model, judged=name == "judged") for name in ("plain", "judged")}
        configs |= {f"{WRITTEN}_{name}": write_written_suite(folder / f"{WRITTEN}_{name}", judged=name == "judged")
                    for name in ("plain", "judged")}
        chorus = _chorus(model, threads, slots, n_ctx_per_slot, configs)
        server, promptfoo, note = _server_side(model, threads, slots, n_ctx_per_slot, folder, configs)

    def ratio(other: dict) -> dict:
        return {name: chorus[name]["wall_s"] / other[name]["wall_s"] for name in other}

    return {"chorus": chorus, "llama_server": server or None, "promptfoo": promptfoo or None,
            "ratio_vs_engine": {name: chorus[name]["ratio_vs_engine"] for name in configs},
            "ratio_vs_llama_server": ratio(server) if server else None,
            "ratio_vs_promptfoo": ratio(promptfoo) if promptfoo else None, "note": note,
            "setup": {"cases": CASES, "variants": 2, "slots": slots, "max_tokens": MAX_TOKENS,
                      "suites": {"plain": "the benchmark's suite", "judged": "the same, an llm-rubric on every cell",
                                 f"{WRITTEN}_plain": "the suite as users write it (system prompt file, OpenAI ids "
                                                     "with settings, cases inline)",
                                 f"{WRITTEN}_judged": "the same with a judge provider asking max_tokens "
                                                      f"{JUDGE_MAX_TOKENS}, run as `eval --judge local`"},
                      "judge": "llm-rubric on the same backend", "threads": threads,
                      "engine_rate": f"steady N = {slots} decode t/s and the prefill t/s of {slots} cold "
                                     f"{SUITE_PROMPT_TOKENS}-token prompts, before and after each run, same engine",
                      "ideal": "prompt tokens prefilled ÷ the prefill rate + tokens generated ÷ the decode rate"}}
