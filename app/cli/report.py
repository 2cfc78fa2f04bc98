"""`run --report PATH`: the comparison as a document (.md, or .html for a browser).

A table with one row per request (the settings where it differs from the others, finish, tokens, TTFT, tok/s,
cached prompt tokens); the requests that differ only by seed, their answers clustered by meaning
(stability_report.py); then every output with its timings. For a session input the panes' own Markdown follows
(app.session.export), grouped as in the window, each pane's versions with them, and, when its evaluation kept
earlier runs, the last two compared (flips, pass-rate changes, McNemar).
"""

from __future__ import annotations

import html
from pathlib import Path

from app.evaluate import run_history
from app.session import compare, export, stability_report
from app.session.stability_report import Clusters
from app.session.store import write_atomic

COLUMNS = ("id", "differs", "finish", "prompt (cached)", "tokens", "TTFT s", "tok/s")


def _row(item, record: dict, diff: dict) -> list[str]:
    def fmt(value, pattern: str) -> str:
        return "–" if value is None else pattern.format(value)

    return [item.id, compare.label(diff) or "–", record["finish_reason"],
            f"{record['prompt_tokens']} ({record['cached_tokens']})", str(record["generated_tokens"]),
            fmt(record["ttft_s"], "{:.2f}"), fmt(record["decode_tps"], "{:.1f}")]


def _summary(records: list, seconds: float) -> str:
    errors = sum(r["finish_reason"] == "error" for _, r in records)
    tokens = sum(r["generated_tokens"] for _, r in records)
    return (f"{len(records)} requests ({errors} ended in error), {tokens} tokens generated in {seconds:.1f} s "
            f"({tokens / seconds:.1f} tok/s overall)" if seconds > 0 else f"{len(records)} requests")


def _timings(record: dict) -> str:
    parts = [f"line {record['line']}", f"finish {record['finish_reason']}",
             f"{record['prompt_tokens']} prompt tokens ({record['cached_tokens']} cached)",
             f"{record['generated_tokens']} generated"]
    for key, label, pattern in (("queue_wait_s", "queue", "{:.2f} s"), ("ttft_s", "TTFT", "{:.2f} s"),
                                ("decode_tps", "", "{:.1f} tok/s")):
        if record[key] is not None:
            parts.append(f"{label} {pattern.format(record[key])}".strip())
    return " · ".join(parts)


def to_markdown(records: list, session, seconds: float, clusters: Clusters | None = None) -> str:
    diffs = compare.differing([item.settings for item, _ in records])
    lines = ["# Chorus run report", "", _summary(records, seconds), "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for (item, record), diff in zip(records, diffs, strict=True):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in _row(item, record, diff)) + " |")
    lines += ["", "## Outputs", ""]
    for (item, record), diff in zip(records, diffs, strict=True):
        lines += [f"### {item.id}" + (f" — {compare.label(diff)}" if diff else ""), ""]
        if record["error"]:
            lines += [f"*Error:* {record['error']}", ""]
        lines += ["```text", record["text"].replace("```", "ʼʼʼ"), "```", "", f"*{_timings(record)}*", ""]
    section = stability_report.markdown(clusters)
    lines += [section, ""] if section else []
    if session is not None:
        lines += ["## The session after the run", "", export.to_markdown(session)]
        lines += _runs_compared(session)
    return "\n".join(lines)


def _runs_compared(session) -> list[str]:
    """The session's evaluation, when it kept earlier runs: its current run against the one before."""
    evaluation = getattr(session, "evaluation", None)
    if evaluation is None or not evaluation.runs:
        return []
    last = len(evaluation.runs)
    return [f"## Evaluation runs compared: {run_history.run_name(evaluation, last - 1)} → "
            f"{run_history.run_name(evaluation, last)}", "",
            *run_history.summary_lines(run_history.compare_runs(evaluation, last - 1, last)), ""]


def to_html(records: list, session, seconds: float, clusters: Clusters | None = None) -> str:
    diffs = compare.differing([item.settings for item, _ in records])
    esc = html.escape
    rows = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in _row(item, record, diff)) + "</tr>"
                   for (item, record), diff in zip(records, diffs, strict=True))
    outputs = "".join(
        f"<h3>{esc(item.id)}{' — ' + esc(compare.label(diff)) if diff else ''}</h3>"
        + (f"<p class='error'>Error: {esc(record['error'])}</p>" if record["error"] else "")
        + f"<pre>{esc(record['text'])}</pre><p class='timings'>{esc(_timings(record))}</p>"
        for (item, record), diff in zip(records, diffs, strict=True))
    runs = "\n".join(_runs_compared(session)) if session is not None else ""
    session_part = (f"<h2>The session after the run</h2><pre>{esc(export.to_markdown(session))}</pre>"
                    + (f"<pre>{esc(runs)}</pre>" if runs else "") if session is not None else "")
    return ("<!doctype html><meta charset='utf-8'><title>Chorus run report</title>"
            "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 8px}pre{white-space:pre-wrap;background:#f6f6f6;padding:8px}"
            ".error{color:#b91c1c}.timings{color:#6b7280}</style>"
            f"<h1>Chorus run report</h1><p>{esc(_summary(records, seconds))}</p>"
            "<table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in COLUMNS) + f"</tr>{rows}</table>"
            f"{stability_report.to_html(clusters)}<h2>Outputs</h2>{outputs}{session_part}")


def write_report(path: str | Path, records: list, session, seconds: float, clusters: Clusters | None = None) -> None:
    """Markdown unless the name ends in .html/.htm; written crash-safely like a session. `clusters`: the seed
    groups' answers clustered by meaning (report_stability.py), shown before the outputs."""
    path = Path(path)
    render = to_html if path.suffix.lower() in (".html", ".htm") else to_markdown
    write_atomic(path, render(records, session, seconds, clusters))
