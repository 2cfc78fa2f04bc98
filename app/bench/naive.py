"""What users write without Chorus: llama-cpp-python's high-level `Llama`, one per pane in threads, or one
serving the panes one after another. Decode rates only (time after each first token), so prefill — where
these baselines are weakest — is not held against them."""

from __future__ import annotations

import threading
import time
from unittest import mock

import llama_cpp
import llama_cpp.llama_cpp as llama_c_api

from app.engine.native import model_params


def _llama(model_path, threads: int, n_ctx: int) -> llama_cpp.Llama:
    # `Llama` starts from llama.cpp's default model params; give it the engine's (no AMX buffers, which crash)
    # so both sides load the weights the same way.
    with mock.patch.object(llama_c_api, "llama_model_default_params", model_params):
        return llama_cpp.Llama(model_path=str(model_path), n_ctx=n_ctx, n_threads=threads,
                               n_threads_batch=threads, n_batch=128, verbose=False)


def _timed_stream(llm: llama_cpp.Llama, prompt: str, max_tokens: int, eog: list[int]) -> tuple[float, float, int]:
    """(time of first token, time of last token, tokens) for one greedy completion that ignores EOS."""
    first = last = None
    count = 0
    stream = llm.create_completion(prompt, max_tokens=max_tokens, temperature=0.0, stream=True,
                                   logit_bias={t: float("-inf") for t in eog})
    for _chunk in stream:
        last = time.perf_counter()
        first = first or last
        count += 1
    return first, last, count


def llama_sequential_tps(model_path, prompts: list[str], max_tokens: int, threads: int, n_ctx: int,
                         eog: list[int]) -> float:
    llm = _llama(model_path, threads, n_ctx)
    try:
        tokens, seconds = 0, 0.0
        for prompt in prompts:
            first, last, count = _timed_stream(llm, prompt, max_tokens, eog)
            tokens += count - 1
            seconds += last - first
        return tokens / seconds
    finally:
        llm.close()


def llama_threads_tps(model_path, prompts: list[str], max_tokens: int, threads: int, n_ctx: int,
                      eog: list[int]) -> float:
    """One Llama per prompt, each in its own thread (each with `threads` ggml threads, as a user would)."""
    llms = [_llama(model_path, threads, n_ctx) for _ in prompts]
    results: list[tuple[float, float, int]] = [None] * len(prompts)

    def work(i: int) -> None:
        results[i] = _timed_stream(llms[i], prompts[i], max_tokens, eog)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(len(prompts))]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        tokens = sum(count - 1 for _, _, count in results)
        window = max(last for _, last, _ in results) - min(first for first, _, _ in results)
        return tokens / window
    finally:
        for llm in llms:
            llm.close()
