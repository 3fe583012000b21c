"""Mouse input through CDP ``Input.dispatchMouseEvent``: a drag with the left button, for the
elements that listen to mouse events only (jQuery UI's draggable, sortable, slider and
resizable; d3's drag). The device sends a SWIPE this way where its start point lies on such an
element (``_js.MOUSE_DRAG_AT_JS``), and as a touch swipe (:mod:`touch`) everywhere else.

The pointer moves to the start, presses, moves in :data:`STEP_CSS` steps to the end (jQuery UI
starts a drag after 1 px of movement; a sortable re-sorts on each move), rests, and releases
there. Chromium's touch emulation leaves DevTools mouse events as mouse events (it turns mouse
into touch only with ``Emulation.setEmitTouchEventsForMouse``, which the device never sets).
"""
from __future__ import annotations

import asyncio
import math
from typing import Any

__all__ = ["drag", "drag_points"]

STEP_CSS = 8.0
REST_S = 0.05


def drag_points(x1: float, y1: float, x2: float, y2: float) -> list[tuple[float, float]]:
    """The pointer's path in CSS pixels after the press: STEP_CSS steps from (x1, y1) to (x2, y2)."""
    n = max(1, math.ceil(math.hypot(x2 - x1, y2 - y1) / STEP_CSS))
    return [(x1 + (x2 - x1) * i / n, y1 + (y2 - y1) * i / n) for i in range(1, n + 1)]


async def _send(cdp: Any, kind: str, x: float, y: float, buttons: int, **kw: Any) -> None:
    await cdp.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "buttons": buttons,
                                                 "pointerType": "mouse", **kw})


async def drag(cdp: Any, x1: float, y1: float, x2: float, y2: float) -> None:
    """Press the left button at (x1, y1), move to (x2, y2), rest, release (CSS pixels)."""
    await _send(cdp, "mouseMoved", x1, y1, 0)
    await _send(cdp, "mousePressed", x1, y1, 1, button="left", clickCount=1)
    for x, y in drag_points(x1, y1, x2, y2):
        await _send(cdp, "mouseMoved", x, y, 1, button="left")
    await asyncio.sleep(REST_S)
    await _send(cdp, "mouseMoved", x2, y2, 1, button="left")
    await _send(cdp, "mouseReleased", x2, y2, 0, button="left", clickCount=1)
