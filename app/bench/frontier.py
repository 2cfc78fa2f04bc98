"""The long prompt on its frontier: the long-prompt scenario (scenarios.long_prompt_admission) at the pacing points
of limits.PACING, each figure beside the bound its own gap sets.

When a prompt token and a decode token cost about the same, a step of the streams' decode (time d) plus prompt
work (time p) gives them a gap g = (d + p) / d, and the prompt, which needs its idle prefill time P of such work,
takes P / p steps of d + p: TTFT ÷ idle ≥ g / (g − 1) (docs/investigations/2026-11-26-long-prompt.md). The goal
for each point is TTFT ÷ idle ≤ FRONTIER_SLACK × g / (g − 1) at its measured p99 gap g, and at the default
pacing a gap g ≤ DEFAULT_MAX_GAP.
"""

from __future__ import annotations

from app.bench.workloads import median

FRONTIER_SLACK = 1.15
DEFAULT_MAX_GAP = 3.0


def frontier_point(runs: list[dict], factor: float) -> dict:
    """The medians of a pacing point's runs: its p99 gap ÷ steady (g), TTFT ÷ idle, the bound g/(g−1) and the
    goal (FRONTIER_SLACK × the bound), with the per-run pairs."""
    gaps = [r["prefill_p99_gap_s"] / r["steady_median_gap_s"] for r in runs]
    ttfts = [r["loaded_ttft_s"] / r["idle_ttft_s"] for r in runs]
    g, ttft = median(gaps), median(ttfts)
    bound = g / (g - 1) if g > 1 else float("inf")
    return {"mixed_step_factor": factor, "gap": g, "ttft_vs_idle": ttft, "bound": bound,
            "goal": FRONTIER_SLACK * bound, "vs_bound": ttft / bound, "met": ttft <= FRONTIER_SLACK * bound,
            "pairs": {"gap": gaps, "ttft_vs_idle": ttfts}}


def frontier_lines(points: dict[str, dict], default: str) -> list[str]:
    """One line per pacing point, the default's gap goal beside it."""
    lines = [f"Long prompt on its frontier (goal: TTFT ÷ idle ≤ {FRONTIER_SLACK:g} × g/(g−1) at its p99 gap g; "
             f"at the default, g ≤ {DEFAULT_MAX_GAP:g}):"]
    for name, p in points.items():
        gap_goal = f", g ≤ {DEFAULT_MAX_GAP:g} {'met' if p['gap'] <= DEFAULT_MAX_GAP else 'missed'}" \
            if name == default else ""
        lines.append(f"  {name:<9} (×{p['mixed_step_factor']:g}{', default' if name == default else ''}): gap "
                     f"{p['gap']:.2f}, TTFT ÷ idle {p['ttft_vs_idle']:.2f}, bound {p['bound']:.2f} "
                     f"({p['vs_bound']:.2f}x it; goal ≤ {p['goal']:.2f} {'met' if p['met'] else 'missed'}{gap_goal})")
    return lines
