"""Chorus: a desktop playground that runs many prompts at once against one continuously batched GGUF model."""

__version__ = "0.1.0"
