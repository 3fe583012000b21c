"""The Chromium device backend (Playwright): live web apps and MiniWoB++ on an emulated phone.

>>> from navrl.device.browser import BrowserDevice, WebApp          # doctest: +SKIP
>>> app = WebApp("demo", "http://127.0.0.1:8000/index.html")
>>> dev = BrowserDevice(app, phone="pixel"); obs = dev.observe()

Needs the ``browser`` extra (``pip install 'navrl[browser]'``) and a Chromium: Debian's
``chromium`` package, or Playwright's own browser where a user installed it. navrl
never downloads a browser. See docs/web.md.
"""
from __future__ import annotations

from navrl.device.browser.app import PHONES, Emulation, WebApp, WebSnapshot, resolve_emulation
from navrl.device.browser.chromium import BrowserUnavailable, chromium_or_none, find_chromium, playwright_available
from navrl.device.browser.sandbox import OriginPolicy, SandboxError

__all__ = ["PHONES", "BrowserBackend", "BrowserDevice", "BrowserHost", "BrowserUnavailable", "Emulation",
           "OriginPolicy", "SandboxError", "WebApp", "WebObservation", "WebSnapshot", "browser_ready",
           "chromium_or_none", "default_host", "find_chromium", "playwright_available", "resolve_emulation",
           "serve_directory"]


def browser_ready() -> str | None:
    """None when the browser device can run here, else the reason it cannot."""
    if not playwright_available():
        return "Playwright is not installed (pip install 'navrl[browser]')"
    if chromium_or_none() is None:
        return "no Chromium executable (apt-get install chromium, or set NAVRL_CHROMIUM)"
    return None


def __getattr__(name: str):
    # the device, host and backend import Playwright-free modules only, but keep the
    # package import light for `navrl tasks`
    if name in ("BrowserDevice", "WebObservation"):
        from navrl.device.browser import device
        return getattr(device, name)
    if name in ("BrowserHost", "default_host"):
        from navrl.device.browser import host
        return getattr(host, name)
    if name == "BrowserBackend":
        from navrl.device.browser.backend import BrowserBackend
        return BrowserBackend
    if name == "serve_directory":
        from navrl.device.browser.server import serve_directory
        return serve_directory
    raise AttributeError(name)
