"""The device host: the body of one Ray actor (one per machine), a local
:class:`~navrl.device.pool.DevicePool` and the leases handed out from it, answering the
learner with tagged replies (:mod:`.wire`) and keeping recent frames for lazy screenshots."""
from __future__ import annotations

import concurrent.futures as cf
import itertools
import os
import queue
import time
import uuid
from collections import OrderedDict
from typing import Any, Callable

from navrl.actions import Action
from navrl.device.backend import DeviceBackend
from navrl.device.base import Device, DeviceError
from navrl.device.pool import (DevicePool, FailedDevice, PoolConfig, lease_outcome, start_steps, step_devices,
                               step_outcome)
from navrl.device.ray_farm.wire import HOST_LOST, Wire, err_reply
from navrl.observation import Observation


def _when(res: Any, outcome: Callable[[Any], Any], fn: Callable[[Any], None]) -> None:
    """``fn(outcome(res))`` once ``res`` is there: now, or when the future completes."""
    if isinstance(res, cf.Future):
        res.add_done_callback(lambda f: fn(outcome(f)))
    else:
        fn(res)


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

    def _wire(self, lid: int, obs: Observation, eager: bool) -> Wire:
        seq = next(self._seq)
        ring = self.frames.setdefault(lid, OrderedDict())
        ring[seq] = obs
        while len(ring) > self.frames_kept:
            ring.popitem(last=False)
        return Wire(obs.nodes, obs.app, obs.screen_size, obs.platform, seq, obs.png if eager else None)

    def _outcome(self, lid: int, res: Any, eager: bool) -> tuple:
        if isinstance(res, DeviceError):
            return err_reply(res)
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
                    self._done.put((tok, err_reply(e)))
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
            return err_reply(e)
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
            return err_reply(e)

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

