"""A latency model: any backend's devices made as slow as real ones, to measure a farm here.

``LatencyBackend(PhoneWorldBackend(), LatencyConfig(act_s=0.5))`` serves phone worlds
whose every action takes half a second, the way an emulator's does: the pool treats it as a
connected backend (``in_process = False``), so its calls overlap. The devices wait with
``asyncio.sleep`` (their ``aact``, ``aobserve`` … methods), so thousands of waiting devices
cost timers on the pool's loop, not threads; called synchronously they ``time.sleep``.
A call does the inner device's work first and answers its latency later (the work of a
synchronised wave of answers is not run back to back when their timers fire).

Latencies are fixed or drawn from a distribution, plus a seeded tail of slow calls (``tail_p``
of the calls take ``tail_s``): each device draws from its own ``random.Random`` seeded by
``(seed, slot)``, so a run's delays repeat with the seed. The wrapped device does exactly
what the inner one does, so outcomes are those of the inner backend, only later.

Backend, config and devices are picklable: Ray device hosts build their devices from it.

Layer 2 (device).
"""
from __future__ import annotations

import asyncio
import math
import random
import time
from dataclasses import dataclass
from typing import Any, Hashable

from navrl.actions import Action
from navrl.device.backend import DeviceBackend
from navrl.device.base import ActResult, CallingDevice, Device, Health
from navrl.observation import Observation

__all__ = ["DISTRIBUTIONS", "LatencyBackend", "LatencyConfig", "LatencyDevice"]

DISTRIBUTIONS = ("fixed", "uniform", "exponential", "lognormal")
CALLS = ("restore", "act", "observe", "snapshot", "health")


