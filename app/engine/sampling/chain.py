"""Per-sequence sampler chains built from SamplingParams, with or without a constraint (grammar, JSON schema).

Each sequence owns its chain (RNG state, penalty history, constraint state), so one pane's settings never leak
into another's, and greedy output is the same whether a request runs alone or in a batch.

Free text runs llama-server's chain as is (sampler_order.py: penalties -> DRY -> top-n-sigma -> top-k -> typical-p
-> top-p -> min-p -> XTC -> temperature -> draw, or temperature -> mirostat; greedy at temperature 0). A constrained
request gets the distribution of that chain with the constraint applied first (what llama.cpp does with its grammar
sampler first in the chain), without asking the constraint about the whole vocabulary when it need not
(docs/engine.md, "Constrained output" has the proof of each path):

- **top-k** (greedy is top-1): the chain after the constraint only ever sees the k most likely allowed tokens.
  They are found by asking the constraint about the most likely tokens, best first, in growing prefixes (1, then
  2k, x8 ...) until k are allowed; the rest of the chain then runs on those k exactly as it would have. Same
  tokens as the grammar-first chain, seed for seed. Not with top-n-sigma or mirostat, which read every candidate.
- **nothing reshapes** (top-k 0, top-p 1, min-p 0, typical-p 1, no XTC, no dynamic temperature): check first.
  Draw from the whole chain; keep the token if the constraint allows it, else draw again with the constraint
  applied to every candidate (llama.cpp's `common_sampler_sample`). Same distribution; a seeded text may differ,
  as the second draw uses the RNG again.
- **otherwise**: the constraint is asked about every token first.
"""

from __future__ import annotations

import ctypes

import llama_cpp
import numpy as np

from app.engine.sampling import order as sampler_order
from app.engine.sampling.constraint import TOKEN_DATA, token_array
from app.engine.sampling_params import SamplingParams

_TOKEN_DATA = TOKEN_DATA  # the record layout, for callers that build candidates themselves
# The old path, kept as the reference tests and scripts/probes/2026-11-23-constrained-profile.py compare against: a
# GBNF grammar's llama.cpp sampler first in the chain, over the whole vocabulary every token. Read when a chain is
# built.
GRAMMAR_FIRST = False


