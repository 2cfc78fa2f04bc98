"""Sessions as documents: Markdown for people (any viewer, diffable), JSON lines for scripts."""

from __future__ import annotations

import json

from app.session.compare import differences_in_groups, label, settings_of
from app.session.state import PaneSpec, SessionModel
from app.session.tool_cards import turn_text


def _figures(pane: PaneSpec) -> str:
    r = pane.result
    parts = [r.state.value]
    if r.finish_reason:
        parts.append(f"finish {r.finish_reason}")
    parts.append(f"{r.prompt_tokens} prompt tokens" + (f" ({r.cached_tokens} cached)" if r.cached_tokens else ""))
    parts.append(f"{r.generated_tokens} generated")
    if r.queue_wait_s is not None:
        parts.append(f"queue {r.queue_wait_s:.2f} s")
    if r.ttft_s is not None:
        parts.append(f"TTFT {r.ttft_s:.2f} s")
    if r.decode_tps:
        parts.append(f"{r.decode_tps:.1f} tok/s")
    return " · ".join(parts)


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines() or [""])


def to_markdown(session: SessionModel) -> str:
    """Prompts, the settings that differ between panes, every output, and timings."""
    panes = session.panes
    lines = ["# Chorus session", ""]
    if not panes:
        return "\n".join(lines + ["(no panes)", ""])
    diffs = differences_in_groups(panes)
    settings = [settings_of(p) for p in panes]
    shared = {k: v for k, v in settings[0].items() if all(other[k] == v for other in settings)}
    lines += ["Settings shared by every pane: " + (" · ".join(f"{k} {v}" for k, v in shared.items()) or "none"), ""]
    for pane, diff in zip(panes, diffs, strict=True):
        title = pane.label
        group = f" (group {pane.group[:6]})" if pane.group else ""
        lines += [f"## {title}{group}" + (f" — {label(diff)}" if diff else ""), ""]
        if pane.system.strip():
            lines += ["**System:**", "", _quote(pane.system), ""]
        for turn in pane.turns:
            who = {"user": "User", "tool": "Tool result"}.get(turn["role"], "Assistant")
            lines += [f"**{who}:**", "", _quote(turn_text(turn)), ""]
        if pane.result.busy or (pane.result.text and not (pane.turns and pane.turns[-1]["role"] == "assistant")):
            lines += [f"**Assistant ({pane.result.state.value}):**", "", _quote(pane.result.text), ""]
        if pane.result.error:
            lines += [f"*Error:* {pane.result.error}", ""]
        if pane.draft.strip():
            lines += ["**Next message (not sent yet):**", "", _quote(pane.draft), ""]
        if pane.rating or pane.note:
            stars = "★" * pane.rating + "☆" * (5 - pane.rating) if pane.rating else "not rated"
            lines += [f"**Rating:** {stars}" + (f" — {pane.note}" if pane.note else ""), ""]
        lines += [f"*{_figures(pane)}*", ""]
    return "\n".join(lines)


def result_lines(session: SessionModel):
    """One JSON object per pane: its settings, conversation and last result."""
    for pane in session.panes:
        r = pane.result
        yield json.dumps({
            "pane": pane.number, "id": pane.id, "title": pane.title, "settings": settings_of(pane),
            "system": pane.system, "turns": pane.turns, "state": r.state.value, "text": r.text,
            "finish_reason": r.finish_reason, "error": r.error, "prompt_tokens": r.prompt_tokens,
            "cached_tokens": r.cached_tokens, "generated_tokens": r.generated_tokens,
            "queue_wait_s": r.queue_wait_s, "ttft_s": r.ttft_s, "decode_tps": r.decode_tps,
            "reasoning": r.reasoning, "reasoning_tokens": r.reasoning_tokens, "answer_ttft_s": r.answer_ttft_s,
            "group": pane.group, "rating": pane.rating, "note": pane.note,
        }, ensure_ascii=False)


def to_jsonl(session: SessionModel) -> str:
    return "".join(line + "\n" for line in result_lines(session))
