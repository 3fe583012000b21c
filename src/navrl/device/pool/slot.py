"""One device's place in a pool (:class:`Slot`) and what the pool recorded about it
(:class:`DeviceStats`): the record every other part of the pool writes its counts into."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Hashable

from navrl.device.base import Device


@dataclass
class DeviceStats:
    """What the pool recorded about one device (slot)."""

    slot: int
    backend: str
    created_at: float = field(default_factory=time.monotonic)
    resets: int = 0
    reset_s_total: float = 0.0
    reset_s_max: float = 0.0
    episodes: int = 0
    busy_s: float = 0.0
    failures: int = 0
    consecutive_failures: int = 0
    timeouts: int = 0
    reconnects: int = 0
    last_failure: str | None = None
    quarantined: bool = False
    retired_at: float | None = None

    @property
    def mean_reset_ms(self) -> float:
        return 1000 * self.reset_s_total / self.resets if self.resets else 0.0

    def lifetime_s(self, now: float | None = None) -> float:
        end = self.retired_at if self.retired_at is not None else (now or time.monotonic())
        return max(end - self.created_at, 1e-9)

    def utilisation(self, now: float | None = None, busy_extra: float = 0.0) -> float:
        return min(1.0, (self.busy_s + busy_extra) / self.lifetime_s(now))

    def to_dict(self, now: float | None = None, busy_extra: float = 0.0) -> dict:
        d = asdict(self)
        d.pop("created_at")
        d.pop("retired_at")
        d["mean_reset_ms"] = self.mean_reset_ms
        d["utilisation"] = self.utilisation(now, busy_extra)
        return d


class Slot:
    """A device of the pool: the device itself (replaced on reconnect), its stats, its worker
    thread (blocking devices), when its current lease began and which lease holds it."""

    __slots__ = ("index", "device", "stats", "executor", "busy_since", "lease_id", "affinity", "restoring")

    def __init__(self, index: int, device: Device, backend: str):
        self.index, self.device = index, device
        self.stats = DeviceStats(index, backend)
        self.executor: ThreadPoolExecutor | None = None
        self.busy_since: float | None = None
        self.lease_id = 0
        self.affinity: Hashable | None = None    # the backend's affinity_key of its last restore
        self.restoring: Hashable | None = None   # ... of the restore under way
