"""A pane's versions: every run of a pane keeps its reply — the text and figures (its PaneResult, logprobs
included), the settings it ran with and the prompt as sent — so a regenerate never drops the reply it replaces.

`PaneSpec.versions` is the list, oldest first (a VersionList, version_list.py: replaced, never mutated, so the
pane's events say so; finished versions nobody holds are kept packed, as their file encoding); a run adds its
version when it is submitted, and the runner streams into that version's result (`pane.result` is the same
object while it runs). `PaneSpec.current` is the version the conversation ends with: the one it replaces stays
current until the new one ends, so a crash mid-run brings the old reply back (`recover`) with the cut-short one
kept beside it. `show` makes another version the pane's (its conversation, its result); `branch` makes a new
pane that replays a version's conversation with its settings. Qt-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from app.session import images
from app.session.result import PaneResult, RunState
from app.session.version_list import as_version_list

# The PaneSpec fields a version keeps as "the settings it ran with" (what a branch from it copies back).
SETTINGS = ("system", "sampling", "max_tokens", "stop", "backend", "show_probabilities", "output_format",
            "thinking", "thinking_budget", "speculative", "tools", "tool_choice", "parallel_tool_calls",
            "speculative_kind", "draft_model", "tool_call_first", "video_fps", "video_max_frames")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass(eq=False)
class PaneVersion:
    """One run of a pane: its result, the messages it sent (system first, as the request had them), the
    pane's settings then (`SETTINGS`: name -> value) and when it was submitted. Compared by identity."""

    result: PaneResult = field(default_factory=PaneResult)
    messages: list[dict] = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    started_at: str = ""

    @property
    def turns(self) -> list[dict]:
        """The conversation this version answers, with its reply (the pane's `turns` when it is shown)."""
        turns = [_as_turn(m) for m in self.messages if m.get("role") in ("user", "assistant", "tool")]
        if self.result.text:
            turns.append({"role": "assistant", "content": self.result.text})
        return turns

    @property
    def image_refs(self) -> list[images.ImageRef]:
        """The images its conversation names, as `turns` holds them, without building the turns (every autosave
        asks every version of every pane)."""
        return [ref for m in self.messages if m.get("images") and m.get("role") in ("user", "assistant", "tool")
                for ref in _as_turn(m)["images"]]

    @property
    def system(self) -> str:
        return next((m["content"] for m in self.messages if m.get("role") == "system"), "")

    @property
    def prompt(self) -> str:
        """The last user message it answered (what a list of versions shows)."""
        return next((m["content"] for m in reversed(self.messages) if m.get("role") == "user"), "")

    @property
    def usable(self) -> bool:
        """It ended with a reply worth keeping as the pane's (not running, not cut short, not an error)."""
        return not self.result.busy and self.result.state not in (RunState.INTERRUPTED, RunState.ERROR, RunState.IDLE)


def settings_of(pane) -> dict:
    return {name: getattr(pane, name) for name in SETTINGS if hasattr(pane, name)}


def keep_unversioned(pane) -> None:
    """Before a run changes the conversation: a reply the pane holds that is no version yet (from a file written
    before versions existed) becomes one, current, with the conversation it answered."""
    if pane.current is not None or not pane.result.text or pane.result.busy or shown(pane) is not None:
        return
    turns = [dict(t) for t in pane.turns]
    if turns and turns[-1]["role"] == "assistant":
        turns.pop()
    system = [{"role": "system", "content": pane.system.strip()}] if pane.system.strip() else []
    pane.versions = as_version_list(pane.versions).plus(PaneVersion(pane.result, system + turns, settings_of(pane)))
    pane.current = len(pane.versions) - 1


def _kept(message: dict) -> dict:
    """A sent message as a version keeps it: image parts (data URLs) become {sha256, name} beside the text, so
    the session file holds each image once, in its images folder (app/session/images.py)."""
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    refs = [images.add_data_url(p[p["type"]]["url"], p.get("name", "") or p[p["type"]].get("name", ""))
            if p["type"] in ("image_url", "video_url") else images.add_audio_part(p) for p in content
            if isinstance(p, dict) and p.get("type") in ("image_url", "input_audio", "video_url")]
    return {**message, "content": images.text_of(content),
            "images": [{"sha256": r.sha256, "name": r.name, "mime": r.mime} for r in refs]}


def _as_turn(message: dict) -> dict:
    """A kept message as a pane's turn: its images as ImageRefs again, its calls as {id, name, arguments}."""
    turn = dict(message)
    if turn.get("tool_calls"):
        turn["tool_calls"] = [{"id": c.get("id", ""), "name": c.get("function", c).get("name", ""),
                               "arguments": c.get("function", c).get("arguments", "")} for c in turn["tool_calls"]]
    if turn.get("images"):
        turn["images"] = tuple(images.ImageRef(i["sha256"], i.get("name", ""), i.get("mime", "image/png"))
                               if isinstance(i, dict) else i for i in turn["images"])
    return turn


