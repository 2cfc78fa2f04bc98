"""llama-server's sampler chain made from SamplingParams: which llama.cpp samplers, in which order, with which
arguments (the vendored common/sampling.cpp, `common_sampler_init`, with common_params_sampling's default order).

The order, each sampler a no-op at its default:

    penalties -> DRY -> top-n-sigma -> top-k -> typical-p -> top-p -> min-p -> XTC -> temperature (dynamic) -> draw

With mirostat 1 or 2 the chain is only temperature -> mirostat, as in llama-server: the penalties, DRY and the
truncation samplers are not applied. Greedy (temperature 0) is Chorus's own: penalties -> DRY -> the most likely
token, whatever else is set (llama-server at temperature 0 still runs XTC and typical-p before its arg-max).

The draw, XTC and mirostat each own a random generator seeded with the request's seed (llama-server gives all
three the same seed). `min_keep` is llama-server's 0; for every sampler here 0 and 1 keep the same tokens.
"""

from __future__ import annotations

import ctypes
import random

import llama_cpp

from app.engine.sampling_params import SamplingParams

MIROSTAT_M = 100  # the tokens mirostat 1 estimates its s_hat from (llama-server's fixed value)
MIN_KEEP = 0


def new_chain():
    chain_params = llama_cpp.llama_sampler_chain_default_params()
    chain_params.no_perf = True
    return llama_cpp.llama_sampler_chain_init(chain_params)


def draws_mirostat(params: SamplingParams) -> bool:
    """Mirostat replaces the chain (sampled requests only: greedy stays greedy)."""
    return params.mirostat != 0 and not params.greedy


def history(params: SamplingParams, n_vocab: int, vocab) -> list:
    """The samplers that look at the tokens so far, new and not owned by any chain: the repetition penalties,
    then DRY (none under mirostat). They are the ones that must see the prompt too (accept_prompt)."""
    if draws_mirostat(params):
        return []
    if params.uses_dry and vocab is None:
        raise ValueError("DRY needs the model's vocabulary (to find its sequence breakers' tokens)")
    samplers = []
    if params.uses_penalties:
        samplers.append(llama_cpp.llama_sampler_init_penalties(
            n_vocab, params.penalty_last_n, params.repeat_penalty, params.frequency_penalty, params.presence_penalty))
    if params.uses_dry:
        words = [b.encode("utf-8") for b in params.dry_sequence_breakers]
        breakers = (ctypes.c_char_p * len(words))(*words)
        samplers.append(llama_cpp.llama_sampler_init_dry(
            vocab, params.dry_multiplier, params.dry_base, params.dry_allowed_length, params.dry_penalty_last_n,
            breakers, len(words)))
    return samplers


def selection(params: SamplingParams, n_vocab: int, top_k: bool = True) -> list:
    """The samplers after the history ones, down to the pick, new and unowned. `top_k=False` leaves top-k out
    (a constrained request that finds its k best allowed tokens itself)."""
    if params.greedy:
        return [llama_cpp.llama_sampler_init_greedy()]
    seed = (params.seed if params.seed is not None else random.getrandbits(32)) & 0xFFFFFFFF
    if params.mirostat == 1:
        return [llama_cpp.llama_sampler_init_temp(params.temperature),
                llama_cpp.llama_sampler_init_mirostat(n_vocab, seed, params.mirostat_tau, params.mirostat_eta,
                                                      MIROSTAT_M)]
    if params.mirostat == 2:
        return [llama_cpp.llama_sampler_init_temp(params.temperature),
                llama_cpp.llama_sampler_init_mirostat_v2(seed, params.mirostat_tau, params.mirostat_eta)]
    samplers = [llama_cpp.llama_sampler_init_top_n_sigma(params.top_n_sigma)]
    if top_k:
        samplers.append(llama_cpp.llama_sampler_init_top_k(params.top_k))
    samplers += [llama_cpp.llama_sampler_init_typical(params.typical_p, MIN_KEEP),
                 llama_cpp.llama_sampler_init_top_p(params.top_p, MIN_KEEP),
                 llama_cpp.llama_sampler_init_min_p(params.min_p, MIN_KEEP),
                 llama_cpp.llama_sampler_init_xtc(params.xtc_probability, params.xtc_threshold, MIN_KEEP, seed),
                 llama_cpp.llama_sampler_init_temp_ext(params.temperature, params.dynatemp_range,
                                                       params.dynatemp_exponent),
                 llama_cpp.llama_sampler_init_dist(seed)]
    return samplers


def needs_whole_vocabulary(params: SamplingParams) -> bool:
    """Whether a sampler before top-k reads every candidate (top-n-sigma's spread) or mirostat replaces top-k:
    then a constraint must be applied to the whole vocabulary before the chain runs."""
    return not params.greedy and (params.top_n_sigma > 0 or params.mirostat != 0)


def reshapes(params: SamplingParams) -> bool:
    """Whether the chain after top-k depends on which candidates there are beyond their logits' ratios (a
    truncation, or a temperature set by their entropy): a constraint then applies before it, never after."""
    return (params.top_p < 1.0 or params.min_p > 0.0 or params.typical_p < 1.0 or params.dynatemp_range > 0
            or (params.xtc_probability > 0 and params.xtc_threshold <= 0.5))
