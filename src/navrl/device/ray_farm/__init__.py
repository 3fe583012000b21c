"""Ray device hosts: devices live in Ray actors, one per device host, each owning a local
:class:`~navrl.device.pool.DevicePool`; the episode runner stays on the learner.

::

    learner process                                   Ray actor "device host" k (one per machine)
    EpisodeRunner ── planner/grounder/judge (batched) DeviceHost
        │ start_leases(tasks) ── one call per host ──► DevicePool.start_leases → restore + probe + look
        │ start_steps(...)    ── one call per host ──► act, observe (+ snapshot) for its devices
        │   poller thread     ── one poll per host ◄── the replies of the devices that are done
        │ release_batch(...)  ── one call per host ──► DevicePool.release
        ▼
    RemoteDevice (a Device proxy; raises DeviceError("device_host_lost") once its host died)

Leases and steps come back as futures. For connected backends (real devices, the latency
model) a host starts them and returns at once; the learner's poller thread keeps one
``poll`` per host in flight, which answers with the devices that are done (a wave of them
within ``poll_linger_s`` as one batch), so the runner works on early devices while others
still wait and a straggler delays only its own episode. Each host's pool overlaps its own
devices' waits (no thread per waiting device with async devices). In-process backends step
in one ``step_many`` call per host and step. A host serves its calls in order on one thread;
only ``poll`` waits, in its own Ray concurrency group, so a release (which cancels the steps
still waiting on its devices) or the next lease never queues behind a waiting device.

A host that dies mid-episode (process killed, machine gone) makes every in-flight call
to it fail; its devices raise ``DeviceError("device_host_lost")``, so the runner masks
exactly those trajectories. Ray restarts the actor (``max_restarts``); the restarted
host has a new *incarnation*, so stale leases can never reach a device of the new one,
and the next batch leases from it as usual. Masked counts are logged and kept in
:meth:`RayFarm.stats`.

Screenshots travel lazily by default: an observation carries the UI tree, and its image
is fetched from the host only when something reads it (the host keeps the last few
frames per device). ``screenshots="eager"`` ships PNGs with every observation.

Entry point for the trainer and ``navrl eval --ray``: :func:`make_device_factory`.
Ray is an optional extra: ``pip install 'navrl[ray]'``.

The modules, one job each:

- :mod:`.config`: :class:`FarmConfig`; Ray imported on first use (:class:`FarmUnavailable`).
- :mod:`.wire`: what crosses between learner and host (tagged replies, observations, ``HOST_LOST``).
- :mod:`.host`: :class:`DeviceHost`, the body of a host actor (a local pool and its leases).
- :mod:`.client`: the learner's handle on each host, its started items and the poller thread.
- :mod:`.remote`: :class:`RemoteDevice`, a leased device over Ray, and its local phone mirrors.
- :mod:`.farm`: :class:`RayFarm`: hosts started, batches leased over them, devices taken back.
- :mod:`.factory`: :func:`make_device_factory`, the in-process pool or a Ray farm.
"""
from __future__ import annotations

from navrl.device.ray_farm.config import FarmConfig, FarmUnavailable
from navrl.device.ray_farm.factory import make_device_factory
from navrl.device.ray_farm.farm import RayFarm
from navrl.device.ray_farm.host import DeviceHost
from navrl.device.ray_farm.remote import RemoteDevice
from navrl.device.ray_farm.wire import HOST_LOST

__all__ = ["HOST_LOST", "DeviceHost", "FarmConfig", "FarmUnavailable", "RayFarm", "RemoteDevice", "make_device_factory"]
