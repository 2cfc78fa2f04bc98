"""Per-sequence sampler chains built from SamplingParams.

Each sequence owns its chain (RNG state, penalty history), so one pane's settings never leak into another's,
and greedy output is the same whether a request runs alone or in a batch.
"""

from __future__ import annotations

import ctypes
import random

import llama_cpp
import numpy as np

from app.engine.types import SamplingParams

# llama_token_data {int32 id; float logit; float p}: a numpy record array with the same layout.
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
assert _TOKEN_DATA.itemsize == ctypes.sizeof(llama_cpp.llama_token_data)


class SamplerChain:
    """A llama.cpp sampler chain; `sample()` also accepts the token (never accept it twice)."""

    def __init__(self, params: SamplingParams, n_vocab: int, banned_tokens: list[int] = (), grammar=None):
        """`grammar`: a llama.cpp grammar sampler (see grammar.py); the chain takes ownership of it."""
        chain_params = llama_cpp.llama_sampler_chain_default_params()
        chain_params.no_perf = True
        self.ptr = llama_cpp.llama_sampler_chain_init(chain_params)
        self._n = 0
        self._penalties = None
        add = self._add
        if grammar is not None:  # first: what it forbids is gone before any other sampler looks
            add(grammar)
        if banned_tokens:  # ignore_eos: end-of-generation tokens can never be picked
            biases = (llama_cpp.llama_logit_bias * len(banned_tokens))()
            for entry, token in zip(biases, banned_tokens, strict=True):
                entry.token, entry.bias = token, float("-inf")
            add(llama_cpp.llama_sampler_init_logit_bias(n_vocab, len(banned_tokens), biases))
        if params.uses_penalties:
            add(llama_cpp.llama_sampler_init_penalties(
                n_vocab, params.penalty_last_n, params.repeat_penalty,
                params.frequency_penalty, params.presence_penalty))
            self._penalties = llama_cpp.llama_sampler_chain_get(self.ptr, self._n - 1)
        if params.greedy:
            add(llama_cpp.llama_sampler_init_greedy())
        else:
            # llama.cpp's common order: top-k -> top-p -> min-p -> temperature -> draw.
            add(llama_cpp.llama_sampler_init_top_k(params.top_k))
            add(llama_cpp.llama_sampler_init_top_p(params.top_p, 1))
            add(llama_cpp.llama_sampler_init_min_p(params.min_p, 1))
            add(llama_cpp.llama_sampler_init_temp(params.temperature))
            seed = params.seed if params.seed is not None else random.getrandbits(32)
            add(llama_cpp.llama_sampler_init_dist(seed & 0xFFFFFFFF))

    def _add(self, sampler) -> None:
        llama_cpp.llama_sampler_chain_add(self.ptr, sampler)  # the chain takes ownership
        self._n += 1

    def accept_prompt(self, tokens) -> None:
        """Let repetition penalties see the prompt, as llama.cpp's server does."""
        if self._penalties is not None:  # only the penalties: a grammar must not consume the prompt
            for token in tokens:
                llama_cpp.llama_sampler_accept(self._penalties, int(token))

    def sample(self, ctx_ptr, batch_index: int) -> int:
        """Only call with an index marked as an output in the batch just decoded: anything else aborts."""
        return llama_cpp.llama_sampler_sample(self.ptr, ctx_ptr, batch_index)

    def sample_logits(self, logits: np.ndarray) -> int:
        """Sample from saved logits (a prompt cache hit has no fresh decode to point at); the same steps as
        `llama_sampler_sample` (candidates in id order, apply the chain, accept), so the same token."""
        candidates = np.empty(len(logits), _TOKEN_DATA)
        candidates["id"] = np.arange(len(logits), dtype=np.int32)
        candidates["logit"] = logits
        candidates["p"] = 0.0
        array = llama_cpp.llama_token_data_array(
            data=candidates.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token_data)),
            size=len(logits), selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(self.ptr, ctypes.byref(array))
        if not 0 <= array.selected < array.size:
            raise RuntimeError(f"the sampler chain selected no token (index {array.selected})")
        token = int(array.data[array.selected].id)  # a sampler may sort the candidates in place
        llama_cpp.llama_sampler_accept(self.ptr, token)
        return token

    def free(self) -> None:
        if self.ptr:
            llama_cpp.llama_sampler_free(self.ptr)  # frees the members too
            self.ptr = None
