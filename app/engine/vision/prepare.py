"""A request's videos and clips read before it queues: its media parts split out of its messages (base64 decoded
and hashed), each video decoded to its frames (video.py) and each clip to its samples at the projector's rate
(audio.py), on a thread of its own, so a long high-resolution video or an hour of audio never holds up the
engine thread, and with it every other pane's step.

`MediaWorker.start(seq, ready)` puts the request's `Prepared` on `seq.media` and then calls `ready(seq)`, on the
worker thread, in the order the requests came (one thread: the panes on one video or clip decode it once, from
the last few kept, `Recent`). A part that cannot be read is not an exception here: `Prepared.error` says it, and
admission ends the request with it as before. The engine thread then tokenises what it is given (projector.py)
and never runs PyAV or miniaudio itself. Images are left to libmtmd at admission, as before: one picture is
quick to read. No llama.cpp here.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from app.engine.types import GenerationRequest
from app.engine.vision import media
from app.engine.vision.audio import AudioDecodeError, decode_clip
from app.engine.vision.video import VideoDecodeError, decode_video

log = logging.getLogger("chorus.engine")
KEPT = 2  # decoded videos (and clips) kept for the next request on the same one: 8 panes on one decode it once


@dataclass(frozen=True)
class Prepared:
    """A request's messages with a marker in place of each media part, and its parts (videos with their frames,
    clips with their samples); or, when a part cannot be read, why (`error`, naming the part, never quoting it)."""

    messages: list[dict] = field(default_factory=list)
    parts: list[media.ImageData] = field(default_factory=list)
    error: str | None = None


class Recent:
    """The last KEPT values made by `make`, by key (one thread uses it)."""

    def __init__(self):
        self._kept: OrderedDict[tuple, object] = OrderedDict()

    def get(self, key: tuple, make: Callable[[], object]) -> object:
        value = self._kept.pop(key, None)
        if value is None:
            value = make()
        self._kept[key] = value
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)
        return value


def prepare(request: GenerationRequest, sample_rate: int = 0, recent: Recent | None = None) -> Prepared:
    """Split the request's media parts out of its messages, decode its videos, and its clips at `sample_rate`
    (0: leave them to admission)."""
    recent = recent or Recent()

    def read(part: media.ImageData) -> media.ImageData:
        if part.kind == "video":
            decoded = recent.get((part.key, part.fps, part.max_frames),
                                 lambda: decode_video(part.data, part.fps, part.max_frames, part.where))
        elif part.kind == "audio" and sample_rate:
            decoded = recent.get((part.key, sample_rate), lambda: decode_clip(part.data, sample_rate, part.where,
                                                                              part.fmt))
        else:
            return part
        return dataclasses.replace(part, decoded=decoded)

    try:
        messages, parts = media.split_images(request.messages, request.video_fps, request.video_max_frames)
        return Prepared(messages, [read(part) for part in parts])
    except (media.ImagePartError, VideoDecodeError, AudioDecodeError) as exc:
        return Prepared(error=str(exc))


class MediaWorker:
    """The engine's one thread for reading videos (for a projector that sees) and clips (for one that hears, at
    its `sample_rate`), started by the first of them."""

    def __init__(self, sees: bool = False, sample_rate: int = 0):
        self.sees, self.sample_rate = sees, sample_rate
        self._pool: ThreadPoolExecutor | None = None
        self._recent = Recent()  # touched by the worker thread only

    def wants(self, request: GenerationRequest) -> bool:
        """Whether the request has a video or a clip this projector takes, to read before it queues."""
        return (self.sees and media.has_video(request.messages)) or (
            self.sample_rate > 0 and media.has_audio(request.messages))

    def start(self, seq, ready: Callable[[object], None]) -> None:
        """Read `seq.request`'s media on the worker, put them on `seq.media`, then call `ready(seq)` there."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chorus-media")
        self._pool.submit(self._run, seq, ready)

    def _run(self, seq, ready: Callable[[object], None]) -> None:
        try:
            seq.media = prepare(seq.request, self.sample_rate, self._recent)
        except Exception as exc:  # a bug must not leave the request waiting for ever: admission reports it
            log.exception("reading the media of request %s failed", seq.id)
            seq.media = Prepared(error=f"internal error while reading the media: {exc!r}")
        ready(seq)

    def close(self) -> None:
        """Drop what has not started; a file being decoded ends on its own, and its request is gone by then."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
