"""Speculative decoding's drafts and bookkeeping: n-gram lookup in a request's own tokens, and auto mode's rule.

No llama.cpp here. A drafting sequence puts its pending token and up to `max_draft` guessed tokens into one
step, each with an output; the step samples them in order with the sequence's own chain and keeps every guess
the chain itself picked, up to and including the first token that differs (step.py, `verify`). Each position
is sampled from the same logits, with the same RNG draws, as without speculation, so the tokens are the same
(exactly so in reproducible mode, where logits do not depend on how tokens are batched): llama.cpp's
`common_sampler_sample_and_accept_n` rule, lossless for greedy and sampled requests alike.

Drafts ("ngram", prompt-lookup decoding): find the most recent earlier place where the last n tokens of the
prompt + output occurred (n = NGRAM_MAX down to NGRAM_MIN, longest match first) and guess that what followed
it follows again (a match near the end continues with its own period). The index is kept incrementally:
O(NGRAM_MAX) per token. With the model's DraftVocab, tokens match by key (case and surrounding space ignored)
and a draft stops after its first line end.

Length: like llama.cpp's ngram-map (a draft as long as the last one accepted), the length adapts to the
acceptance: it doubles after a run accepted whole and falls to one more than the accepted part after a
rejection (SpecState.review); a draft from the shortest match (NGRAM_MIN tokens) is cut to WEAK_MATCH_DRAFT. A
drafted row costs about half a one-token step on a CPU (docs/benchmarks.md), so long drafts pay only where they
are accepted, and a short one is cheap where they are not.
"""

from __future__ import annotations

import numpy as np

from app.engine.request_options import Speculation

NGRAM_MAX = 4  # longest suffix looked up
NGRAM_MIN = 2  # shortest: one token matches too often to guess well
# Auto mode: after AUTO_PROBE drafted tokens, a request whose drafts were accepted less than AUTO_MIN_RATE of the
# time stops drafting (a verify row costs about what an accepted token saves only when most are accepted).
AUTO_PROBE = 8
AUTO_PROBE_RUNS = 2  # ... verified in at least this many runs (one unlucky first draft is not enough)
AUTO_MIN_RATE = 0.3
# Auto mode drafts only while at most this many sequences decode in a step: beside many others a step is
# compute-bound, and a drafted row costs nearly a whole token's time (docs/benchmarks.md, "Speculative decoding").
AUTO_MAX_BATCH = 2
# The draft length adapts to the acceptance (SpecState.review): it starts at DRAFT_START, never below DRAFT_MIN.
DRAFT_START = 8
DRAFT_MIN = 2
# A draft found by the shortest suffix (NGRAM_MIN tokens) is cut to this many tokens: two tokens are often a phrase
# that the instructions repeat too ("account number"), and the most recent place is then the wrong one (bench
# --spec's extraction: 23- and 16-token drafts rejected at their first token). A longer match drafts in full.
WEAK_MATCH_DRAFT = 4


class DraftVocab:
    """What drafts need of a model's vocabulary: each token's lookup key (tokens that spell the same word but for
    case and surrounding space share one: "Account number:" in a record is found after "Account Number:" in the
    reply) and which tokens end a line."""

    def __init__(self, pieces):
        first: dict[str, int] = {}
        self.keys = np.array([first.setdefault(p.strip().lower() or p, i) for i, p in enumerate(pieces)], np.int64)
        self.line_ends = np.array(["\n" in p for p in pieces], bool)


