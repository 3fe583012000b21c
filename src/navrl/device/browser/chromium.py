"""Finding a Chromium to drive, and the flags it is launched with.

No download ever happens at run time: navrl launches a system Chromium (Debian's
``chromium`` package: ``/usr/bin/chromium``) when one is installed, else the browser
Playwright installed for the user (``playwright install chromium``) if it is there.
``NAVRL_CHROMIUM`` names an executable explicitly.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["BrowserUnavailable", "LAUNCH_ARGS", "find_chromium", "chromium_or_none", "playwright_available",
           "renderer_processes"]


class BrowserUnavailable(RuntimeError):
    """Playwright is not installed, or no Chromium executable was found."""


SYSTEM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")

PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync", "DestroyProfileOnBrowserClose", "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable", "LensOverlay", "MediaRouter", "PaintHolding", "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect", "OptimizationHints", "NetworkTimeServiceQuerying", "AimEnabled",
    "PreconnectToSearch",
)
"""Playwright's own ``--disable-features`` list: Chromium reads one such flag, the last, so
navrl's flag repeats it."""

NAVRL_DISABLED_FEATURES = ("ResamplingScrollEvents", "ResamplingInputEvents",
                           "WebUIOmniboxPopup", "WebUIOmniboxFullPopup", "WebUIOmniboxAimPopup")
"""Input resampling moves touch-driven scrolls by frame timing; without it a swipe scrolls
by exactly its drag distance, every time. The omnibox popups are WebUI pages that Chromium
(since ~M140) renders in renderer processes of their own for every browser window, so every
browser context of a headless run cost two extra renderers (3 pages: 7 renderer processes,
chrome://omnibox-popup targets); without them a farm runs one renderer per page, plus
Chromium's one spare."""

LAUNCH_ARGS = (
    "--no-sandbox",                      # root in containers / CI; the page sandbox is navrl's routing
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--dns-prefetch-disable",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-gpu-vsync",
    "--disable-dev-shm-usage",
    "--disable-features=" + ",".join(PLAYWRIGHT_DISABLED_FEATURES + NAVRL_DISABLED_FEATURES),
)
"""Flags of every launch: headless, no GPU, nothing phoning home.

Frames stay paced at Chromium's 60 Hz: with ``--disable-frame-rate-limit`` (the flag navrl
launched with until 2026-12) the compositor runs frames back to back after every change
until the page is still, and a screenshot after a tap cost ~25 ms of browser and GPU
process CPU instead of ~3, a MiniWoB page load ~330 ms instead of ~120
(``bench/miniwob_call_cpu.py``); the price is up to a frame (16 ms) of latency per
screenshot or ``requestAnimationFrame`` wait, which other pages' work fills."""


def playwright_available() -> bool:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return False
    return True


def _playwright_bundled() -> str | None:
    """The Chromium Playwright downloaded for this user, if any (never downloads)."""
    root = Path(os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or Path.home() / ".cache" / "ms-playwright")
    if not root.is_dir():
        return None
    for pattern in ("chromium-*/chrome-linux*/chrome", "chromium_headless_shell-*/chrome-*/headless_shell",
                    "chromium-*/chrome-mac*/Chromium.app/Contents/MacOS/Chromium"):
        hits = sorted(root.glob(pattern), reverse=True)
        for h in hits:
            if os.access(h, os.X_OK):
                return str(h)
    return None


def chromium_or_none() -> str | None:
    """Path of a usable Chromium, or None."""
    env = os.environ.get("NAVRL_CHROMIUM")
    if env:
        p = shutil.which(env) or env
        return p if os.path.isfile(p) and os.access(p, os.X_OK) else None
    for name in SYSTEM_CANDIDATES:
        p = shutil.which(name)
        if p:
            return p
    for p in ("/usr/bin/chromium", "/usr/lib/chromium/chromium", "/snap/bin/chromium"):
        if os.access(p, os.X_OK):
            return p
    return _playwright_bundled()


def find_chromium() -> str:
    """Path of the Chromium to launch; BrowserUnavailable (with what to do) when none exists."""
    if not playwright_available():
        raise BrowserUnavailable("the browser device needs Playwright: pip install 'navrl[browser]'")
    p = chromium_or_none()
    if p is None:
        if os.environ.get("NAVRL_CHROMIUM"):
            raise BrowserUnavailable(f"NAVRL_CHROMIUM={os.environ['NAVRL_CHROMIUM']!r} is not an executable")
        raise BrowserUnavailable("no Chromium found: install Debian's package (apt-get install chromium) or "
                                 "set NAVRL_CHROMIUM=/path/to/chrome (navrl never downloads a browser)")
    return p


def renderer_processes(root: int | None = None) -> list[int]:
    """Process ids of the Chromium renderer processes below ``root`` (default: this process,
    i.e. the browsers its devices launched), read from ``/proc``; ``[]`` where there is none.

    A renderer is a process whose command line carries ``--type=renderer`` (Chromium
    rewrites its children's command lines into one string, so the flag is searched as
    text). Benchmarks sample it during a run; tests check that a closed farm left none."""
    base = Path("/proc")
    if not base.is_dir():
        return []
    children: dict[int, list[int]] = {}
    for d in base.iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):      # gone meanwhile
            continue
        children.setdefault(ppid, []).append(int(d.name))
    out: list[int] = []
    stack = [os.getpid() if root is None else root]
    while stack:
        for c in children.get(stack.pop(), ()):
            stack.append(c)
            try:
                cmd = (base / str(c) / "cmdline").read_bytes()
            except OSError:
                continue
            if b"--type=renderer" in cmd:
                out.append(c)
    return sorted(out)
