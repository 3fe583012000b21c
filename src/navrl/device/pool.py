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
- **overlap**: calls of a connected backend (``in_process = False``) are coroutines on the
  pool's event loop (:class:`~navrl.device.aio.DeviceLoop`), so every leased device can be
  waiting at once: a device with async methods (``aact``, ``aobserve`` …: the latency model
  of :mod:`navrl.device.latency`) waits on a timer, a blocking one in its own worker thread
  (one per device, so at most ``size``). In-process devices step inline, in order.
- **accounting**: per device, resets and reset time, failures, timeouts, reconnects,
  episodes and utilisation (busy time / lifetime); :meth:`DevicePool.stats`.

The pool is also the in-process *farm*: :meth:`DevicePool.lease_batch` and
:meth:`DevicePool.release_batch` are what :class:`navrl.rollout.runner.EpisodeRunner`
calls when it is given a farm instead of a device list. The Ray farm
(:mod:`navrl.device.ray_farm`) offers the same two methods with one pool per host.

Layer 2: tasks are opaque here. The pool reads nothing of a task but what its backend
needs (the phone-world backend calls ``task.make_device()``).

The backend contract and the lease errors live in :mod:`navrl.device.backend`, the
phone-world backend in :mod:`navrl.device.inprocess`; both are re-exported here.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures as cf
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Hashable, Iterable, Protocol, Sequence, runtime_checkable

from navrl.actions import Action
from navrl.device.adaptive import AdaptiveConfig, AdaptiveLimit, missed_deadline
from navrl.device.aio import DeviceLoop, run_now
from navrl.device.backend import DeviceBackend, DeviceTimeout, LeaseFailed, PoolClosed, PoolExhausted
from navrl.device.base import CallingDevice, Device, DeviceError, Health
from navrl.device.inprocess import PhoneSlot, PhoneTaskSnapshot, PhoneWorldBackend
from navrl.observation import Observation

log = logging.getLogger(__name__)

__all__ = [  # backend contract, lease errors and the phone-world backend are re-exported
    "DeviceBackend", "DeviceFarm", "DevicePool", "DeviceStats", "DeviceTimeout", "FailedDevice", "LeaseFailed", "PhoneSlot",
    "PhoneTaskSnapshot", "PhoneWorldBackend", "PoolClosed", "PoolConfig", "PoolExhausted", "PooledDevice",
    "StepOutcome", "lease_outcome", "start_steps", "step_devices", "step_outcome",
]

MAX_FREE_RETRIES = 8
"""Adaptive pools: restores of one lease that may miss their deadline while the limit drops
(each retried behind the lowered limit) before they count against ``lease_attempts``."""

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
    max_blocking_calls: int | None = None
    """Most calls of blocking devices (adb, WebDriverAgent, browsers: devices without async
    methods) running at once, each in its device's own worker thread; None: one per device
    (``size``). A cap protects a shared server (one adb server for many devices). Devices
    with async methods wait on the pool's event loop and are not counted."""
    adaptive: AdaptiveConfig | None = None
    """None: up to ``size`` devices in flight whatever happens. An :class:`AdaptiveConfig`
    (connected backends only): the devices in flight (restoring or leased) are held to an
    :class:`~navrl.device.adaptive.AdaptiveLimit` that drops when calls miss their deadlines
    (or restores turn slow) and rises again when restores are fast; a lease waits for room
    instead of failing, and a device given back while the pool holds more than the limit is
    closed."""

    def validate(self) -> "PoolConfig":
        if self.size <= 0:
            raise ValueError(f"pool size must be positive, got {self.size}")
        if self.call_timeout_s is not None and self.call_timeout_s <= 0:
            raise ValueError("call_timeout_s must be positive or None")
        if self.lease_attempts <= 0 or self.max_consecutive_failures <= 0:
            raise ValueError("lease_attempts and max_consecutive_failures must be positive")
        if self.max_blocking_calls is not None and self.max_blocking_calls <= 0:
            raise ValueError("max_blocking_calls must be positive or None")
        if self.adaptive is not None:
            self.adaptive.validate()
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
    __slots__ = ("index", "device", "stats", "executor", "busy_since", "lease_id", "affinity")

    def __init__(self, index: int, device: Device, backend: str):
        self.index, self.device = index, device
        self.stats = DeviceStats(index, backend)
        self.executor: ThreadPoolExecutor | None = None
        self.busy_since: float | None = None
        self.lease_id = 0
        self.affinity: Hashable | None = None    # the backend's affinity_key of its last restore


