"""The browser as a :class:`~navrl.device.pool.DevicePool` backend.

Devices are tabs (one browser context each) on one shared Chromium process per host;
a task's snapshot is :meth:`WebTaskSpec.web_snapshot` (any object with that method), so
one device serves every task and app in turn: the pool's lease restores it to the
task's start, which is the page's own reset hook when the app has one (MiniWoB) and a
fresh context otherwise. A crashed browser is relaunched by the next restore; the
episodes that ran on it end in ``DeviceError("browser_crashed")`` and are masked.

Picklable (the Ray farm ships backends to its hosts): it holds settings only.
"""
from __future__ import annotations

import os
from typing import Any, Hashable

from navrl.device.adaptive import AdaptiveConfig
from navrl.device.backend import DeviceBackend
from navrl.device.base import Device, DeviceError
from navrl.device.browser.app import WebSnapshot

__all__ = ["PAGES_PER_CORE", "BrowserBackend", "default_pages", "farm_config", "machine_cores"]

PAGES_PER_CORE = 8
"""Browser pages per CPU core of a farm sized to the machine (``navrl train``/``eval``/``sft``
without ``--parallel``). Measured with ``bench/browser_sizing.py`` on 2 cores (MiniWoB++,
docs/web.md "Farm size"): the browser alone carries as many episodes/s with 1 page per core
as with 8, while with the learner's planner in the loop (80% of the wall time: it plans every
ready episode in one batch) steps/s kept rising up to 8 pages per core (5.9, 7.1, 6.5, 9.1,
12.1 steps/s at 0.5, 1, 2, 4, 8 pages per core). Past what the machine can serve in time the
adaptive limit (``farm_config``) takes pages out of flight."""


def machine_cores() -> int:
    """CPU cores this process may run on (its affinity mask, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_pages(cores: int | None = None, per_core: int = PAGES_PER_CORE) -> int:
    """Pages of a browser farm sized to the machine: ``per_core`` x ``cores`` (default: this
    machine's, :func:`machine_cores`), at least 1."""
    return max(1, per_core * (cores if cores is not None else machine_cores()))


def farm_config(pages: int | None = None, adaptive: AdaptiveConfig | None = AdaptiveConfig()) -> Any:
    """The :class:`~navrl.device.pool.PoolConfig` of a browser farm: at most ``pages`` pages
    (default :func:`default_pages`), held to an adaptive limit under contention (None: fixed)."""
    from navrl.device.pool import PoolConfig
    return PoolConfig(size=pages if pages is not None else default_pages(), adaptive=adaptive)


class BrowserBackend(DeviceBackend):
    """``phone``: emulation for snapshots that name none; ``screenshots``: ``"eager"``,
    ``"thumb"`` (small images for perceptual hashes), ``"on_read"`` (taken when an
    observation's image is read: in-process pools only, not a Ray farm's hosts) or ``"off"``; ``dedicated`` (or
    ``executable``/``args``): a Chromium process of this backend's own instead of the
    process-wide shared one."""

    name = "browser"
    in_process = False
    disposable = True     # a failed page is closed (its renderer with it); a new one costs a context

    def __init__(self, phone: str = "iphone", screenshots: str = "eager", timeout_s: float = 10.0,
                 nav_timeout_s: float = 20.0, executable: str | None = None, args: tuple[str, ...] = (),
                 dedicated: bool = False):
        self.phone, self.screenshots = phone, screenshots
        self.dedicated = dedicated or executable is not None or bool(args)
        self.timeout_s, self.nav_timeout_s = timeout_s, nav_timeout_s
        self.executable, self.args = executable, tuple(args)
        self._host: Any = None

    def __getstate__(self) -> dict:
        d = dict(self.__dict__)
        d["_host"] = None
        return d

    def host(self) -> Any:
        from navrl.device.browser.host import BrowserHost, default_host
        if not self.dedicated:
            return default_host()
        if self._host is None or self._host._closed:
            self._host = BrowserHost(self.executable, self.args)
        return self._host

    def create(self, slot: int) -> Device:
        from navrl.device.browser.device import BrowserDevice
        return BrowserDevice(phone=self.phone, host=self.host(), screenshots=self.screenshots,
                             timeout_s=self.timeout_s, nav_timeout_s=self.nav_timeout_s)

    def task_snapshot(self, task: Any) -> object:
        snap = getattr(task, "web_snapshot", None)
        if snap is None:
            raise DeviceError("not_a_web_task", f"{getattr(task, 'id', task)!r} has no web_snapshot()")
        return snap()

    def task_key(self, task: Any) -> Hashable:
        return getattr(task, "id", task)

    def affinity_key(self, snapshot: object) -> Hashable | None:
        """A page that runs an app resets it in place (MiniWoB: the page's own hook, ~10x
        cheaper than a new context and a page load): same app and phone, same key."""
        if isinstance(snapshot, WebSnapshot) and snapshot.fresh and snapshot.app.reset_in_place:
            return (snapshot.app.name, snapshot.app.start_url, snapshot.phone)
        return None
