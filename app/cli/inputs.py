"""What `python -m app run` reads: a JSONL of requests (streamed, a line at a time) or a saved session.

Each input becomes a RunItem: its line number (or pane number), an id, the GenerationRequest and its settings
as the comparison labels, or the reason the line cannot run (then the rest still run). An input that cannot be
read at all raises InputError with one sentence. A message's image parts (OpenAI's `image_url`) may give a data
URL or a file (a path relative to the JSONL's folder, or file://); each is read and sent as a data URL, and
one that is missing or not an image is named with its line. Audio parts (OpenAI's `input_audio`) give base64
`data` and a `format`, or a `path` (relative to the JSONL's folder; the format from its suffix): sent as base64
with the file's name, so a clip the model cannot decode is named by its file. Video parts (`video_url`, as
llama-server takes them) give a data URL or a file's path (`url`, or `path`), sent as a data URL with the file's
name; a line's `video_fps` and `video_max_frames` say how its videos are sampled.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import mimetypes
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.engine import GenerationRequest, SamplingParams, Speculation
from app.engine.vision.media import MEDIA_PARTS, VIDEO_PARTS
from app.session import MAIN, Session, SessionFileError, adapters, compare, conversation, images, tools
from app.session.tool_loop import AUTO_STEPS

REQUEST_FIELDS = ("id", "messages", "prompt", "sampling", "max_tokens", "stop", "logprobs", "json_schema", "grammar",
                  "speculative", "tools", "tool_choice", "parallel_tool_calls", "lora",
                  "tool_call_first", "mcp", "max_tool_rounds", "video_fps", "video_max_frames")
SPECULATION_KEYS = tuple(f.name for f in dataclasses.fields(Speculation))


class InputError(ValueError):
    """The input as a whole cannot be used (missing, unreadable, neither JSONL nor a session)."""


@dataclass
class RunItem:
    line: int  # 1-based line of the JSONL, or pane number of a session
    id: str
    request: GenerationRequest | None
    settings: dict[str, str]
    error: str | None = None  # why this line cannot run
    turns: list[dict] | None = None  # a session pane's conversation as this run sends it
    mcp: bool | tuple[str, ...] = False  # the line's MCP servers (True: every one of `run --mcp`; app/cli/mcp_run.py)
    max_tool_rounds: int = AUTO_STEPS.default  # rounds of MCP calls answered before the line's result is written
    tool_choice: str = ""  # an MCP line's tool_choice, checked once its servers' tools are known


def request_settings(request: GenerationRequest) -> dict[str, str]:
    """The same labels a pane's settings get, read from a request (app.session.compare.FIELDS)."""
    return compare.labels(compare.setup_of_request(request, MAIN))