# ---------------------------------------------------------------------------------- leased device
class PooledDevice(CallingDevice):
    """A leased device: every call goes through the pool (timeout, reconnect-and-retry).

    Closing it returns it to the pool. ``last_error`` holds the reason of the last
    DeviceError it raised, which the pool counts against the device on release.
    Attribute reads outside the Device protocol are forwarded to the backend device.

    A connected device's ``observe()`` answers from its last observation until the next
    ``act`` or ``restore`` (the screen a step brought back, as the Ray farm's devices do),
    so privileged readers that look again (the scripted expert) wait for nothing.
    """

    def __init__(self, pool: "DevicePool", slot: _Slot, task: Any):
        self._pool, self._slot, self._lease_id = pool, slot, slot.lease_id
        self.task = task
        self.platform = slot.device.platform
        self.last_error: str | None = None
        self.released = False
        self.gated = False      # counted in the pool's devices in flight (adaptive pools)
        self._obs: Observation | None = None
        self._inflight: set[asyncio.Task] = set()   # steps running on the pool's loop

    @property
    def slot(self) -> int:
        return self._slot.index

    @property
    def step_batcher(self) -> "DevicePool | None":
        return None if self._pool.backend.in_process else self._pool

    async def _acall(self, name: str, *args: Any) -> Any:
        if self.released or self._slot.lease_id != self._lease_id:
            raise DeviceError("lease_released", "this device was returned to the pool")
        cache = not self._pool.backend.in_process
        if name == "observe" and cache and self._obs is not None:
            return self._obs
        if name in ("act", "restore"):
            self._obs = None
        try:
            out = await self._pool._acall(self._slot, name, args)
        except DeviceError as e:
            self.last_error = e.reason
            raise
        if name == "observe" and cache:
            self._obs = out
        return out

    def _call(self, name: str, *args: Any) -> Any:
        obs = self._obs
        if name == "observe" and obs is not None and not self.released and self._slot.lease_id == self._lease_id:
            return obs      # the cached look, without a round trip through the pool's loop
        return self._pool._drive(self._acall(name, *args))

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
        """One device per task (a :class:`FailedDevice` where the lease failed). The runner
        passes ``deadline=`` (a ``time.monotonic()`` time) when its run has one; a farm may
        also offer ``start_leases(tasks)`` (futures of devices), which the pipelined runner
        prefers, as :class:`DevicePool` does."""

    def release_batch(self, devices: Iterable[Device]) -> None:
        """Give back the devices of a finished batch."""

    def stats(self) -> dict:
        """Accounting for logs."""

    def close(self) -> None:
        """Release every device and host."""


def _step_one(device: Device, action: Action | None, want_snapshot: bool) -> StepOutcome:
    if action is not None:
        device.act(action)
    obs = device.observe()
    return obs, (device.snapshot() if want_snapshot else None)


