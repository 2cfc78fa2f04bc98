"""Videos as the projector sees them: a file's bytes decoded to RGB frames sampled at a chosen rate.

llama-server reads a video through libmtmd's helper (tools/mtmd/mtmd-helper.cpp), which runs the ffmpeg binary
with `-vf fps=<fps> -f rawvideo -pix_fmt rgb24` and hands libmtmd, in order: the text "Video:", then each frame
as an image, and after the first frame of every `TIMESTAMP_MS` of video a text timestamp "[0m5.00s]" (computed
in float32 from the frame's index and the fps). Here PyAV runs the same filters (fps, then rgb24) on FFmpeg's own
libraries, so a video is the same frames, in the same order, with the same texts between them. fps 0 keeps the
video's own rate (no fps filter), as the helper does.

The frame budget (`max_frames`, 0 = none, llama-server has none) keeps a long video within a count: the rate is
lowered so the whole video fits in that many frames (spread over its length, not cut at its start), and the
timestamps follow that rate. Each frame is keyed by the SHA-256 of its pixels, so a frame seen in another request
(another pane, another rate that lands on the same picture) is the same image. No llama.cpp here.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

import numpy as np

TIMESTAMP_MS = 5000  # llama-server's --video-timestamp-interval default
PROMPT_START = "Video:"  # what libmtmd's helper puts before a video's first frame


class VideoDecodeError(ValueError):
    """A video that cannot be decoded (the message names the part, and the file if it has a name)."""


@dataclass(frozen=True)
class Frame:
    rgb: np.ndarray  # (height, width, 3) uint8
    key: str  # SHA-256 (hex) of its size and pixels


@dataclass(frozen=True)
class Video:
    """A decoded video: its frames, the rate they were sampled at, and what libmtmd gets, in order (`items`)."""

    frames: tuple[Frame, ...]
    fps: float  # the rate the frames were sampled at (the budget may have lowered the one asked for)
    seconds: float  # the video's length (0 when the file does not say)

    def items(self) -> list[str | Frame]:
        """"Video:", each frame, and a timestamp after the first frame of each TIMESTAMP_MS, as mtmd's helper."""
        out: list[str | Frame] = [PROMPT_START]
        fps, next_ms = np.float32(self.fps), np.float32(0.0)
        for index, frame in enumerate(self.frames):
            out.append(frame)
            elapsed_ms = np.float32(np.float32(index) / fps * np.float32(1000.0))
            if elapsed_ms >= next_ms:
                elapsed_s = np.float32(elapsed_ms / np.float32(1000.0))
                minutes = int(elapsed_s / np.float32(60))
                out.append(f"[{minutes}m{float(np.float32(elapsed_s - np.float32(minutes * 60.0))):.2f}s]")
                next_ms = np.float32(next_ms + np.float32(TIMESTAMP_MS))
        return out


def sampling_rate(fps: float, max_frames: int, native: float, seconds: float) -> float:
    """The rate frames are taken at: `fps` (0: the video's own), lowered to fit `max_frames` over `seconds`."""
    rate = fps if fps > 0 else native
    if max_frames > 0 and seconds > 0 and rate * seconds > max_frames:
        rate = max_frames / seconds
    return rate


def decode_video(data: bytes, fps: float, max_frames: int, where: str) -> Video:
    """The video's frames at `fps` within `max_frames`. Raises VideoDecodeError naming `where`."""
    import av  # PyAV: FFmpeg's libraries (a ~0.1 s import, paid by the first video only)

    def refuse(why: str) -> VideoDecodeError:
        return VideoDecodeError(f"{where}: the video cannot be decoded ({len(data):,} bytes: {why})")

    try:
        container = av.open(io.BytesIO(data), mode="r")
    except (av.FFmpegError, ValueError, OSError) as exc:
        raise refuse(_reason(exc)) from exc
    with container:
        if not container.streams.video:
            raise refuse("it has no video stream")
        stream = container.streams.video[0]
        native = float(stream.base_rate or stream.average_rate or 0)
        seconds = _seconds(container, stream, native)
        rate = sampling_rate(fps, max_frames, native, seconds)
        if rate <= 0:
            raise refuse("it does not say its frame rate")
        try:
            frames = _frames(container, stream, rate if (fps > 0 or rate != native) else 0.0, max_frames)
        except (av.FFmpegError, ValueError) as exc:
            raise refuse(_reason(exc)) from exc
    if not frames:
        raise VideoDecodeError(f"{where}: the video has no frames")
    return Video(tuple(frames), rate, seconds)


@dataclass(frozen=True)
class Preview:
    """What a window shows of a video before it is sent: its first frame, length and own rate."""

    first: np.ndarray  # (height, width, 3) uint8
    seconds: float
    native_fps: float

    def frames_at(self, fps: float, max_frames: int) -> tuple[int, float]:
        """(about how many frames, at what rate) a request at `fps` within `max_frames` takes of it."""
        rate = sampling_rate(fps, max_frames, self.native_fps, self.seconds)
        count = max(1, round(self.seconds * rate)) if self.seconds else max_frames or 1
        return (min(count, max_frames) if max_frames else count), rate


def preview(data: bytes) -> Preview:
    """The video's first frame, length and rate, from its header and one decoded frame; VideoDecodeError if not a
    video."""
    import av

    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            stream = container.streams.video[0]
            native = float(stream.base_rate or stream.average_rate or 0)
            first = next(container.decode(stream)).to_ndarray(format="rgb24")
            return Preview(first, _seconds(container, stream, native), native)
    except (av.FFmpegError, ValueError, OSError, IndexError, StopIteration) as exc:
        raise VideoDecodeError(f"the video cannot be decoded ({len(data):,} bytes)") from exc


def _reason(exc: Exception) -> str:
    text = getattr(exc, "strerror", None) or str(exc)
    return text.split(":")[0].strip() or type(exc).__name__  # FFmpeg's words, never the data


def _seconds(container, stream, native: float) -> float:
    """The video's length, as ffprobe gives it (the stream's duration, else the file's, else frames / rate)."""
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    if container.duration:
        return container.duration / 1_000_000  # AV_TIME_BASE
    return stream.frames / native if stream.frames and native else 0.0


def _frames(container, stream, rate: float, max_frames: int) -> list[Frame]:
    """The decoded frames through FFmpeg's filters: fps=<rate> (none when 0), then rgb24."""
    import av

    graph = av.filter.Graph()
    chain = [graph.add_buffer(template=stream)]
    if rate > 0:
        chain.append(graph.add("fps", f"{rate:.6f}"))
    chain += [graph.add("format", "rgb24"), graph.add("buffersink")]
    for a, b in zip(chain, chain[1:], strict=False):
        a.link_to(b)
    graph.configure()
    frames: list[Frame] = []

    def drain() -> bool:
        while not (max_frames and len(frames) >= max_frames):
            try:
                out = graph.pull()
            except (av.BlockingIOError, av.EOFError):
                return True
            rgb = out.to_ndarray(format="rgb24")
            frames.append(Frame(rgb, frame_key(rgb)))
        return False

    for frame in container.decode(stream):
        graph.push(frame)
        if not drain():
            return frames
    graph.push(None)
    drain()
    return frames


def frame_key(rgb: np.ndarray) -> str:
    height, width = rgb.shape[:2]
    return hashlib.sha256(f"{width}x{height}:".encode() + np.ascontiguousarray(rgb).tobytes()).hexdigest()
