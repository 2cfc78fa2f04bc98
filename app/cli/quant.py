"""`python -m app kld` and `python -m app perplexity`: quantization fidelity and perplexity, headless.

`kld REF CAND... (--prompts IN.jsonl | --text FILE)` teacher-forces every model on the same tokens (the text in
llama-perplexity's chunks, or each prompt with the reference's own greedy reply) and prints, per candidate, the
summary `llama-perplexity --kl-divergence` prints; with prompts it also says where each candidate's own greedy
reply first leaves the reference's. `perplexity MODEL FILE` is `llama-perplexity -f FILE`. A file that is
missing, input that cannot be used or a candidate with another vocabulary exits 2 with one sentence.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from app.cli.inputs import InputError, open_input
from app.cli.quant_args import PROMPT_CTX, TEXT_CTX
from app.files import write_atomic
from app.quant import (
    FidelityReport,
    QuantError,
    check_vocabularies,
    compare,
    greedy_divergences,
    greedy_replies,
    perplexity,
    prompt_sequences,
    read_text,
)

EXIT_UNUSABLE = 2


def _fail(command: str, message: str) -> int:
    print(f"chorus {command}: {message}", file=sys.stderr)
    return EXIT_UNUSABLE


def _progress(label: str):
    def report(done: int, total: int) -> None:
        print(f"\r{label}: {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    return report


def _prompt_requests(path: str) -> tuple[list, list[str]]:
    items, _, _ = open_input(path)
    requests, labels = [], []
    for item in items:
        if item.error:
            raise InputError(item.error)
        requests.append(item.request)
        labels.append(item.id)
    if not requests:
        raise InputError(f"{path} holds no prompt")
    return requests, labels


def format_report(report: FidelityReport) -> str:
    """One block per candidate, with llama-perplexity's labels and units."""
    lines = [f"Reference: {report.reference}",
             f"{len(report.sequences)} sequence(s), context {report.n_ctx}, reference kept: {report.path}"
             + (f" (top {report.top_k})" if report.top_k else "")]
    for cand in report.candidates:
        s = cand.summary
        lines += ["", f"Candidate: {cand.path}",
                  f"  Mean PPL(Q)/PPL(base)          : {s.ppl_ratio:10.6f} ± {s.ppl_ratio_unc:10.6f}",
                  f"  Cor(ln(PPL(Q)), ln(PPL(base))) : {s.ln_ppl_correlation:6.2f}%",
                  f"  Mean    KLD: {s.kld_mean:10.6f} ± {s.kld_mean_unc:10.6f}",
                  f"  99.9%   KLD: {s.kld_p999:10.6f}",
                  f"  99.0%   KLD: {s.kld_p99:10.6f}",
                  f"  Median  KLD: {s.kld_median:10.6f}",
                  f"  RMS Δp    : {s.rms_dp:6.3f} ± {s.rms_dp_unc:5.3f} %",
                  f"  Same top p: {s.same_top_p:6.3f} ± {s.same_top_p_unc:5.3f} %",
                  f"  ({s.tokens} tokens scored; PPL(Q) {s.ppl:.4f}, PPL(base) {s.ppl_base:.4f})"]
    return "\n".join(lines)


def kld_command(args) -> int:
    try:
        if args.text:
            report = compare(args.reference, args.candidates, text=read_text(args.text), n_ctx=args.ctx or TEXT_CTX,
                             threads=args.threads, path=args.keep, progress=_progress("kld"))
            greedy = None
        else:
            requests, labels = _prompt_requests(args.prompts)
            check_vocabularies(args.reference, args.candidates)  # before any generation
            n_ctx = args.ctx or PROMPT_CTX
            replies = greedy_replies(args.reference, requests, labels, n_ctx=n_ctx, threads=args.threads)
            report = compare(args.reference, args.candidates, sequences=prompt_sequences(args.reference, replies),
                             n_ctx=n_ctx, threads=args.threads, path=args.keep, progress=_progress("kld"))
            greedy = [greedy_divergences(replies, greedy_replies(c, requests, labels, n_ctx=n_ctx,
                                                                 threads=args.threads))
                      for c in args.candidates]
    except (QuantError, InputError) as exc:
        return _fail("kld", str(exc).rstrip("."))
    print(format_report(report))
    document = report.to_json()
    if greedy is not None:
        for entry, divergences in zip(document["candidates"], greedy, strict=True):
            entry["greedy"] = [{"id": d.label, "first_divergence": d.first_divergence,
                                "reference_tokens": len(d.reference_tokens),
                                "candidate_tokens": len(d.candidate_tokens)} for d in divergences]
            same = sum(d.first_divergence is None for d in divergences)
            print(f"{Path(entry['path']).name}: greedy replies identical to the reference's on {same} of "
                  f"{len(divergences)} prompt(s)")
    if args.json:
        write_atomic(args.json, json.dumps(document, indent=2) + "\n")
    return 0


def perplexity_command(args) -> int:
    try:
        result = perplexity(args.model, read_text(args.file), n_ctx=args.ctx or TEXT_CTX, threads=args.threads,
                            progress=_progress("perplexity"))
    except QuantError as exc:
        return _fail("perplexity", str(exc).rstrip("."))
    print(f"Final estimate: PPL = {result.ppl:.4f} +/- {result.ppl_unc:.5f} ({result.tokens} tokens scored in "
          f"{result.chunks} chunks of {result.ctx})")
    if args.json:
        write_atomic(args.json, json.dumps(result.to_json(), indent=2) + "\n")
    return 0
