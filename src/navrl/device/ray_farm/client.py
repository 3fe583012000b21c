"""The learner's side of the device hosts: a :class:`HostClient` per host actor (the
``step_batcher`` of its devices: it starts leases and steps there, maps Ray failures to
``device_host_lost``, and fails what has no reply by its deadline), the :class:`Pending`
each started lease or step waits as, and the :class:`Poller` thread that brings the replies home."""
from __future__ import annotations

import concurrent.futures as cf
import itertools
import logging
import queue
import threading
import time
from typing import TYPE_CHECKING, Any

from navrl.actions import Action
from navrl.device.aio import Expiry, resolve
from navrl.device.backend import DeviceTimeout
from navrl.device.base import DeviceError
from navrl.device.pool import FailedDevice
from navrl.device.ray_farm.config import FarmConfig, import_ray
from navrl.device.ray_farm.remote import RemoteDevice
from navrl.device.ray_farm.wire import HOST_LOST

if TYPE_CHECKING:
    from navrl.device.ray_farm.farm import RayFarm

log = logging.getLogger(__name__)


class HostClient:
    """The learner's handle on one host actor; the ``step_batcher`` of its devices."""

    def __init__(self, farm: RayFarm, index: int, handle: Any):
        self.farm, self.index, self.handle = farm, index, handle
        self.incarnation: str | None = None
        self.lost: set[str] = set()
        self.dead = False
        self._lock = threading.Lock()
        self.waiting: dict[int, Pending] = {}    # token -> started item whose reply is due
        self.polling: str | None = None         # incarnation of the poll in flight

    @property
    def cfg(self) -> FarmConfig:
        return self.farm.cfg

    def refresh(self) -> str | None:
        """The host's current incarnation (waits for a restart); None if it is gone for good."""
        ray = import_ray()
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
        ray = import_ray()
        try:
            return ray.get(ref, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise DeviceTimeout(f"device host {self.index} did not answer within {timeout:g} s") from None
        except Exception as e:  # noqa: BLE001 - mapped (or re-raised) by _failure
            raise self._failure(e, incarnation) from None

    def _failure(self, e: Exception, incarnation: str) -> Exception:
        """A Ray error of a call to this host as the DeviceError the runner masks."""
        ray = import_ray()
        if isinstance(e, (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                          ray.exceptions.ObjectLostError)):
            self.mark_lost(incarnation, type(e).__name__)
            return DeviceError(HOST_LOST, f"device host {self.index}: {type(e).__name__}")
        if isinstance(e, ray.exceptions.RayTaskError):
            return DeviceError("device_host_error", f"device host {self.index}: {e}")
        return e

    # step_batcher protocol --------------------------------------------------------------
    def submit_steps(self, items: list[tuple[RemoteDevice, Action | None]],
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
                self.start(inc, "step", [Pending(futs[i], items[i][0], (items[i][0]._lid, items[i][1])) for i in idx],
                           want_snapshot, self.cfg.call_timeout_s)
                continue
            ref = self.handle.step_many.remote(inc, [(items[i][0]._lid, items[i][1]) for i in idx], want_snapshot,
                                               eager)
            part = [(items[i][0], futs[i]) for i in idx]
            expiry = self.farm.poller.expiry.at(time.monotonic() + self.cfg.call_timeout_s,
                                          lambda part=part: self._expire([Pending(f, d, None) for d, f in part]))
            ref.future().add_done_callback(lambda hf, inc=inc, part=part, x=expiry: self._answered(hf, inc, part, x))
        return futs

    def _answered(self, hf: cf.Future, inc: str, part: list[tuple[RemoteDevice, cf.Future]], expiry: list) -> None:
        Expiry.cancel(expiry)
        try:
            replies = hf.result()
        except Exception as e:  # noqa: BLE001 - every item of the call fails alike
            self._fail([Pending(f, d, None) for d, f in part], self._failure(e, inc))
            return
        for (d, f), reply in zip(part, replies):
            if not f.done():
                resolve(f, d._absorb_step(reply))

    # started items, answered through the host's poll ----------------------------------------
    def start(self, inc: str, kind: str, items: list[Pending], want_snapshot: bool, timeout: float) -> None:
        """Send ``items`` to the host (not awaited) and note them until their replies come
        back through the farm's poller; what has no reply after ``timeout`` fails as ``timeout``."""
        with self._lock:
            for it in items:
                it.token = self.farm.poller.token()
                it.incarnation = inc
                self.waiting[it.token] = it
        self.handle.start.remote(inc, kind, [(it.token, *it.payload) for it in items], want_snapshot,
                                 self.cfg.screenshots == "eager")
        self.farm.poller.expiry.at(time.monotonic() + timeout, lambda: self._expire(items))
        self.poll()

    def poll(self) -> None:
        """Send a ``poll`` if items wait and none is in flight; its answer goes to the farm's
        poller thread (which hands the replies over and polls again while items wait)."""
        with self._lock:
            if self.polling is not None or not self.waiting:
                return
            inc = self.polling = next(iter(self.waiting.values())).incarnation
        ref = self.handle.poll.options(concurrency_group="poll").remote(inc, 5.0, self.cfg.poll_linger_s)
        ref.future().add_done_callback(lambda _f: self.farm.poller.answered(self, ref, inc))

    def polled(self, ref: Any, inc: str) -> None:
        """Hand the replies of one poll to their items (the poller thread calls this)."""
        try:
            replies = import_ray().get(ref)
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

    def _fail(self, items: list[Pending], err: Exception) -> None:
        for it in items:
            if isinstance(err, DeviceError) and it.device is not None:
                it.device._note(err)
            resolve(it.future, err)

    def _expire(self, items: list[Pending]) -> None:
        with self._lock:
            late = [it for it in items if not it.future.done()]
            for it in late:
                self.waiting.pop(it.token, None)
        self._fail(late, DeviceTimeout(f"device host {self.index} did not answer within its deadline"))


class Pending:
    """A lease or step started on a host, waiting for its reply: ``device`` is the
    RemoteDevice of a step (None for a lease, whose ``payload`` is the task)."""

    __slots__ = ("future", "device", "payload", "token", "incarnation")

    def __init__(self, future: cf.Future, device: RemoteDevice | None, payload: Any):
        self.future, self.device, self.payload = future, device, payload
        self.token, self.incarnation = 0, ""

    def land(self, client: HostClient, reply: tuple) -> None:
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


class Poller:
    """The farm's poller thread: hands each answered poll's replies to their items and polls
    that host again while items wait (it sleeps on a queue in between: no busy waiting). Also
    the farm's item tokens and deadlines (``expiry``)."""

    def __init__(self) -> None:
        self.expiry = Expiry("navrl-farm-expiry")
        self._tokens = itertools.count(1)
        self._answers: queue.SimpleQueue = queue.SimpleQueue()    # (client, poll ref, incarnation) answered
        self._thread = threading.Thread(target=self._loop, name="navrl-farm-poller", daemon=True)
        self._thread.start()

    def token(self) -> int:
        return next(self._tokens)

    def answered(self, client: HostClient, ref: Any, inc: str) -> None:
        """A poll of ``client``'s host (incarnation ``inc``) has its answer."""
        self._answers.put((client, ref, inc))

    def _loop(self) -> None:
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

    def close(self) -> None:
        self._answers.put(None)
        self.expiry.close()
