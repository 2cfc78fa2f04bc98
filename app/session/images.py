"""Images and audio clips in conversations: referenced by content hash, their bytes held once per process, saved
beside the session file.

A clip is an ImageRef whose MIME type is audio (`is_audio`): it is attached, kept, saved, loaded and named missing
exactly as an image is, and sent as an OpenAI `input_audio` part (base64 and its format) instead of a data URL.
A video (`is_video`: MP4/MOV, Matroska/WebM or AVI by its first bytes) likewise, sent as a `video_url` part.

A message names its images by `ImageRef` (the sha256 of the bytes, the file name they came from, their MIME
type); the bytes live in this module's content-addressed store, so two panes (or two sessions) showing one image
hold it once, and a reference can never point at other bytes than the ones it was made from. On disk a session
`talk.chorus.json` keeps its images in the folder `talk.images/`, one file `<sha256>.<ext>` per image, each
written crash-safe (temporary file, fsync, rename) before the session file that refers to it; files are never
rewritten (same name, same bytes) nor deleted. Reading a session loads the images its messages name from that
folder, checking each file's hash; one that is missing or altered is left out and `missing()` names it, while
the rest of the session loads. Requests carry images as OpenAI parts (`parts`), the shape the engine and every
OpenAI-compatible server take. Invariant: an ImageRef's bytes, when present, hash to its `sha256`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from app.files import write_atomic

MAX_BYTES = 20 * 1024 * 1024  # the largest image a message takes (a 4K PNG screenshot is 5-15 MB)
MAX_CLIP_BYTES = 100 * 1024 * 1024  # the largest clip (10 minutes of 16-bit 44.1 kHz stereo wav is ~100 MB)
MAX_VIDEO_BYTES = 512 * 1024 * 1024  # the largest video (an hour of 720p H.264 is ~1 GB: a budget samples it)
# The formats libmtmd's decoder (stb_image) and the common servers read, by their first bytes.
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png", "png"), (b"\xff\xd8\xff", "image/jpeg", "jpg"),
          (b"GIF87a", "image/gif", "gif"), (b"GIF89a", "image/gif", "gif"), (b"BM", "image/bmp", "bmp"))
# The clips miniaudio (app/engine/vision/audio.py) and llama-server decode (ogg: the engine only).
_AUDIO_EXT = {"audio/wav": "wav", "audio/mpeg": "mp3", "audio/flac": "flac", "audio/ogg": "ogg"}
_VIDEO_EXT = {"video/mp4": "mp4", "video/quicktime": "mov", "video/x-matroska": "mkv", "video/webm": "webm",
              "video/x-msvideo": "avi"}
_EXT = {mime: ext for _, mime, ext in _MAGIC} | {"image/webp": "webp"} | _AUDIO_EXT | _VIDEO_EXT
_SHA = re.compile(r"[0-9a-f]{64}")
_DATA_URL = re.compile(r"data:((?:image|video)/[\w.+-]+)?(;[\w=.+-]+)*;base64,(.*)", re.S)
FORMATS = "PNG, JPEG, GIF, WebP or BMP; audio: WAV, MP3, FLAC or OGG; video: MP4, MOV, MKV, WebM or AVI"


class ImageError(ValueError):
    """An image that cannot be used; the message names it and says why."""


@dataclass(frozen=True)
class ImageRef:
    """One image a message carries: its content hash, where it came from (for people), its MIME type."""

    sha256: str
    name: str = ""
    mime: str = "image/png"

    def __post_init__(self) -> None:
        if not isinstance(self.sha256, str) or not _SHA.fullmatch(self.sha256):
            raise ValueError(f"an image's sha256 must be 64 lowercase hex digits, got {self.sha256!r}")

    @property
    def is_audio(self) -> bool:
        return self.mime.startswith("audio/")

    @property
    def is_video(self) -> bool:
        return self.mime.startswith("video/")

    @property
    def label(self) -> str:
        """What a message calls the image, clip or video: its file name, else the start of its hash."""
        kind = "clip" if self.is_audio else "video" if self.is_video else "image"
        return self.name or f"{kind} {self.sha256[:12]}"

    @property
    def file_name(self) -> str:
        """Its file in a session's images folder."""
        return f"{self.sha256}.{_EXT.get(self.mime, 'img')}"