@dataclass(frozen=True)
class LatencyConfig:
    """Per-call latency of a :class:`LatencyBackend`'s devices (seconds)."""

    act_s: float = 0.5
    """Latency of one action (tap, swipe, type, home): the mean when ``dist`` is not ``fixed``."""
    observe_s: float = 0.0
    """Latency of one observation (screenshot and UI tree)."""
    reset_s: float = 0.0
    """Latency of a rollback to a task's start (``restore``: an emulator snapshot load takes seconds)."""
    snapshot_s: float = 0.0
    """Latency of taking a snapshot (only judges that replay from snapshots ask for them)."""
    health_s: float = 0.0
    """Latency of the health probe of every lease."""
    dist: str = "fixed"
    """How a call's latency is drawn around its mean: ``fixed`` (always the mean), ``uniform``
    (mean × U(1 - spread, 1 + spread)), ``exponential`` (mean-preserving, ``spread`` unused) or
    ``lognormal`` (sigma ``spread``, scaled so that its mean is the configured mean)."""
    spread: float = 0.25
    """Width of ``uniform`` (fraction of the mean, at most 1) and sigma of ``lognormal``."""
    tail_p: float = 0.0
    """Share of calls that straggle: each call of a kind in ``tail_calls`` takes ``tail_s``
    instead of its drawn latency with this probability (a hung adb command, a slow snapshot load)."""
    tail_s: float = 20.0
    """Latency of a straggling call."""
    tail_calls: tuple[str, ...] = ("restore", "act", "observe")
    """Call kinds that can straggle."""
    seed: int = 0
    """Seed of the draws; device ``slot`` draws from ``random.Random(f"{seed}/{slot}")``."""

    def validate(self) -> "LatencyConfig":
        if self.dist not in DISTRIBUTIONS:
            raise ValueError(f"dist must be one of {DISTRIBUTIONS}, got {self.dist!r}")
        for name in ("act_s", "observe_s", "reset_s", "snapshot_s", "health_s", "tail_s", "spread"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.dist == "uniform" and self.spread > 1:
            raise ValueError(f"a uniform spread is a fraction of the mean (<= 1), got {self.spread}")
        if not 0.0 <= self.tail_p <= 1.0:
            raise ValueError(f"tail_p must be in [0, 1], got {self.tail_p}")
        unknown = set(self.tail_calls) - set(CALLS)
        if unknown:
            raise ValueError(f"unknown tail_calls {sorted(unknown)}; choose from {CALLS}")
        return self

    def mean(self, call: str) -> float:
        """The configured mean latency of one call kind (``restore`` is the reset)."""
        return self.reset_s if call == "restore" else getattr(self, f"{call}_s")

    def draw(self, call: str, rng: random.Random) -> float:
        """One call's latency: the tail with probability ``tail_p``, else drawn around its mean.
        Calls whose mean is 0 and that cannot straggle draw nothing (the stream stays aligned)."""
        can_tail = self.tail_p > 0 and call in self.tail_calls
        m = self.mean(call)
        if m <= 0 and not can_tail:
            return 0.0
        if can_tail and rng.random() < self.tail_p:
            return self.tail_s
        if m <= 0 or self.dist == "fixed":
            return m
        if self.dist == "uniform":
            return m * rng.uniform(1 - self.spread, 1 + self.spread)
        if self.dist == "exponential":
            return rng.expovariate(1 / m)
        s = self.spread   # lognormal with mean m: mu = ln m - s^2 / 2
        return rng.lognormvariate(math.log(m) - s * s / 2, s)


class LatencyDevice(CallingDevice):
    """A device that waits its drawn latency, then does what the inner device does.

    The async methods (``aact`` …) are what a pool awaits on its loop; they run the inner
    call on the loop's thread, so the inner device must not block (an in-process one). For
    a blocking inner device use the sync methods (the pool does: see :class:`LatencyBackend`).
    Attribute reads outside the Device protocol go to the inner device."""

    def __init__(self, inner: Device, cfg: LatencyConfig, slot: int):
        self.inner, self.cfg, self.slot = inner, cfg, slot
        self.rng = random.Random(f"{cfg.seed}/{slot}")
        self.waited_s = 0.0
        """Total latency this device has waited (what the model added)."""
        self.platform = inner.platform

    def _delay(self, call: str) -> float:
        d = self.cfg.draw(call, self.rng)
        self.waited_s += d
        return d

    # The inner call runs first, then the call waits its latency: the device does the work as
    # the call reaches it and answers ``d`` later. (Waiting first would run the inner work of
    # every call of a synchronised wave back to back on the pool's loop when their timers
    # fire, so the next actions of the whole wave start only once the last answer is built.)
    # An inner call that raises raises at once, without the wait.

    def _call(self, call: str, *args: Any) -> Any:
        d = self._delay(call)
        out = getattr(self.inner, call)(*args)
        self.platform = self.inner.platform
        if d > 0:
            time.sleep(d)
        return out

    async def _async(self, call: str, *args: Any) -> Any:
        d = self._delay(call)
        out = getattr(self.inner, call)(*args)
        self.platform = self.inner.platform
        if d > 0:
            await asyncio.sleep(d)
        return out

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


class AsyncLatencyDevice(LatencyDevice):
    """A :class:`LatencyDevice` over an in-process device, with the async methods a pool awaits."""

    async def aobserve(self) -> Observation:
        return await self._async("observe")

    async def aact(self, action: Action) -> ActResult:
        return await self._async("act", action)

    async def asnapshot(self) -> object:
        return await self._async("snapshot")

    async def arestore(self, snapshot: object) -> None:
        await self._async("restore", snapshot)

    async def ahealth(self) -> Health:
        return await self._async("health")


class LatencyBackend(DeviceBackend):
    """``inner``'s devices with per-call latency (:class:`LatencyConfig`); a connected backend.

    Over an in-process inner backend (the phone world) the devices are async: waiting costs
    no thread. Over a blocking one (adb, WebDriverAgent) they sleep in their worker threads."""

    in_process = False

    def __init__(self, inner: DeviceBackend, config: LatencyConfig | None = None, **latency: Any):
        if config is not None and latency:
            raise TypeError("pass a LatencyConfig or its fields, not both")
        self.inner = inner
        self.cfg = (config or LatencyConfig(**latency)).validate()
        self.name = f"{inner.name}+latency"

    def create(self, slot: int) -> Device:
        kind = AsyncLatencyDevice if self.inner.in_process else LatencyDevice
        return kind(self.inner.create(slot), self.cfg, slot)

    def task_snapshot(self, task: Any) -> object:
        return self.inner.task_snapshot(task)

    def task_key(self, task: Any) -> Hashable:
        return self.inner.task_key(task)

    def world_key(self, task: Any) -> Hashable:
        return self.inner.world_key(task)

    def reconnect(self, device: Device, slot: int) -> Device | None:
        if not isinstance(device, LatencyDevice):
            return None
        fresh = self.inner.reconnect(device.inner, slot)
        if fresh is None:
            return None
        if fresh is not device.inner:
            device.inner = fresh
        return device
