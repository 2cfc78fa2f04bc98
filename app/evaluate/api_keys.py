"""A provider's API key in an evaluation config: moved out of the config into this process's environment as
soon as it is read (`stash_key`), so the evaluation, its results and the session hold only the variable's name,
never the key; and one warning (`key_warning`) for a key that looks real, written for a server that is not this
machine."""

from __future__ import annotations

import ipaddress
import os
import re
from urllib.parse import urlparse

from app.evaluate.errors import Problems

_STASHED: dict[str, str] = {}  # key -> the environment variable it was moved to (this process only)
_DUMMY_KEY = re.compile(r"(?i)^(sk-)?(x+|dummy|none|null|empty|no-?key|not-?needed|test|fake|local|ollama|"
                        r"lm-?studio|llama|password|secret|changeme|\*+|-+|0+)$")


def looks_real(key: str) -> bool:
    """Whether a key could be a real credential: at least 16 characters, not a placeholder such as "x",
    "dummy", "sk-no-key" or "ollama"."""
    return len(key) >= 16 and not _DUMMY_KEY.match(key) and len(set(key)) > 4


def _host(url: str) -> str:
    try:
        return urlparse(url).netloc or url
    except ValueError:
        return url


def is_loopback(url: str) -> bool:
    try:
        host = (urlparse(url).hostname or "").lower()
    except ValueError:  # not a URL (an unclosed "[" of an IPv6 address): it reaches no server
        return False
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def stash_key(config: dict, where: str, problems: Problems) -> dict:
    """The config with a written `apiKey` replaced by `apiKeyEnvar` naming where the key now is (this process's
    environment): the key itself is never kept in anything that is saved. A key that is not a string is a
    problem."""
    if "apiKey" not in config:
        return config
    config = dict(config)
    key = config.pop("apiKey")
    if key is None or key == "":
        return config
    if not isinstance(key, str):
        problems.add(f"{where}.config.apiKey", f"must be a string, got {type(key).__name__}")
        return config
    name = _STASHED.get(key) or f"CHORUS_CONFIG_API_KEY_{len(_STASHED) + 1}"
    try:
        os.environ[name] = key
    except ValueError:  # a NUL, or a surrogate the OS cannot take: no server would accept it either
        problems.add(f"{where}.config.apiKey", "holds characters no server accepts in a key")
        return config
    _STASHED[key] = name
    config["apiKeyEnvar"] = name
    return config


def key_warning(config: dict, url: str) -> str | None:
    """One sentence when `config` carries a written key that looks real and the server is not this machine."""
    name = config.get("apiKeyEnvar")
    key = next((k for k, n in _STASHED.items() if n == name), None)
    if not key or not looks_real(key) or is_loopback(url):
        return None
    return (f"an API key is written in the config for {_host(url)}; Chorus keeps it in memory "
            "only and writes it nowhere, but a config file gets shared: prefer apiKeyEnvar")
