"""The device pool: leases devices to episodes, rolls them back, probes and heals them.

One :class:`DevicePool` serves any backend (phone world, browser, Android, iOS) through a
small :class:`~navrl.device.backend.DeviceBackend` adapter:

- **lease**: take an idle device (or create one, up to ``size``), restore it from the
  task's snapshot, then run the health probe; only a device that answers ``ok`` is
  handed out. A failed restore or probe counts against the device and the next device
  is tried (``lease_attempts`` in all).
- **heal**: a device that fails ``max_consecutive_failures`` times in a row (restore,
  probe, or an episode that ended in a :class:`DeviceError` on it) is quarantined,
  closed and replaced by a fresh one from the backend.
- **timeouts**: every device call runs under ``call_timeout_s``. A call that times out
  or fails with a connection-type reason gets one reconnect (``backend.reconnect``) and
  one retry; a second failure raises :class:`DeviceError`.
- **accounting**: per device, resets and reset time, failures, timeouts, reconnects,
  episodes and utilisation (busy time / lifetime); :meth:`DevicePool.stats`.

The pool is also the in-process *farm*: :meth:`DevicePool.lease_batch` and
:meth:`DevicePool.release_batch` are what :class:`navrl.rollout.runner.EpisodeRunner`
calls when it is given a farm instead of a device list. The Ray farm
(:mod:`navrl.device.ray_farm`) offers the same two methods with one pool per host.

Layer 2: tasks are opaque here. The pool reads nothing of a task but what its backend
needs (the phone-world backend calls ``task.make_device()``).

The backend contract and the lease errors live in :mod:`navrl.device.backend`, the
phone-world backend in :mod:`navrl.device.phone_backend`; both are re-exported here.
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Hashable, Iterable, Protocol, Sequence, runtime_checkable

from navrl.actions import Action
from navrl.device.backend import DeviceBackend, DeviceTimeout, LeaseFailed, PoolClosed, PoolExhausted
from navrl.device.base import ActResult, Device, DeviceError, Health
from navrl.device.phone_backend import PhoneSlot, PhoneTaskSnapshot, PhoneWorldBackend
from navrl.observation import Observation

log = logging.getLogger(__name__)

__all__ = [  # backend contract, lease errors and the phone-world backend are re-exported
    "DeviceBackend", "DeviceFarm", "DevicePool", "DeviceStats", "DeviceTimeout", "FailedDevice", "LeaseFailed", "PhoneSlot",
    "PhoneTaskSnapshot", "PhoneWorldBackend", "PoolClosed", "PoolConfig", "PoolExhausted", "PooledDevice",
    "StepOutcome", "step_devices",
]

RETRY_REASONS = frozenset({"timeout", "connection", "device_lost", "device_offline", "adb_error", "wda_error"})
"""DeviceError reasons that get one reconnect-and-retry (transport trouble, not a verdict on the task)."""


# ---------------------------------------------------------------------------------- config
@dataclass(frozen=True)
class PoolConfig:
    """Settings of one :class:`DevicePool`."""

    size: int = 64
    """Most devices the pool holds at once (they are created lazily, on demand)."""
    call_timeout_s: float | None = 30.0
    """Deadline of every single device call (observe, act, snapshot, restore, health).
    None runs calls inline without a deadline (only for in-process devices that cannot hang)."""
    restore_timeout_s: float | None = 180.0
    """Deadline of ``restore`` (loading an emulator snapshot takes far longer than a tap);
    None uses ``call_timeout_s``."""
    reconnect_timeout_s: float = 60.0
    """Deadline of one ``backend.reconnect`` or ``backend.create``."""
    lease_timeout_s: float = 60.0
    """How long :meth:`DevicePool.lease` waits for a free device before PoolExhausted."""
    lease_attempts: int = 3
    """Devices tried per lease before LeaseFailed (each failed restore/probe counts a failure)."""
    max_consecutive_failures: int = 3
    """A device failing this many times in a row is quarantined and replaced."""
    retry_reasons: frozenset = RETRY_REASONS
    """DeviceError reasons that get one reconnect-and-retry; other errors propagate at once."""
    snapshot_cache: int = 1024
    """Task snapshots kept (LRU) so that a task's snapshot is made once per pool."""

    def validate(self) -> "PoolConfig":
        if self.size <= 0:
            raise ValueError(f"pool size must be positive, got {self.size}")
        if self.call_timeout_s is not None and self.call_timeout_s <= 0:
            raise ValueError("call_timeout_s must be positive or None")
        if self.lease_attempts <= 0 or self.max_consecutive_failures <= 0:
            raise ValueError("lease_attempts and max_consecutive_failures must be positive")
        return self


