"""Touch input through CDP ``Input.dispatchTouchEvent``: taps, long presses and swipes as
real touch sequences (the page sees touchstart/touchmove/touchend; Chromium turns a tap
into mouse events and a click, and a drag into a scroll).

Swipes are made exact and repeatable: event timestamps are synthetic (10 CSS px per
16 ms, then the finger rests for 200 ms before lifting, so no fling follows), and the
finger starts :data:`TOUCH_SLOP` CSS pixels before the requested start point, because
Chromium lets that much movement pass before a drag becomes a scroll. A swipe from
(x1, y1) to (x2, y2) therefore moves a scrollable page by (x1 - x2, y1 - y2) screenshot
pixels (content follows the finger), to the CSS pixel. (Chromium is launched without input
resampling, which would otherwise shift scrolls by frame timing.)

Chromium injects each DevTools touch event on its synthetic-gesture timer (about one
event per frame), so a swipe takes a few hundred milliseconds; a tap sends its two
events back to back without waiting between them.
"""
from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from navrl.actions import Action

__all__ = ["TOUCH_SLOP", "swipe_endpoints", "tap", "long_press", "swipe", "swipe_points"]

TOUCH_SLOP = 15.0
"""CSS pixels a touch moves before Chromium starts scrolling (its gesture detector's slop)."""
STEP_CSS = 10.0
FRAME_S = 0.016
REST_FRAMES = 5
REST_S = 0.04


def swipe_endpoints(a: Action, size: tuple[int, int], fraction: float = 0.4) -> tuple[int, int, int, int]:
    """(x1, y1, x2, y2) in screenshot pixels: explicit end points, or ``fraction`` of the
    screen in the finger's direction from the given start (default: the centre), on screen.
    (The same convention as the Android backend: ``swipe up`` moves the finger up.)"""
    w, h = size
    if None not in (a.x, a.y, a.x2, a.y2):
        return a.x, a.y, a.x2, a.y2  # type: ignore[return-value]
    sx = a.x if a.x is not None else w // 2
    sy = a.y if a.y is not None else h // 2
    dx = {"left": -1, "right": 1}.get(a.direction or "", 0) * int(w * fraction)
    dy = {"up": -1, "down": 1}.get(a.direction or "", 0) * int(h * fraction)
    return sx, sy, min(max(sx + dx, 1), w - 2), min(max(sy + dy, 1), h - 2)


async def _send(cdp: Any, kind: str, pts: list[tuple[float, float]], ts: float | None = None) -> None:
    msg: dict = {"type": kind, "touchPoints": [{"x": x, "y": y, "radiusX": 1, "radiusY": 1, "force": 1}
                                               for x, y in pts]}
    if ts is not None:
        msg["timestamp"] = ts
    await cdp.send("Input.dispatchTouchEvent", msg)


async def tap(cdp: Any, x: float, y: float) -> None:
    """Finger down and up at CSS point (x, y) (both events queued at once: one timer tick)."""
    await asyncio.gather(_send(cdp, "touchStart", [(x, y)]), _send(cdp, "touchEnd", []))


async def long_press(cdp: Any, x: float, y: float, duration: float) -> None:
    """Finger held still at (x, y) for ``duration`` seconds (the page's long-press handlers
    fire; navrl's init script turns it into a ``contextmenu`` and suppresses the click)."""
    await _send(cdp, "touchStart", [(x, y)])
    await asyncio.sleep(duration)
    await _send(cdp, "touchEnd", [])


def swipe_points(x1: float, y1: float, x2: float, y2: float, viewport: tuple[int, int]) -> list[tuple[float, float]]:
    """The finger's path in CSS pixels: from TOUCH_SLOP before (x1, y1) (clamped to the
    viewport), one move to just inside the slop, 1-pixel steps across it, then STEP_CSS
    steps to (x2, y2)."""
    dx, dy = x2 - x1, y2 - y1
    dist = math.hypot(dx, dy)
    if dist < 1e-6:
        return [(x1, y1)]
    ux, uy = dx / dist, dy / dist
    vw, vh = viewport
    back = TOUCH_SLOP
    # keep the pre-roll on screen
    for _ in range(2):
        sx, sy = x1 - ux * back, y1 - uy * back
        if 0 <= sx < vw and 0 <= sy < vh:
            break
        lim = []
        if ux > 0:
            lim.append(x1 / ux)
        elif ux < 0:
            lim.append((vw - 1e-3 - x1) / -ux)
        if uy > 0:
            lim.append(y1 / uy)
        elif uy < 0:
            lim.append((vh - 1e-3 - y1) / -uy)
        back = max(0.0, min([back] + lim))
    total = dist + back
    pts = [(x1 - ux * back, y1 - uy * back)]
    pos = max(0.0, back - 1.0)
    if pos > 0:
        pts.append((x1 - ux * back + ux * pos, y1 - uy * back + uy * pos))
    while pos < total - 1e-9:
        inc = 1.0 if pos < back + 2.0 else STEP_CSS
        pos = min(total, pos + inc)
        pts.append((x1 - ux * back + ux * pos, y1 - uy * back + uy * pos))
    return pts


async def swipe(cdp: Any, x1: float, y1: float, x2: float, y2: float, viewport: tuple[int, int]) -> None:
    """A drag from (x1, y1) to (x2, y2) (CSS pixels) ending at rest, with synthetic timestamps."""
    pts = swipe_points(x1, y1, x2, y2, viewport)
    # the synthetic clock ends now: no event carries a timestamp in the future
    t = time.time() - FRAME_S * (len(pts) + 1) - REST_S * REST_FRAMES
    await _send(cdp, "touchStart", [pts[0]], t)
    for p in pts[1:]:
        t += FRAME_S
        await _send(cdp, "touchMove", [p], t)
    for _ in range(REST_FRAMES):
        t += REST_S
        await _send(cdp, "touchMove", [pts[-1]], t)
    t += FRAME_S
    await _send(cdp, "touchEnd", [], t)
