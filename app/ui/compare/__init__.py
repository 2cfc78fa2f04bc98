"""The compare workbench: variants and sweeps, the diff view, the comparison table, the stability view."""
