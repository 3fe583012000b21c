"""In-process devices built by their tasks, as a :class:`~navrl.device.pool.DevicePool` backend.

:class:`PhoneWorldBackend` (the embedded phone world's, and any world's whose tasks build an
in-process device) makes :class:`PhoneSlot` devices, each holding one device built from a
task (``task.make_device()``), and rolls them back to a :class:`PhoneTaskSnapshot`. No
world is imported here: the task builds its device.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable

from navrl.actions import Action
from navrl.device.backend import DeviceBackend
from navrl.device.base import ActResult, Device, DeviceError, Health
from navrl.observation import Observation

__all__ = ["InProcessBackend", "PhoneSlot", "PhoneTaskSnapshot", "PhoneWorldBackend"]


@dataclass(frozen=True)
class PhoneTaskSnapshot:
    """A phone-world task's starting point: the task (to rebuild the world when its
    configuration differs) and the pickled world state right after set-up."""

    key: Hashable
    task: Any = field(repr=False)
    state: bytes = field(repr=False)


class PhoneSlot(Device):
    """A pool slot holding one embedded phone world.

    :meth:`restore` accepts a :class:`PhoneTaskSnapshot` (roll back to a task's start;
    the world is rebuilt when the task's skin, layout, perturbation or fault settings
    differ, or when faults are on, so the fault stream starts fresh exactly as in a new
    device) or the raw bytes of :meth:`snapshot` (roll back within an episode).

    Attribute reads the Device protocol does not define (``state``, ``frame`` …) are
    forwarded to the world, so privileged planners (the scripted expert) can read it.
    """

    platform = "phone"

    def __init__(self) -> None:
        self.world: Any = None          # built by the first restore (a task's snapshot)
        self._key: Hashable | None = None

    def _w(self) -> Any:
        if self.world is None:
            raise DeviceError("not_restored", "a phone slot runs nothing until restored from a task snapshot")
        return self.world

    def observe(self) -> Observation:
        return self._w().observe()

    def act(self, action: Action) -> ActResult:
        return self._w().act(action)

    def snapshot(self) -> bytes:
        return self._w().snapshot()

    def restore(self, snapshot: object) -> None:
        if isinstance(snapshot, PhoneTaskSnapshot):
            if (self.world is not None and snapshot.key == self._key and not snapshot.task.faults.any
                    and not self.world._closed):
                self.world.restore(snapshot.state)
            else:
                self.world = snapshot.task.make_device()
                self._key = snapshot.key
            self.platform = self.world.platform
            return
        self._w().restore(snapshot)

    def health(self) -> Health:
        return Health(True, "empty") if self.world is None else self.world.health()

    def close(self) -> None:
        if self.world is not None:
            self.world.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "world":
            raise AttributeError(name)
        return getattr(self.world, name)


class PhoneWorldBackend(DeviceBackend):
    """The embedded phone world as a pool backend (tasks are :class:`navrl.worlds.phone.task.TaskSpec`)."""

    name = "phone"
    in_process = True

    def create(self, slot: int) -> Device:
        return PhoneSlot()

    def task_key(self, task: Any) -> Hashable:
        return (task.id, task.skin, task.layout, task.perturb, task.faults)

    def world_key(self, task: Any) -> Hashable:
        # a world restored from a snapshot holds nothing of its task but its configuration
        return (task.skin, task.layout, task.perturb, task.faults)

    def task_snapshot(self, task: Any) -> object:
        return PhoneTaskSnapshot(self.task_key(task), task, task.make_device().snapshot())

    def reconnect(self, device: Device, slot: int) -> Device | None:
        return device   # nothing to reconnect in-process; a dead world stays dead


InProcessBackend = PhoneWorldBackend
"""The same backend under the name of what it is: devices built in-process by their tasks."""
