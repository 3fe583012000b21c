"""What crosses between the learner and a device host: tagged replies (``("ok", value)``,
``("err", reason, message)`` or ``("raise", exception)``), observations as :class:`Wire`, and
the reason every call to a lost host fails with (:data:`HOST_LOST`)."""
from __future__ import annotations

from dataclasses import dataclass

from navrl.device.base import DeviceError
from navrl.observation import UINode

HOST_LOST = "device_host_lost"


@dataclass(frozen=True)
class Wire:
    """An observation on the wire: the UI tree, and the PNG only in eager mode."""

    nodes: tuple[UINode, ...]
    app: str | None
    screen_size: tuple[int, int]
    platform: str
    seq: int
    png: bytes | None = None


def err_reply(e: DeviceError) -> tuple:
    return ("err", e.reason, str(e))

