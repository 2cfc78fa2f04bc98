"""Image, audio and video parts of chat messages, as the engine takes them: OpenAI content parts with base64 data.

A message's `content` may be a list of parts, `{"type": "text", "text": ...}`,
`{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}`,
`{"type": "input_audio", "input_audio": {"data": "<base64>", "format": "wav"}}` and
`{"type": "video_url", "video_url": {"url": "data:video/mp4;base64,..."}}` (llama-server's other spelling,
`{"type": "input_video", "input_video": {"data": ...}}`, too). An image, a clip or a video is keyed by
the SHA-256 of its decoded bytes (hex): the same picture is the same image whatever its URL's media type or
message, and that key is its mtmd bitmap id. A message with media becomes one string for the chat template, as
llama-server writes it (common/chat.cpp, `concat_content_parts`): the parts in order, a newline between two text
parts and none beside an image or a clip, each replaced by the media marker `MARKER`. No message here ever
quotes a part's data. No llama.cpp here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

MARKER = "<__media__>"  # libmtmd's default media marker (mtmd_default_marker()); the engine passes it explicitly


VIDEO_PARTS = ("video_url", "input_video")
MEDIA_PARTS = ("image_url", "input_audio", *VIDEO_PARTS)


class ImagePartError(ValueError):
    """A content part that is not a usable image or clip (the message names the part, and its file if named)."""


@dataclass(frozen=True)
class ImageData:
    """One image or clip of a request: its bytes, their SHA-256 (hex) and where it was (for messages)."""

    data: bytes
    key: str
    where: str  # e.g. "message 2, part 1 (cat.png)"
    kind: str = "image"  # or "audio", "video"
    fmt: str = ""  # a clip's declared format (wav, mp3, flac, ogg)
    fps: float = 0.0  # a video's frames a second (0: its own rate)
    max_frames: int = 0  # a video's frame budget (0: none)
    # a video's frames (video.Video) or a clip's samples, read before the request queued (prepare.py)
    decoded: object | None = None


def _part_name(part: dict) -> str:
    """A name the part carries, if any (a file name a UI attached: `name` on the part or its media object)."""
    media = next((part.get(kind) for kind in MEDIA_PARTS if part.get(kind)), None)
    for holder in (part, media if isinstance(media, dict) else {}):
        name = holder.get("name") or holder.get("filename")
        if isinstance(name, str) and name:
            return f" ({name})"
    return ""


def decode_data_url(url: str, where: str, what: str = "image") -> bytes:
    """The bytes of a base64 `data:` URL (llama-server also takes bare base64); ImagePartError otherwise."""
    if not isinstance(url, str) or not url:
        raise ImagePartError(f"{where}: the {what} has no {'URL' if what == 'image' else 'data'}")
    payload = url
    if url.startswith("data:"):
        header, sep, payload = url.partition(",")
        if not sep:
            raise ImagePartError(f"{where}: the data URL has no ',' before its data")
        if not header.endswith(";base64"):
            raise ImagePartError(f"{where}: the data URL is not base64 ({header[:40]!r})")
    elif url.startswith(("http://", "https://", "file:")):
        raise ImagePartError(f"{where}: a local model takes {what}s as data URLs, not links ({url[:60]!r})")
    try:
        data = base64.b64decode(payload, validate=False)
    except (binascii.Error, ValueError) as exc:
        raise ImagePartError(f"{where}: the {what}'s base64 data cannot be decoded ({exc})") from exc
    if not data:
        raise ImagePartError(f"{where}: the {what} is empty")
    return data


def has_parts(messages: list[dict] | None, kinds: tuple[str, ...] = MEDIA_PARTS) -> bool:
    """Whether a message holds a part of one of these types (default: any image or clip)."""
    return any(isinstance(m.get("content"), list) and any(
        isinstance(p, dict) and p.get("type") in kinds for p in m["content"]) for m in messages or ())


def has_images(messages: list[dict] | None) -> bool:
    return has_parts(messages, ("image_url",))


def has_audio(messages: list[dict] | None) -> bool:
    return has_parts(messages, ("input_audio",))


def has_video(messages: list[dict] | None) -> bool:
    return has_parts(messages, VIDEO_PARTS)


def _clip(part: dict, where: str) -> ImageData:
    """An input_audio part's clip: base64 `data` (llama-server also takes a data URL there) and its format."""
    audio = part.get("input_audio")
    if not isinstance(audio, dict):
        raise ImagePartError(f"{where}: an input_audio part needs an object with data and format")
    fmt = audio.get("format") if isinstance(audio.get("format"), str) else ""
    data = decode_data_url(audio.get("data") or audio.get("url"), where, what="clip")
    return ImageData(data, hashlib.sha256(data).hexdigest(), where, "audio", fmt.lower())


def _video(part: dict, kind: str, where: str, fps: float, max_frames: int) -> ImageData:
    """A video part's file: `url` or `data` (a data URL or bare base64), as llama-server reads either spelling."""
    video = part.get(kind)
    url = (video.get("data") or video.get("url")) if isinstance(video, dict) else video
    data = decode_data_url(url, where, what="video")
    return ImageData(data, hashlib.sha256(data).hexdigest(), where, "video", fps=fps, max_frames=max_frames)


def split_images(messages: list[dict], fps: float = 0.0, max_frames: int = 0) -> tuple[list[dict], list[ImageData]]:
    """The messages with every image, clip and video replaced by `MARKER` (each message with one flattened to one
    string, as llama-server does), and the images, clips and videos in prompt order (videos to be sampled at
    `fps` within `max_frames`). Raises ImagePartError naming a bad part (never quoting its data)."""
    out, images = [], []
    for m_index, message in enumerate(messages, 1):
        content = message.get("content")
        if not isinstance(content, list) or not any(
                isinstance(p, dict) and p.get("type") in MEDIA_PARTS for p in content):
            out.append(message)
            continue
        text, last_was_marker = "", False
        for p_index, part in enumerate(content, 1):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "image_url":
                where = f"message {m_index}, part {p_index}{_part_name(part)}"
                image_url = part.get("image_url")
                url = image_url.get("url") if isinstance(image_url, dict) else image_url
                data = decode_data_url(url, where)
                images.append(ImageData(data, hashlib.sha256(data).hexdigest(), where))
                text += MARKER
                last_was_marker = True
            elif kind == "input_audio":
                images.append(_clip(part, f"message {m_index}, part {p_index}{_part_name(part)}"))
                text += MARKER
                last_was_marker = True
            elif kind in VIDEO_PARTS:
                images.append(_video(part, kind, f"message {m_index}, part {p_index}{_part_name(part)}", fps,
                                     max_frames))
                text += MARKER
                last_was_marker = True
            elif kind == "text":
                piece = part.get("text", "")
                if not isinstance(piece, str):
                    raise ImagePartError(f"message {m_index}, part {p_index}: text must be a string")
                if text and not last_was_marker:
                    text += "\n"
                text += piece
                last_was_marker = False
            else:
                raise ImagePartError(f"message {m_index}, part {p_index}: unsupported content part type {kind!r} "
                                     "(text, image_url, input_audio and video_url are)")
        out.append({**message, "content": text})
    return out, images