# ---------------------------------------------------------------------------------- stats
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


class _Slot:
    __slots__ = ("index", "device", "stats", "executor", "busy_since", "lease_id")

    def __init__(self, index: int, device: Device, backend: str):
        self.index, self.device = index, device
        self.stats = DeviceStats(index, backend)
        self.executor: ThreadPoolExecutor | None = None
        self.busy_since: float | None = None
        self.lease_id = 0


# ---------------------------------------------------------------------------------- leased device
class PooledDevice(Device):
    """A leased device: every call goes through the pool (timeout, reconnect-and-retry).

    Closing it returns it to the pool. ``last_error`` holds the reason of the last
    DeviceError it raised, which the pool counts against the device on release.
    Attribute reads outside the Device protocol are forwarded to the backend device.
    """

    def __init__(self, pool: "DevicePool", slot: _Slot, task: Any):
        self._pool, self._slot, self._lease_id = pool, slot, slot.lease_id
        self.task = task
        self.platform = slot.device.platform
        self.last_error: str | None = None
        self.released = False

    @property
    def slot(self) -> int:
        return self._slot.index

    @property
    def step_batcher(self) -> "DevicePool | None":
        return None if self._pool.backend.in_process else self._pool

    def _call(self, name: str, *args: Any) -> Any:
        if self.released or self._slot.lease_id != self._lease_id:
            raise DeviceError("lease_released", "this device was returned to the pool")
        try:
            return self._pool._call(self._slot, name, *args)
        except DeviceError as e:
            self.last_error = e.reason
            raise

    def observe(self) -> Observation:
        return self._call("observe")

    def act(self, action: Action) -> ActResult:
        return self._call("act", action)

    def snapshot(self) -> object:
        return self._call("snapshot")

    def restore(self, snapshot: object) -> None:
        self._call("restore", snapshot)

    def health(self) -> Health:
        return self._call("health")

    def close(self) -> None:
        if not self.released:
            self._pool.release(self)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._slot.device, name)


class FailedDevice(Device):
    """Stands in for a device that could not be leased: every call raises DeviceError(reason),
    so the runner masks the episode at its first observation."""

    platform = "none"

    def __init__(self, reason: str, message: str = ""):
        self.reason, self.message = reason, message
        self.last_error = reason

    def _fail(self, *_: Any) -> Any:
        raise DeviceError(self.reason, self.message)

    observe = act = snapshot = restore = _fail  # type: ignore[assignment]

    def health(self) -> Health:
        return Health(False, self.reason)

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------------- batched steps
StepOutcome = tuple  # (Observation, snapshot or None)


@runtime_checkable
class DeviceFarm(Protocol):
    """What the episode runner needs from a source of devices: the in-process
    :class:`DevicePool` and :class:`navrl.device.ray_farm.RayFarm` both are one."""

    def lease_batch(self, tasks: Sequence[Any]) -> list[Device]:
        """One device per task (a :class:`FailedDevice` where the lease failed)."""

    def release_batch(self, devices: Iterable[Device]) -> None:
        """Give back the devices of a finished batch."""

    def stats(self) -> dict:
        """Accounting for logs."""

    def close(self) -> None:
        """Release every device and host."""


def _step_one(device: Device, action: Action, want_snapshot: bool) -> StepOutcome:
    device.act(action)
    obs = device.observe()
    return obs, (device.snapshot() if want_snapshot else None)


def step_devices(devices: Sequence[Device], actions: Sequence[Action],
                 want_snapshot: bool) -> list[StepOutcome | BaseException]:
    """Act on every device, then observe it (and snapshot it when asked): one runner step.

    Devices that expose a ``step_batcher`` (remote hosts, I/O-bound pools) are handed
    over per batcher, all batchers first and then gathered, so hosts and real devices
    work in parallel; other devices step in order in this thread. Each item of the
    result is ``(observation, snapshot-or-None)`` or the exception that device raised.
    """
    if len(devices) != len(actions):
        raise ValueError("one action per device")
    out: list[Any] = [None] * len(devices)
    groups: dict[int, tuple[Any, list[int]]] = {}
    local: list[int] = []
    for i, d in enumerate(devices):
        b = getattr(d, "step_batcher", None)
        if b is None:
            local.append(i)
        else:
            groups.setdefault(id(b), (b, []))[1].append(i)
    waits = []
    for b, idx in groups.values():
        try:
            waits.append((idx, b.submit_steps([(devices[i], actions[i]) for i in idx], want_snapshot)))
        except DeviceError as e:
            for i in idx:
                out[i] = e
    for i in local:
        try:
            out[i] = _step_one(devices[i], actions[i], want_snapshot)
        except Exception as e:  # noqa: BLE001 - handed back to the caller, which re-raises non-DeviceErrors
            out[i] = e
    for idx, wait in waits:
        for i, r in zip(idx, wait()):
            out[i] = r
    return out