def _surrogate_at(value, place: str) -> str | None:
    """The place of the first string (key or value) holding a lone surrogate, which UTF-8 cannot encode."""
    if isinstance(value, str):
        return place if any("\ud800" <= ch <= "\udfff" for ch in value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _surrogate_at(key, f"{place}.{_shown(key)}") or _surrogate_at(item, f"{place}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _surrogate_at(item, f"{place}[{index}]")
            if found:
                return found
    return None


def _shown(text: str) -> str:
    """Text as written to outputs and reports: a lone surrogate becomes its \\udXXX escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _sampling_type(annotation: str):
    """(check, what it must be) for a SamplingParams field, from its annotation."""
    if annotation in ("int", "int | None"):
        return _whole, "a whole number"
    if annotation.startswith("tuple[str"):
        return _strings, "a list of strings"
    return _number, "a number"


_SAMPLING_TYPES = {f.name: _sampling_type(f.type) for f in dataclasses.fields(SamplingParams)}


def field_problem(data: dict) -> str | None:
    """The first field of a request line with the wrong type, named, or None. Checked before the request is
    built, so a wrong type is a sentence about that field, never an error from deep inside the engine."""
    for name in data:
        found = _surrogate_at(data[name], name) if name != "id" else None  # an id is shown escaped
        if found:
            return f"{found} holds a lone surrogate (a \\udXXX escape that is half a character), which is not text"
    expect = {"prompt": (lambda v: isinstance(v, str), "a string"),
              "max_tokens": (_whole, "a whole number"), "logprobs": (_whole, "a whole number"),
              "video_fps": (lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v >= 0,
                            "a number of frames a second (0: the video's own rate)"),
              "video_max_frames": (_whole, "a whole number (0: no budget)"),
              "grammar": (lambda v: isinstance(v, str), "a GBNF string"),
              "json_schema": (lambda v: isinstance(v, dict), "a JSON schema object"),
              "sampling": (lambda v: isinstance(v, dict), "an object of sampling settings"),
              "speculative": (lambda v: isinstance(v, str) or (isinstance(v, dict) and set(v) <= set(SPECULATION_KEYS)),
                              f'"off", "auto", "on" or an object with {", ".join(SPECULATION_KEYS)}'),
              "messages": (lambda v: isinstance(v, list) and bool(v), "a non-empty list of {role, content}"),
              "tool_choice": (lambda v: isinstance(v, str), "auto, none, required or a tool's name"),
              "parallel_tool_calls": (lambda v: isinstance(v, bool), "true or false"),
              "tool_call_first": (lambda v: isinstance(v, bool), "true or false"),
              "mcp": (lambda v: isinstance(v, bool) or _strings(v), "true, false or a list of server names"),
              "max_tool_rounds": (lambda v: _whole(v) and AUTO_STEPS.low <= v <= AUTO_STEPS.high,
                                  f"a whole number from {AUTO_STEPS.low} to {AUTO_STEPS.high}")}
    for name, (ok, what) in expect.items():
        if name in data and data[name] is not None and not ok(data[name]):
            return f"{name} must be {what}, got {json.dumps(data[name])[:80]}"
    for index, message in enumerate(data.get("messages") or []):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return f"messages[{index}] must be an object with a string role and a content"
        content = message.get("content")
        if not (isinstance(content, str) or (isinstance(content, list) and all(
                isinstance(part, dict) and (isinstance(part.get("text", ""), str)
                                            and part.get("type") not in MEDIA_PARTS
                                            or _image_part(part) or _audio_part(part) or _video_part(part))
                for part in content))):
            return (f"messages[{index}].content must be a string or a list of text, image, audio and video parts "
                    '({"type": "image_url", "image_url": {"url": "<a path or a data URL>"}}, '
                    '{"type": "input_audio", "input_audio": {"data": "<base64>", "format": "wav"} or {"path": ...}}, '
                    '{"type": "video_url", "video_url": {"url": "<a path or a data URL>"}})')
    for name, value in (data.get("sampling") or {}).items():
        if name not in _SAMPLING_TYPES:
            return f"sampling: unknown setting {_shown(str(name))!r} (known: {', '.join(_SAMPLING_TYPES)})"
        ok, what = _SAMPLING_TYPES[name]
        if not (value is None and name == "seed") and not ok(value):
            return f"sampling.{name} must be {what}, got {json.dumps(value)[:80]}"
    return None


def _image_part(part: dict) -> bool:
    image = part.get("image_url")
    return part.get("type") == "image_url" and isinstance(image, dict | str) and isinstance(
        image.get("url") if isinstance(image, dict) else image, str)


def _audio_part(part: dict) -> bool:
    audio = part.get("input_audio")
    return part.get("type") == "input_audio" and isinstance(audio, dict) and (
        isinstance(audio.get("data"), str) or isinstance(audio.get("path"), str))


def _video_part(part: dict) -> bool:
    video = part.get(part.get("type")) if part.get("type") in VIDEO_PARTS else None
    return isinstance(video, str) or isinstance(video, dict) and any(
        isinstance(video.get(key), str) for key in ("url", "data", "path"))


def _video(part: dict, base: Path | None, where: str) -> dict:
    """A video part as sent: a `video_url` with a data URL, read from the file it names (with the file's name)."""
    video = part[part["type"]]
    url = video if isinstance(video, str) else video.get("url") or video.get("data") or video.get("path")
    if url.startswith("data:"):
        return {"type": "video_url", "video_url": {"url": url}}
    if url.startswith(("http://", "https://")):
        raise ValueError(f"{where}: {url} is a web address: Chorus reads videos from files or data URLs (download "
                         "it and give its path)")
    path = Path(url.removeprefix("file://")).expanduser()
    path = path if path.is_absolute() or base is None else base / path
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{where}: video not found: {path} ({exc.strerror or exc})") from exc
    mime = mimetypes.guess_type(path.name)[0] or "video/mp4"
    mime = mime if mime.startswith("video/") else "video/mp4"
    return {"type": "video_url", "video_url": {"url": f"data:{mime};base64,{base64.b64encode(data).decode()}",
                                               "name": path.name}}


def _clip(audio: dict, base: Path | None, where: str) -> dict:
    """An input_audio part's object as sent: base64 data and a format, read from `path` if it names a file."""
    if isinstance(audio.get("data"), str):
        try:
            base64.b64decode(audio["data"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"{where}: input_audio data is not base64 ({exc})") from exc
        return audio
    path = Path(audio["path"].removeprefix("file://")).expanduser()
    path = path if path.is_absolute() or base is None else base / path
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{where}: audio clip not found: {path} ({exc.strerror or exc})") from exc
    return {"data": base64.b64encode(data).decode(), "format": audio.get("format") or path.suffix.lstrip(".").lower(),
            "name": path.name}


def inline_images(messages: list[dict], base: Path | None) -> list[dict]:
    """Messages whose image parts name a file (a path, relative to `base`, or a file:// URL) or a data URL, with
    every image read, checked and sent as a data URL. Raises ValueError naming the part and the file."""
    out = []
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            out.append(message)
            continue
        parts = []
        for number, part in enumerate(content):
            where = f"messages[{index}].content[{number}]"
            if part.get("type") == "input_audio":
                parts.append({**part, "input_audio": _clip(part["input_audio"], base, where)})
                continue
            if part.get("type") in VIDEO_PARTS:
                parts.append(_video(part, base, where))
                continue
            if part.get("type") != "image_url":
                parts.append(part)
                continue
            image = part["image_url"]
            url = (image.get("url") if isinstance(image, dict) else image).strip()
            try:
                ref = images.add_data_url(url, where) if url.startswith("data:") else _image_file(url, base)
            except images.ImageError as exc:
                raise ValueError(f"{where}: {exc}") from exc
            parts.append({"type": "image_url", "image_url": {"url": images.data_url(ref)}})
        out.append({**message, "content": parts})
    return out


def _image_file(url: str, base: Path | None) -> images.ImageRef:
    if url.startswith(("http://", "https://")):
        raise images.ImageError(f"{url} is a web address: Chorus reads images from files or data URLs (download "
                                "it and give its path)")
    path = Path(url.removeprefix("file://")).expanduser()
    return images.add_file(path if path.is_absolute() or base is None else base / path)


def parse_line(text: str, line: int, base: Path | None = None, loaded: tuple[str, ...] = ()) -> RunItem:
    """One JSONL line as a RunItem; a bad line becomes an item with `error` (and its id, if it had one). Image
    paths are relative to `base` (the JSONL's folder). `loaded`: the adapter files given with `run --lora`,
    which a line's `lora` names by id (adapters.py)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return RunItem(line, f"line-{line}", None, {}, f"line {line}: not valid JSON ({exc.msg})")
    except RecursionError:
        return RunItem(line, f"line-{line}", None, {}, f"line {line}: nested too deeply to read")
    if not isinstance(data, dict):
        return RunItem(line, f"line-{line}", None, {}, f"line {line}: expected a JSON object")
    item_id = _shown(str(data["id"])) if data.get("id") not in (None, "") else f"line-{line}"
    unknown = sorted(set(data) - set(REQUEST_FIELDS))
    if unknown:
        return RunItem(line, item_id, None, {}, f"line {line}: unknown field(s) {', '.join(map(_shown, unknown))} "
                                                f"(known: {', '.join(REQUEST_FIELDS)})")
    try:
        problem = field_problem(data)
    except RecursionError:
        problem = "nested too deeply to read"
    if problem:
        return RunItem(line, item_id, None, {}, f"line {line}: {problem}")
    try:
        fields = {k: data[k] for k in ("messages", "prompt", "max_tokens", "logprobs", "json_schema", "grammar",
                                       "video_fps", "video_max_frames") if data.get(k) is not None}
        if "messages" in fields:
            fields["messages"] = inline_images(fields["messages"], base)
        if data.get("mcp"):  # the servers' tools join the line's when the run knows them (mcp_run.py)
            fields.update(tools=tuple(tools.check_tools(data.get("tools") or [])),
                          parallel_tool_calls=data.get("parallel_tool_calls"),
                          tool_call_first=bool(data.get("tool_call_first")))
        elif data.get("tools"):  # checked as a pane's tools are (app/session/tools.py)
            fields.update(tools=tuple(tools.check_tools(data["tools"])),
                          tool_choice=tools.check_tool_choice(data.get("tool_choice") or "auto", data["tools"]),
                          parallel_tool_calls=data.get("parallel_tool_calls"),
                          tool_call_first=bool(data.get("tool_call_first")))  # local engine only
        elif data.get("tool_choice") not in (None, "auto", "none"):
            raise tools.ToolsError(f"tool_choice: {data['tool_choice']!r} needs tools, and the line has none")
        fields["lora"] = adapters.lora_from_json(data.get("lora"), loaded)
        request = GenerationRequest(sampling=SamplingParams(**(data.get("sampling") or {})),
                                    stop=data.get("stop") or (), speculative=speculation(data.get("speculative")),
                                    **fields)
    except (TypeError, ValueError) as exc:
        return RunItem(line, item_id, None, {}, f"line {line}: {exc}")
    mcp = {} if not data.get("mcp") else {
        "mcp": True if data["mcp"] is True else tuple(data["mcp"]), "tool_choice": data.get("tool_choice") or "auto",
        "max_tool_rounds": data.get("max_tool_rounds", AUTO_STEPS.default)}
    return RunItem(line, item_id, request, request_settings(request), **mcp)


def speculation(value: str | dict | None) -> Speculation | None:
    """A line's `speculative`: a mode ("off", "auto", "on") or {mode, kind, max_draft, draft_model} (kind "draft":
    a draft model's GGUF file, or none for `run --spec-draft`'s); ValueError if bad."""
    if value is None:
        return None
    settings = Speculation(mode=value) if isinstance(value, str) else Speculation(**value)
    return settings if settings.enabled else None


def _jsonl_items(path: Path, loaded: tuple[str, ...] = ()) -> Iterator[RunItem]:
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, text in enumerate(lines, start=1):
            if text.strip():
                yield parse_line(text, number, path.parent, loaded)


def _session_items(session: Session) -> Iterator[RunItem]:
    for number, pane in enumerate(session.panes, start=1):
        item_id = pane.title or f"pane-{number}"
        try:
            request, turns = conversation.plan_run(pane)
        except ValueError as exc:
            yield RunItem(number, item_id, None, compare.settings_of(pane), f"pane {number}: {exc}")
            continue
        yield RunItem(number, item_id, request, compare.settings_of(pane), turns=turns)


def open_input(path: str | Path, loaded: tuple[str, ...] = ()) -> tuple[Iterator[RunItem], int, Session | None]:
    """(items, how many there are, the session if the input is one). JSONL is read lazily; `loaded`: the
    adapter files of `run --lora` (a session's panes name their own)."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            first = f.readline()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        head = json.loads(first) if first.strip() else None
    except json.JSONDecodeError:
        head = None
    if not (first.strip() == "{" or (isinstance(head, dict) and head.get("format") == "chorus-session")):
        with path.open("rb") as f:  # one request per line: count them (for the progress bar), keep none
            total = sum(1 for raw in f if raw.strip())
        return _jsonl_items(path, tuple(loaded)), total, None
    try:
        session = Session.load(path)
    except (SessionFileError, UnicodeDecodeError) as exc:
        raise InputError(str(exc)) from exc
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return _session_items(session), len(session.panes), session
