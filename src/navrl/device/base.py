"""The Device protocol every backend implements (phone world, Chromium, adb, WebDriverAgent).

Layer 2: knows observations and actions, nothing of agents or RL.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field

from navrl.actions import Action
from navrl.observation import Observation


class DeviceError(RuntimeError):
    """An infrastructure failure: never the agent's fault.

    ``reason`` is a short machine-readable tag (``device_lost``, ``app_never_loads``,
    ``timeout``, ``browser_crashed`` ...). The rollout runner catches exactly this type,
    marks the trajectory ``valid=False`` with the reason, and counts it.
    """

    def __init__(self, reason: str, message: str = "") -> None:
        self.reason = reason
        super().__init__(f"{reason}: {message}" if message else reason)


@dataclass(frozen=True)
class ActResult:
    """What an action did. ``changed`` is False when the action had no effect
    (tap on empty space, typing with no focused field, swipe on nothing scrollable)."""

    changed: bool
    note: str = ""


@dataclass
class Health:
    ok: bool
    detail: str = ""
    info: dict = field(default_factory=dict)


class Device(abc.ABC):
    """One live device. Not thread-safe: one episode at a time."""

    platform: str = "unknown"

    @abc.abstractmethod
    def observe(self) -> Observation:
        """Current screen: UI tree now, screenshot rendered lazily."""

    @abc.abstractmethod
    def act(self, action: Action) -> ActResult:
        """Execute a device action (tap, long_press, swipe, type, home).

        Raises ActionError (a ValueError) for an action that does not fit the screen,
        DeviceError for infrastructure failures."""

    @abc.abstractmethod
    def snapshot(self) -> object:
        """An opaque handle that :meth:`restore` accepts."""

    @abc.abstractmethod
    def restore(self, snapshot: object) -> None:
        """Roll the device back to ``snapshot``."""

    @abc.abstractmethod
    def health(self) -> Health:
        """Cheap readiness probe."""

    def close(self) -> None:  # pragma: no cover - trivial default
        """Release the device."""


class CallingDevice(Device):
    """A device whose protocol calls all go through one method, :meth:`_call` (a pooled
    device through its pool, a latency-wrapped one through its delay)."""

    def _call(self, name: str, *args: object) -> object:
        raise NotImplementedError

    def observe(self) -> Observation:
        return self._call("observe")  # type: ignore[return-value]

    def act(self, action: Action) -> ActResult:
        return self._call("act", action)  # type: ignore[return-value]

    def snapshot(self) -> object:
        return self._call("snapshot")

    def restore(self, snapshot: object) -> None:
        self._call("restore", snapshot)

    def health(self) -> Health:
        return self._call("health")  # type: ignore[return-value]
