"""Image parts in a request's messages (OpenAI's `{"type": "image_url", "image_url": {"url": ...}}`), and how
a backend that refuses them says so."""

from __future__ import annotations

from app.engine import GenerationRequest


def count_images(request: GenerationRequest) -> int:
    """How many image parts the request's messages carry (0 for a raw prompt)."""
    return sum(1 for m in request.messages or () if isinstance(m.get("content"), list)
               for part in m["content"] if isinstance(part, dict) and part.get("type") == "image_url")


def refused(backend_name: str, request: GenerationRequest, detail: str) -> str:
    """The pane's message when a server answered a request with images by an error: names the server and its
    model, and keeps the server's own words (e.g. llama-server's "image input is not supported")."""
    n = count_images(request)
    return f"{backend_name} refused the image{'s' if n > 1 else ''} in this message: {detail}"
