"""The arena in the window: blind pairs, the vote, the leaderboard and its plot."""
