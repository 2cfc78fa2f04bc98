"""Image and audio parts in a request's messages (OpenAI's `{"type": "image_url", "image_url": {"url": ...}}` and
`{"type": "input_audio", "input_audio": {"data": ..., "format": ...}}`), and how a backend that refuses them says
so."""

from __future__ import annotations

from app.engine import GenerationRequest


def count_images(request: GenerationRequest, kind: str = "image_url") -> int:
    """How many image parts (or parts of `kind`) the request's messages carry (0 for a raw prompt)."""
    return sum(1 for m in request.messages or () if isinstance(m.get("content"), list)
               for part in m["content"] if isinstance(part, dict) and part.get("type") == kind)


def count_clips(request: GenerationRequest) -> int:
    """How many audio parts (`input_audio`) the request's messages carry."""
    return count_images(request, "input_audio")


def count_videos(request: GenerationRequest) -> int:
    """How many video parts (`video_url` or `input_video`) the request's messages carry."""
    return count_images(request, "video_url") + count_images(request, "input_video")


def count_media(request: GenerationRequest) -> int:
    return count_images(request) + count_clips(request) + count_videos(request)


def refused(backend_name: str, request: GenerationRequest, detail: str) -> str:
    """The pane's message when a server answered a request with images or clips by an error: names the server
    and keeps the server's own words (e.g. llama-server's "audio input is not supported")."""
    n, clips, videos = count_images(request), count_clips(request), count_videos(request)
    what = " and ".join(w for w in (f"image{'s' if n > 1 else ''}" if n else "",
                                    f"audio clip{'s' if clips > 1 else ''}" if clips else "",
                                    f"video{'s' if videos > 1 else ''}" if videos else "") if w)
    return f"{backend_name} refused the {what} in this message: {detail}"
