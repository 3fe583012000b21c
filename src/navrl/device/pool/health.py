"""Keeping a pool's devices sound: roll a device back to its task's snapshot (cached per
task) and probe its health before a lease, count every failure against the device, and
retire it (closed and replaced) when it fails too often or the adaptive limit has no room for it."""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Hashable

from navrl.device.adaptive import AdaptiveLimit
from navrl.device.backend import DeviceBackend
from navrl.device.base import DeviceError
from navrl.device.pool.calls import DeviceCalls
from navrl.device.pool.config import PoolConfig
from navrl.device.pool.leases import LeaseBook
from navrl.device.pool.slot import Slot
from navrl.lru import BoundedCache

log = logging.getLogger(__name__)


class TaskSnapshots:
    """The snapshot each task's device is rolled back to: made once per task (``task_key``),
    the last ``snapshot_cache`` kept (least recently used out). Thread-safe."""

    def __init__(self, backend: DeviceBackend, size: int):
        self.backend = backend
        self._cache: BoundedCache[Hashable, object] = BoundedCache(size, touch=True)
        self._lock = threading.Lock()

    def __call__(self, task: Any) -> object:
        key = self.backend.task_key(task)
        with self._lock:
            snap = self._cache.get(key)
        if snap is None:
            snap = self.backend.task_snapshot(task)
            with self._lock:
                self._cache.put(key, snap)
        return snap


class HealthKeeper:
    """Rollback, probe and the failure count of one pool's devices.

    ``quarantined``: devices closed after ``max_consecutive_failures`` failures in a row (one
    for a disposable backend), each ``replaced`` by the next acquire; ``shrunk``: devices
    closed as they came back because the pool held more than the adaptive limit.
    """

    def __init__(self, backend: DeviceBackend, cfg: PoolConfig, book: LeaseBook, calls: DeviceCalls,
                 adaptive: AdaptiveLimit | None):
        self.backend, self.cfg, self.book, self.calls, self.adaptive = backend, cfg, book, calls, adaptive
        self.quarantined = 0
        self.replaced = 0
        self.shrunk = 0

    async def rollback(self, slot: Slot, snap: object, want: Hashable | None, token: int) -> None:
        """Restore ``slot``'s device to ``snap`` and probe it; raises DeviceError (``unhealthy``
        for a failed probe). A success is timed as a reset (and told to the adaptive limit,
        ``token`` from before the restore)."""
        t0 = time.monotonic()
        slot.affinity, slot.restoring = None, want
        try:
            await self.calls.call(slot, "restore", (snap,))
        finally:
            slot.restoring = None
        slot.affinity = want
        h = await self.calls.call(slot, "health", ())
        if not h.ok:
            raise DeviceError("unhealthy", h.detail or "health probe failed")
        dt = time.monotonic() - t0
        if self.adaptive is not None:
            self.adaptive.restored(token, dt)
        with self.book.lock:
            st = slot.stats
            st.resets += 1
            st.reset_s_total += dt
            st.reset_s_max = max(st.reset_s_max, dt)

    def count(self, slot: Slot, failure: str | None) -> bool:
        """Count a failure (quarantining at the limit) or a success; idle the slot again.
        True when the device was quarantined, or retired to hold the adaptive limit, and must be closed."""
        limit = 1 if self.backend.disposable else self.cfg.max_consecutive_failures
        with self.book.lock:
            st = slot.stats
            if failure:
                st.failures += 1
                st.consecutive_failures += 1
                st.last_failure = failure
                quarantine, shrink = st.consecutive_failures >= limit, False
            else:
                st.consecutive_failures = 0
                # more devices than the adaptive limit lets run: close this one (it would idle)
                quarantine, shrink = False, self.book.over_limit()
            if not (quarantine or shrink):
                self.book.put_back(slot)
                return False
            self.book.retire(slot)
            if shrink:
                self.shrunk += 1
            else:
                st.quarantined = True
                self.quarantined += 1
                self.replaced += 1      # the next acquire creates its replacement
        if shrink:
            log.info("%s device %d closed: the adaptive limit is %d devices in flight", self.backend.name,
                     slot.index, self.adaptive.limit)   # type: ignore[union-attr]
        else:
            log.warning("%s device %d quarantined after %d consecutive failures (last: %s); replacing it",
                        self.backend.name, slot.index, st.consecutive_failures, failure)
        return True

    def settle(self, slot: Slot, failure: str | None) -> None:
        """:meth:`count`, closing the device when it leaves the pool."""
        if self.count(slot, failure):
            self.calls.close_device(slot)
