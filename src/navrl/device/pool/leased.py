"""What a lease hands out: :class:`PooledDevice`, a leased device whose every call goes
through its pool, and :class:`FailedDevice`, which stands in for a lease that failed."""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from navrl.actions import Action
from navrl.device.base import CallingDevice, Device, DeviceError, Health
from navrl.device.pool.slot import Slot
from navrl.observation import Observation

if TYPE_CHECKING:
    from navrl.device.pool.dispatch import StepOutcome
    from navrl.device.pool.pool import DevicePool


class PooledDevice(CallingDevice):
    """A leased device: every call goes through the pool (timeout, reconnect-and-retry).

    Closing it returns it to the pool. ``last_error`` holds the reason of the last
    DeviceError it raised, which the pool counts against the device on release.
    Attribute reads outside the Device protocol are forwarded to the backend device.

    A connected device's ``observe()`` answers from its last observation until the next
    ``act`` or ``restore`` (the screen a step brought back, as the Ray farm's devices do),
    so privileged readers that look again (the scripted expert) wait for nothing.
    """

    def __init__(self, pool: DevicePool, slot: Slot, task: Any):
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
    def step_batcher(self) -> DevicePool | None:
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
            out = await self._pool.calls.call(self._slot, name, args)
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
        return self._pool.calls.drive(self._acall(name, *args))

    async def astep(self, action: Action | None, want_snapshot: bool) -> StepOutcome:
        """One runner step on the pool's loop: act (unless None), observe, snapshot when asked
        (cancelled if the device is released meanwhile)."""
        task = asyncio.current_task()
        self._inflight.add(task)   # type: ignore[arg-type]
        try:
            if action is not None:
                await self._acall("act", action)
            obs = await self._acall("observe")
            return obs, (await self._acall("snapshot") if want_snapshot else None)
        except asyncio.CancelledError:      # abandoned at a deadline: counts against the device
            self.last_error = "timeout"
            raise
        finally:
            self._inflight.discard(task)   # type: ignore[arg-type]

    def abandon_steps(self) -> bool:
        """Cancel the steps still running on the pool's loop; True if there were any."""
        if not self._inflight:
            return False
        self._pool.calls.loop().loop.call_soon_threadsafe(_cancel_all, self._inflight)
        return True

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


def _cancel_all(tasks: set[asyncio.Task]) -> None:
    for t in list(tasks):
        t.cancel()
