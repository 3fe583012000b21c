"""The Ray device farm itself: :class:`RayFarm` starts one host actor per machine, leases a
batch's devices over the live hosts, takes them back (counting host-lost masks), and reports."""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import logging
import time
from typing import Any, Iterable, Sequence

from navrl.device.aio import resolve
from navrl.device.backend import PoolExhausted
from navrl.device.base import Device, DeviceError
from navrl.device.pool import FailedDevice, lease_outcome
from navrl.device.ray_farm.client import HostClient, Pending, Poller
from navrl.device.ray_farm.config import FarmConfig, FarmUnavailable, import_ray
from navrl.device.ray_farm.host import DeviceHost
from navrl.device.ray_farm.remote import PhoneMirrors, RemoteDevice
from navrl.device.ray_farm.wire import HOST_LOST

log = logging.getLogger(__name__)


class RayFarm:
    """Device hosts as Ray actors; a :class:`~navrl.device.pool.DeviceFarm` for the runner.

    ``address``: None joins an already initialised Ray or starts a local instance;
    ``"local"`` starts a local instance; anything else is passed to ``ray.init(address=)``.
    """

    def __init__(self, config: FarmConfig | None = None, address: str | None = None, **ray_init: Any):
        ray = import_ray()
        self.cfg = (config or FarmConfig()).validate()
        self._owns_ray = False
        if not ray.is_initialized():
            kw = {"include_dashboard": False, "log_to_driver": False, **ray_init}
            if address not in (None, "local"):
                kw["address"] = address
            else:   # a local instance stays on loopback: no traffic leaves this machine
                kw.setdefault("_node_ip_address", "127.0.0.1")
            ray.init(**kw)
            self._owns_ray = True
        pool = dataclasses.replace(self.cfg.pool, size=self.cfg.devices_per_host)
        opts: dict[str, Any] = {"num_cpus": self.cfg.num_cpus_per_host, "max_restarts": self.cfg.max_restarts,
                                "max_task_retries": 0, "concurrency_groups": {"poll": 1}}
        if self.cfg.resources_per_host:
            opts["resources"] = dict(self.cfg.resources_per_host)
        actor = ray.remote(**opts)(DeviceHost)
        self.clients = [HostClient(self, k, actor.remote(k, self.cfg.backend, pool, self.cfg.frames_kept))
                        for k in range(self.cfg.hosts)]
        self.host_losses = 0
        self.masked_host_lost = 0
        self.batches = 0
        self._closed = False
        self.mirrors = PhoneMirrors(self.cfg.backend, self.capacity)
        self.poller = Poller()
        for c in self.clients:
            if c.refresh() is None:
                raise FarmUnavailable(f"device host {c.index} did not start within {self.cfg.start_timeout_s:g} s")

    @property
    def capacity(self) -> int:
        return self.cfg.hosts * self.cfg.devices_per_host

    def lease_batch(self, tasks: Sequence[Any], want_snapshot: bool | None = None,
                    deadline: float | None = None) -> list[Device]:
        """One device per task, spread round-robin over the live hosts (task i → host
        i mod hosts while all are up); leases run on all hosts in parallel.

        ``want_snapshot`` (default: only for in-process backends, whose snapshots are
        cheap) brings each device's first snapshot back with the lease. Leases still
        running at ``deadline`` (``time.monotonic()``) fail as ``timeout``."""
        started = self.start_leases(tasks, want_snapshot)
        cf.wait(started, None if deadline is None else max(0.0, deadline - time.monotonic()))
        return [lease_outcome(f) for f in started]

    def hand_on(self, task: Any, used: Device) -> cf.Future:
        """A rolling queue's next lease: give ``used`` back and lease ``task`` on the host
        that device came from (a device is free there now); a future as :meth:`start_leases`."""
        host = used._client.index if isinstance(used, RemoteDevice) else None
        self.release_batch([used])
        return self.start_leases([task], host=host)[0]

    def start_leases(self, tasks: Sequence[Any], want_snapshot: bool | None = None,
                     host: int | None = None) -> list[cf.Future]:
        """Start :meth:`lease_batch`'s leases and return at once: a future per task of its
        device (or :class:`FailedDevice`), completed as soon as that device is leased and
        has looked at its screen. A future cancelled before that gives its device back.
        ``host``: lease every task on that host while it is up (else round-robin)."""
        if want_snapshot is None:
            want_snapshot = self.cfg.backend.in_process
        if self._closed:
            raise DeviceError("farm_closed", "the farm was closed")
        live = [c for c in self.clients if c.refresh() is not None]
        futs: list[cf.Future] = [cf.Future() for _ in tasks]
        if not live:
            for f in futs:
                resolve(f, FailedDevice(HOST_LOST, "no device host is up"))
            return futs
        if host is not None:
            live = [c for c in live if c.index == host] or live
        if len(tasks) > len(live) * self.cfg.devices_per_host:
            raise PoolExhausted(f"a batch of {len(tasks)} episodes needs {len(tasks)} devices; {len(live)} live "
                                f"hosts hold {len(live) * self.cfg.devices_per_host}")
        share: dict[int, list[int]] = {}
        for i in range(len(tasks)):
            share.setdefault(i % len(live), []).append(i)
        for k, idx in share.items():
            c = live[k]
            items = [Pending(futs[i], None, (tasks[i],)) for i in idx]
            c.start(c.incarnation, "lease", items, want_snapshot, self.cfg.lease_timeout_s)
        self.batches += 1
        return futs

    def __call__(self, tasks: Sequence[Any] | None = None) -> RayFarm:
        """A farm is its own device factory: ``factory(batch_tasks)`` is the source the
        runner leases that batch from (and returns it to)."""
        return self

    def release_batch(self, devices: Iterable[Device]) -> None:
        """Give the devices back (one call per host, not awaited) and log host-lost masks."""
        by_host: dict[tuple[int, str], list[int]] = {}
        lost = 0
        for d in devices:
            if not isinstance(d, RemoteDevice):
                if isinstance(d, FailedDevice) and d.reason == HOST_LOST:
                    lost += 1
                continue
            if d._released:
                continue
            d._released = True
            if d.last_error == HOST_LOST or d._incarnation in d._client.lost:
                lost += 1
                continue
            by_host.setdefault((d._client.index, d._incarnation), []).append(d._lid)
        for (k, inc), lids in by_host.items():
            try:
                self.clients[k].handle.release_many.remote(inc, lids)
            except Exception as e:  # noqa: BLE001 - release is best effort; the host forgets on restart
                log.info("release on host %d failed: %s", k, e)
        if lost:
            self.masked_host_lost += lost
            log.warning("masked %d trajectories as %s (total %d)", lost, HOST_LOST, self.masked_host_lost)

    def stats(self) -> dict:
        """Farm-wide counts plus each live host's pool stats."""
        ray = import_ray()
        hosts = []
        for c in self.clients:
            try:
                hosts.append(ray.get(c.handle.stats.remote(), timeout=self.cfg.call_timeout_s))
            except Exception as e:  # noqa: BLE001 - a dead host reports nothing
                hosts.append({"host": c.index, "error": f"{type(e).__name__}: {e}"})
        pools = [h["pool"] for h in hosts if "pool" in h]
        return {"hosts": self.cfg.hosts, "host_losses": self.host_losses, "masked_host_lost": self.masked_host_lost,
                "batches": self.batches, "devices": sum(p["devices"] for p in pools),
                "episodes": sum(p["episodes"] for p in pools), "resets": sum(p["resets"] for p in pools),
                "failures": sum(p["failures"] for p in pools), "quarantined": sum(p["quarantined"] for p in pools),
                "per_host": hosts}

    def kill_host(self, index: int, restart: bool = True) -> None:
        """Kill one host actor (tests and drills); Ray restarts it when ``restart``."""
        import_ray().kill(self.clients[index].handle, no_restart=not restart)

    def close(self) -> None:
        """Stop the host actors (and the Ray instance this farm started)."""
        if self._closed:
            return
        self._closed = True
        self.poller.close()
        ray = import_ray()
        for c in self.clients:
            try:
                ray.kill(c.handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if self._owns_ray:
            ray.shutdown()

    def __enter__(self) -> RayFarm:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