class SamplerChain:
    """A llama.cpp sampler chain; `sample()` also accepts the token (never accept it twice)."""

    def __init__(self, params: SamplingParams, n_vocab: int, banned_tokens: list[int] = (), grammar=None,
                 constraint=None, vocab=None):
        """`grammar`: a raw llama.cpp grammar sampler put first in the chain (the reference path; the chain takes
        ownership). `constraint`: a Constraint (constraint.py) sampled as the module docstring says (owned too).
        `vocab`: the model's vocabulary pointer (DRY finds its sequence breakers' tokens in it)."""
        self.params = params
        self.constraint = constraint
        self.n_vocab = n_vocab
        self._banned = np.asarray(banned_tokens, dtype=np.int64) if len(banned_tokens) else None
        self._tail = None
        history = sampler_order.history(params, n_vocab, vocab)
        self.ptr = sampler_order.new_chain()
        self._history = list(history)  # owned by `ptr` once added: they see the prompt (accept_prompt)
        if constraint is None:
            if grammar is not None:  # first: what it forbids is gone before any other sampler looks
                self._add(self.ptr, grammar)
            if self._banned is not None:  # ignore_eos: end-of-generation tokens can never be picked
                self._add(self.ptr, self._logit_bias(banned_tokens))
            for sampler in [*history, *sampler_order.selection(params, n_vocab)]:
                self._add(self.ptr, sampler)
            return
        # Constrained: `ptr` holds the history samplers (elementwise, so their place before the constraint is no
        # matter); `_tail` what comes after the truncation the sampler does itself.
        for sampler in history:
            self._add(self.ptr, sampler)
        whole = sampler_order.needs_whole_vocabulary(params)
        self.top_k = 1 if params.greedy else (params.top_k if params.top_k > 0 and not whole else 0)
        self.mode = ("top-k" if self.top_k else
                     "mask" if whole or sampler_order.reshapes(params) else "check")
        if not params.greedy:
            self._tail = sampler_order.new_chain()
            for sampler in sampler_order.selection(params, n_vocab, top_k=self.mode != "top-k"):
                self._add(self._tail, sampler)

    @property
    def wants_mask(self) -> bool:
        """Whether this sample will read the constraint's whole token mask (so it is worth computing ahead,
        masks.py): truncated sampling under a constraint that has masks to compute (a JSON schema)."""
        return (hasattr(self.constraint, "set_mask") and self.constraint.mask is None
                and (self.mode == "mask" or self.top_k > 1))

    # --- building ------------------------------------------------------------------------------------------
    @staticmethod
    def _add(chain, sampler) -> None:
        llama_cpp.llama_sampler_chain_add(chain, sampler)  # the chain takes ownership

    def _logit_bias(self, tokens):
        biases = (llama_cpp.llama_logit_bias * len(tokens))()
        for entry, token in zip(biases, tokens, strict=True):
            entry.token, entry.bias = token, float("-inf")
        return llama_cpp.llama_sampler_init_logit_bias(self.n_vocab, len(tokens), biases)

    # --- sampling ------------------------------------------------------------------------------------------
    def accept_prompt(self, tokens) -> None:
        """Let the repetition penalties and DRY see the prompt, as llama.cpp's server does."""
        for sampler in self._history:  # only these: a grammar must not consume the prompt
            for token in tokens:
                llama_cpp.llama_sampler_accept(sampler, int(token))

    def accept(self, token: int) -> None:
        """A token chosen without sampling (a forced one): the penalties' history and the constraint see it, as
        if it had been sampled. The caller keeps grammars away (a grammar sampler aborts on a token it rejects)."""
        llama_cpp.llama_sampler_accept(self.ptr, int(token))
        if self.constraint is not None:
            if self._tail is not None:
                llama_cpp.llama_sampler_accept(self._tail, int(token))
            self.constraint.accept(int(token))

    def sample(self, ctx_ptr, batch_index: int) -> int:
        """Only call with an index marked as an output in the batch just decoded: anything else aborts."""
        if self.constraint is None:
            return llama_cpp.llama_sampler_sample(self.ptr, ctx_ptr, batch_index)
        pointer = llama_cpp.llama_get_logits_ith(ctx_ptr, batch_index)
        return self._sample_constrained(np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)))

    def sample_logits(self, logits: np.ndarray) -> int:
        """Sample from saved logits (a prompt cache hit has no fresh decode to point at); the same steps as
        `sample` (for free text: candidates in id order, apply the chain, accept), so the same token."""
        if self.constraint is not None:
            return self._sample_constrained(logits)
        candidates = self._candidates(logits)
        array = token_array(candidates)
        llama_cpp.llama_sampler_apply(self.ptr, ctypes.byref(array))
        if not 0 <= array.selected < array.size:
            raise RuntimeError(f"the sampler chain selected no token (index {array.selected})")
        token = int(array.data[array.selected].id)  # a sampler may sort the candidates in place
        llama_cpp.llama_sampler_accept(self.ptr, token)
        return token

    def _candidates(self, logits: np.ndarray) -> np.ndarray:
        candidates = np.empty(len(logits), TOKEN_DATA)
        candidates["id"] = np.arange(len(logits), dtype=np.int32)
        candidates["logit"] = logits
        candidates["p"] = 0.0
        return candidates

    def _sample_constrained(self, raw: np.ndarray) -> int:
        logits = self._adjusted(raw)
        if self.mode == "top-k":
            token = self._from_top_k(logits)
        elif self.mode == "check":
            token = self._draw(self._candidates(logits), is_sorted=False)
            if not self.constraint.allowed(np.array([token]))[0]:
                token = self._draw(self._masked(logits), is_sorted=False)
        else:
            token = self._draw(self._masked(logits), is_sorted=False)
        llama_cpp.llama_sampler_accept(self.ptr, token)  # the penalties' history
        if self._tail is not None:
            llama_cpp.llama_sampler_accept(self._tail, token)
        self.constraint.accept(token)
        return token

    def _adjusted(self, raw: np.ndarray) -> np.ndarray:
        """The logits after the elementwise samplers: banned tokens at -inf, repetition penalties, DRY."""
        if self._history:
            candidates = self._candidates(raw)
            if self._banned is not None:
                candidates["logit"][self._banned] = -np.inf
            llama_cpp.llama_sampler_apply(self.ptr, ctypes.byref(token_array(candidates)))
            return candidates["logit"]  # penalties and DRY keep the id order
        if self._banned is not None:
            logits = np.array(raw, dtype=np.float32)
            logits[self._banned] = -np.inf
            return logits
        return raw

    def _masked(self, logits: np.ndarray) -> np.ndarray:
        candidates = self._candidates(logits)
        candidates["logit"][~self.constraint.allowed(candidates["id"])] = -np.inf
        return candidates

    def _from_top_k(self, logits: np.ndarray) -> int:
        """The grammar-first chain's pick when the chain keeps the top k: find the k most likely allowed tokens
        (best first; equal logits by id, as llama.cpp's greedy takes the first), run the rest of the chain."""
        k, n = self.top_k, len(logits)
        size = 1 if k == 1 else min(n, 2 * k)
        while True:
            if size == 1:
                order = np.array([int(np.argmax(logits))])  # the lowest id of the highest logit
            else:
                part = np.argpartition(logits, n - size)[n - size:] if size < n else np.arange(n)
                order = part[np.lexsort((part, -logits[part]))]
            found = order[self.constraint.allowed(order)]
            if len(found) >= k or size >= n:
                break
            size = min(n, size * 8)
        if not len(found):  # nothing is allowed: end the text (llama.cpp's chain would pick a -inf token)
            return self.constraint.end_token
        best = logits[found[0]]
        if self._tail is None or not np.isfinite(best):  # greedy (or only banned tokens left: the first of them)
            if size == 1:
                return int(found[0])
            ties = np.flatnonzero(logits == best)  # one outside the prefix may have a lower id
            return int(ties[self.constraint.allowed(ties)][0]) if len(ties) > 1 else int(found[0])
        keep = found[:k]
        candidates = np.empty(len(keep), TOKEN_DATA)
        candidates["id"], candidates["logit"], candidates["p"] = keep, logits[keep], 0.0
        return self._draw(candidates, is_sorted=True)

    def _draw(self, candidates: np.ndarray, is_sorted: bool) -> int:
        """Run the chain after top-k (or all of it, when top-k is not this sampler's) on the candidates, down to
        the draw (sampled chains only)."""
        array = token_array(candidates, is_sorted)
        llama_cpp.llama_sampler_apply(self._tail, ctypes.byref(array))
        if not 0 <= array.selected < array.size:
            raise RuntimeError(f"the sampler chain selected no token (index {array.selected})")
        return int(array.data[array.selected].id)

    def free(self) -> None:
        if self.ptr:
            llama_cpp.llama_sampler_free(self.ptr)  # frees the members too
            self.ptr = None
        if getattr(self, "_tail", None):
            llama_cpp.llama_sampler_free(self._tail)
            self._tail = None
        if self.constraint is not None:
            self.constraint.free()
            self.constraint = None