class NgramDrafter:
    """The history of one request (prompt, then output) and, per n, where each n-gram was last followed. With
    a `vocab`, n-grams are matched by their tokens' keys and a draft ends with its first line end (the next line
    is where replies renumber, reorder or reformat what they copy); a draft is always the history's own tokens."""

    def __init__(self, prompt, vocab: DraftVocab | None = None):
        self.tokens: list[int] = []
        self._keys: list[int] = []
        self._vocab = vocab
        self._next: dict[int, dict[tuple[int, ...], int]] = {n: {} for n in range(NGRAM_MIN, NGRAM_MAX + 1)}
        self.extend(int(t) for t in prompt)

    def extend(self, tokens) -> None:
        history, keys = self.tokens, self._keys
        key_of = None if self._vocab is None else self._vocab.keys
        for token in tokens:
            end = len(history)  # the index the new token takes: every n-gram ending just before it is followed
            for n, index in self._next.items():
                if end >= n:
                    index[tuple(keys[end - n:end])] = end
            history.append(token)
            keys.append(token if key_of is None else int(key_of[token]))

    def draft(self, limit: int) -> list[int]:
        """Up to `limit` tokens guessed to follow the history (empty when no suffix occurred before)."""
        return self.match(limit)[0]

    def match(self, limit: int) -> tuple[list[int], int]:
        """`draft`, and the length of the suffix that matched (0: none)."""
        history = self.tokens
        for n in range(NGRAM_MAX, NGRAM_MIN - 1, -1):
            if len(history) <= n:
                continue
            start = self._next[n].get(tuple(self._keys[-n:]))
            if start is not None:  # a match near the end repeats with its period: continue the draft itself
                draft = history[start:start + limit]
                while len(draft) < limit:
                    draft.append(draft[len(draft) - (len(history) - start)])
                return self._to_line_end(draft), n
        return [], 0

    def _to_line_end(self, draft: list[int]) -> list[int]:
        if self._vocab is not None:
            ends = self._vocab.line_ends
            for i, token in enumerate(draft):
                if ends[token]:
                    return draft[:i + 1]
        return draft


class SpecState:
    """One sequence's speculation: its drafter, its counts, and whether auto mode has turned it off."""

    def __init__(self, settings: Speculation, prompt, vocab: DraftVocab | None = None):
        self.settings = settings
        self.drafter = NgramDrafter(prompt, vocab)
        self.n_prompt = len(self.drafter.tokens)
        self.drafted = 0
        self.accepted = 0
        self.active = True
        self.note = ""
        self.length = min(settings.max_draft, DRAFT_START)  # the next draft's length (adapted in `review`)
        self._reviewed = (0, 0)  # drafted and accepted at the last review
        self.runs = 0  # verified runs with at least one drafted token

    def sync(self, generated: list[int]) -> None:
        """Bring the history up to the sequence's output (every generated token, the pending one included)."""
        seen = len(self.drafter.tokens) - self.n_prompt
        if len(generated) > seen:
            self.drafter.extend(generated[seen:])

    def draft(self, generated: list[int], limit: int, batched: int) -> list[int]:
        """Tokens to verify after the pending token (at most `limit`), given `batched` sequences decoding."""
        if not self.active or limit <= 0:
            return []
        if self.settings.mode == "auto" and batched > AUTO_MAX_BATCH:
            return []
        self.sync(generated)
        draft, n = self.drafter.match(min(limit, self.length))
        return draft[:WEAK_MATCH_DRAFT] if n <= NGRAM_MIN else draft

    def record(self, drafted: int, accepted: int) -> None:
        """Count drafted and accepted tokens as they happen (a Completion made meanwhile includes them)."""
        self.drafted += drafted
        self.accepted += accepted

    def review(self) -> None:
        """After a verified run: the draft length adapts to it (twice as long after a run accepted whole, one
        more than the accepted part after a rejection, within [DRAFT_MIN, max_draft]), and auto mode turns
        itself off (with a note) once its drafts have not paid."""
        drafted, accepted = self.drafted - self._reviewed[0], self.accepted - self._reviewed[1]
        self._reviewed = (self.drafted, self.accepted)
        if drafted:
            self.runs += 1
            grown = self.length * 2 if accepted == drafted else accepted + 1
            self.length = max(DRAFT_MIN, min(self.settings.max_draft, grown))
        if (self.settings.mode == "auto" and self.active and self.drafted >= AUTO_PROBE
                and self.runs >= AUTO_PROBE_RUNS and self.accepted < AUTO_MIN_RATE * self.drafted):
            self.active = False
            self.note = (f"speculative decoding turned itself off: {self.accepted} of {self.drafted} drafted "
                         "tokens accepted")
