"""Who can read a pane's images and hear its clips: a local model opened without its vision projector cannot read
images, and one without an audio projector cannot hear (a server answers for itself when it is asked). The
runner refuses such a run with `vision_problem`; the window warns as soon as an image is attached, or the pane's
backend changes, with `image_warning`: the same sentence, and what to do."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.backends.base import Backend
from app.backends.image_parts import count_clips, count_images, count_videos
from app.engine import EngineConfig, GenerationRequest
from app.models import model_name
from app.models.projectors import projector_hears, projector_sees
from app.session.state import PaneSpec


def projector_missing(config: EngineConfig | None) -> str | None:
    """Why a local model with these settings cannot read images (None: it can, or it is a server)."""
    if config is None or getattr(config, "mmproj", None):
        return None
    return (f"{model_name(config.model_path)} was opened without a vision projector (mmproj), so it cannot read "
            "images")


def cannot_hear(config: EngineConfig | None) -> str | None:
    """Why a local model with these settings cannot hear audio (None: it can, or it is a server), naming the model
    as the status bar does."""
    if config is None:
        return None
    projector = getattr(config, "mmproj", None)
    if not projector:
        return f"{model_name(config.model_path)} was opened without an audio projector (mmproj), so it cannot hear"
    if not projector_hears(projector):
        return (f"{model_name(config.model_path)} cannot hear: its projector {Path(projector).name} has no audio "
                "encoder")
    return None


def cannot_watch(config: EngineConfig | None) -> str | None:
    """Why a local model with these settings cannot watch a video (None: it can, or it is a server), naming the
    model as the status bar does."""
    if config is None:
        return None
    projector = getattr(config, "mmproj", None)
    if not projector:
        return (f"{model_name(config.model_path)} was opened without a vision projector (mmproj), so it cannot "
                "watch videos")
    if not projector_sees(projector):
        return (f"{model_name(config.model_path)} cannot watch videos: its projector {Path(projector).name} has no "
                "vision encoder")
    return None


def vision_problem(request: GenerationRequest, backend: Backend | None) -> str | None:
    """Why `backend` cannot take the request's images or clips: a local model opened without its projector, or
    one that cannot hear (a server answers for itself). None when it can, or when the request has none."""
    config = backend.config if backend is not None else None
    problem = projector_missing(config) if count_images(request) else None
    if problem:
        return f"{problem}. Open the model with its projector, or remove the images from the message."
    problem = cannot_watch(config) if count_videos(request) else None
    if problem:
        return f"{problem}. Open the model with its vision projector, or remove the videos from the message."
    problem = cannot_hear(config) if count_clips(request) else None
    return f"{problem}. Open a model with an audio projector, or remove the clips from the message." if problem \
        else None


def pane_images(pane: PaneSpec, audio: bool = False) -> int:
    """How many images (or clips, with `audio`) the pane's next run sends: its conversation's and its draft's."""
    refs = [*pane.draft_images, *(r for turn in pane.turns for r in turn.get("images", ()))]
    return sum(r.is_audio == audio and not r.is_video for r in refs)


def video_warning(pane: PaneSpec, config_of: Callable[[str], EngineConfig | None]) -> str | None:
    """The pane's warning, at once, when its backend cannot watch the videos it holds."""
    refs = [*pane.draft_images, *(r for turn in pane.turns for r in turn.get("images", ()))]
    count = sum(r.is_video for r in refs)
    problem = cannot_watch(config_of(pane.backend)) if count else None
    if problem is None:
        return None
    them = "them" if count > 1 else "it"
    return (f"{problem}. The video{'s stay' if count > 1 else ' stays'} attached: open the model with its vision "
            f"projector (Model → Open model…), run this pane on a server whose model reads images, or remove {them}.")


def clip_warning(pane: PaneSpec, config_of: Callable[[str], EngineConfig | None], offered: list[str]) -> str | None:
    """The pane's warning, at once, when its backend cannot hear the clips it holds (as `image_warning`)."""
    count = pane_images(pane, audio=True)
    problem = cannot_hear(config_of(pane.backend)) if count else None
    if problem is None:
        return None
    hearers = [name for name in offered if name != pane.backend and (config := config_of(name)) is not None
               and cannot_hear(config) is None]
    where = (f"run this pane on {' or '.join(hearers)} (it hears audio)" if hearers else
             "open a model with an audio projector (Model → Open model…), or run this pane on a server whose model "
             "hears audio (Model → Backends…)")
    them = "them" if count > 1 else "it"
    return f"{problem}. The clip{'s stay' if count > 1 else ' stays'} attached: {where}, or remove {them}."


def image_warning(pane: PaneSpec, config_of: Callable[[str], EngineConfig | None], offered: list[str]) -> str | None:
    """The pane's warning, at once, when its backend cannot read the images (or hear the clips) it holds: the
    sentence, that the images stay, and what to do (the offered backends that can read them, else how to open a
    model that can).
    `config_of(name)` is a backend's engine settings (None: a server, or not open). None when nothing is wrong."""
    clips = "\n".join(w for w in (clip_warning(pane, config_of, offered), video_warning(pane, config_of)) if w) or None
    count = pane_images(pane)
    problem = projector_missing(config_of(pane.backend)) if count else None
    if problem is None:
        return clips
    them = "them" if count > 1 else "it"
    readers = [name for name in offered if name != pane.backend and (config := config_of(name)) is not None
               and config.mmproj]
    where = (f"run this pane on {' or '.join(readers)} (it reads images)" if readers else
             "open a model with its vision projector (Model → Open model…), or run this pane on a server whose "
             "model reads images (Model → Backends…)")
    images = f"{problem}. The image{'s stay' if count > 1 else ' stays'} attached: {where}, or remove {them}."
    return f"{images}\n{clips}" if clips else images
