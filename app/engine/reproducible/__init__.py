"""Reproducible mode: steps whose tokens do not depend on what else runs, the packing of prompt pieces, and which
models have row-invariant kernels."""
