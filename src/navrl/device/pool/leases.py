"""Which device serves which lease: the pool's slots (idle, leased, being created, retired),
the choice of an idle device for a task (affinity), the wait for one when all are busy, and
the adaptive gate that holds the leases in flight below the limit."""
from __future__ import annotations

import asyncio
import collections
import threading
import time
from typing import Hashable

from navrl.device.adaptive import AdaptiveLimit
from navrl.device.backend import DeviceBackend, PoolClosed, PoolExhausted
from navrl.device.base import DeviceError
from navrl.device.pool.calls import DeviceCalls
from navrl.device.pool.config import PoolConfig
from navrl.device.pool.slot import DeviceStats, Slot


class LeaseBook:
    """The slots of one pool and their lease state. Thread-safe: ``lock`` (reentrant) guards
    the slots, their stats and the idle queue; a synchronous lease waits on it for a release."""

    def __init__(self, backend: DeviceBackend, cfg: PoolConfig, calls: DeviceCalls, adaptive: AdaptiveLimit | None):
        self.backend, self.cfg, self.calls, self.adaptive = backend, cfg, calls, adaptive
        self.lock = threading.Condition()
        self.slots: dict[int, Slot] = {}
        self.idle: collections.deque[Slot] = collections.deque()
        self.retired: list[DeviceStats] = []
        """Stats of the devices closed for good (quarantined, or shrunk to the adaptive limit)."""
        self.closed = False
        self._next_index = 0
        self._creating = 0

    def __len__(self) -> int:
        return len(self.slots)

    # ------------------------------------------------------------------ taking a slot
    def try_acquire(self, avoid: set[int], want: Hashable | None = None) -> Slot | int | None:
        """Under the lock: an idle slot (preferring ones not in ``avoid``, i.e. not yet tried
        for this lease), else the index of a new one while below ``size``, else None.

        With an affinity ``want`` (see :meth:`DeviceBackend.affinity_key`): first an idle slot
        whose last restore had that key, then a new slot while below ``size`` (a fresh device
        costs what switching an idle one would, and keeps the idle ones for their own key),
        then an idle slot whose key no other idle slot shares, then any."""
        if self.closed:
            raise PoolClosed()
        room = self.adaptive.limit if self.adaptive is not None else self.cfg.size
        if (self.cfg.spare and self.adaptive is None      # (an adaptive pool's gate holds its leases)
                and len(self.slots) - len(self.idle) + self._creating >= room):
            return None         # ``size`` leased already; the others idle as spares
        if want is not None:
            for s in self.idle:
                if s.index not in avoid and s.affinity == want:
                    self.idle.remove(s)
                    return s
        else:
            for s in self.idle:
                if s.index not in avoid:
                    self.idle.remove(s)
                    return s
        # an adaptive pool makes new devices only up to its limit (it reuses idle ones beyond)
        if len(self.slots) + self._creating < room + self.cfg.spare:
            self._creating += 1
            self._next_index += 1
            return self._next_index - 1
        if want is not None:
            free = [s for s in self.idle if s.index not in avoid] or list(self.idle)
            if free:
                keys = collections.Counter(s.affinity for s in free)
                s = min(free, key=lambda s: (s.affinity is not None and keys[s.affinity] == 1))
                self.idle.remove(s)
                return s
        if self.idle:
            return self.idle.popleft()
        return None

    async def acquire(self, avoid: set[int], want: Hashable | None = None) -> Slot:
        """A slot for a lease; waits (up to ``lease_timeout_s``) for a release when all are busy."""
        deadline = time.monotonic() + self.cfg.lease_timeout_s
        while True:
            with self.lock:
                got = self.try_acquire(avoid, want)
                if isinstance(got, Slot):
                    got.restoring = want     # what pick_next sees of it from now on, not its last key
                left = deadline - time.monotonic()
                if got is None and left > 0 and self.backend.in_process:
                    self.lock.wait(left)     # a release notifies
                    continue
            if isinstance(got, Slot):
                return got
            if got is not None:
                return await self._create(got)
            if left <= 0:
                raise PoolExhausted(f"all {self.cfg.size} devices busy for {self.cfg.lease_timeout_s:g} s")
            await asyncio.sleep(min(left, 0.02))

    async def _create(self, index: int) -> Slot:
        try:
            device = await self.calls.blocking(None, lambda: self.backend.create(index),
                                               self.cfg.reconnect_timeout_s, f"create device {index}")
        except BaseException as e:
            with self.lock:
                self._creating -= 1
                self.lock.notify()
            if isinstance(e, Exception) and not isinstance(e, DeviceError):
                # a backend that cannot create a device is infrastructure
                raise DeviceError("device_create_failed", f"{type(e).__name__}: {e}") from e
            raise
        slot = Slot(index, device, self.backend.name)
        with self.lock:
            self.slots[index] = slot
            self._creating -= 1
        return slot

    # ------------------------------------------------------------------ a lease's life
    def begin(self, slot: Slot) -> None:
        """``slot`` (restored and probed) is leased now: a new lease id, busy from now."""
        with self.lock:
            slot.lease_id += 1
            slot.busy_since = time.monotonic()

    def end(self, slot: Slot) -> None:
        """``slot``'s lease ended: its busy time and episode are counted, the lease id moves on
        (so the old lease's handle reaches it no more)."""
        with self.lock:
            if slot.busy_since is not None:
                slot.stats.busy_s += time.monotonic() - slot.busy_since
                slot.busy_since = None
            slot.stats.episodes += 1
            slot.lease_id += 1

    def put_back(self, slot: Slot) -> None:
        """``slot`` is idle again (unless the pool is closed); a waiting lease may take it."""
        with self.lock:
            if not self.closed:
                self.idle.append(slot)
            self.lock.notify()

    def retire(self, slot: Slot) -> DeviceStats:
        """``slot`` leaves the pool for good (its device is to be closed); its stats are kept.
        A waiting lease may create a device in its place."""
        with self.lock:
            st = slot.stats
            st.retired_at = time.monotonic()
            self.slots.pop(slot.index, None)
            self.retired.append(st)
            self.lock.notify()
            return st

    def over_limit(self) -> bool:
        """More devices than the adaptive limit lets run (one given back now would idle)."""
        with self.lock:
            return (self.adaptive is not None and not self.closed
                    and len(self.slots) + self._creating > self.adaptive.limit + self.cfg.spare)

    def close(self) -> list[Slot] | None:
        """Refuse further leases; the slots whose devices are to be closed (None if already closed)."""
        with self.lock:
            if self.closed:
                return None
            self.closed = True
            self.lock.notify_all()
            return list(self.slots.values())

    def accounts(self, now: float) -> tuple[list[tuple[DeviceStats, float]], list[DeviceStats]]:
        """The live slots' stats with their running lease's busy time so far, and the retired stats."""
        with self.lock:
            live = [(s.stats, (now - s.busy_since) if s.busy_since is not None else 0.0) for s in self.slots.values()]
            return live, list(self.retired)


class LeaseGate:
    """Adaptive pools: the leases in flight (restoring or leased to an episode) held below the
    limit. Other pools pass at once and count nothing."""

    def __init__(self, book: LeaseBook, adaptive: AdaptiveLimit | None):
        self.book, self.adaptive = book, adaptive
        self.in_flight = 0
        self.peak = 0

    async def enter(self, wait: bool = True) -> None:
        """Wait until fewer leases than the limit are in flight, then count this one in (a
        lease waits here for its turn; only the runner's deadline ends the wait; ``wait=False``
        counts it in at once)."""
        if self.adaptive is None:
            return
        while True:
            with self.book.lock:
                if self.book.closed:
                    raise PoolClosed()
                if self.in_flight < self.adaptive.limit or not wait:
                    self.in_flight += 1
                    self.peak = max(self.peak, self.in_flight)
                    return
            await asyncio.sleep(0.02)   # polled like acquire(): waiting on the Condition would block the loop

    def leave(self) -> None:
        """A lease counted in by :meth:`enter` is over (failed, abandoned or released)."""
        if self.adaptive is not None:
            with self.book.lock:
                self.in_flight -= 1