def begin(pane, messages: list[dict], result: PaneResult) -> PaneVersion:
    """A run of `pane` was submitted with `messages`, streaming into `result`: it becomes the last version;
    `current` stays on the reply it replaces until `end`."""
    version = PaneVersion(result, [_kept(m) for m in messages], settings_of(pane), now())
    pane.versions = as_version_list(pane.versions).plus(version)
    return version


def end(pane, result: PaneResult) -> None:
    """A run ended: its version is current (a reply that never started — no text, an error — leaves the
    one it would have replaced current)."""
    index = index_of(pane, result)
    if index is not None and (result.text or pane.current is None):
        pane.current = index


def index_of(pane, result: PaneResult) -> int | None:
    """Where `result` is among the pane's versions (each result is one version's), looked for from the newest:
    the pane shows its last version almost always, and its version bar asks on every streamed change."""
    return as_version_list(pane.versions).index_of_result(result)


def shown(pane) -> int | None:
    """The index of the version the pane shows (its result), or None (never run, or cleared)."""
    return index_of(pane, pane.result)


def label(pane) -> str:
    """"version 2 of 3" ("" for a pane with no versions)."""
    count = len(pane.versions)
    if not count:
        return ""
    index = shown(pane)
    return f"version {index + 1} of {count}" if index is not None else f"{count} versions"


def show(pane, index: int) -> None:
    """Make version `index` the pane's: its conversation (the messages it sent and its reply) and its result.
    The draft and settings stay as they are. Raises IndexError for a version the pane does not have."""
    if not 0 <= index < len(pane.versions):
        raise IndexError(f"{pane.label} has no version {index + 1} (it has {len(pane.versions)})")
    version = pane.versions[index]
    pane.turns = version.turns
    pane.editing = None
    pane.result = version.result
    if version.usable or pane.current is None:
        pane.current = index


def step(pane, delta: int) -> int | None:
    """Show the version `delta` away from the shown one (clamped); returns its index, None without versions."""
    if not pane.versions:
        return None
    start = shown(pane)
    start = len(pane.versions) if start is None and delta < 0 else (-1 if start is None else start)
    index = max(0, min(len(pane.versions) - 1, start + delta))
    show(pane, index)
    return index


def branch(pane, index: int):
    """A new pane (not yet in a session) that replays version `index`: its conversation and reply, its
    settings and system prompt; running it regenerates that reply with those settings."""
    if not 0 <= index < len(pane.versions):
        raise IndexError(f"{pane.label} has no version {index + 1} (it has {len(pane.versions)})")
    version = pane.versions[index]
    settings = {name: value for name, value in version.settings.items() if name != "system"}
    return pane.copy(turns=version.turns, system=version.system, draft="", editing=None, reply_prefix="",
                     versions=[], current=None, title=f"{pane.label} · v{index + 1}", **settings)


def recover(pane) -> None:
    """After a restart: a run cut short by the crash (its result "interrupted", the last version) gives the
    pane back the reply it was replacing (`current`), the cut-short one kept as a version beside it."""
    link(pane)
    if pane.result.state != RunState.INTERRUPTED or pane.current is None:
        return
    if 0 <= pane.current < len(pane.versions) - 1 and pane.versions[pane.current].usable:
        show(pane, pane.current)


def link(pane) -> None:
    """After loading: the pane's result and the version it is (equal values, read apart) become one object,
    so what the pane shows and its version stay the same thing."""
    for index in (pane.current, len(pane.versions) - 1):
        if index is not None and 0 <= index < len(pane.versions) and pane.versions[index].result == pane.result:
            pane.result = pane.versions[index].result
            return


PREVIOUS = "previous"  # in `pick`: the version before the shown one


def pick(pane, which: int | str | None = None) -> PaneResult | None:
    """A reply of the pane to compare: None = the shown one (live while it streams), PREVIOUS = the version
    before the shown one (the last version when none is shown), an index = that version; None when it has no
    such version."""
    if which is None:
        return pane.result
    index = previous_index(pane) if which == PREVIOUS else int(which)
    return pane.versions[index].result if index is not None and 0 <= index < len(pane.versions) else None


def previous_index(pane) -> int | None:
    """The index of the version before the shown one (the last when none is shown), None when there is none."""
    index = shown(pane)
    index = (len(pane.versions) if index is None else index) - 1
    return index if 0 <= index < len(pane.versions) else None


def choices(pane) -> list[tuple[str, int | str | None]]:
    """What a compare view offers for the pane: (text, `pick`'s argument), the shown reply first. Packed
    versions are described without being read (`VersionList.summaries`)."""
    found: list[tuple[str, int | str | None]] = [("shown reply", None)]
    if pane.versions:
        found.append(("previous version", PREVIOUS))
    for index, (started_at, state) in enumerate(as_version_list(pane.versions).summaries()):
        when = f" · {started_at[11:19]}" if started_at else ""
        found.append((f"version {index + 1}{when} · {state}", index))
    return found


def choice_count(pane) -> int:
    """How many `choices` the pane has (a view asks on every change whether a run added one)."""
    return 1 + (len(pane.versions) + 1 if pane.versions else 0)
