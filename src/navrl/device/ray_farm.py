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
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import io
import itertools
import logging
import math
import os
import queue
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from navrl.actions import Action
from navrl.device.aio import Expiry, resolve
from navrl.device.base import ActResult, Device, DeviceError, Health
from navrl.device.backend import DeviceBackend, DeviceTimeout, PoolExhausted
from navrl.device.inprocess import PhoneWorldBackend
from navrl.device.pool import (DeviceFarm, DevicePool, FailedDevice, PoolConfig, lease_outcome, start_steps,
                               step_devices, step_outcome)
from navrl.observation import Observation, UINode

log = logging.getLogger(__name__)

__all__ = ["DeviceHost", "FarmConfig", "FarmUnavailable", "RayFarm", "RemoteDevice", "make_device_factory"]

HOST_LOST = "device_host_lost"


class FarmUnavailable(ImportError):
    """Ray is not installed (``pip install 'navrl[ray]'``) or could not be started."""


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise FarmUnavailable("the Ray device farm needs Ray: pip install 'navrl[ray]'") from e
    return ray


@dataclass(frozen=True)
class FarmConfig:
    """Settings of a :class:`RayFarm`."""

    hosts: int = 2
    """Device host actors (one per machine in a real farm)."""
    devices_per_host: int = 64
    """Pool size of each host: the most episodes one host runs at once."""
    backend: DeviceBackend = field(default_factory=PhoneWorldBackend)
    """What each host's pool drives (shipped to the hosts; must be picklable)."""
    pool: PoolConfig = PoolConfig()
    """Per-host pool settings (``size`` is replaced by ``devices_per_host``)."""
    call_timeout_s: float = 120.0
    """Deadline of one learner→host call (a whole batch of steps)."""
    lease_timeout_s: float = 600.0
    """Deadline of one host's share of a lease batch (restores of real devices are slow)."""
    start_timeout_s: float = 120.0
    """How long to wait for a host actor to start or restart."""
    screenshots: str = "lazy"
    """``lazy``: images fetched from the host when read; ``eager``: a PNG with every observation."""
    frames_kept: int = 8
    """Recent observations per device a host keeps for lazy screenshot fetches."""
    max_restarts: int = -1
    """Ray restarts of a dead host actor (-1: always)."""
    num_cpus_per_host: float = 1.0
    """CPUs Ray reserves for each host actor."""
    poll_linger_s: float = 0.005
    """How long a host's answer to a poll waits for more devices after the first is done
    (connected backends): a wave of devices comes back as one batch, a straggler later."""

    resources_per_host: tuple[tuple[str, float], ...] = ()
    """Custom Ray resources each host actor needs, e.g. ``(("device_host", 1),)`` with
    ``ray start --resources '{"device_host": 1}'`` on every machine that has devices:
    Ray then places exactly one host actor on each such machine."""

    def validate(self) -> "FarmConfig":
        if self.hosts <= 0 or self.devices_per_host <= 0:
            raise ValueError("hosts and devices_per_host must be positive")

        if self.screenshots not in ("lazy", "eager"):
            raise ValueError(f"screenshots must be 'lazy' or 'eager', got {self.screenshots!r}")
        return self


# ---------------------------------------------------------------------------------- wire format
@dataclass(frozen=True)
class _Wire:
    """An observation on the wire: the UI tree, and the PNG only in eager mode."""

    nodes: tuple[UINode, ...]
    app: str | None
    screen_size: tuple[int, int]
    platform: str
    seq: int
    png: bytes | None = None


def _err(e: DeviceError) -> tuple:
    return ("err", e.reason, str(e))


def _when(res: Any, outcome: Callable[[Any], Any], fn: Callable[[Any], None]) -> None:
    """``fn(outcome(res))`` once ``res`` is there: now, or when the future completes."""
    if isinstance(res, cf.Future):
        res.add_done_callback(lambda f: fn(outcome(f)))
    else:
        fn(res)


