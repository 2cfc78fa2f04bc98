"""Sampling: per-sequence sampler chains in llama-server's order, grammar and schema constraints, token masks
computed beside a decode, and log-probabilities. The settings themselves are app/engine/sampling_params.py."""
