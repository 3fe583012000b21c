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

The modules, one job each:

- :mod:`.config`: :class:`PoolConfig` and which errors get a retry.
- :mod:`.slot`: one device's place in the pool and its :class:`DeviceStats`.
- :mod:`.calls`: every device call (where it runs, its deadline, reconnect-and-retry).
- :mod:`.leases`: the slots and which one a lease gets; the adaptive gate on leases in flight.
- :mod:`.health`: rollback to the task's snapshot, health probe, failure counts, quarantine.
- :mod:`.leased`: what a lease hands out (:class:`PooledDevice`, :class:`FailedDevice`).
- :mod:`.dispatch`: steps and leases of many devices at once (:func:`step_devices` …) and
  the :class:`DeviceFarm` protocol.
- :mod:`.pool`: :class:`DevicePool`, composing them.

The backend contract and the lease errors live in :mod:`navrl.device.backend`, the
phone-world backend in :mod:`navrl.device.inprocess`; both are re-exported here.
"""
from __future__ import annotations

from navrl.device.backend import DeviceBackend, DeviceTimeout, LeaseFailed, PoolClosed, PoolExhausted
from navrl.device.inprocess import PhoneSlot, PhoneTaskSnapshot, PhoneWorldBackend
from navrl.device.pool.config import MAX_FREE_RETRIES, RETRY_REASONS, PoolConfig
from navrl.device.pool.dispatch import (DeviceFarm, StepOutcome, lease_outcome, start_steps, step_devices,
                                        step_outcome)
from navrl.device.pool.leased import FailedDevice, PooledDevice
from navrl.device.pool.pool import DevicePool
from navrl.device.pool.slot import DeviceStats

__all__ = [  # backend contract, lease errors and the phone-world backend are re-exported
    "MAX_FREE_RETRIES", "RETRY_REASONS", "DeviceBackend", "DeviceFarm", "DevicePool", "DeviceStats", "DeviceTimeout",
    "FailedDevice", "LeaseFailed", "PhoneSlot", "PhoneTaskSnapshot", "PhoneWorldBackend", "PoolClosed", "PoolConfig",
    "PoolExhausted", "PooledDevice", "StepOutcome", "lease_outcome", "start_steps", "step_devices", "step_outcome",
]