# ---------------------------------------------------------------------------------- the host actor
class DeviceHost:
    """The body of one device-host actor: a local pool and the leases handed out from it.

    Every method returns tagged replies instead of raising (``("ok", value)`` or
    ``("err", reason, message)``), so one broken device never fails a whole batch.
    Methods take the caller's idea of the host *incarnation*; a mismatch (the actor was
    restarted since the lease) answers ``device_host_lost``.
    """

    def __init__(self, index: int, backend: DeviceBackend, pool: PoolConfig, frames_kept: int = 8):
        self.index = index
        self.incarnation = uuid.uuid4().hex[:12]
        self.pool = DevicePool(backend, pool)
        self.frames_kept = frames_kept
        self.leases: dict[int, Device] = {}
        self.frames: dict[int, OrderedDict[int, Observation]] = {}
        self._lease_ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._done: queue.SimpleQueue[tuple] = queue.SimpleQueue()   # (token, reply) of started items
        self.started = time.time()

    # -- helpers --------------------------------------------------------------------
    def _stale(self, incarnation: str) -> bool:
        return incarnation != self.incarnation

    def _wire(self, lid: int, obs: Observation, eager: bool) -> _Wire:
        seq = next(self._seq)
        ring = self.frames.setdefault(lid, OrderedDict())
        ring[seq] = obs
        while len(ring) > self.frames_kept:
            ring.popitem(last=False)
        return _Wire(obs.nodes, obs.app, obs.screen_size, obs.platform, seq, obs.png if eager else None)

    def _outcome(self, lid: int, res: Any, eager: bool) -> tuple:
        if isinstance(res, DeviceError):
            return _err(res)
        if isinstance(res, BaseException):
            return ("raise", res)
        obs, snap = res
        return ("ok", (self._wire(lid, obs, eager), snap))

    # -- actor methods -----------------------------------------------------------------
    def info(self) -> dict:
        return {"host": self.index, "incarnation": self.incarnation, "pid": os.getpid(),
                "leased": len(self.leases), "devices": len(self.pool), "started": self.started}

    def start(self, incarnation: str, kind: str, items: list[tuple], want_snapshot: bool, eager: bool) -> None:
        """Start leases (``kind="lease"``, items ``(token, task)``: lease, restore, probe and a
        first look) or steps (``kind="step"``, items ``(token, lease id, action or None)``) and
        return at once; each item's reply, under its token, comes back through :meth:`poll`
        as soon as that device is done, so one slow device holds up nothing else."""
        if self._stale(incarnation):
            for it in items:
                self._done.put((it[0], ("err", HOST_LOST, "the device host restarted")))
            return
        if kind == "lease":
            try:
                started = self.pool.start_leases([task for _, task in items])
            except DeviceError as e:
                for tok, _ in items:
                    self._done.put((tok, _err(e)))
                return
            for (tok, _), res in zip(items, started):
                _when(res, lease_outcome, lambda dev, tok=tok: self._leased(tok, dev, want_snapshot, eager))
            return
        devs, acts, toks = [], [], []
        for tok, lid, action in items:
            d = self.leases.get(lid)
            if d is None:
                self._done.put((tok, ("err", "lease_released", f"lease {lid} is not held on host {self.index}")))
            else:
                devs.append(d), acts.append(action), toks.append((tok, lid))
        for (tok, lid), res in zip(toks, start_steps(devs, acts, want_snapshot)):
            _when(res, step_outcome, lambda r, tok=tok, lid=lid: self._done.put((tok, self._outcome(lid, r, eager))))

    def _leased(self, tok: int, dev: Device, want_snapshot: bool, eager: bool) -> None:
        if isinstance(dev, FailedDevice):
            self._done.put((tok, ("err", dev.reason, dev.message)))
            return
        lid = next(self._lease_ids)
        self.leases[lid] = dev
        (look,) = start_steps([dev], [None], want_snapshot)
        _when(look, step_outcome,
              lambda r: self._done.put((tok, ("ok", (lid, dev.platform, self._first(lid, r, eager))))))

    def _first(self, lid: int, res: Any, eager: bool) -> tuple:
        if isinstance(res, BaseException) and not isinstance(res, DeviceError):
            return ("err", "look_failed", f"{type(res).__name__}: {res}")
        return self._outcome(lid, res, eager)

    def poll(self, incarnation: str, wait_s: float, linger_s: float) -> list[tuple] | None:
        """The replies of started items that are done: waits up to ``wait_s`` for the first,
        then ``linger_s`` for more (so that a wave of devices comes back as one batch).
        None: this is not the incarnation the caller started them on."""
        if self._stale(incarnation):
            return None
        out: list[tuple] = []
        try:
            out.append(self._done.get(timeout=wait_s))
            end = time.monotonic() + linger_s
            while True:
                out.append(self._done.get(timeout=max(0.0, end - time.monotonic())))
        except queue.Empty:
            return out

    def step_many(self, incarnation: str, items: list[tuple[int, Action | None]], want_snapshot: bool,
                  eager: bool) -> list[tuple]:
        """One runner step for several leased devices: act (unless None), observe, snapshot."""
        if self._stale(incarnation):
            return [("err", HOST_LOST, "the device host restarted")] * len(items)
        devs, acts, idx, out = [], [], [], [None] * len(items)
        for i, (lid, a) in enumerate(items):
            d = self.leases.get(lid)
            if d is None:
                out[i] = ("err", "lease_released", f"lease {lid} is not held on host {self.index}")
            else:
                devs.append(d), acts.append(a), idx.append(i)
        for i, res in zip(idx, step_devices(devs, acts, want_snapshot)):
            out[i] = self._outcome(items[i][0], res, eager)
        return out  # type: ignore[return-value]

    def call(self, incarnation: str, lid: int, name: str, args: tuple, eager: bool) -> tuple:
        """One Device-protocol call (observe, act, snapshot, restore, health) on a leased device."""
        if self._stale(incarnation):
            return ("err", HOST_LOST, "the device host restarted")
        d = self.leases.get(lid)
        if d is None:
            return ("err", "lease_released", f"lease {lid} is not held on host {self.index}")
        if name not in ("observe", "act", "snapshot", "restore", "health"):
            return ("raise", ValueError(f"not a device call: {name!r}"))
        try:
            value = getattr(d, name)(*args)
        except DeviceError as e:
            return _err(e)
        except Exception as e:  # noqa: BLE001 - re-raised on the learner (ActionError etc.)
            return ("raise", e)
        if name == "observe":
            value = self._wire(lid, value, eager)
        return ("ok", value)

    def render(self, incarnation: str, lid: int, seq: int) -> tuple:
        """The PNG of an earlier observation (lazy screenshots)."""
        if self._stale(incarnation):
            return ("err", HOST_LOST, "the device host restarted")
        obs = self.frames.get(lid, {}).get(seq)
        if obs is None:
            return ("err", "frame_evicted", f"frame {seq} of lease {lid} is no longer kept")
        try:
            return ("ok", obs.png)
        except DeviceError as e:
            return _err(e)

    def release_many(self, incarnation: str, lids: list[int]) -> int:
        if self._stale(incarnation):
            return 0
        n = 0
        for lid in lids:
            d = self.leases.pop(lid, None)
            self.frames.pop(lid, None)
            if d is not None:
                d.close()
                n += 1
        return n

    def stats(self) -> dict:
        return {**self.info(), "pool": self.pool.stats()}

    def crash(self) -> None:  # pragma: no cover - ends the process
        """Test hook: the host process dies at once, as on a machine failure."""
        os._exit(17)

    def close(self) -> None:
        self.pool.close()


