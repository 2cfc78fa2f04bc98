"""Quantization fidelity: how far a quantized model's distributions are from a reference's, per token and
summarised as `llama-perplexity --kl-divergence` summarises them, and perplexity on a text as
`llama-perplexity` computes it. Qt-free; the window and `python -m app kld | perplexity` build on it.

    report = compare("model-f16.gguf", ["model-q4_k_m.gguf"], text=open("wiki.txt").read(), n_ctx=512)
    report.candidates[0].summary.kld_mean            # KldSummary: mean/median/99 %/99.9 % KLD, same top p, ...
    report.candidates[0].figures[0].kld              # per-token KLD of the first sequence (numpy, for tints)
    report.sequences[0].scored_tokens                # the tokens those figures belong to
    report.path                                      # "memory" or "topk-file"
    perplexity("model.gguf", text, n_ctx=512).ppl

    replies = greedy_replies(ref, requests, labels)  # the reference's greedy replies (free generation)
    report = compare(ref, cands, sequences=prompt_sequences(ref, replies))
    greedy_divergences(replies, greedy_replies(cand, requests, labels))  # first differing reply token
"""

from app.quant.fidelity import TOP_K, compare, perplexity, read_text, seqs_per_context, text_chunks
from app.quant.forward import check_vocabularies
from app.quant.prompts import PromptReply, greedy_divergences, greedy_replies, prompt_sequences
from app.quant.summary import summarize
from app.quant.types import (
    Cancelled,
    CandidateFidelity,
    FidelityReport,
    GreedyDivergence,
    KldSummary,
    PerplexityResult,
    QuantError,
    ScoredSequence,
    TokenFigures,
    VocabularyMismatch,
)

__all__ = [
    "TOP_K",
    "CandidateFidelity",
    "Cancelled",
    "FidelityReport",
    "GreedyDivergence",
    "KldSummary",
    "PerplexityResult",
    "PromptReply",
    "QuantError",
    "ScoredSequence",
    "TokenFigures",
    "VocabularyMismatch",
    "check_vocabularies",
    "compare",
    "greedy_divergences",
    "greedy_replies",
    "perplexity",
    "prompt_sequences",
    "read_text",
    "seqs_per_context",
    "summarize",
    "text_chunks",
]
