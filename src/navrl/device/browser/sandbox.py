"""The network sandbox: a page may reach its task's allowed origins and nothing else.

Every request of a browser context (documents, scripts, images, fetch/XHR, beacons,
navigations of any frame) goes through a Playwright route; a request outside the allowed
origins is aborted (``blockedbyclient``) and recorded. WebSockets to other origins are
closed before they connect, and service workers are blocked (they could bypass routing).
``data:``, ``blob:`` and ``about:`` URLs never touch the network and are allowed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["OriginPolicy", "SandboxError", "normalize_origin", "origin_of"]

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_LOCAL_SCHEMES = ("data", "blob", "about")


class SandboxError(ValueError):
    """A malformed allowed origin."""


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s)/ws(s) URL (default ports dropped), else None."""
    try:
        u = urlsplit(url)
        port = u.port
    except ValueError:
        return None
    scheme = (u.scheme or "").lower()
    if scheme not in _DEFAULT_PORTS or not u.hostname:
        return None
    host = u.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


_ORIGIN_RE = re.compile(r"^(https?|wss?)://(\*\.)?[A-Za-z0-9.\-\[\]:]+(:\d+)?/?$")


def normalize_origin(o: str) -> str:
    """Validate and normalise one allowed origin: ``https://example.com``, ``http://127.0.0.1:8000``,
    or a subdomain wildcard ``https://*.example.com``. Paths, queries and userinfo are errors."""
    if not isinstance(o, str) or not _ORIGIN_RE.match(o.strip()):
        raise SandboxError(f"not an origin: {o!r} (expected scheme://host[:port], e.g. http://127.0.0.1:8000)")
    s = o.strip().rstrip("/")
    wild = "://*." in s
    probe = s.replace("://*.", "://wildcard.") if wild else s
    norm = origin_of(probe)
    if norm is None:
        raise SandboxError(f"not an origin: {o!r}")
    return norm.replace("://wildcard.", "://*.") if wild else norm


def _split(origin: str) -> tuple[str, str, str]:
    """(scheme, host, port) of a normalised origin; port is "" for the scheme's default."""
    scheme, rest = origin.split("://", 1)
    if rest.startswith("["):
        host, _, tail = rest.partition("]")
        return scheme, host + "]", tail.lstrip(":")
    host, _, port = rest.partition(":")
    return scheme, host, port


@dataclass
class OriginPolicy:
    """Which URLs a context may load; ``blocked`` keeps the URLs it refused (most recent last)."""

    allowed: tuple[str, ...]
    blocked: list[str] = field(default_factory=list)
    max_log: int = 1000

    def __post_init__(self) -> None:
        self.allowed = tuple(dict.fromkeys(normalize_origin(o) for o in self.allowed))
        self._exact = frozenset(o for o in self.allowed if "://*." not in o)
        self._wild = tuple(_split(o.replace("://*.", "://")) for o in self.allowed if "://*." in o)

    def allows(self, url: str) -> bool:
        scheme = url.split(":", 1)[0].lower()
        if scheme in _LOCAL_SCHEMES:
            return True
        o = origin_of(url)
        if o is None:
            return False            # file:, chrome:, ftp:, javascript: URLs ... never
        # ws(s) is allowed where the matching http(s) origin is
        if o.startswith("ws"):
            o = "http" + o[2:]
        if o in self._exact:
            return True
        sch, host, port = _split(o)
        return any(sch == ws and port == wp and host.endswith("." + wh) for ws, wh, wp in self._wild)

    def record(self, url: str) -> None:
        self.blocked.append(url)
        if len(self.blocked) > self.max_log:
            del self.blocked[: len(self.blocked) - self.max_log]
