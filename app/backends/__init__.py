"""Where tokens come from, behind one protocol: the local engine (LocalBackend) or any OpenAI-compatible server
(OpenAIBackend). Qt-free."""

from app.backends.base import Backend, BackendInfo, NotSupported
from app.backends.local import LocalBackend
from app.backends.openai_backend import OpenAIBackend
from app.backends.security import KeyStore, plain_http_warning

__all__ = ["Backend", "BackendInfo", "KeyStore", "LocalBackend", "NotSupported", "OpenAIBackend", "plain_http_warning"]