# ---------------------------------------------------------------------------------- the pool
class DevicePool:
    """Leases devices of one backend to episodes. Thread-safe.

    >>> pool = DevicePool(PhoneWorldBackend(), PoolConfig(size=8))   # doctest: +SKIP
    >>> dev = pool.lease(task); ...; pool.release(dev)
    """

    def __init__(self, backend: DeviceBackend, config: PoolConfig | None = None):
        self.backend = backend
        self.cfg = (config or PoolConfig()).validate()
        self._lock = threading.Condition()
        self._slots: dict[int, _Slot] = {}
        self._idle: collections.deque[_Slot] = collections.deque()
        self._next_index = 0
        self._snapshots: collections.OrderedDict[Hashable, object] = collections.OrderedDict()
        self._snap_lock = threading.Lock()
        self.retired: list[DeviceStats] = []
        self.quarantined = 0
        self.replaced = 0
        self._closed = False
        self._dispatch: ThreadPoolExecutor | None = None
        self.created_at = time.monotonic()

    # ------------------------------------------------------------------ public: leasing
    def lease(self, task: Any) -> PooledDevice:
        """A device restored to ``task``'s snapshot that passed its health probe.

        Raises PoolExhausted, LeaseFailed (both DeviceError) or PoolClosed."""
        snap = self._task_snapshot(task)
        last: DeviceError | None = None
        tried: set[int] = set()
        for _ in range(self.cfg.lease_attempts):
            slot = self._acquire(avoid=tried)
            tried.add(slot.index)
            t0 = time.monotonic()
            try:
                self._call(slot, "restore", snap)
                h = self._call(slot, "health")
                if not h.ok:
                    raise DeviceError("unhealthy", h.detail or "health probe failed")
            except DeviceError as e:
                last = e
                self._settle(slot, e.reason)
                continue
            dt = time.monotonic() - t0
            with self._lock:
                st = slot.stats
                st.resets += 1
                st.reset_s_total += dt
                st.reset_s_max = max(st.reset_s_max, dt)
                slot.lease_id += 1
                slot.busy_since = time.monotonic()
            return PooledDevice(self, slot, task)
        raise LeaseFailed(f"{self.cfg.lease_attempts} devices failed restore or probe; last: {last}")

    def release(self, device: PooledDevice, failure: str | None = None) -> None:
        """Return a leased device. ``failure`` (or the device's last DeviceError) counts
        against it; a clean episode resets its consecutive-failure count."""
        if device.released:
            return
        device.released = True
        slot = device._slot
        with self._lock:
            if slot.busy_since is not None:
                slot.stats.busy_s += time.monotonic() - slot.busy_since
                slot.busy_since = None
            slot.stats.episodes += 1
            slot.lease_id += 1
        self._settle(slot, failure or device.last_error)

    def lease_batch(self, tasks: Sequence[Any]) -> list[Device]:
        """One device per task; a task whose lease failed gets a :class:`FailedDevice`.

        A batch larger than the pool can never be served (episodes hold their devices to
        the end) and raises PoolExhausted at once."""
        if len(tasks) > self.cfg.size:
            raise PoolExhausted(f"a batch of {len(tasks)} episodes needs {len(tasks)} devices; "
                                f"the pool holds at most {self.cfg.size}")
        def one(task: Any) -> Device:
            try:
                return self.lease(task)
            except DeviceError as e:
                log.warning("lease failed for %s: %s", getattr(task, "id", task), e)
                return FailedDevice(e.reason, str(e))
        if not self.backend.in_process and len(tasks) > 1:
            return list(self._dispatcher().map(one, tasks))
        return [one(t) for t in tasks]

    def __call__(self, tasks: Sequence[Any] | None = None) -> "DevicePool":
        """A farm is its own device factory: ``factory(batch_tasks)`` is the source the
        runner leases that batch from (and returns it to)."""
        return self

    def release_batch(self, devices: Iterable[Device]) -> None:
        """Return every pooled device of a finished batch (other devices are ignored)."""
        for d in devices:
            if isinstance(d, PooledDevice):
                self.release(d)

    # ------------------------------------------------------------------ public: batched steps
    def submit_steps(self, items: list[tuple[Device, Action]], want_snapshot: bool) -> Callable[[], list]:
        """Start the steps of several leased devices in parallel threads (connected backends)."""
        ex = self._dispatcher()
        futs = [ex.submit(_step_one, d, a, want_snapshot) for d, a in items]

        def wait() -> list:
            res: list[Any] = []
            for f in futs:
                try:
                    res.append(f.result())
                except Exception as e:  # noqa: BLE001 - handed back per item
                    res.append(e)
            return res
        return wait

    # ------------------------------------------------------------------ public: bookkeeping
    def stats(self) -> dict:
        """Per-device and pool-wide accounting (utilisation = busy time / lifetime)."""
        now = time.monotonic()
        with self._lock:
            live = [(s.stats, (now - s.busy_since) if s.busy_since is not None else 0.0)
                    for s in self._slots.values()]
            retired = list(self.retired)
        devs = [st.to_dict(now, extra) for st, extra in live] + [st.to_dict(now) for st in retired]
        busy = sum(st.busy_s + extra for st, extra in live) + sum(st.busy_s for st in retired)
        life = sum(st.lifetime_s(now) for st, _ in live) + sum(st.lifetime_s(now) for st in retired)
        resets = sum(d["resets"] for d in devs)
        return {
            "backend": self.backend.name, "devices": len(live), "quarantined": self.quarantined,
            "replaced": self.replaced, "leased": sum(1 for _, extra in live if extra > 0),
            "resets": resets, "episodes": sum(d["episodes"] for d in devs),
            "failures": sum(d["failures"] for d in devs), "timeouts": sum(d["timeouts"] for d in devs),
            "reconnects": sum(d["reconnects"] for d in devs),
            "mean_reset_ms": (sum(d["mean_reset_ms"] * d["resets"] for d in devs) / resets) if resets else 0.0,
            "utilisation": busy / life if life > 0 else 0.0, "per_device": devs,
        }

    def close(self) -> None:
        """Close every device (each under the call timeout) and refuse further leases."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            slots = list(self._slots.values())
            self._lock.notify_all()
        for s in slots:
            self._close_device(s)
        if self._dispatch is not None:
            self._dispatch.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> "DevicePool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self._slots)

    # ------------------------------------------------------------------ internals
    def _dispatcher(self) -> ThreadPoolExecutor:
        if self._dispatch is None:
            with self._lock:
                if self._dispatch is None:
                    self._dispatch = ThreadPoolExecutor(max_workers=min(64, self.cfg.size),
                                                        thread_name_prefix=f"navrl-{self.backend.name}-batch")
        return self._dispatch

    def _task_snapshot(self, task: Any) -> object:
        key = self.backend.task_key(task)
        with self._snap_lock:
            snap = self._snapshots.get(key)
            if snap is not None:
                self._snapshots.move_to_end(key)
                return snap
        snap = self.backend.task_snapshot(task)
        with self._snap_lock:
            self._snapshots[key] = snap
            while len(self._snapshots) > self.cfg.snapshot_cache:
                self._snapshots.popitem(last=False)
        return snap

    def _acquire(self, avoid: set[int] = frozenset()) -> _Slot:  # type: ignore[assignment]
        """An idle slot (preferring ones not in ``avoid``, i.e. not yet tried for this lease),
        else a new one while below ``size``, else wait for a release."""
        deadline = time.monotonic() + self.cfg.lease_timeout_s
        with self._lock:
            while True:
                if self._closed:
                    raise PoolClosed()
                for s in self._idle:
                    if s.index not in avoid:
                        self._idle.remove(s)
                        return s
                if len(self._slots) < self.cfg.size:
                    index = self._next_index
                    self._next_index += 1
                    break
                if self._idle:
                    return self._idle.popleft()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PoolExhausted(f"all {self.cfg.size} devices busy for {self.cfg.lease_timeout_s:g} s")
                self._lock.wait(left)
        try:
            device = self._with_deadline(lambda: self.backend.create(index), self.cfg.reconnect_timeout_s,
                                         f"create device {index}")
        except DeviceError:
            raise
        except Exception as e:  # noqa: BLE001 - a backend that cannot create a device is infrastructure
            raise DeviceError("device_create_failed", f"{type(e).__name__}: {e}") from e
        slot = _Slot(index, device, self.backend.name)
        with self._lock:
            self._slots[index] = slot
        return slot

    def _settle(self, slot: _Slot, failure: str | None) -> None:
        """Count a failure (quarantining at the limit) or a success; idle the slot again."""
        quarantine = False
        with self._lock:
            st = slot.stats
            if failure:
                st.failures += 1
                st.consecutive_failures += 1
                st.last_failure = failure
                quarantine = st.consecutive_failures >= self.cfg.max_consecutive_failures
            else:
                st.consecutive_failures = 0
            if quarantine:
                st.quarantined = True
                st.retired_at = time.monotonic()
                self._slots.pop(slot.index, None)
                self.retired.append(st)
                self.quarantined += 1
                self.replaced += 1      # the next _acquire creates its replacement
            elif not self._closed:
                self._idle.append(slot)
            self._lock.notify()
        if quarantine:
            log.warning("%s device %d quarantined after %d consecutive failures (last: %s); replacing it",
                        self.backend.name, slot.index, st.consecutive_failures, failure)
            self._close_device(slot)

    def _close_device(self, slot: _Slot) -> None:
        try:
            self._invoke(slot, "close", ())
        except Exception as e:  # noqa: BLE001 - closing is best effort
            log.debug("closing device %d failed: %s", slot.index, e)
        if slot.executor is not None:
            slot.executor.shutdown(wait=False)
            slot.executor = None

    def _with_deadline(self, fn: Callable[[], Any], timeout: float | None, what: str) -> Any:
        if timeout is None:
            return fn()
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = fn()
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                box["error"] = e
        t = threading.Thread(target=run, name=f"navrl-{self.backend.name}-{what}", daemon=True)
        t.start()
        t.join(timeout)
        if t.is_alive():
            raise DeviceTimeout(f"{what} took longer than {timeout:g} s")
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def _invoke(self, slot: _Slot, name: str, args: tuple) -> Any:
        """One device call under the per-call deadline: in the slot's own worker thread, or
        inline with the deadline checked on return for in-process backends."""
        fn = getattr(slot.device, name)
        timeout = self.cfg.call_timeout_s
        if timeout is None:
            return fn(*args)
        if name == "restore" and self.cfg.restore_timeout_s is not None:
            timeout = self.cfg.restore_timeout_s
        if self.backend.in_process:
            t0 = time.monotonic()
            out = fn(*args)
            if time.monotonic() - t0 > timeout:
                slot.stats.timeouts += 1
                raise DeviceTimeout(f"{self.backend.name} device {slot.index}: {name}() took "
                                    f"{time.monotonic() - t0:.1f} s, over its {timeout:g} s deadline", completed=True)
            return out
        if slot.executor is None:
            slot.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"navrl-{self.backend.name}-{slot.index}")
        fut: Future = slot.executor.submit(fn, *args)
        try:
            return fut.result(timeout)
        except FuturesTimeout:
            if not fut.done():
                # the call is stuck in its thread: abandon that thread, the next call gets a new one
                slot.stats.timeouts += 1
                slot.executor.shutdown(wait=False)
                slot.executor = None
                raise DeviceTimeout(f"{self.backend.name} device {slot.index}: {name}() took longer than "
                                    f"{timeout:g} s") from None
            raise

    def _call(self, slot: _Slot, name: str, *args: Any) -> Any:
        """A device call with the pool's policy: deadline, then one reconnect-and-retry."""
        try:
            return self._invoke(slot, name, args)
        except DeviceError as e:
            if e.reason not in self.cfg.retry_reasons or getattr(e, "completed", False):
                raise
            first: DeviceError = e
        except OSError as e:   # sockets, subprocess pipes: transport trouble
            first = DeviceError("connection", f"{type(e).__name__}: {e}")
        slot.stats.reconnects += 1
        try:
            fresh = self._with_deadline(lambda: self.backend.reconnect(slot.device, slot.index),
                                        self.cfg.reconnect_timeout_s, f"reconnect device {slot.index}")
        except Exception as e:  # noqa: BLE001 - a failed reconnect ends in the first error
            log.info("reconnect of %s device %d failed: %s", self.backend.name, slot.index, e)
            fresh = None
        if fresh is None:
            raise first
        slot.device = fresh
        try:
            return self._invoke(slot, name, args)
        except OSError as e:
            raise DeviceError("connection", f"{type(e).__name__}: {e}") from e
