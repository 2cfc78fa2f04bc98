"""Prefix sharing: the prompt cache (free slots' KV kept for the next request), fan-out copies between slots, and
identical requests decoded once."""
