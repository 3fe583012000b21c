"""A device leased on a host, as the learner sees it: :class:`RemoteDevice` (the Device
protocol over Ray, answering ``observe``/``snapshot`` from what the last step brought back),
and the :class:`PhoneMirrors` its privileged attribute reads go to."""
from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from navrl.actions import Action
from navrl.device.backend import DeviceBackend
from navrl.device.base import ActResult, Device, DeviceError, Health
from navrl.device.ray_farm.wire import HOST_LOST, Wire
from navrl.lru import BoundedCache
from navrl.observation import Observation

if TYPE_CHECKING:
    from navrl.device.ray_farm.client import HostClient


class RemoteDevice(Device):
    """A device leased on a host actor (the Device protocol over Ray).

    ``observe()`` and ``snapshot()`` answer from what the last step or lease brought back;
    everything else is one host call under the farm's deadline. Attribute reads outside
    the protocol (``state``, ``frame`` …, read by privileged planners such as the scripted
    expert) go to a local mirror of the phone world, restored from the latest snapshot.
    """

    def __init__(self, client: HostClient, lid: int, incarnation: str, task: Any, platform: str,
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
    def step_batcher(self) -> HostClient:
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

    def _to_obs(self, w: Wire) -> Observation:
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
        entry = self._client.farm.mirrors.entry(self.task, snap)
        self._seen = (snap, entry)
        return getattr(entry[0], name)


class PhoneMirrors:
    """Local phone worlds for privileged reads of remote devices: one per world configuration
    (``backend.world_key``), at most ``size`` kept across batches, each restored from a
    device's snapshot in turn (restoring one costs about 0.1 ms: apps never read stay shared
    seed data)."""

    def __init__(self, backend: DeviceBackend, size: int):
        self.backend = backend
        self._worlds: BoundedCache[Any, list] = BoundedCache(size, touch=True)

    def entry(self, task: Any, snap: Any) -> list:
        """``[world, snapshot]``: the mirror of ``task``'s world configuration, at ``snap``."""
        key = self.backend.world_key(task)
        entry = self._worlds.get(key)
        if entry is None:
            entry = self._worlds.put(key, [task.make_device(), None])
        if entry[1] is not snap:
            entry[0].restore(snap)
            entry[1] = snap
        return entry