def start_steps(devices: Sequence[Device], actions: Sequence[Action | None],
                want_snapshot: bool) -> list[Any]:
    """Start one runner step on every device: act (unless the action is None: a first look),
    then observe, and snapshot when asked.

    Devices that expose a ``step_batcher`` (remote hosts, connected pools) are handed over
    per batcher, all batchers first, and come back as :class:`concurrent.futures.Future`;
    the other devices step now, in order, in this thread. Each item of the result is a
    future, ``(observation, snapshot-or-None)``, or the exception that device raised.
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
    for b, idx in groups.values():
        try:
            for i, fut in zip(idx, b.submit_steps([(devices[i], actions[i]) for i in idx], want_snapshot)):
                out[i] = fut
        except DeviceError as e:
            for i in idx:
                out[i] = e
    for i in local:
        try:
            out[i] = _step_one(devices[i], actions[i], want_snapshot)
        except Exception as e:  # noqa: BLE001 - handed back to the caller, which re-raises non-DeviceErrors
            out[i] = e
    return out


def step_outcome(res: Any) -> StepOutcome | BaseException:
    """What :func:`start_steps` gave for one device, once it is there: a future's result
    or exception (a cancelled or unfinished one is a ``timeout``), else the item itself."""
    if not isinstance(res, cf.Future):
        return res
    if not res.done() and res.cancel():
        return DeviceTimeout("the step was abandoned at its deadline")
    try:
        return res.result(0)
    except (cf.CancelledError, cf.TimeoutError):
        return DeviceTimeout("the step was abandoned at its deadline")
    except Exception as e:  # noqa: BLE001 - handed back per item
        return e


def lease_outcome(res: Any) -> Device:
    """A started lease once it is there (:meth:`DevicePool.start_leases`): the device, or a
    ``timeout`` :class:`FailedDevice` for one abandoned unfinished (cancelling it)."""
    if not isinstance(res, cf.Future):
        return res
    if not res.done() and res.cancel():
        return FailedDevice("timeout", "the lease did not finish by the rollout deadline")
    try:
        return res.result(0)
    except (cf.CancelledError, cf.TimeoutError):
        return FailedDevice("timeout", "the lease did not finish by the rollout deadline")
    except DeviceError as e:
        return FailedDevice(e.reason, str(e))


def step_devices(devices: Sequence[Device], actions: Sequence[Action | None],
                 want_snapshot: bool, timeout: float | None = None) -> list[StepOutcome | BaseException]:
    """:func:`start_steps` and wait for every device (at most ``timeout`` seconds: devices
    still stepping then are abandoned as ``timeout``). Each item of the result is
    ``(observation, snapshot-or-None)`` or the exception that device raised."""
    started = start_steps(devices, actions, want_snapshot)
    futs = [r for r in started if isinstance(r, cf.Future)]
    if futs:
        cf.wait(futs, timeout)
    return [step_outcome(r) for r in started]


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
        self._creating = 0
        self._snapshots: collections.OrderedDict[Hashable, object] = collections.OrderedDict()
        self._snap_lock = threading.Lock()
        self.retired: list[DeviceStats] = []
        self.quarantined = 0
        self.replaced = 0
        self._closed = False
        self._aio: DeviceLoop | None = None
        self._blocking_sem: asyncio.Semaphore | None = None
        self._closing: set[asyncio.Task] = set()
        self.calls_in_flight = 0
        self.calls_in_flight_peak = 0
        self.created_at = time.monotonic()
        self.adaptive: AdaptiveLimit | None = None
        """The limit on devices in flight (``PoolConfig.adaptive``; connected backends only)."""
        if self.cfg.adaptive is not None and not backend.in_process:
            self.adaptive = AdaptiveLimit(self.cfg.adaptive, self.cfg.size)
        self.in_flight = 0
        """Leases past the adaptive gate: devices restoring or leased to an episode."""
        self.in_flight_peak = 0
        self.shrunk = 0
        """Idle devices closed because the pool held more than the adaptive limit."""

    # ------------------------------------------------------------------ public: leasing
    def lease(self, task: Any) -> PooledDevice:
        """A device restored to ``task``'s snapshot that passed its health probe.

        Raises PoolExhausted, LeaseFailed (both DeviceError) or PoolClosed."""
        return self._drive(self._alease(task, self._task_snapshot(task), wait=False))

    def release(self, device: PooledDevice, failure: str | None = None) -> None:
        """Return a leased device. ``failure`` (or the device's last DeviceError) counts
        against it; a clean episode resets its consecutive-failure count. Steps still
        running on it are cancelled (abandoned at a deadline): that counts as ``timeout``."""
        if device.released:
            return
        device.released = True
        slot = device._slot
        if device._inflight:
            failure = failure or "timeout"
            self._loop().loop.call_soon_threadsafe(_cancel_all, device._inflight)
        with self._lock:
            if slot.busy_since is not None:
                slot.stats.busy_s += time.monotonic() - slot.busy_since
                slot.busy_since = None
            slot.stats.episodes += 1
            slot.lease_id += 1
            if device.gated:
                device.gated = False
                self.in_flight -= 1
        self._settle(slot, failure or device.last_error)

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
        coros = [self._alease_or_failed(t, self._task_snapshot(t), _wait) for t in tasks]
        if self.backend.in_process:
            return [run_now(c) for c in coros]
        return self._loop().spawn(coros, orphan=lambda dev: self.release(dev, "timeout"))

    def pick_next(self, used: Device, tasks: Sequence[Any]) -> int:
        """Which of the waiting ``tasks`` should take over ``used`` (a rolling queue's freed
        device): the first whose snapshot has the affinity the device's last restore had
        (:meth:`DeviceBackend.affinity_key`: a browser page that shows the task's app
        resets in place instead of loading the page), else the first."""
        slot = getattr(used, "_slot", None)
        if slot is None or slot.affinity is None:
            return 0
        for i, t in enumerate(tasks):
            if self.backend.affinity_key(self._task_snapshot(t)) == slot.affinity:
                return i
        return 0

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
    def submit_steps(self, items: list[tuple[Device, Action | None]], want_snapshot: bool) -> list[cf.Future]:
        """Start the steps of several leased devices at once (connected backends): one
        future per item, all waiting together on the pool's loop."""
        return self._loop().spawn([self._astep(d, a, want_snapshot) for d, a in items])  # type: ignore[arg-type]

    # ------------------------------------------------------------------ public: bookkeeping
    def stats(self) -> dict:
        """Per-device and pool-wide accounting (utilisation = busy time / lifetime;
        ``calls_in_flight_peak``: most device calls of a connected backend waiting at once)."""
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
            "utilisation": busy / life if life > 0 else 0.0, "calls_in_flight_peak": self.calls_in_flight_peak,
            "in_flight_peak": self.in_flight_peak, "shrunk": self.shrunk,
            **({"adaptive": self.adaptive.stats()} if self.adaptive is not None else {}),
            "per_device": devs,
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
        if self._aio is not None:
            self._aio.close()

    def __enter__(self) -> "DevicePool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self._slots)

    @property
    def capacity(self) -> int:
        """Most devices leased at once (``size``): a runner queues the episodes beyond it."""
        return self.cfg.size

    # ------------------------------------------------------------------ internals: where calls run
    def _loop(self) -> DeviceLoop:
        if self._aio is None:
            with self._lock:
                if self._aio is None:
                    self._aio = DeviceLoop(f"navrl-{self.backend.name}-loop")
        return self._aio

    def _drive(self, coro: Any) -> Any:
        """Run one of the pool's coroutines to its end: inline for in-process backends (it
        never suspends), else on the pool's loop while this thread waits."""
        if self.backend.in_process:
            return run_now(coro)
        return self._loop().run(coro)

    def _timeout(self, name: str) -> float | None:
        timeout = self.cfg.call_timeout_s
        if timeout is not None and name == "restore" and self.cfg.restore_timeout_s is not None:
            timeout = self.cfg.restore_timeout_s
        return timeout

    async def _in_thread(self, slot: _Slot | None, fn: Callable[..., Any], args: tuple, timeout: float | None,
                         what: str) -> Any:
        """A blocking call in ``slot``'s worker thread (a pool thread without a slot) under
        ``timeout``; a call stuck past it is abandoned with its thread (the next gets a new one)."""
        loop = asyncio.get_running_loop()
        ex = None
        if slot is not None:
            if slot.executor is None:
                slot.executor = ThreadPoolExecutor(max_workers=1,
                                                   thread_name_prefix=f"navrl-{self.backend.name}-{slot.index}")
            ex = slot.executor
        if self.cfg.max_blocking_calls is not None and self._blocking_sem is None:
            self._blocking_sem = asyncio.Semaphore(self.cfg.max_blocking_calls)
        sem = self._blocking_sem
        if sem is not None:
            await sem.acquire()
        try:
            return await asyncio.wait_for(loop.run_in_executor(ex, fn, *args), timeout)
        except TimeoutError:
            if slot is not None:
                slot.stats.timeouts += 1
                if slot.executor is ex:
                    ex.shutdown(wait=False)   # type: ignore[union-attr]
                    slot.executor = None
            raise DeviceTimeout(f"{self.backend.name} {what} took longer than {timeout:g} s") from None
        finally:
            if sem is not None:
                sem.release()

    async def _blocking(self, slot: _Slot | None, fn: Callable[[], Any], timeout: float | None, what: str) -> Any:
        """A backend call (create, reconnect): inline in-process, else in a worker thread."""
        if self.backend.in_process:
            return fn()
        return await self._in_thread(slot, fn, (), timeout, what)

    async def _ainvoke(self, slot: _Slot, name: str, args: tuple) -> Any:
        """One device call under the per-call deadline: inline with the deadline checked on
        return (in-process backends), awaited on the loop (devices with async methods, e.g.
        ``aact``), or in the device's worker thread."""
        timeout = self._timeout(name)
        if self.backend.in_process:
            t0 = time.monotonic()
            out = getattr(slot.device, name)(*args)
            if timeout is not None and time.monotonic() - t0 > timeout:
                slot.stats.timeouts += 1
                raise DeviceTimeout(f"{self.backend.name} device {slot.index}: {name}() took "
                                    f"{time.monotonic() - t0:.1f} s, over its {timeout:g} s deadline", completed=True)
            return out
        what = f"device {slot.index}: {name}()"
        self.calls_in_flight += 1
        self.calls_in_flight_peak = max(self.calls_in_flight_peak, self.calls_in_flight)
        try:
            afn = getattr(slot.device, "a" + name, None)
            if afn is None:
                return await self._in_thread(slot, getattr(slot.device, name), args, timeout, what)
            try:
                return await _within(afn(*args), timeout)
            except TimeoutError:
                slot.stats.timeouts += 1
                raise DeviceTimeout(f"{self.backend.name} {what} took longer than {timeout:g} s") from None
        finally:
            self.calls_in_flight -= 1

    async def _acall(self, slot: _Slot, name: str, args: tuple) -> Any:
        """A device call with the pool's policy: deadline, then one reconnect-and-retry; a
        call that missed its deadline tells the adaptive limit."""
        if self.adaptive is None:
            return await self._acall_retry(slot, name, args)
        token = self.adaptive.token()
        try:
            return await self._acall_retry(slot, name, args)
        except DeviceError as e:
            if missed_deadline(e):
                self.adaptive.miss(token, f"{name}: {e.reason}")
            raise

    async def _acall_retry(self, slot: _Slot, name: str, args: tuple) -> Any:
        try:
            return await self._ainvoke(slot, name, args)
        except DeviceError as e:
            if e.reason not in self.cfg.retry_reasons or getattr(e, "completed", False):
                raise
            first: DeviceError = e
        except OSError as e:   # sockets, subprocess pipes: transport trouble
            first = DeviceError("connection", f"{type(e).__name__}: {e}")
        slot.stats.reconnects += 1
        try:
            fresh = await self._blocking(slot, lambda: self.backend.reconnect(slot.device, slot.index),
                                         self.cfg.reconnect_timeout_s, f"reconnect device {slot.index}")
        except Exception as e:  # noqa: BLE001 - a failed reconnect ends in the first error
            log.info("reconnect of %s device %d failed: %s", self.backend.name, slot.index, e)
            fresh = None
        if fresh is None:
            raise first
        slot.device = fresh
        try:
            return await self._ainvoke(slot, name, args)
        except OSError as e:
            raise DeviceError("connection", f"{type(e).__name__}: {e}") from e

    async def _astep(self, device: PooledDevice, action: Action | None, want_snapshot: bool) -> StepOutcome:
        """One runner step of a leased device on the loop (cancelled if it is released)."""
        task = asyncio.current_task()
        device._inflight.add(task)   # type: ignore[arg-type]
        try:
            if action is not None:
                await device._acall("act", action)
            obs = await device._acall("observe")
            return obs, (await device._acall("snapshot") if want_snapshot else None)
        except asyncio.CancelledError:      # abandoned at a deadline: counts against the device
            device.last_error = "timeout"
            raise
        finally:
            device._inflight.discard(task)   # type: ignore[arg-type]

    # ------------------------------------------------------------------ internals: leasing
    async def _alease(self, task: Any, snap: object, wait: bool = True) -> PooledDevice:
        """Lease a device for ``task``: through the adaptive gate (``wait=False``: counted but
        never held there, for synchronous callers that may hold the devices it waits for),
        restore, probe; ``lease_attempts`` devices in all."""
        last: DeviceError | None = None
        tried: set[int] = set()
        want = self.backend.affinity_key(snap)
        attempts = free = 0
        while attempts < self.cfg.lease_attempts:
            attempts += 1
            await self._agate(wait)
            try:
                slot = await self._aacquire(avoid=tried, want=want)
            except BaseException:
                self._ungate()
                raise
            tried.add(slot.index)
            t0 = time.monotonic()
            token = self.adaptive.token() if self.adaptive is not None else 0
            try:
                slot.affinity = None
                await self._acall(slot, "restore", (snap,))
                slot.affinity = want
                h = await self._acall(slot, "health", ())
                if not h.ok:
                    raise DeviceError("unhealthy", h.detail or "health probe failed")
            except DeviceError as e:
                last = e
                self._ungate()
                if self._count(slot, e.reason):
                    await self._aclose(slot)
                # a restore that missed its deadline on a machine more crowded than the pool
                # now allows is tried again (behind the lowered limit) without counting
                if (self.adaptive is not None and missed_deadline(e) and self.adaptive.dropped_since(token)
                        and free < MAX_FREE_RETRIES):
                    free += 1
                    attempts -= 1
                continue
            except asyncio.CancelledError:    # abandoned at a deadline: the device goes back
                self._ungate()
                self._settle(slot, "timeout")
                raise
            dt = time.monotonic() - t0
            if self.adaptive is not None:
                self.adaptive.restored(token, dt)
            with self._lock:
                st = slot.stats
                st.resets += 1
                st.reset_s_total += dt
                st.reset_s_max = max(st.reset_s_max, dt)
                slot.lease_id += 1
                slot.busy_since = time.monotonic()
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

    async def _agate(self, wait: bool = True) -> None:
        """Adaptive pools: wait until fewer devices than the limit are in flight, then count
        this lease in (a lease waits here for its turn; only the runner's deadline ends the
        wait; ``wait=False`` counts it in at once). Other pools pass at once."""
        if self.adaptive is None:
            return
        while True:
            with self._lock:
                if self._closed:
                    raise PoolClosed()
                if self.in_flight < self.adaptive.limit or not wait:
                    self.in_flight += 1
                    self.in_flight_peak = max(self.in_flight_peak, self.in_flight)
                    return
            await asyncio.sleep(0.02)

    def _ungate(self) -> None:
        if self.adaptive is not None:
            with self._lock:
                self.in_flight -= 1
                self._lock.notify()

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

    def _try_acquire(self, avoid: set[int], want: Hashable | None = None) -> "_Slot | int | None":
        """Under the lock: an idle slot (preferring ones not in ``avoid``, i.e. not yet tried
        for this lease), else the index of a new one while below ``size``, else None.

        With an affinity ``want`` (see :meth:`DeviceBackend.affinity_key`): first an idle slot
        whose last restore had that key, then a new slot while below ``size`` (a fresh device
        costs what switching an idle one would, and keeps the idle ones for their own key),
        then an idle slot whose key no other idle slot shares, then any."""
        if self._closed:
            raise PoolClosed()
        if want is not None:
            for s in self._idle:
                if s.index not in avoid and s.affinity == want:
                    self._idle.remove(s)
                    return s
        else:
            for s in self._idle:
                if s.index not in avoid:
                    self._idle.remove(s)
                    return s
        # an adaptive pool makes new devices only up to its limit (it reuses idle ones beyond)
        room = self.adaptive.limit if self.adaptive is not None else self.cfg.size
        if len(self._slots) + self._creating < room:
            self._creating += 1
            self._next_index += 1
            return self._next_index - 1
        if want is not None:
            free = [s for s in self._idle if s.index not in avoid] or list(self._idle)
            if free:
                keys = collections.Counter(s.affinity for s in free)
                s = min(free, key=lambda s: (s.affinity is not None and keys[s.affinity] == 1))
                self._idle.remove(s)
                return s
        if self._idle:
            return self._idle.popleft()
        return None

    async def _aacquire(self, avoid: set[int], want: Hashable | None = None) -> _Slot:
        """A slot for a lease; waits (up to ``lease_timeout_s``) for a release when all are busy."""
        deadline = time.monotonic() + self.cfg.lease_timeout_s
        while True:
            with self._lock:
                got = self._try_acquire(avoid, want)
                left = deadline - time.monotonic()
                if got is None and left > 0 and self.backend.in_process:
                    self._lock.wait(left)     # a release notifies
                    continue
            if isinstance(got, _Slot):
                return got
            if got is not None:
                return await self._create(got)
            if left <= 0:
                raise PoolExhausted(f"all {self.cfg.size} devices busy for {self.cfg.lease_timeout_s:g} s")
            await asyncio.sleep(min(left, 0.02))

    async def _create(self, index: int) -> _Slot:
        try:
            device = await self._blocking(None, lambda: self.backend.create(index), self.cfg.reconnect_timeout_s,
                                          f"create device {index}")
        except BaseException as e:
            with self._lock:
                self._creating -= 1
                self._lock.notify()
            if isinstance(e, Exception) and not isinstance(e, DeviceError):
                # a backend that cannot create a device is infrastructure
                raise DeviceError("device_create_failed", f"{type(e).__name__}: {e}") from e
            raise
        slot = _Slot(index, device, self.backend.name)
        with self._lock:
            self._slots[index] = slot
            self._creating -= 1
        return slot

    # ------------------------------------------------------------------ internals: healing
    def _count(self, slot: _Slot, failure: str | None) -> bool:
        """Count a failure (quarantining at the limit) or a success; idle the slot again.
        True when the device was quarantined, or closed to hold the adaptive limit, and must be closed."""
        quarantine = shrink = False
        limit = 1 if self.backend.disposable else self.cfg.max_consecutive_failures
        with self._lock:
            st = slot.stats
            if failure:
                st.failures += 1
                st.consecutive_failures += 1
                st.last_failure = failure
                quarantine = st.consecutive_failures >= limit
            else:
                st.consecutive_failures = 0
                # more devices than the adaptive limit lets run: close this one (it would idle)
                shrink = (self.adaptive is not None and not self._closed
                          and len(self._slots) + self._creating > self.adaptive.limit)
            if shrink:
                st.retired_at = time.monotonic()
                self._slots.pop(slot.index, None)
                self.retired.append(st)
                self.shrunk += 1
            elif quarantine:
                st.quarantined = True
                st.retired_at = time.monotonic()
                self._slots.pop(slot.index, None)
                self.retired.append(st)
                self.quarantined += 1
                self.replaced += 1      # the next acquire creates its replacement
            elif not self._closed:
                self._idle.append(slot)
            self._lock.notify()
        if shrink:
            log.info("%s device %d closed: the adaptive limit is %d devices in flight", self.backend.name,
                     slot.index, self.adaptive.limit)   # type: ignore[union-attr]
            return True
        if quarantine:
            log.warning("%s device %d quarantined after %d consecutive failures (last: %s); replacing it",
                        self.backend.name, slot.index, st.consecutive_failures, failure)
        return quarantine

    def _settle(self, slot: _Slot, failure: str | None) -> None:
        if self._count(slot, failure):
            self._close_device(slot)

    def _close_device(self, slot: _Slot) -> None:
        """Close a device now; on the loop's own thread (a release from a callback there),
        in the background instead."""
        if self._aio is not None and self._aio.in_loop():
            t = self._aio.loop.create_task(self._aclose(slot))
            self._closing.add(t)
            t.add_done_callback(self._closing.discard)
            return
        try:
            self._drive(self._aclose(slot))
        except RuntimeError as e:       # the loop is already gone
            log.debug("closing device %d failed: %s", slot.index, e)

    async def _aclose(self, slot: _Slot) -> None:
        try:
            await self._ainvoke(slot, "close", ())
        except Exception as e:  # noqa: BLE001 - closing is best effort
            log.debug("closing device %d failed: %s", slot.index, e)
        if slot.executor is not None:
            slot.executor.shutdown(wait=False)
            slot.executor = None


async def _within(coro: Any, timeout: float | None) -> Any:
    """``await coro`` under ``timeout`` (TimeoutError past it), in the calling task: unlike
    ``asyncio.wait_for`` before Python 3.12 it creates no task per call (two per runner step)."""
    if timeout is None:
        return await coro
    if _timeout_cm is None:   # Python 3.10
        return await asyncio.wait_for(coro, timeout)
    async with _timeout_cm(timeout):
        return await coro


_timeout_cm = getattr(asyncio, "timeout", None)


def _cancel_all(tasks: set[asyncio.Task]) -> None:
    for t in list(tasks):
        t.cancel()
