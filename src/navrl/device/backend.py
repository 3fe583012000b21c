"""What a :class:`~navrl.device.pool.DevicePool` needs from a kind of device, and the errors of leasing.

- :class:`DeviceBackend`: the adapter a pool makes, rolls back and reconnects devices
  through (phone world, browser, Android, iOS);
- the :class:`~navrl.device.base.DeviceError` subclasses raised by device calls under a
  deadline (:class:`DeviceTimeout`) and by leasing (:class:`PoolExhausted`,
  :class:`LeaseFailed`, :class:`PoolClosed`).

Layer 2: tasks are opaque here; a backend reads of a task only what it needs.
"""
from __future__ import annotations

import abc
from typing import Any, Hashable

from navrl.device.base import Device, DeviceError

__all__ = ["DeviceBackend", "DeviceTimeout", "LeaseFailed", "PoolClosed", "PoolExhausted"]


class DeviceTimeout(DeviceError):
    """A device call did not return within its per-call timeout (reason ``timeout``).

    ``completed`` is True when an in-process call overran but did return (its effect
    happened, so it is not retried)."""

    def __init__(self, message: str = "", completed: bool = False) -> None:
        super().__init__("timeout", message)
        self.completed = completed


class PoolExhausted(DeviceError):
    """No device became free within ``lease_timeout_s`` (reason ``pool_exhausted``)."""

    def __init__(self, message: str = "") -> None:
        super().__init__("pool_exhausted", message)


class LeaseFailed(DeviceError):
    """Every lease attempt failed its restore or health probe (reason ``no_healthy_device``)."""

    def __init__(self, message: str = "") -> None:
        super().__init__("no_healthy_device", message)


class PoolClosed(DeviceError):
    """The pool was closed (reason ``pool_closed``)."""

    def __init__(self, message: str = "") -> None:
        super().__init__("pool_closed", message)


class DeviceBackend(abc.ABC):
    """How a pool makes, rolls back and reconnects devices of one kind.

    Backends must be picklable (the Ray farm ships them to its host actors) and cheap to
    construct; devices are made by :meth:`create`, on the host that uses them.
    """

    name: str = "backend"
    in_process: bool = False
    """False (the default) for devices reached over a connection (adb, WebDriverAgent,
    browsers): each call runs in the device's worker thread under a hard deadline, and the
    calls of a batch (leases, steps) run in parallel. True for in-process, CPU-bound
    simulators that cannot block on I/O: calls run inline (threads would only add GIL
    hand-offs) and the deadline is checked when the call returns."""

    disposable: bool = False
    """True when a fresh device is cheap and a failed one is not worth keeping (a browser
    page): the pool closes a device at its first failure (restore, probe, or an episode
    that ended in a DeviceError on it) and makes a new one when it needs one, instead of
    retrying it ``max_consecutive_failures`` times."""

    @abc.abstractmethod
    def create(self, slot: int) -> Device:
        """Connect to (or boot) the device for pool slot ``slot``."""

    @abc.abstractmethod
    def task_snapshot(self, task: Any) -> object:
        """The snapshot handle a device is restored from before ``task`` runs on it."""

    def task_key(self, task: Any) -> Hashable:
        """Cache key of :meth:`task_snapshot` (tasks with equal keys share a snapshot)."""
        return getattr(task, "id", task)

    def affinity_key(self, snapshot: object) -> Hashable | None:
        """Devices restored from snapshots with equal (non-None) keys restore each other's
        cheaply (a browser page resets its app in place instead of loading another): the pool
        gives a lease an idle device of the same key when it has one. Default None: every
        device is as good as any other."""
        return None

    def world_key(self, task: Any) -> Hashable:
        """Key of the local mirror a farm keeps for privileged reads of a remote device (the
        scripted expert reading the phone world): tasks with equal keys can share one mirror,
        restored from each device's snapshot in turn. Default: :meth:`task_key`."""
        return self.task_key(task)

    def reconnect(self, device: Device, slot: int) -> Device | None:
        """A fresh connection to the same device, or None when that is impossible.

        Must not change the device's state: the retried call continues the episode."""
        return None
