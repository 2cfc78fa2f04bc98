"""Speculative decoding's drafts and bookkeeping: n-gram lookup in a request's own tokens, and auto mode's rule.

No llama.cpp here. A drafting sequence puts its pending token and up to `max_draft` guessed tokens into one
step, each with an output; the step samples them in order with the sequence's own chain and keeps every guess
the chain itself picked, up to and including the first token that differs (step.py, `_verify`). Each position
is sampled from the same logits, with the same RNG draws, as without speculation, so the tokens are the same
(exactly so in reproducible mode, where logits do not depend on how tokens are batched): llama.cpp's
`common_sampler_sample_and_accept_n` rule, lossless for greedy and sampled requests alike.

Drafts ("ngram", prompt-lookup decoding): find the most recent earlier place where the last n tokens of the
prompt + output occurred (n = NGRAM_MAX down to NGRAM_MIN, longest match first) and guess that what followed
it follows again (a match near the end continues with its own period). The index is kept incrementally:
O(NGRAM_MAX) per token.
"""

from __future__ import annotations

from app.engine.request_options import Speculation

NGRAM_MAX = 4  # longest suffix looked up
NGRAM_MIN = 2  # shortest: one token matches too often to guess well
# Auto mode: after AUTO_PROBE drafted tokens, a request whose drafts were accepted less than AUTO_MIN_RATE of the
# time stops drafting (a verify row costs about what an accepted token saves only when most are accepted).
AUTO_PROBE = 32
AUTO_MIN_RATE = 0.3
# Auto mode drafts only while at most this many sequences decode in a step: beside many others a step is
# compute-bound, and a drafted row costs nearly a whole token's time (docs/benchmarks.md, "Speculative decoding").
AUTO_MAX_BATCH = 2


class NgramDrafter:
    """The history of one request (prompt, then output) and, per n, where each n-gram was last followed."""

    def __init__(self, prompt):
        self.tokens: list[int] = []
        self._next: dict[int, dict[tuple[int, ...], int]] = {n: {} for n in range(NGRAM_MIN, NGRAM_MAX + 1)}
        self.extend(int(t) for t in prompt)

    def extend(self, tokens) -> None:
        history = self.tokens
        for token in tokens:
            end = len(history)  # the index the new token takes: every n-gram ending just before it is followed
            for n, index in self._next.items():
                if end >= n:
                    index[tuple(history[end - n:end])] = end
            history.append(token)

    def draft(self, limit: int) -> list[int]:
        """Up to `limit` tokens guessed to follow the history (empty when no suffix occurred before)."""
        history = self.tokens
        for n in range(NGRAM_MAX, NGRAM_MIN - 1, -1):
            if len(history) <= n:
                continue
            start = self._next[n].get(tuple(history[-n:]))
            if start is not None:  # a match near the end repeats with its period: continue the draft itself
                draft = history[start:start + limit]
                while len(draft) < limit:
                    draft.append(draft[len(draft) - (len(history) - start)])
                return draft
        return []


class SpecState:
    """One sequence's speculation: its drafter, its counts, and whether auto mode has turned it off."""

    def __init__(self, settings: Speculation, prompt):
        self.settings = settings
        self.drafter = NgramDrafter(prompt)
        self.n_prompt = len(self.drafter.tokens)
        self.drafted = 0
        self.accepted = 0
        self.active = True
        self.note = ""

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
        return self.drafter.draft(min(limit, self.settings.max_draft))

    def record(self, drafted: int, accepted: int) -> None:
        """Count drafted and accepted tokens as they happen (a Completion made meanwhile includes them)."""
        self.drafted += drafted
        self.accepted += accepted

    def review(self) -> None:
        """After a verified run: auto mode turns itself off (with a note) once its drafts have not paid."""
        if (self.settings.mode == "auto" and self.active and self.drafted >= AUTO_PROBE
                and self.accepted < AUTO_MIN_RATE * self.drafted):
            self.active = False
            self.note = (f"speculative decoding turned itself off: {self.accepted} of {self.drafted} drafted "
                         "tokens accepted")
