"""API keys and transport warnings for servers. Qt-free.

Keys live in the operating system's keyring (macOS Keychain, Secret Service on Linux) through `keyring`, one
entry per server URL under the service name `KEYRING_SERVICE`. Where no keyring exists (a headless Linux box
without a Secret Service), a key is kept in this process only and forgotten at exit. A key is never logged
and never part of a session file or export: only this module and the HTTP client ever hold it.
"""

from __future__ import annotations

import ipaddress
import logging
from urllib.parse import urlparse

log = logging.getLogger("chorus.backends")

KEYRING_SERVICE = "Chorus server API key"


def plain_http_warning(base_url: str) -> str | None:
    """A sentence to show when requests (and the API key) would cross a network unencrypted: plain http:// to
    a host that is not this machine. None for https:// and for loopback addresses."""
    parsed = urlparse(base_url)
    if parsed.scheme != "http":
        return None
    host = (parsed.hostname or "").lower()
    if host in ("localhost", ""):
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass  # a host name: not known to be this machine
    return (f"{parsed.netloc} is reached over plain http: prompts, replies and the API key cross the network "
            "unencrypted. Use https:// unless this network is trusted.")


class KeyStore:
    """Where API keys are kept: the OS keyring if one is usable, else this session's memory."""

    def __init__(self, backend=None):
        """`backend`: a keyring backend to use (tests, or a choice the user made); default: keyring's own."""
        self._session: dict[str, str] = {}
        self._keyring = None
        try:
            import keyring
            from keyring.backends import fail

            chosen = backend or keyring.get_keyring()
            if not isinstance(chosen, fail.Keyring) and getattr(chosen, "priority", 1) > 0:
                self._keyring = chosen
        except Exception as exc:  # no keyring package or a broken backend: keys stay in memory
            log.info("no usable OS keyring (%s): API keys are kept for this session only", type(exc).__name__)

    @property
    def persistent(self) -> bool:
        """Whether a remembered key survives a restart (an OS keyring is available)."""
        return self._keyring is not None

    @property
    def where(self) -> str:
        return (f"the system keyring ({type(self._keyring).__name__})" if self._keyring
                else "memory, for this session only (no system keyring found)")

    def get(self, url: str) -> str | None:
        if url in self._session:
            return self._session[url]
        if self._keyring is not None:
            try:
                return self._keyring.get_password(KEYRING_SERVICE, url)
            except Exception as exc:
                log.warning("reading the key for %s from the keyring failed: %s", url, type(exc).__name__)
        return None

    def set(self, url: str, key: str, remember: bool) -> bool:
        """Keep `key` for `url`: in the keyring if `remember` and one exists, else for this session. Returns
        whether it was stored persistently."""
        self._session[url] = key
        if remember and self._keyring is not None:
            try:
                self._keyring.set_password(KEYRING_SERVICE, url, key)
                return True
            except Exception as exc:
                log.warning("storing the key for %s in the keyring failed: %s", url, type(exc).__name__)
        return False

    def forget(self, url: str) -> None:
        self._session.pop(url, None)
        if self._keyring is not None:
            try:
                self._keyring.delete_password(KEYRING_SERVICE, url)
            except Exception:  # not there, or no access: nothing more to forget
                pass
