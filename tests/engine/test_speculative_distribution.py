"""Speculative decoding leaves the sampled distribution unchanged: a two-sample test on the real model.

Per-seed identity (test_speculative.py) holds only in reproducible mode; this test draws N seeded samples with
speculation on and N with it off, from DIFFERENT seeds, in the batched mode (where a token's logits depend on
its neighbours, so identity cannot be asked for), and compares the two distributions of

- the copy run: how many leading tokens agree with the greedy reply (0..MAX_TOKENS), and
- the top-1 count: how many of the drafted positions (every token after the first) are the model's most likely
  token there (from the reply's log-probabilities; 0..MAX_TOKENS - 1),

each by a chi-square test of homogeneity on bins with expected counts >= 5 (rarer values pooled), at a
family-wise alpha = 0.01 (Bonferroni: 0.005 each). The prompt asks for a copy, so most drafts are accepted
(asserted: the test exercises speculation). A rule biased towards the draft raises both.

Power, with N = 300 per side: a chi-square test on k bins detects, with 80 % power, any shift of total variation
>= `detectable_tv(300, 300, k, 0.005)` between the two binned distributions: 0.16 for 3 bins, 0.18 for 6, 0.19
for 8, 0.21 for 12 (asymptotic; the least favourable direction, mass moved proportionally between two halves of
the distribution; a shift concentrated on a few bins is detected far sooner). The test asserts that its bins
keep the figure <= MAX_DETECTABLE_TV = 0.18 (at most 6 bins). Biased acceptance rules fail it (shown once by
hand, docs/benchmarks.md "Speculative decoding"): keeping a rejected draft half the time (p = 0.002), keeping it
when the model gives it >= 10 % (p = 1e-18).
"""

import math
from collections import Counter

import numpy as np
from scipy import optimize, stats

from app.engine import GenerationRequest, SamplingParams, Speculation

PASSAGE = ("The river bends twice before it reaches the old mill at the edge of town. Every spring the orchard "
           "fills with bees and the farmers count the blossoms. A lighthouse keeper writes down the colour of the "
           "sea each morning.")
COPY = f"Repeat this text exactly:\n\n{PASSAGE}"
N = 300  # samples per side
MAX_TOKENS = 4
ALPHA = 0.01  # family-wise, over the two statistics
MAX_DETECTABLE_TV = 0.18


def detectable_tv(n1: int, n2: int, bins: int, alpha: float, power: float = 0.8) -> float:
    """The smallest total-variation distance between two distributions on `bins` bins that a chi-square test of
    homogeneity (samples n1, n2, level alpha) detects with `power`, whatever its direction. Its noncentrality is
    n1 n2 / (n1 + n2) * sum (p1 - p2)^2 / p, at least 4 TV^2 n1 n2 / (n1 + n2) (Cauchy-Schwarz on the bins where
    p1 > p2 and on the rest), with equality when mass moves proportionally between two halves."""
    df = bins - 1
    critical = stats.chi2.ppf(1 - alpha, df)
    noncentrality = optimize.brentq(lambda lam: stats.ncx2.sf(critical, df, lam) - power, 1e-9, 1e4)
    return math.sqrt(noncentrality * (n1 + n2) / (4 * n1 * n2))


def binned(a: list, b: list) -> list[list[int]]:
    """The 2 x k table of counts of the values of `a` and `b`: the values whose expected count is >= 5 on both
    sides, most common first, the rest pooled into one bin (merged into the last kept one if it is too small)."""
    ca, cb = Counter(a), Counter(b)
    smaller = min(len(a), len(b)) / (len(a) + len(b))
    kept, rest = [], []
    for value, count in (ca + cb).most_common():
        (kept if count * smaller >= 5 else rest).append(value)
    table = [[ca[v] for v in kept], [cb[v] for v in kept]]
    pooled = [sum(ca[v] for v in rest), sum(cb[v] for v in rest)]
    if sum(pooled) * smaller >= 5 or not kept:
        table[0].append(pooled[0])
        table[1].append(pooled[1])
    else:
        table[0][-1] += pooled[0]
        table[1][-1] += pooled[1]
    return table


def samples(engine, seeds, spec):
    sampling = [SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=seed) for seed in seeds]
    handles = [engine.submit(GenerationRequest(messages=[{"role": "user", "content": COPY}], max_tokens=MAX_TOKENS,
                                               ignore_eos=True, logprobs=1, sampling=s, speculative=spec))
               for s in sampling]
    return [h.result(600) for h in handles]


def copy_run(tokens, greedy) -> int:
    return next((i for i, (t, g) in enumerate(zip(tokens, greedy, strict=False)) if t != g), len(tokens))


def top1_count(completion) -> int:
    return sum(entry.token_id == entry.top[0][0] for entry in completion.token_logprobs[1:])


def test_detectable_tv_matches_a_simulation():
    """The power helper's figure, checked against simulated tests at that shift (two halves, mass moved)."""
    rng = np.random.default_rng(0)
    bins, n, alpha = 6, 300, 0.005
    tv = detectable_tv(n, n, bins, alpha)
    p = [1 / bins] * bins
    q = [x * (1 + 2 * tv) if i < bins // 2 else x * (1 - 2 * tv) for i, x in enumerate(p)]
    hits = sum(stats.chi2_contingency([rng.multinomial(n, p), rng.multinomial(n, q)])[1] < alpha
               for _ in range(2000))
    assert 0.75 < hits / 2000 < 0.85
    assert detectable_tv(n, n, 2, alpha) < tv < detectable_tv(n, n, 12, alpha)


def test_sampled_distribution_is_unchanged_by_speculation(make_engine):
    engine = make_engine(n_slots=8, reproducible=False)
    greedy = engine.submit(GenerationRequest(messages=[{"role": "user", "content": COPY}], max_tokens=MAX_TOKENS,
                                             ignore_eos=True, sampling=SamplingParams(temperature=0.0)))
    greedy = greedy.result(600).token_ids
    plain = samples(engine, range(N), None)
    spec = samples(engine, range(10_000, 10_000 + N), Speculation(mode="on"))
    assert sum(r.drafted_tokens for r in plain) == 0
    drafted, accepted = sum(r.drafted_tokens for r in spec), sum(r.accepted_tokens for r in spec)
    assert accepted > N // 2 and drafted > accepted, (drafted, accepted)  # speculation really ran, and rejected
    statistics = {
        "copy run": ([copy_run(r.token_ids, greedy) for r in plain], [copy_run(r.token_ids, greedy) for r in spec]),
        "top-1 count": ([top1_count(r) for r in plain], [top1_count(r) for r in spec]),
    }
    for name, (a, b) in statistics.items():
        table = binned(a, b)
        bins = len(table[0])
        assert bins >= 3, (name, table)  # enough spread to test anything
        assert detectable_tv(N, N, bins, ALPHA / len(statistics)) <= MAX_DETECTABLE_TV, (name, table)
        p_value = stats.chi2_contingency(table)[1]
        assert p_value >= ALPHA / len(statistics), f"{name}: p = {p_value:.2g}, table {table}"