_store: dict[str, bytes] = {}
_lock = threading.Lock()


def sniff(data: bytes) -> str | None:
    """The MIME type of an image or audio file's bytes, or None for anything else."""
    if data[:4] == b"RIFF" and data[8:12] in (b"WEBP", b"WAVE"):
        return "image/webp" if data[8:12] == b"WEBP" else "audio/wav"
    if data.startswith(b"fLaC"):
        return "audio/flac"
    if data.startswith(b"OggS"):
        return "audio/ogg"
    if data[4:8] == b"ftyp":
        return "video/quicktime" if data[8:10] == b"qt" else "video/mp4"
    if data.startswith(b"\x1a\x45\xdf\xa3"):  # EBML: Matroska, or WebM by its doctype
        return "video/webm" if b"webm" in data[:64] else "video/x-matroska"
    if data[:4] == b"RIFF" and data[8:12] == b"AVI ":
        return "video/x-msvideo"
    if data.startswith(b"ID3") or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return "audio/mpeg"
    return next((mime for magic, mime, _ in _MAGIC if data.startswith(magic)), None)


def add_bytes(data: bytes, name: str = "") -> ImageRef:
    """Keep an image's bytes; raises ImageError (naming `name`) for an empty, huge or non-image file."""
    label = name or "the image"
    if not data:
        raise ImageError(f"{label} is empty")
    mime = sniff(data)
    limit = {"audio": MAX_CLIP_BYTES, "video": MAX_VIDEO_BYTES}.get((mime or "").split("/")[0], MAX_BYTES)
    if len(data) > limit:
        what = {MAX_CLIP_BYTES: "a clip", MAX_VIDEO_BYTES: "a video"}.get(limit, "an image")
        raise ImageError(f"{label} is {len(data) / 2**20:.1f} MB; {what} may be at most {limit // 2**20} MB")
    if mime is None:
        raise ImageError(f"{label} is not an image or clip Chorus can send ({FORMATS})")
    ref = ImageRef(hashlib.sha256(data).hexdigest(), name, mime)
    with _lock:
        _store.setdefault(ref.sha256, data)
    return ref


def add_file(path: str | Path) -> ImageRef:
    """Read an image file; raises ImageError naming the file (missing, unreadable, too big, not an image)."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_VIDEO_BYTES:
            raise ImageError(f"{path} is {path.stat().st_size / 2**20:.1f} MB; a file may be at most "
                             f"{MAX_VIDEO_BYTES // 2**20} MB")
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise ImageError(f"image not found: {path}") from exc
    except OSError as exc:
        raise ImageError(f"cannot read the image {path}: {exc.strerror or exc}") from exc
    return add_bytes(data, path.name)


def add_data_url(url: str, name: str = "") -> ImageRef:
    """An image given as `data:image/...;base64,...`; raises ImageError for any other text."""
    match = _DATA_URL.fullmatch(url.strip())
    if not match:
        raise ImageError(f"{name or 'the image'} is not a base64 data URL (data:image/png;base64,...)")
    try:
        data = base64.b64decode(match[3], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ImageError(f"{name or 'the image'}: its data URL is not valid base64") from exc
    return add_bytes(data, name)


def data(ref: ImageRef) -> bytes | None:
    """The image's bytes, or None when they were never loaded (a missing file)."""
    with _lock:
        return _store.get(ref.sha256)


def data_url(ref: ImageRef) -> str:
    """`data:<mime>;base64,...`; raises ImageError naming the image when its bytes are missing."""
    content = data(ref)
    if content is None:
        raise ImageError(f"the image {ref.label} is missing (its file was not found beside the session)")
    return f"data:{ref.mime};base64,{base64.b64encode(content).decode('ascii')}"


