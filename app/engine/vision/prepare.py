"""A request's videos read before it queues: its media parts split out of its messages (base64 decoded and
hashed) and each video decoded to its frames (video.py) on a thread of its own, so a long high-resolution video
never holds up the engine thread, and with it every other pane's step.

`MediaWorker.start(seq, ready)` puts the request's `Prepared` on `seq.media` and then calls `ready(seq)`, on the
worker thread, in the order the requests came (one thread: the panes on one video decode it once, from the last
few videos kept, `DecodedVideos`). A part that cannot be read is not an exception here: `Prepared.error` says it,
and admission ends the request with it as before. The engine thread then tokenises the frames it is given
(projector.py) and never runs PyAV itself. No llama.cpp here.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from app.engine.types import GenerationRequest
from app.engine.vision import media
from app.engine.vision.video import DecodedVideos, VideoDecodeError

log = logging.getLogger("chorus.engine")


@dataclass(frozen=True)
class Prepared:
    """A request's messages with a marker in place of each media part, and its parts (videos with their frames);
    or, when a part cannot be read, why (`error`, naming the part and never quoting it)."""

    messages: list[dict] = field(default_factory=list)
    parts: list[media.ImageData] = field(default_factory=list)
    error: str | None = None


def prepare(request: GenerationRequest, videos: DecodedVideos | None = None) -> Prepared:
    """Split the request's media parts out of its messages and decode its videos (from `videos` when given)."""
    try:
        messages, parts = media.split_images(request.messages, request.video_fps, request.video_max_frames)
        videos = videos or DecodedVideos()
        parts = [dataclasses.replace(part, decoded=videos.get(part.data, part.key, part.fps, part.max_frames,
                                                               part.where)) if part.kind == "video" else part
                 for part in parts]
    except (media.ImagePartError, VideoDecodeError) as exc:
        return Prepared(error=str(exc))
    return Prepared(messages, parts)


class MediaWorker:
    """The engine's one thread for reading videos, started by the first one."""

    def __init__(self):
        self._pool: ThreadPoolExecutor | None = None
        self._videos = DecodedVideos()  # touched by the worker thread only

    @staticmethod
    def wants(request: GenerationRequest) -> bool:
        """Whether the request has a video to read before it queues."""
        return media.has_video(request.messages)

    def start(self, seq, ready: Callable[[object], None]) -> None:
        """Read `seq.request`'s media on the worker, put them on `seq.media`, then call `ready(seq)` there."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chorus-media")
        self._pool.submit(self._run, seq, ready)

    def _run(self, seq, ready: Callable[[object], None]) -> None:
        try:
            seq.media = prepare(seq.request, self._videos)
        except Exception as exc:  # a bug must not leave the request waiting for ever: admission reports it
            log.exception("reading the media of request %s failed", seq.id)
            seq.media = Prepared(error=f"internal error while reading the media: {exc!r}")
        ready(seq)

    def close(self) -> None:
        """Drop what has not started; a video being decoded ends on its own, and its request is gone by then."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
