"""Prompts instead of a text: the reference's own greedy reply to each prompt becomes the sequence every model
is teacher-forced on, and each candidate's greedy reply is compared with the reference's (free generation).

Replies come from the engine (temperature 0, several prompts at once), prompts are tokenized as the engine
tokenizes them (its chat template, special tokens parsed, BOS when the vocabulary adds one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.engine import Engine, EngineConfig, GenerationRequest, SamplingParams
from app.engine.native import LlamaModel
from app.quant.forward import check_file
from app.quant.types import GreedyDivergence, QuantError, ScoredSequence
from app.session.diff import first_divergence

GREEDY_SLOTS = 8  # prompts generated at once


@dataclass(frozen=True)
class PromptReply:
    """One prompt's rendered text (what the model reads before its reply) and a model's greedy reply tokens."""

    label: str
    prompt_text: str
    reply_tokens: tuple[int, ...]
    error: str | None = None  # why the model could not answer this prompt (the rest still run)


def greedy_replies(model_path: str | Path, requests: Sequence[GenerationRequest], labels: Sequence[str], *,
                   n_ctx: int = 2048, threads: int | None = None) -> list[PromptReply]:
    """Each request answered greedily (temperature 0; the request's other settings kept) by one model."""
    check_file(model_path)
    config = EngineConfig(model_path=str(model_path), n_slots=max(1, min(GREEDY_SLOTS, len(requests))),
                          n_ctx_per_slot=n_ctx, **({"n_threads": threads} if threads else {}))
    greedy = [dataclasses.replace(r, sampling=SamplingParams(temperature=0.0)) for r in requests]
    with Engine(config) as engine:
        texts = [engine.render_prompt(r) for r in greedy]
        handles = [engine.submit(r) for r in greedy]
        completions = [h.result() for h in handles]
    return [PromptReply(label, text, tuple(c.token_ids), c.error if c.finish_reason == "error" else None)
            for label, text, c in zip(labels, texts, completions, strict=True)]


def prompt_sequences(model_path: str | Path, replies: Sequence[PromptReply]) -> list[ScoredSequence]:
    """Prompt + the reference's reply per prompt, scored over the reply (the prompt's last position predicts the
    reply's first token). Prompts with an error or an empty reply are left out; QuantError when none is left."""
    model = LlamaModel(check_file(model_path))
    try:
        out = []
        for reply in replies:
            if reply.error or not reply.reply_tokens:
                continue
            prompt = model.tokenize(reply.prompt_text, add_special=True)
            tokens = np.array([*prompt, *reply.reply_tokens], np.int32)
            out.append(ScoredSequence(tokens, len(prompt) - 1, reply.label))
    finally:
        model.close()
    if not out:
        raise QuantError("the reference gave no reply to any prompt, so there is nothing to score.")
    return out


def greedy_divergences(reference: Sequence[PromptReply], candidate: Sequence[PromptReply]) -> list[GreedyDivergence]:
    """Where each candidate reply first leaves the reference's (token index in the reply), prompt by prompt."""
    return [GreedyDivergence(r.label, r.reply_tokens, c.reply_tokens,
                             first_divergence(r.reply_tokens, c.reply_tokens))
            for r, c in zip(reference, candidate, strict=True)]