def audio_part(ref: ImageRef) -> dict:
    """A clip as OpenAI's `input_audio` part; raises ImageError naming it when its bytes are missing."""
    content = data(ref)
    if content is None:
        raise ImageError(f"the clip {ref.label} is missing (its file was not found beside the session)")
    audio = {"data": base64.b64encode(content).decode("ascii"), "format": _AUDIO_EXT[ref.mime]}
    return {"type": "input_audio", "input_audio": audio | ({"name": ref.name} if ref.name else {})}


def video_part(ref: ImageRef) -> dict:
    """A video as a `video_url` part (a data URL), as llama-server takes it; ImageError when its bytes are missing."""
    return {"type": "video_url", "video_url": {"url": data_url(ref)} | ({"name": ref.name} if ref.name else {})}


def media_part(ref: ImageRef) -> dict:
    """The OpenAI part of an image, a clip or a video."""
    if ref.is_audio:
        return audio_part(ref)
    return video_part(ref) if ref.is_video else {"type": "image_url", "image_url": {"url": data_url(ref)}}


def add_audio_part(part: dict) -> ImageRef:
    """The clip an `input_audio` part carries; raises ImageError for bad base64 or a file that is not a clip."""
    audio = part.get("input_audio") or {}
    name = audio.get("name", "") or part.get("name", "")
    try:
        content = base64.b64decode(audio.get("data", ""), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ImageError(f"{name or 'the clip'}: its data is not valid base64") from exc
    return add_bytes(content, name)


def parts(text: str, refs: tuple[ImageRef, ...] | list[ImageRef]) -> str | list[dict]:
    """A message's `content`: the text alone, or OpenAI parts (the images and clips, then the text) when it has
    any."""
    if not refs:
        return text
    return [*(media_part(r) for r in refs), {"type": "text", "text": text}]


def text_of(content: str | list[dict]) -> str:
    """A message's text: the content itself, or its text parts joined (image parts left out)."""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


# --- beside the session file ----------------------------------------------------------------------------------
def folder_for(session_path: str | Path) -> Path:
    """`talk.chorus.json` → `talk.images/` next to it (an export `talk.md` or `talk.jsonl` shares it: files are
    named by content, so sharing never mixes two images up)."""
    path = Path(session_path)
    stem = path.name.removesuffix(".chorus.json") if path.name.endswith(".chorus.json") else path.stem
    return path.with_name(f"{stem}.images")


def save_to(folder: Path, refs) -> list[ImageRef]:
    """Write the images `folder` lacks (crash-safe, each once); returns those whose bytes are not here to write
    (missing since they were loaded). Raises OSError."""
    absent = []
    for ref in dict.fromkeys(refs):
        target = folder / ref.file_name
        if target.exists():
            continue
        content = data(ref)
        if content is None:
            absent.append(ref)
        else:
            write_atomic(target, content)
    return absent


def load_from(folder: Path, refs) -> list[ImageRef]:
    """Load the named images from `folder` (those already held are kept); returns the ones not found there or
    whose bytes no longer match their hash."""
    absent = []
    for ref in dict.fromkeys(refs):
        if data(ref) is not None:
            continue
        try:
            content = (folder / ref.file_name).read_bytes()
        except OSError:
            absent.append(ref)
            continue
        if hashlib.sha256(content).hexdigest() != ref.sha256:
            absent.append(ref)
            continue
        with _lock:
            _store.setdefault(ref.sha256, content)
    return absent


def missing(refs) -> list[ImageRef]:
    """The images among `refs` whose bytes are not held (each once, in order)."""
    return [r for r in dict.fromkeys(refs) if data(r) is None]


def describe_missing(refs, folder: Path | None = None) -> str | None:
    """A sentence naming the missing images (None: none are)."""
    gone = missing(refs)
    if not gone:
        return None
    names = ", ".join(r.label for r in gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
    where = f" from {folder}" if folder is not None else ""
    kinds = [k for k, found in (("image(s)", any(not (r.is_audio or r.is_video) for r in gone)),
                                ("clip(s)", any(r.is_audio for r in gone)), ("video(s)", any(r.is_video for r in gone)))
             if found]
    what = " and ".join(kinds)
    return f"{len(gone)} {what} are missing{where}: {names}. The rest of the session loaded; a message that " \
           f"shows a missing image, clip or video cannot be run until it is attached again."
