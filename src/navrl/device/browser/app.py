"""What a browser device runs: a web app (:class:`WebApp`), the phone it emulates
(:class:`Emulation`, from Playwright's device descriptors) and the snapshot handle that
:meth:`BrowserDevice.restore` accepts (:class:`WebSnapshot`)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from navrl.device.browser.sandbox import normalize_origin, origin_of

__all__ = ["PHONES", "Emulation", "WebApp", "WebSnapshot", "check_phone", "resolve_emulation"]

PHONES: dict[str, str] = {"iphone": "iPhone 13", "pixel": "Pixel 7"}
"""Short names of the two default phone profiles -> Playwright device descriptor names.
Any other descriptor name (``"iPhone 15 Pro"``, ``"Galaxy S9+"``...) works too, and so does a
bare touch screen ``WxH@scale`` in CSS pixels (``"160x210@1"``: MiniWoB's own 160x210 frame)."""


@dataclass(frozen=True)
class WebApp:
    """A web app the device can run, with its sandbox and its hooks.

    The JavaScript fields are trusted configuration (written by the suite's author, never
    by the agent). ``start_js`` is a function body with ``seed`` in scope, run after the
    start page loads (and, when ``reset_in_place``, as the fast reset of the next episode
    on the same page); it may return a promise. ``state_js`` is a function body whose
    JSON-able return value is the page's own view of the task (MiniWoB: ``done``,
    ``reward``, ``raw_reward``); ``success_js`` is an expression (or a body with
    ``return``) that is truthy once the task is done.
    """

    name: str
    start_url: str
    allowed_origins: tuple[str, ...] = ()
    local_root: str | None = None
    """Serve this directory from 127.0.0.1 (on the machine that runs the device) and read
    ``start_url`` as a path under it. A ``module:subdir`` form names a directory inside an
    installed package (``miniwob:html``). The local origin is always allowed."""
    content_width: int | None = None
    """Zoom the page so that this many CSS pixels fill the screen width (MiniWoB: 160)."""
    init_js: str = ""
    """Extra script run before the page's own scripts in every document."""
    css: str = ""
    """A style sheet added to every document."""
    start_js: str = ""
    state_js: str = ""
    success_js: str = ""
    reset_in_place: bool = False
    """Reset by re-running ``start_js`` on the loaded page instead of a fresh context."""
    reload_every: int = 0
    """With ``reset_in_place``: load the page afresh every this many episodes (0: never)."""
    mobile_viewport: bool = False
    """Give pages without a ``<meta name=viewport>`` one (``width=device-width``)."""
    settle_timer_ms: int = 1000
    """After an action, wait for timers up to this delay (and requests, navigations) to finish..."""
    settle_max_ms: int = 2000
    """... but never longer than this."""

    def __post_init__(self) -> None:
        allowed = tuple(normalize_origin(a) for a in self.allowed_origins)
        if self.local_root is None:
            o = origin_of(self.start_url)
            if o is None:
                raise ValueError(f"start_url must be an http(s) URL, got {self.start_url!r}")
            allowed = allowed or (o,)
            if not _origin_allowed(o, allowed):
                raise ValueError(f"start_url {self.start_url!r} is outside the allowed origins {list(allowed)}")
        elif "://" in self.start_url:
            raise ValueError("with local_root, start_url is a path under it, not a URL")
        object.__setattr__(self, "allowed_origins", allowed)
        if self.content_width is not None and self.content_width <= 0:
            raise ValueError("content_width must be positive")

    def local_directory(self) -> str | None:
        """The directory ``local_root`` names on this machine."""
        if self.local_root is None:
            return None
        root = self.local_root
        if ":" in root and not root.startswith("/") and not (len(root) > 1 and root[1] == ":"):
            import importlib.util
            import os
            mod, _, sub = root.partition(":")
            spec = importlib.util.find_spec(mod)
            if spec is None or not spec.submodule_search_locations:
                raise ValueError(f"local_root {root!r}: package {mod!r} is not installed")
            return os.path.join(list(spec.submodule_search_locations)[0], sub)
        return root

    def resolve(self) -> tuple[str, tuple[str, ...]]:
        """(start URL, allowed origins) on this machine (starts the local server if any)."""
        d = self.local_directory()
        if d is None:
            return self.start_url, self.allowed_origins
        from navrl.device.browser.server import serve_directory
        srv = serve_directory(d)
        return srv.url(self.start_url), tuple(dict.fromkeys((srv.origin,) + self.allowed_origins))

    def context_key(self) -> tuple:
        """What a browser context set up for this app depends on (its sandbox, init scripts,
        style sheet, settle rules). Apps with equal keys (the MiniWoB++ pages) may follow
        each other in one context: a device switches between them by navigating its page
        instead of opening a new context and renderer (~0.6 CPU-s on a phone emulation)."""
        return (self.local_root, self.allowed_origins, self.content_width, self.init_js, self.css,
                self.mobile_viewport, self.settle_timer_ms, self.settle_max_ms, self.reset_in_place)

    def state_function(self) -> str:
        """The body of the page-state function the observer calls."""
        parts = []
        if self.state_js:
            parts.append(f"const __s = (function(){{ {self.state_js}\n}})() || {{}};")
        else:
            parts.append("const __s = {};")
        if self.success_js:
            body = self.success_js if "return" in self.success_js else f"return ({self.success_js}\n);"
            parts.append("try { __s.success = !!(function(){ " + body + "\n})(); } "
                         "catch (e) { __s.success = false; __s.check_error = String(e && e.message || e); }")
        parts.append("return __s;")
        return "\n".join(parts)


def _origin_allowed(o: str, allowed: tuple[str, ...]) -> bool:
    from navrl.device.browser.sandbox import OriginPolicy
    return OriginPolicy(allowed).allows(o + "/")


@dataclass(frozen=True)
class WebSnapshot:
    """A restore point. ``fresh``: the start of an episode of ``app`` with ``seed`` (what a
    pool restores before each episode); otherwise a mid-episode snapshot taken by
    :meth:`BrowserDevice.snapshot`: the URL plus the storage state (cookies, localStorage).
    In-page JavaScript state is not part of a snapshot."""

    app: WebApp
    seed: int | None = None
    phone: str = "iphone"
    url: str | None = None
    storage: Any = field(default=None, compare=False, hash=False)
    fresh: bool = True

    @staticmethod
    def start(app: WebApp, seed: int | None = None, phone: str = "iphone") -> "WebSnapshot":
        return WebSnapshot(app, seed, phone)


@dataclass(frozen=True)
class Emulation:
    """A resolved phone: CSS viewport, device pixels per CSS pixel, screenshot size."""

    descriptor: str
    viewport: tuple[int, int]
    scale: float
    screen: tuple[int, int]
    user_agent: str
    is_mobile: bool
    has_touch: bool
    zoom: float = 1.0

    def context_options(self) -> dict:
        w, h = self.viewport
        return {"viewport": {"width": w, "height": h}, "screen": {"width": w, "height": h},
                "device_scale_factor": self.scale, "user_agent": self.user_agent, "is_mobile": self.is_mobile,
                "has_touch": self.has_touch}

    def metrics_override(self) -> dict:
        w, h = self.viewport
        return {"width": w, "height": h, "deviceScaleFactor": self.scale, "mobile": self.is_mobile,
                "screenWidth": w, "screenHeight": h}

    def to_css(self, x: float, y: float) -> tuple[float, float]:
        """The CSS point at the centre of screenshot pixel (x, y)."""
        return (x + 0.5) / self.scale, (y + 0.5) / self.scale


SCREEN_RE = r"(\d+)x(\d+)(?:@(\d+(?:\.\d+)?))?"
"""A bare touch screen ``WxH@scale`` in CSS pixels (``160x210@1``: MiniWoB's own frame)."""


def check_phone(phone: str) -> str:
    """``phone`` if it names a phone of :data:`PHONES` or a bare ``WxH@scale`` screen, else
    ValueError (Playwright device names are checked when the browser starts)."""
    if phone in PHONES or re.fullmatch(SCREEN_RE, phone.strip()):
        return phone
    raise ValueError(f"phone {phone!r}: use one of {', '.join(sorted(PHONES))} or a screen WxH@scale "
                     f"(160x210@1: MiniWoB's own frame)")


def resolve_emulation(descriptors: dict, phone: str, content_width: int | None = None) -> Emulation:
    """The emulation of ``phone`` (a short name of :data:`PHONES` or a descriptor name),
    zoomed so that ``content_width`` CSS pixels fill the screen width when given."""
    m = re.fullmatch(SCREEN_RE, phone.strip())
    if m:
        # a bare touch screen of W x H CSS pixels at a device scale (``160x210@1``), Pixel user agent
        vw, vh, dsf = int(m.group(1)), int(m.group(2)), float(m.group(3) or 1)
        if not (1 <= vw <= 4096 and 1 <= vh <= 4096 and 0.25 <= dsf <= 8):
            raise ValueError(f"screen {phone!r} out of range")
        d = {"viewport": {"width": vw, "height": vh}, "device_scale_factor": dsf, "is_mobile": True,
             "has_touch": True, "user_agent": descriptors.get(PHONES["pixel"], {}).get("user_agent", "")}
        name = phone.strip()
    else:
        name = PHONES.get(phone, phone)
        if name not in descriptors:
            raise ValueError(f"unknown phone {phone!r}: use {sorted(PHONES)}, a Playwright device name or WxH@scale")
        d = descriptors[name]
        vw, vh = d["viewport"]["width"], d["viewport"]["height"]
        dsf = float(d["device_scale_factor"])
    zoom = 1.0
    if content_width:
        zoom = vw / content_width
        vw, vh = content_width, int(math.floor(vh / zoom))
    scale = dsf * zoom
    return Emulation(name, (vw, vh), scale, (int(round(vw * scale)), int(round(vh * scale))), d["user_agent"],
                     bool(d.get("is_mobile", True)), bool(d.get("has_touch", True)), zoom)
