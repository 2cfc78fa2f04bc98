"""Arena: blind pairwise votes between variants, a Bradley–Terry leaderboard with bootstrap intervals, the
choice of the next pair, and an LLM judge's votes. Qt-free; works on plain lists of `Vote` (docs/arena.md).

    vote = Vote(a=variant_key(settings_a), b=variant_key(settings_b), winner="a", case_id="q1")
    standings = leaderboard(votes)              # best first: score, ci_low, ci_high, rank..rank_worst, votes...
    b = board(votes); b.cannot_separate(x, y); b.win_rates(); b.sources.agreement
    m = next_pair(variant_keys, votes, cases=case_ids, seed=0)   # m.a shown left, m.b right, on m.case
    request = judge_request(JudgeTask(a, b, output_a, output_b, case_text=prompt))
    vote = parse_judge_reply(task, completion.text, judge="SmolLM2")
"""

from app.arena.board import Board, PairStat, Standing, board, display_names, leaderboard
from app.arena.files import (
    from_csv,
    from_jsonl,
    merge,
    read_votes,
    to_csv,
    to_jsonl,
    votes_from_session,
    write_votes,
)
from app.arena.fit import ANCHOR, SCALE
from app.arena.judge import (
    VERDICT_SCHEMA,
    JudgeReplyError,
    JudgeTask,
    judge_request,
    parse_judge_reply,
    parse_verdict,
)
from app.arena.pairs import Matchup, PairPriority, next_pair, priorities
from app.arena.sources import SourceSummary
from app.session.votes import WINNERS, Vote, VoteError, canonical_json, variant_key

__all__ = ["ANCHOR", "SCALE", "VERDICT_SCHEMA", "WINNERS", "Board", "JudgeReplyError", "JudgeTask", "Matchup",
           "PairPriority", "PairStat", "SourceSummary", "Standing", "Vote", "VoteError", "board", "canonical_json",
           "display_names", "from_csv", "from_jsonl", "judge_request", "leaderboard", "merge", "next_pair",
           "parse_judge_reply", "parse_verdict", "priorities", "read_votes", "to_csv", "to_jsonl", "variant_key",
           "votes_from_session", "write_votes"]
