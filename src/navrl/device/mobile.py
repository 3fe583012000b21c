"""What Android (over adb) and iOS (over WebDriverAgent) devices and pool backends share.

A :class:`MobileDevice` is one phone reached over a connection built from its settings
(``cfg``); closing it calls ``on_close`` once, and :meth:`MobileDevice.ping` is one cheap
round trip. A :class:`MobileBackend` owns a fixed list of device addresses (adb serials,
WebDriverAgent URLs). Each address serves at most one pool slot at a time: a new slot
takes the first free address and the address is freed when its device closes, so a
replacement device takes the next free one. A task is restored from
``snapshot_for(task)`` when that is set, else from the backend's default snapshot.
A reconnect opens a new connection with the same settings and keeps it only when it
answers to a ping.

Subclasses: :class:`navrl.device.android.AndroidDevice` and
:class:`navrl.device.ios.IOSDevice` (each adds its transport and :meth:`MobileDevice.ping`);
:class:`navrl.device.android.AndroidBackend` and :class:`navrl.device.ios.IOSBackend`,
dataclasses that declare their fields, name in class keywords the device class, the
field listing the addresses, the ``config`` field an address goes into and what the
addresses are called, and give the default snapshot.
"""
from __future__ import annotations

import abc
import importlib
import threading
from dataclasses import replace
from types import ModuleType
from typing import Any, Callable, ClassVar, Sequence

from navrl.device.backend import DeviceBackend
from navrl.device.base import Device, DeviceError

__all__ = ["MobileBackend", "MobileDevice", "import_client"]


def import_client(*modules: str, missing: str) -> list[ModuleType]:
    """The modules of a device's client library (an optional extra), in order.

    Raises DeviceError ``backend_unavailable`` with the message ``missing`` (which extra
    to install) when one cannot be imported."""
    try:
        return [importlib.import_module(m) for m in modules]
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise DeviceError("backend_unavailable", missing) from e


class MobileDevice(Device):
    """A phone reached over a connection made from ``config`` (kept as ``cfg``).

    ``on_close`` (a :class:`MobileBackend` frees the device's address with it) runs once,
    on the first :meth:`close`."""

    def __init__(self, config: Any, on_close: Callable[[], None] | None = None) -> None:
        self.cfg = config
        self._on_close = on_close
        self._closed = False

    @abc.abstractmethod
    def ping(self) -> None:
        """One cheap round trip under the call deadline; raises DeviceError when the device does not answer."""

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._on_close is not None:
                self._on_close()


class MobileBackend(DeviceBackend):
    """A pool backend over a fixed list of device addresses (one device per address).

    Picklable: the lock is dropped on pickling and made anew on unpickling."""

    device_type: ClassVar[type[MobileDevice]]
    """The device class, built as ``device_type(config, on_close=...)``."""
    addresses_field: ClassVar[str]
    """The field that lists the addresses (e.g. ``serials``), handed out in that order."""
    address_setting: ClassVar[str]
    """The field of ``config`` a device's address goes into (e.g. ``serial``)."""
    address_kind: ClassVar[str]
    """What the addresses are, for the error when all are in use (e.g. "Android serials")."""
    config: Any
    """The settings every device shares (a dataclass); each device gets its own address in it."""
    snapshot_for: Callable[[Any], object] | None = None
    """The snapshot of a task; None restores every task from :meth:`default_snapshot`."""

    def __init_subclass__(cls, **facts: Any) -> None:
        """``device_type``, ``addresses_field``, ``address_setting`` and ``address_kind``
        can be given as class keywords: ``class B(MobileBackend, device_type=D, ...)``."""
        for name in ("device_type", "addresses_field", "address_setting", "address_kind"):
            if name in facts:
                setattr(cls, name, facts.pop(name))
        super().__init_subclass__(**facts)

    def __post_init__(self) -> None:
        self._in_use: set[str] = set()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        d = dict(self.__dict__)
        d.pop("_lock", None)
        return d

    def __setstate__(self, d: dict) -> None:
        self.__dict__.update(d)
        self._lock = threading.Lock()

    @abc.abstractmethod
    def default_snapshot(self) -> object:
        """The snapshot of a task when ``snapshot_for`` is not set."""

    def addresses(self) -> Sequence[str]:
        """Every device address this backend may use, in the order they are handed out."""
        return getattr(self, self.addresses_field)

    def create(self, slot: int) -> Device:
        addresses = self.addresses()
        with self._lock:
            free = [a for a in addresses if a not in self._in_use]
            if not free:
                raise DeviceError("no_device", f"all {len(addresses)} {self.address_kind} are in use")
            address = free[0]
            self._in_use.add(address)
        config = replace(self.config, **{self.address_setting: address})
        return self.device_type(config, on_close=lambda: self._release(address))

    def _release(self, address: str) -> None:
        with self._lock:
            self._in_use.discard(address)

    def task_snapshot(self, task: Any) -> object:
        return self.snapshot_for(task) if self.snapshot_for else self.default_snapshot()

    def reconnect(self, device: Device, slot: int) -> Device | None:
        if not isinstance(device, self.device_type):
            return None
        fresh = self.device_type(device.cfg, on_close=device._on_close)
        try:
            fresh.ping()
        except DeviceError:
            return None
        return fresh
