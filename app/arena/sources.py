"""Human votes and judge votes, counted apart, and how often a judge agrees with the humans.

Agreement is measured where both voted on the same thing: the same unordered pair of variants on the same case
(its id, else its text; votes that record neither are left out). Every (human vote, judge vote) combination
on such a pair and case is one comparison; they agree when they prefer the same variant, or both prefer
neither (a tie and "both bad" both mean "neither is better" here). The sides each was shown on do not matter.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from app.session.votes import Vote


@dataclass(frozen=True)
class SourceSummary:
    human: int  # human votes
    judge: int  # judge votes
    judges: dict[str, int]  # judge name -> votes
    compared: int  # (human, judge) vote combinations on the same pair and case
    agreed: int

    @property
    def agreement(self) -> float | None:
        """Share of the compared combinations that agree; None when nothing was voted on by both."""
        return self.agreed / self.compared if self.compared else None


def preference(vote: Vote) -> str | None:
    """The preferred variant's key, or None when neither was preferred."""
    return vote.winner_key


def summarize_sources(votes: Iterable[Vote]) -> SourceSummary:
    votes = list(votes)
    by_item: dict[tuple, dict[str, list[str | None]]] = defaultdict(lambda: {"human": [], "judge": []})
    for v in votes:
        if v.case:
            by_item[(v.case, v.pair)][v.source].append(preference(v))
    compared = agreed = 0
    for sides in by_item.values():
        for h in sides["human"]:
            for j in sides["judge"]:
                compared += 1
                agreed += h == j
    judges = Counter(v.judge for v in votes if v.source == "judge")
    return SourceSummary(sum(v.source == "human" for v in votes), sum(judges.values()), dict(sorted(judges.items())),
                         compared, agreed)
