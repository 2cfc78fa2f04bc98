"""Sessions as documents: Markdown for people (any viewer, diffable), JSON lines for scripts. A pane with
several versions lists each (what it asked, the settings that differ between them, its reply and figures).
Given the answer clusters (stability_report.Clusters), the Markdown ends with a Stability section and each
clustered pane's JSON line has a "stability" field.

A message's images are shown by path: `images_dir` is the folder, relative to the document, that holds them
(`images.folder_for(document)`, written by the caller); without one they are named by label and file name."""

from __future__ import annotations

import json

from app.session import images, versions
from app.session.compare import differences_in_groups, differing, label, labels, settings_of, setup_of_version
from app.session.stability_report import Clusters, markdown, pane_fields
from app.session.state import PaneSpec, SessionModel
from app.session.tool_cards import turn_text
from app.session.word_errors import shown, word_errors


def _figures(pane: PaneSpec) -> str:
    return _result_figures(pane.result)


def _result_figures(r) -> str:
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


def image_path(ref: images.ImageRef, images_dir: str | None) -> str:
    return f"{images_dir}/{ref.file_name}" if images_dir else ref.file_name


def _image_lines(refs, images_dir: str | None) -> list[str]:
    return [" ".join(f"![{r.label}]({image_path(r, images_dir)})" for r in refs), ""] if refs else []


def to_markdown(session: SessionModel, clusters: Clusters | None = None, images_dir: str | None = None) -> str:
    """Prompts, the settings that differ between panes, every output, and timings (then the clusters)."""
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
            lines += [f"**{who}:**", "", *_image_lines(turn.get("images", ()), images_dir), _quote(turn_text(turn)),
                      ""]
        if pane.result.busy or (pane.result.text and not (pane.turns and pane.turns[-1]["role"] == "assistant")):
            lines += [f"**Assistant ({pane.result.state.value}):**", "", _quote(pane.result.text), ""]
        if pane.result.error:
            lines += [f"*Error:* {pane.result.error}", ""]
        if pane.draft.strip():
            lines += ["**Next message (not sent yet):**", "", *_image_lines(pane.draft_images, images_dir),
                      _quote(pane.draft), ""]
        if pane.reference.strip():
            found = word_errors(pane.reference, pane.result.text)
            lines += [f"**Reference text** (word error rate {shown(found.rate)}: {found.describe()}):", "",
                      _quote(pane.reference), ""]
        if pane.rating or pane.note:
            stars = "★" * pane.rating + "☆" * (5 - pane.rating) if pane.rating else "not rated"
            lines += [f"**Rating:** {stars}" + (f" — {pane.note}" if pane.note else ""), ""]
        lines += [f"*{_figures(pane)}*", ""]
        lines += _versions_markdown(pane)
    section = markdown(clusters)
    return "\n".join(lines + ([section] if section else []))


def _versions_markdown(pane: PaneSpec) -> list[str]:
    """Every version of the pane's reply (when it has more than one): what it answered, with which settings
    (those that differ between its versions), its reply and figures; the shown one marked."""
    if len(pane.versions) < 2:
        return []
    shown = versions.shown(pane)
    diffs = differing([_version_settings(v) for v in pane.versions])
    lines = [f"### Versions ({versions.label(pane)})", ""]
    for index, (version, diff) in enumerate(zip(pane.versions, diffs, strict=True)):
        mark = " — shown" if index == shown else ""
        head = f"**Version {index + 1}**{mark}" + (f" ({version.started_at[:19].replace('T', ' ')})"
                                                   if version.started_at else "")
        lines += [head + (f" — {label(diff)}" if diff else ""), "", f"*Asked:* {version.prompt}", "",
                  _quote(version.result.text), "", f"*{_result_figures(version.result)}*", ""]
    return lines


def _version_settings(version) -> dict:
    """A version's settings as `compare.settings_of` labels them (a default pane's where it lacks one)."""
    return labels(setup_of_version(version, PaneSpec()))


def _number(index: int | None) -> int | None:
    return None if index is None else index + 1


def _version_records(pane: PaneSpec) -> list[dict]:
    return [{"version": i + 1, "started_at": v.started_at, "messages": v.messages,
             "settings": _version_settings(v), "state": v.result.state.value, "text": v.result.text,
             "finish_reason": v.result.finish_reason, "error": v.result.error,
             "generated_tokens": v.result.generated_tokens, "ttft_s": v.result.ttft_s,
             "decode_tps": v.result.decode_tps} for i, v in enumerate(pane.versions)]


def _turns(pane: PaneSpec, images_dir: str | None) -> list[dict]:
    """The turns as JSON: images as {name, sha256, path}."""
    return [{**t, "images": [{"name": r.name, "sha256": r.sha256, "path": image_path(r, images_dir)}
                             for r in t["images"]]} if t.get("images") else t for t in pane.turns]


def result_lines(session: SessionModel, clusters: Clusters | None = None, images_dir: str | None = None):
    """One JSON object per pane: its settings, conversation and last result (its versions, its answer cluster)."""
    found = pane_fields(clusters)
    for pane in session.panes:
        r = pane.result
        extra = {"stability": found[pane.id]} if pane.id in found else {}
        yield json.dumps({
            "pane": pane.number, "id": pane.id, "title": pane.title, "settings": settings_of(pane),
            "system": pane.system, "turns": _turns(pane, images_dir), "state": r.state.value, "text": r.text,
            "finish_reason": r.finish_reason, "error": r.error, "prompt_tokens": r.prompt_tokens,
            "cached_tokens": r.cached_tokens, "generated_tokens": r.generated_tokens,
            "queue_wait_s": r.queue_wait_s, "ttft_s": r.ttft_s, "decode_tps": r.decode_tps,
            "reasoning": r.reasoning, "reasoning_tokens": r.reasoning_tokens, "answer_ttft_s": r.answer_ttft_s,
            "group": pane.group, "rating": pane.rating, "note": pane.note,
            "versions": _version_records(pane), "shown_version": _number(versions.shown(pane)), **extra,
        }, ensure_ascii=False)


def to_jsonl(session: SessionModel, clusters: Clusters | None = None, images_dir: str | None = None) -> str:
    return "".join(line + "\n" for line in result_lines(session, clusters, images_dir))
