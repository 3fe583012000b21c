"""Steps and leases of many devices at once, whatever serves them: :func:`start_steps` hands
each batcher (a connected pool, a Ray host) its devices in one go and steps the rest inline;
:func:`step_devices` waits for them; :func:`step_outcome` and :func:`lease_outcome` read what a
started step or lease gave. :class:`DeviceFarm` is what the episode runner needs from a farm."""
from __future__ import annotations

import concurrent.futures as cf
from typing import Any, Iterable, Protocol, Sequence, runtime_checkable

from navrl.actions import Action
from navrl.device.backend import DeviceTimeout
from navrl.device.base import Device, DeviceError
from navrl.device.pool.leased import FailedDevice

StepOutcome = tuple  # (Observation, snapshot or None)


@runtime_checkable
class DeviceFarm(Protocol):
    """What the episode runner needs from a source of devices: the in-process
    :class:`~navrl.device.pool.DevicePool` and :class:`navrl.device.ray_farm.RayFarm` both are one."""

    def lease_batch(self, tasks: Sequence[Any]) -> list[Device]:
        """One device per task (a :class:`FailedDevice` where the lease failed). The runner
        passes ``deadline=`` (a ``time.monotonic()`` time) when its run has one; a farm may
        also offer ``start_leases(tasks)`` (futures of devices), which the pipelined runner
        prefers, as :class:`~navrl.device.pool.DevicePool` does."""

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
    """A started lease once it is there (:meth:`~navrl.device.pool.DevicePool.start_leases`): the device, or a
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
