"""Speculative decoding: n-gram drafts and auto mode's rule, draft models, and how a drafted run is verified in a
step."""