# ---------------------------------------------------------------------------------- learner side
class _HostClient:
    """The learner's handle on one host actor; the ``step_batcher`` of its devices."""

    def __init__(self, farm: "RayFarm", index: int, handle: Any):
        self.farm, self.index, self.handle = farm, index, handle
        self.incarnation: str | None = None
        self.lost: set[str] = set()
        self.dead = False
        self._lock = threading.Lock()
        self.waiting: dict[int, _Item] = {}     # token -> started item whose reply is due
        self.polling: str | None = None         # incarnation of the poll in flight

    @property
    def cfg(self) -> FarmConfig:
        return self.farm.cfg

    def refresh(self) -> str | None:
        """The host's current incarnation (waits for a restart); None if it is gone for good."""
        ray = _ray()
        try:
            inc = ray.get(self.handle.info.remote(), timeout=self.cfg.start_timeout_s)["incarnation"]
        except Exception as e:  # noqa: BLE001 - a host that cannot answer is out of the farm
            log.warning("device host %d does not answer (%s: %s); leasing elsewhere", self.index, type(e).__name__, e)
            self.dead = True
            return None
        self.dead = False
        if self.incarnation is not None and inc != self.incarnation:
            self.mark_lost(self.incarnation, "restarted")
        self.incarnation = inc
        return inc

    def mark_lost(self, incarnation: str, why: str) -> None:
        if incarnation not in self.lost:
            self.lost.add(incarnation)
            self.farm.host_losses += 1
            log.warning("device host %d lost (%s); its in-flight episodes are masked as %s", self.index, why,
                        HOST_LOST)

    def get(self, ref: Any, incarnation: str, timeout: float) -> Any:
        """ray.get with the farm's failure mapping: a dead actor is ``device_host_lost``."""
        ray = _ray()
        try:
            return ray.get(ref, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise DeviceTimeout(f"device host {self.index} did not answer within {timeout:g} s") from None
        except Exception as e:  # noqa: BLE001 - mapped (or re-raised) by _failure
            raise self._failure(e, incarnation) from None

    def _failure(self, e: Exception, incarnation: str) -> Exception:
        """A Ray error of a call to this host as the DeviceError the runner masks."""
        ray = _ray()
        if isinstance(e, (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                          ray.exceptions.ObjectLostError)):
            self.mark_lost(incarnation, type(e).__name__)
            return DeviceError(HOST_LOST, f"device host {self.index}: {type(e).__name__}")
        if isinstance(e, ray.exceptions.RayTaskError):
            return DeviceError("device_host_error", f"device host {self.index}: {e}")
        return e

    # step_batcher protocol --------------------------------------------------------------
    def submit_steps(self, items: list[tuple["RemoteDevice", Action | None]],
                     want_snapshot: bool) -> list[cf.Future]:
        """Start these devices' steps on the host; one future per item, completed when that
        device is done (or with ``timeout`` after ``call_timeout_s``). A first look (action
        None) that the lease already brought back is answered here.

        In-process backends step in one ``step_many`` call per host (the host answers once
        all are done, at CPU speed); connected ones are started and polled, so each device's
        answer comes back as soon as it is there."""
        futs: list[cf.Future] = [cf.Future() for _ in items]
        groups: dict[str, list[int]] = {}
        for i, (d, a) in enumerate(items):
            if d._incarnation in self.lost or d._released:
                resolve(futs[i], d._dead_error())
            elif a is None and d._obs is not None and (d._has_snap or not want_snapshot):
                resolve(futs[i], (d._obs, d._snap if want_snapshot else None))
            else:
                groups.setdefault(d._incarnation, []).append(i)
        eager = self.cfg.screenshots == "eager"
        for inc, idx in groups.items():
            if not self.cfg.backend.in_process:
                self.start(inc, "step", [_Item(futs[i], items[i][0], (items[i][0]._lid, items[i][1])) for i in idx],
                           want_snapshot, self.cfg.call_timeout_s)
                continue
            ref = self.handle.step_many.remote(inc, [(items[i][0]._lid, items[i][1]) for i in idx], want_snapshot,
                                               eager)
            part = [(items[i][0], futs[i]) for i in idx]
            expiry = self.farm._expiry.at(time.monotonic() + self.cfg.call_timeout_s,
                                          lambda part=part: self._expire([_Item(f, d, None) for d, f in part]))
            ref.future().add_done_callback(lambda hf, inc=inc, part=part, x=expiry: self._answered(hf, inc, part, x))
        return futs

    def _answered(self, hf: cf.Future, inc: str, part: list[tuple["RemoteDevice", cf.Future]], expiry: list) -> None:
        Expiry.cancel(expiry)
        try:
            replies = hf.result()
        except Exception as e:  # noqa: BLE001 - every item of the call fails alike
            self._fail([_Item(f, d, None) for d, f in part], self._failure(e, inc))
            return
        for (d, f), reply in zip(part, replies):
            if not f.done():
                resolve(f, d._absorb_step(reply))

    # started items, answered through the host's poll ----------------------------------------
    def start(self, inc: str, kind: str, items: list["_Item"], want_snapshot: bool, timeout: float) -> None:
        """Send ``items`` to the host (not awaited) and note them until their replies come
        back through the farm's poller; what has no reply after ``timeout`` fails as ``timeout``."""
        with self._lock:
            for it in items:
                it.token = next(self.farm._tokens)
                it.incarnation = inc
                self.waiting[it.token] = it
        self.handle.start.remote(inc, kind, [(it.token, *it.payload) for it in items], want_snapshot,
                                 self.cfg.screenshots == "eager")
        self.farm._expiry.at(time.monotonic() + timeout, lambda: self._expire(items))
        self.poll()

    def poll(self) -> None:
        """Send a ``poll`` if items wait and none is in flight; its answer goes to the farm's
        poller thread (which hands the replies over and polls again while items wait)."""
        with self._lock:
            if self.polling is not None or not self.waiting:
                return
            inc = self.polling = next(iter(self.waiting.values())).incarnation
        ref = self.handle.poll.options(concurrency_group="poll").remote(inc, 5.0, self.cfg.poll_linger_s)
        ref.future().add_done_callback(lambda _f: self.farm._answers.put((self, ref, inc)))

    def polled(self, ref: Any, inc: str) -> None:
        """Hand the replies of one poll to their items (the poller thread calls this)."""
        try:
            replies = _ray().get(ref)
            err = None if replies is not None else DeviceError(HOST_LOST, f"device host {self.index} restarted")
        except Exception as e:  # noqa: BLE001 - every waiting item fails alike
            replies, err = None, self._failure(e, inc)
        with self._lock:
            self.polling = None
            if err is not None:
                dead = [it for it in self.waiting.values() if it.incarnation == inc]
                for it in dead:
                    del self.waiting[it.token]
            else:
                got = [(self.waiting.pop(tok, None), reply) for tok, reply in replies]   # type: ignore[union-attr]
        if err is not None:
            if err.reason == HOST_LOST:   # type: ignore[union-attr]
                self.mark_lost(inc, "restarted")
            self._fail(dead, err)
            return
        for it, reply in got:
            if it is not None:
                it.land(self, reply)

    def _fail(self, items: list["_Item"], err: Exception) -> None:
        for it in items:
            if isinstance(err, DeviceError) and it.device is not None:
                it.device._note(err)
            resolve(it.future, err)

    def _expire(self, items: list["_Item"]) -> None:
        with self._lock:
            late = [it for it in items if not it.future.done()]
            for it in late:
                self.waiting.pop(it.token, None)
        self._fail(late, DeviceTimeout(f"device host {self.index} did not answer within its deadline"))


class _Item:
    """A lease or step started on a host, waiting for its reply: ``device`` is the
    RemoteDevice of a step (None for a lease, whose ``payload`` is the task)."""

    __slots__ = ("future", "device", "payload", "token", "incarnation")

    def __init__(self, future: cf.Future, device: "RemoteDevice | None", payload: Any):
        self.future, self.device, self.payload = future, device, payload
        self.token, self.incarnation = 0, ""

    def land(self, client: _HostClient, reply: tuple) -> None:
        if self.device is not None:                       # a step
            if not self.future.done():
                resolve(self.future, self.device._absorb_step(reply))
            return
        task = self.payload[0]                           # a lease
        if reply[0] != "ok":
            resolve(self.future, FailedDevice(reply[1], reply[2]))
            return
        lid, platform, first = reply[1]
        dev = RemoteDevice(client, lid, self.incarnation, task, platform, first)
        if not resolve(self.future, dev):                # abandoned meanwhile: give it back
            client.farm.release_batch([dev])


class RemoteDevice(Device):
    """A device leased on a host actor (the Device protocol over Ray).

    ``observe()`` and ``snapshot()`` answer from what the last step or lease brought back;
    everything else is one host call under the farm's deadline. Attribute reads outside
    the protocol (``state``, ``frame`` …, read by privileged planners such as the scripted
    expert) go to a local mirror of the phone world, restored from the latest snapshot.
    """

    def __init__(self, client: _HostClient, lid: int, incarnation: str, task: Any, platform: str,
                 first: tuple, snap: Any = None):
        self._client, self._lid, self._incarnation = client, lid, incarnation
        self.task = task
        self.platform = platform
        self.host = client.index
        self.last_error: str | None = None
        self._released = False
        self._obs: Observation | None = None
        self._obs_err: DeviceError | None = None
        self._snap: Any = None
        self._has_snap = False
        if first[0] == "ok":
            wire, s = first[1]
            self._obs = self._to_obs(wire)
            if s is not None:
                self._snap, self._has_snap = s, True
        else:
            self._obs_err = DeviceError(first[1], first[2])

    @property
    def step_batcher(self) -> _HostClient:
        return self._client

    # -- plumbing -------------------------------------------------------------------------
    def _dead_error(self) -> DeviceError:
        if self._incarnation in self._client.lost:
            e = DeviceError(HOST_LOST, f"device host {self.host} was lost")
        else:
            e = DeviceError("lease_released", "this device was returned to its host")
        self.last_error = e.reason
        return e

    def _note(self, e: DeviceError) -> None:
        self.last_error = e.reason

    def _to_obs(self, w: _Wire) -> Observation:
        if w.png is not None:
            return Observation(w.nodes, w.app, w.screen_size, w.platform, _png=w.png)
        return Observation(w.nodes, w.app, w.screen_size, w.platform, render=lambda s=w.seq: self._fetch_frame(s))

    def _fetch_frame(self, seq: int) -> Any:
        from PIL import Image
        png = self._unwrap(self._client.get(self._client.handle.render.remote(self._incarnation, self._lid, seq),
                                            self._incarnation, self._client.cfg.call_timeout_s))
        return Image.open(io.BytesIO(png)).convert("RGB")

    def _unwrap(self, reply: tuple) -> Any:
        if reply[0] == "ok":
            return reply[1]
        if reply[0] == "raise":
            raise reply[1]
        if reply[1] == HOST_LOST:
            self._client.mark_lost(self._incarnation, "restarted")
        e = DeviceError(reply[1], reply[2])
        self.last_error = e.reason
        raise e

    def _absorb_step(self, reply: tuple) -> Any:
        try:
            wire, snap = self._unwrap(reply)
        except DeviceError as e:
            self._obs = None
            return e
        except Exception as e:  # noqa: BLE001 - handed to the runner, which re-raises it
            return e
        self._obs = self._to_obs(wire)
        self._snap, self._has_snap = snap, snap is not None
        return self._obs, snap

    def _call(self, name: str, *args: Any) -> Any:
        if self._released or self._incarnation in self._client.lost:
            raise self._dead_error()
        c = self._client
        ref = c.handle.call.remote(self._incarnation, self._lid, name, args, c.cfg.screenshots == "eager")
        try:
            return self._unwrap(c.get(ref, self._incarnation, c.cfg.call_timeout_s))
        except DeviceError as e:
            self.last_error = e.reason
            raise

    # -- Device protocol ---------------------------------------------------------------------
    def observe(self) -> Observation:
        if self._obs_err is not None:
            e, self._obs_err = self._obs_err, None
            self.last_error = e.reason
            raise e
        if self._obs is None:
            self._obs = self._to_obs(self._call("observe"))
        return self._obs

    def act(self, action: Action) -> ActResult:
        self._obs, self._has_snap = None, False
        return self._call("act", action)

    def snapshot(self) -> object:
        if not self._has_snap:
            self._snap, self._has_snap = self._call("snapshot"), True
        return self._snap

    def restore(self, snapshot: object) -> None:
        self._obs, self._has_snap = None, False
        self._call("restore", snapshot)

    def health(self) -> Health:
        return self._call("health")

    def close(self) -> None:
        if not self._released:
            self._client.farm.release_batch([self])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not hasattr(self.__dict__.get("task"), "make_device"):
            raise AttributeError(name)
        snap = self.snapshot()
        seen = self.__dict__.get("_seen")          # (snapshot, mirror entry) of the last read
        if seen is not None and seen[0] is snap and seen[1][1] is snap:
            return getattr(seen[1][0], name)      # the mirror still holds this device's state
        entry = self._client.farm._mirror_entry(self.task, snap)
        self._seen = (snap, entry)
        return getattr(entry[0], name)


# ---------------------------------------------------------------------------------- the farm
class RayFarm:
    """Device hosts as Ray actors; a :class:`~navrl.device.pool.DeviceFarm` for the runner.

    ``address``: None joins an already initialised Ray or starts a local instance;
    ``"local"`` starts a local instance; anything else is passed to ``ray.init(address=)``.
    """

    def __init__(self, config: FarmConfig | None = None, address: str | None = None, **ray_init: Any):
        ray = _ray()
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
        self.clients = [_HostClient(self, k, actor.remote(k, self.cfg.backend, pool, self.cfg.frames_kept))
                        for k in range(self.cfg.hosts)]
        self.host_losses = 0
        self.masked_host_lost = 0
        self.batches = 0
        self._closed = False
        self._expiry = Expiry("navrl-farm-expiry")
        self._tokens = itertools.count(1)
        self._mirrors: OrderedDict[Any, list] = OrderedDict()
        self._answers: queue.SimpleQueue = queue.SimpleQueue()    # (client, poll ref, incarnation) answered
        self._poller = threading.Thread(target=self._poll_loop, name="navrl-farm-poller", daemon=True)
        self._poller.start()
        for c in self.clients:
            if c.refresh() is None:
                raise FarmUnavailable(f"device host {c.index} did not start within {self.cfg.start_timeout_s:g} s")

    @property
    def capacity(self) -> int:
        return self.cfg.hosts * self.cfg.devices_per_host

    def _mirror_entry(self, task: Any, snap: Any) -> list:
        """A local phone world at ``snap`` for privileged reads: one per world configuration
        (``backend.world_key``), kept across batches, restored from each device's snapshot
        in turn (restoring one costs about 0.1 ms: apps never read stay shared seed data)."""
        key = self.cfg.backend.world_key(task)
        entry = self._mirrors.get(key)
        if entry is None:
            entry = self._mirrors[key] = [task.make_device(), None]
            while len(self._mirrors) > self.capacity:
                self._mirrors.popitem(last=False)
        self._mirrors.move_to_end(key)
        if entry[1] is not snap:
            entry[0].restore(snap)
            entry[1] = snap
        return entry

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
            c.start(c.incarnation, "lease", [_Item(futs[i], None, (tasks[i],)) for i in idx],  # type: ignore[arg-type]
                    want_snapshot, self.cfg.lease_timeout_s)
        self.batches += 1
        return futs

    def _poll_loop(self) -> None:
        """The poller thread: hands each poll's replies to their items and polls that host
        again while items wait (it sleeps on a queue in between: no busy waiting)."""
        while True:
            got = self._answers.get()
            if got is None:
                return
            client, ref, inc = got
            try:
                client.polled(ref, inc)
                client.poll()
            except Exception as e:  # noqa: BLE001 - Ray shutting down; the items expire
                log.debug("poll of host %d failed: %s", client.index, e)

    def __call__(self, tasks: Sequence[Any] | None = None) -> "RayFarm":
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
        ray = _ray()
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
        _ray().kill(self.clients[index].handle, no_restart=not restart)

    def close(self) -> None:
        """Stop the host actors (and the Ray instance this farm started)."""
        if self._closed:
            return
        self._closed = True
        self._answers.put(None)
        self._expiry.close()
        ray = _ray()
        for c in self.clients:
            try:
                ray.kill(c.handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if self._owns_ray:
            ray.shutdown()

    def __enter__(self) -> "RayFarm":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---------------------------------------------------------------------------------- entry point
def make_device_factory(ray_address: str | None = None, *, devices: int = 512, hosts: int | None = None,
                        backend: DeviceBackend | None = None, pool: PoolConfig | None = None,
                        screenshots: str = "lazy", **ray_init: Any) -> DeviceFarm:
    """The device source for a run: what ``--ray [ADDRESS]`` selects.

    - ``ray_address=None``: the embedded default, an in-process :class:`DevicePool` of at
      most ``devices`` devices (made on demand, so a generous bound costs nothing).
    - ``"local"`` (``--ray`` without an address): start a local Ray instance and ``hosts``
      host actors (default 2) with ``ceil(devices / hosts)`` devices each.
    - any other string: join that Ray cluster (``"auto"``, ``"ray://head:10001"`` …).

    The result has ``lease_batch``/``release_batch``: pass it as ``devices=`` to
    :meth:`navrl.rollout.runner.EpisodeRunner.run` (calling it with a batch's tasks returns
    itself, so it also serves where a ``devices_factory(tasks)`` is expected); log its
    ``stats()`` (``masked_host_lost`` counts host-lost masks); ``close()`` it at the end.
    A batch larger than ``devices`` runs as a rolling queue (the runner starts the episodes
    beyond it as earlier ones finish). Raises FarmUnavailable when Ray is needed but missing.
    """
    be = backend or PhoneWorldBackend()
    if ray_address is None:
        return DevicePool(be, dataclasses.replace(pool or PoolConfig(), size=devices))
    h = hosts or 2
    cfg = FarmConfig(hosts=h, devices_per_host=math.ceil(devices / h), backend=be, pool=pool or PoolConfig(),
                     screenshots=screenshots)
    return RayFarm(cfg, address=ray_address, **ray_init)
