"""The device pool itself: :class:`DevicePool` leases devices of one backend to episodes and
takes them back, composing its parts: the lease book and gate (:mod:`.leases`), the health
keeper (:mod:`.health`) and the call policy (:mod:`.calls`)."""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures as cf
import logging
import time
from typing import Any, Hashable, Iterable, Sequence

from navrl.actions import Action
from navrl.device.adaptive import AdaptiveLimit, missed_deadline
from navrl.device.aio import run_now
from navrl.device.backend import DeviceBackend, LeaseFailed, PoolExhausted
from navrl.device.base import Device, DeviceError
from navrl.device.pool.calls import DeviceCalls
from navrl.device.pool.config import MAX_FREE_RETRIES, PoolConfig
from navrl.device.pool.dispatch import lease_outcome
from navrl.device.pool.health import HealthKeeper, TaskSnapshots
from navrl.device.pool.leased import FailedDevice, PooledDevice
from navrl.device.pool.leases import LeaseBook, LeaseGate

log = logging.getLogger(__name__)


class DevicePool:
    """Leases devices of one backend to episodes. Thread-safe.

    >>> pool = DevicePool(PhoneWorldBackend(), PoolConfig(size=8))   # doctest: +SKIP
    >>> dev = pool.lease(task); ...; pool.release(dev)

    Its parts: ``calls`` (:class:`~navrl.device.pool.calls.DeviceCalls`: where a device call
    runs, its deadline, reconnect-and-retry), ``book`` (:class:`~navrl.device.pool.leases.LeaseBook`:
    the slots, which one a lease gets), ``gate`` (:class:`~navrl.device.pool.leases.LeaseGate`:
    the adaptive limit on leases in flight), ``health`` (:class:`~navrl.device.pool.health.HealthKeeper`:
    rollback, probe, failure counts, quarantine) and ``snapshots`` (each task's snapshot).
    """

    def __init__(self, backend: DeviceBackend, config: PoolConfig | None = None):
        self.backend = backend
        self.cfg = (config or PoolConfig()).validate()
        self.created_at = time.monotonic()
        self.adaptive: AdaptiveLimit | None = None
        """The limit on devices in flight (``PoolConfig.adaptive``; connected backends only)."""
        if self.cfg.adaptive is not None and not backend.in_process:
            self.adaptive = AdaptiveLimit(self.cfg.adaptive, self.cfg.size)
        self.calls = DeviceCalls(backend, self.cfg, self.adaptive)
        self.book = LeaseBook(backend, self.cfg, self.calls, self.adaptive)
        self.gate = LeaseGate(self.book, self.adaptive)
        self.health = HealthKeeper(backend, self.cfg, self.book, self.calls, self.adaptive)
        self.snapshots = TaskSnapshots(backend, self.cfg.snapshot_cache)

    @property
    def in_flight(self) -> int:
        """Leases past the adaptive gate: devices restoring or leased to an episode."""
        return self.gate.in_flight

    @property
    def in_flight_peak(self) -> int:
        return self.gate.peak

    # ------------------------------------------------------------------ public: leasing
    def lease(self, task: Any) -> PooledDevice:
        """A device restored to ``task``'s snapshot that passed its health probe.

        Raises PoolExhausted, LeaseFailed (both DeviceError) or PoolClosed."""
        return self.calls.drive(self._alease(task, self.snapshots(task), wait=False))

    def release(self, device: PooledDevice, failure: str | None = None) -> None:
        """Return a leased device. ``failure`` (or the device's last DeviceError) counts
        against it; a clean episode resets its consecutive-failure count. Steps still
        running on it are cancelled (abandoned at a deadline): that counts as ``timeout``."""
        if device.released:
            return
        device.released = True
        if device.abandon_steps():
            failure = failure or "timeout"
        self.book.end(device._slot)
        if device.gated:
            device.gated = False
            self.gate.leave()
        self.health.settle(device._slot, failure or device.last_error)

    def lease_batch(self, tasks: Sequence[Any], deadline: float | None = None) -> list[Device]:
        """One device per task; a task whose lease failed gets a :class:`FailedDevice`.

        Connected backends lease all devices at once; a lease still running at ``deadline``
        (``time.monotonic()``) is abandoned and gets a ``timeout`` FailedDevice. A batch
        larger than the pool can never be served at once and raises PoolExhausted (the
        runner queues the episodes beyond :attr:`capacity` and hands devices on instead)."""
        started = self.start_leases(tasks, _wait=False)
        futs = [f for f in started if isinstance(f, cf.Future)]
        if futs:
            cf.wait(futs, None if deadline is None else max(0.0, deadline - time.monotonic()))
        return [lease_outcome(f) for f in started]

    def start_leases(self, tasks: Sequence[Any], _wait: bool = True) -> list[Any]:
        """Start one lease per task and return at once: per task a future of its device (or
        :class:`FailedDevice`) for connected backends, the device itself for in-process ones
        (leased inline). The pipelined runner starts each episode as its own device is ready;
        a future cancelled before its lease finished gives the device back. An adaptive pool
        holds each lease until the devices in flight are below its limit."""
        if len(tasks) > self.cfg.size:
            raise PoolExhausted(f"a batch of {len(tasks)} episodes needs {len(tasks)} devices; "
                                f"the pool holds at most {self.cfg.size}")
        coros = [self._alease_or_failed(t, self.snapshots(t), _wait) for t in tasks]
        if self.backend.in_process:
            return [run_now(c) for c in coros]
        return self.calls.loop().spawn(coros, orphan=lambda dev: self.release(dev, "timeout"))

    def pick_next(self, used: Device, tasks: Sequence[Any]) -> int | None:
        """Which of the waiting ``tasks`` should take over ``used`` (a rolling queue's freed
        device), or None: let it go idle.

        Without affinity (:meth:`DeviceBackend.affinity_key`): the first. With it, in order:
        the first task whose key the device's last restore had (a browser page that shows the
        task's app resets in place instead of loading another page); a task whose key an idle
        device has (``PoolConfig.spare``: the lease takes that one); a task whose key no leased
        device has or is restoring (nothing else would take it). Else None: every waiting
        task's key is on a leased device that takes it next. That costs a longer tail when one
        key has many tasks waiting, but loading the page here costs ~25 in-place resets of CPU
        (a MiniWoB++ page), and on 2 cores MiniWoB RL ran as fast or faster without such loads
        (page loads per update of 64 rollouts ~12 -> ~7, browser CPU per step -20%)."""
        slot = getattr(used, "_slot", None)
        if slot is None or slot.affinity is None:
            return 0
        keys = [self.backend.affinity_key(self.snapshots(t)) for t in tasks]
        for i, k in enumerate(keys):
            if k == slot.affinity:
                return i
        with self.book.lock:
            idle = {s.affinity for s in self.book.idle}
            leased = collections.Counter(s.restoring if s.restoring is not None else s.affinity
                                         for s in self.book.slots.values() if s not in self.book.idle and s is not slot)
        for i, k in enumerate(keys):
            if k is not None and k in idle:
                return i
        waiting = collections.Counter(keys)
        orphans = [i for i, k in enumerate(keys) if k is None or not leased[k]]
        if orphans:
            return max(orphans, key=lambda i: (waiting[keys[i]], -i))
        return None

    def first_wave(self, tasks: Sequence[Any], n: int) -> list[int]:
        """Which ``n`` of a rolling queue's ``tasks`` to start first (indices, in start order).

        Without affinity (:meth:`DeviceBackend.affinity_key` None for every task): the first
        ``n``. With it: first the tasks an idle device's key fits (one per such device; their
        leases take those devices before a task of another key takes any), then one task per
        key before a second of any key (the key's later tasks then wait for the device its
        first one used, which resets in place: a batch of 16 MiniWoB tasks x 4 rollouts on
        16 pages loads each page once instead of once per episode)."""
        keys = [self.backend.affinity_key(self.snapshots(t)) for t in tasks]
        if n >= len(tasks) or all(k is None for k in keys):
            return list(range(min(n, len(tasks))))
        with self.book.lock:
            shown = collections.Counter(s.affinity for s in self.book.idle if s.affinity is not None)
        out: list[int] = []
        for i, k in enumerate(keys):
            if len(out) < n and k is not None and shown[k] > 0:
                shown[k] -= 1
                out.append(i)
        taken = set(out)
        started = collections.Counter(keys[i] for i in out)
        by_key: dict[Hashable, list[int]] = {}
        for i, k in enumerate(keys):
            if i not in taken:
                by_key.setdefault(i if k is None else k, []).append(i)
        lanes = sorted(by_key.items(), key=lambda kv: (started[kv[0]], kv[1][0]))
        depth = 0
        while len(out) < n:
            for _, idx in lanes:
                if depth < len(idx) and len(out) < n:
                    out.append(idx[depth])
            depth += 1
        return out

    def __call__(self, tasks: Sequence[Any] | None = None) -> DevicePool:
        """A farm is its own device factory: ``factory(batch_tasks)`` is the source the
        runner leases that batch from (and returns it to)."""
        return self

    def release_batch(self, devices: Iterable[Device]) -> None:
        """Return every pooled device of a finished batch (other devices are ignored)."""
        for d in devices:
            if isinstance(d, PooledDevice):
                self.release(d)

    # ------------------------------------------------------------------ public: batched steps
    def submit_steps(self, items: list[tuple[Device, Action | None]], want_snapshot: bool) -> list[cf.Future]:
        """Start the steps of several leased devices at once (connected backends): one
        future per item, all waiting together on the pool's loop."""
        return self.calls.loop().spawn([d.astep(a, want_snapshot) for d, a in items])  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ public: bookkeeping
    def stats(self) -> dict:
        """Per-device and pool-wide accounting (utilisation = busy time / lifetime;
        ``calls_in_flight_peak``: most device calls of a connected backend waiting at once)."""
        now = time.monotonic()
        live, retired = self.book.accounts(now)
        devs = [st.to_dict(now, extra) for st, extra in live] + [st.to_dict(now) for st in retired]
        busy = sum(st.busy_s + extra for st, extra in live) + sum(st.busy_s for st in retired)
        life = sum(st.lifetime_s(now) for st, _ in live) + sum(st.lifetime_s(now) for st in retired)
        resets = sum(d["resets"] for d in devs)
        h = self.health
        return {
            "backend": self.backend.name, "devices": len(live), "quarantined": h.quarantined,
            "replaced": h.replaced, "leased": sum(1 for _, extra in live if extra > 0),
            "resets": resets, "episodes": sum(d["episodes"] for d in devs),
            "failures": sum(d["failures"] for d in devs), "timeouts": sum(d["timeouts"] for d in devs),
            "reconnects": sum(d["reconnects"] for d in devs),
            "mean_reset_ms": (sum(d["mean_reset_ms"] * d["resets"] for d in devs) / resets) if resets else 0.0,
            "utilisation": busy / life if life > 0 else 0.0, "calls_in_flight_peak": self.calls.peak,
            "in_flight_peak": self.gate.peak, "shrunk": h.shrunk,
            **({"adaptive": self.adaptive.stats()} if self.adaptive is not None else {}),
            "per_device": devs,
        }

    def close(self) -> None:
        """Close every device (each under the call timeout) and refuse further leases."""
        slots = self.book.close()
        if slots is None:
            return
        for s in slots:
            self.calls.close_device(s)
        self.calls.close()

    def __enter__(self) -> DevicePool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self.book)

    @property
    def capacity(self) -> int:
        """Most devices leased at once (``size``): a runner queues the episodes beyond it."""
        return self.cfg.size

    # ------------------------------------------------------------------ internals: one lease
    async def _alease(self, task: Any, snap: object, wait: bool = True) -> PooledDevice:
        """Lease a device for ``task``: through the adaptive gate (``wait=False``: counted but
        never held there, for synchronous callers that may hold the devices it waits for),
        roll back, probe; ``lease_attempts`` devices in all."""
        last: DeviceError | None = None
        tried: set[int] = set()
        want = self.backend.affinity_key(snap)
        attempts = free = 0
        while attempts < self.cfg.lease_attempts:
            attempts += 1
            await self.gate.enter(wait)
            try:
                slot = await self.book.acquire(avoid=tried, want=want)
            except BaseException:
                self.gate.leave()
                raise
            tried.add(slot.index)
            token = self.adaptive.token() if self.adaptive is not None else 0
            try:
                await self.health.rollback(slot, snap, want, token)
            except DeviceError as e:
                last = e
                self.gate.leave()
                if self.health.count(slot, e.reason):
                    await self.calls.aclose(slot)
                # a restore that missed its deadline on a machine more crowded than the pool
                # now allows is tried again (behind the lowered limit) without counting
                if (self.adaptive is not None and missed_deadline(e) and self.adaptive.dropped_since(token)
                        and free < MAX_FREE_RETRIES):
                    free += 1
                    attempts -= 1
                continue
            except asyncio.CancelledError:    # abandoned at a deadline: the device goes back
                self.gate.leave()
                self.health.settle(slot, "timeout")
                raise
            self.book.begin(slot)
            dev = PooledDevice(self, slot, task)
            dev.gated = self.adaptive is not None
            return dev
        raise LeaseFailed(f"{self.cfg.lease_attempts} devices failed restore or probe; last: {last}")

    async def _alease_or_failed(self, task: Any, snap: object, wait: bool = True) -> Device:
        try:
            return await self._alease(task, snap, wait)
        except DeviceError as e:
            log.warning("lease failed for %s: %s", getattr(task, "id", task), e)
            return FailedDevice(e.reason, str(e))
