"""BackendSpec: what a backend is, as saved in the app's settings (never an API key: app.backends.KeyStore keeps
those), and the name panes store for it. `MAIN` is the name of the main local model. Qt-free."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlparse

from app.backends.openai_backend import SERVER_CONCURRENCY
from app.models import model_name

MAIN = "local"
KINDS = ("local", "server")


@dataclass(frozen=True)
class BackendSpec:
    kind: str  # "local": a GGUF file run by its own engine; "server": an OpenAI-compatible server
    path: str = ""  # local: the model file
    url: str = ""  # server: the base URL, e.g. http://127.0.0.1:8080/v1
    model: str | None = None  # server: the model to ask for (None: the first one it lists)
    max_concurrency: int = SERVER_CONCURRENCY.default
    mmproj: str | None = None  # local: the vision projector paired with the model (EngineConfig.mmproj)

    @property
    def name(self) -> str:
        """The label panes store and show: "local · <file stem>" or "<host:port> · <model>"."""
        if self.kind == "local":
            return f"local · {model_name(self.path)}"
        model = Path(self.model).name if self.model and "/" in self.model else self.model  # llama-server: a path
        return f"{urlparse(self.url).netloc or self.url} · {model or 'default model'}"

    def problem(self) -> str | None:
        """Why this spec cannot be opened, in one sentence; None if it looks usable."""
        if self.kind not in KINDS:
            return f"unknown backend kind {self.kind!r} (choose local or server)"
        if self.kind == "local":
            if not self.path:
                return "choose a GGUF model file"
            if self.mmproj and not Path(self.mmproj).is_file():
                return f"projector file not found: {self.mmproj}"
            return None if Path(self.path).is_file() else f"model file not found: {self.path}"
        parsed = urlparse(self.url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            return f"the server URL must start with http:// or https://, got {self.url!r}"
        if not SERVER_CONCURRENCY.low <= self.max_concurrency <= SERVER_CONCURRENCY.high:
            return (f"concurrent requests must be {SERVER_CONCURRENCY.low:g} to "
                    f"{SERVER_CONCURRENCY.high:g}, got {self.max_concurrency}")
        return None

    def engine_fields(self, engine: dict | None = None) -> dict:
        """EngineConfig fields for this local model: its file, its projector, then `engine`'s settings."""
        return {"model_path": self.path, "mmproj": self.mmproj or None, **(engine or {})}

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> BackendSpec:
        """Raises ValueError for anything that is not a spec this version wrote."""
        if not isinstance(data, dict) or data.get("kind") not in KINDS:
            raise ValueError(f"not a backend: {data!r}")
        known = {k: data[k] for k in ("kind", "path", "url", "model", "max_concurrency", "mmproj") if k in data}
        types = {"path": str, "url": str, "model": (str, type(None)), "max_concurrency": int,
                 "mmproj": (str, type(None))}
        if any(not isinstance(known[k], t) or isinstance(known[k], bool) for k, t in types.items() if k in known):
            raise ValueError(f"not a backend: {data!r}")
        return cls(**known)
