"""The arguments of `kld` and `perplexity`, apart from their commands so the parser never imports llama.cpp."""

from __future__ import annotations

TEXT_CTX = 512  # llama-perplexity's default -c
PROMPT_CTX = 2048  # a prompt and its reply must fit


def add_parsers(sub) -> None:
    """The two subcommands' arguments (app/__main__.py adds them beside the others)."""
    kld = sub.add_parser("kld", help="quantization fidelity: KL divergence, top-1 agreement and Δp of candidates "
                         "against a reference model, as llama-perplexity --kl-divergence reports them")
    kld.add_argument("reference", help="the reference GGUF (e.g. the F16 or Q8_0 file)")
    kld.add_argument("candidates", nargs="+", help="one or more GGUFs with the same vocabulary")
    source = kld.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompts", metavar="IN.jsonl", help="prompts as `run` reads them: each model is "
                        "teacher-forced on the reference's own greedy reply")
    source.add_argument("--text", metavar="FILE", help="a text file, in llama-perplexity's chunks (second half of "
                        "each scored)")
    kld.add_argument("--ctx", type=int, help=f"tokens per chunk (default {TEXT_CTX} with --text, {PROMPT_CTX} "
                     "with --prompts)")
    kld.add_argument("--json", metavar="OUT.json", help="write the figures as JSON")
    kld.add_argument("--threads", type=int, help="llama.cpp threads (default: all cores, <= 8)")
    kld.add_argument("--keep", choices=("auto", "memory", "topk-file"), default="auto",
                     help="where the reference's distributions are kept: in memory with every model loaded "
                     "together, or as top-k in a temporary file (default: memory when everything fits)")
    ppl = sub.add_parser("perplexity", help="perplexity of a model on a text file, as llama-perplexity computes it")
    ppl.add_argument("model", help="the GGUF")
    ppl.add_argument("file", help="a text file")
    ppl.add_argument("--ctx", type=int, help=f"tokens per chunk (default {TEXT_CTX})")
    ppl.add_argument("--json", metavar="OUT.json", help="write {ppl, tokens, ctx, ...} as JSON")
    ppl.add_argument("--threads", type=int, help="llama.cpp threads (default: all cores, <= 8)")
