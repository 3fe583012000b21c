"""Every device call of one pool: where it runs (inline for in-process backends, else on the
pool's event loop: awaited for devices with async methods, in the device's own worker thread
for blocking ones), under which deadline, with one reconnect-and-retry on transport trouble;
and closing a device with its worker thread."""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from navrl.device.adaptive import AdaptiveLimit, missed_deadline
from navrl.device.aio import DeviceLoop, run_now
from navrl.device.backend import DeviceBackend, DeviceTimeout
from navrl.device.base import DeviceError
from navrl.device.pool.config import PoolConfig
from navrl.device.pool.slot import Slot

log = logging.getLogger(__name__)


class DeviceCalls:
    """The call policy of one pool over its backend. Thread-safe.

    ``in_flight`` / ``peak``: device calls of a connected backend waiting now / at most at once.
    """

    def __init__(self, backend: DeviceBackend, cfg: PoolConfig, adaptive: AdaptiveLimit | None):
        self.backend, self.cfg, self.adaptive = backend, cfg, adaptive
        self._aio: DeviceLoop | None = None
        self._aio_lock = threading.Lock()
        self._blocking_sem: asyncio.Semaphore | None = None
        self._closing: set[asyncio.Task] = set()
        self.in_flight = 0
        self.peak = 0

    # ------------------------------------------------------------------ where calls run
    def loop(self) -> DeviceLoop:
        """The pool's event loop (started on first use)."""
        if self._aio is None:
            with self._aio_lock:
                if self._aio is None:
                    self._aio = DeviceLoop(f"navrl-{self.backend.name}-loop")
        return self._aio

    def drive(self, coro: Any) -> Any:
        """Run one of the pool's coroutines to its end: inline for in-process backends (it
        never suspends), else on the pool's loop while this thread waits."""
        if self.backend.in_process:
            return run_now(coro)
        return self.loop().run(coro)

    def deadline(self, name: str) -> float | None:
        timeout = self.cfg.call_timeout_s
        if timeout is not None and name == "restore" and self.cfg.restore_timeout_s is not None:
            timeout = self.cfg.restore_timeout_s
        return timeout

    async def in_thread(self, slot: Slot | None, fn: Callable[..., Any], args: tuple, timeout: float | None,
                        what: str) -> Any:
        """A blocking call in ``slot``'s worker thread (a pool thread without a slot) under
        ``timeout``; a call stuck past it is abandoned with its thread (the next gets a new one)."""
        loop = asyncio.get_running_loop()
        ex = None
        if slot is not None:
            if slot.executor is None:
                slot.executor = ThreadPoolExecutor(max_workers=1,
                                                   thread_name_prefix=f"navrl-{self.backend.name}-{slot.index}")
            ex = slot.executor
        if self.cfg.max_blocking_calls is not None and self._blocking_sem is None:
            self._blocking_sem = asyncio.Semaphore(self.cfg.max_blocking_calls)
        sem = self._blocking_sem
        if sem is not None:
            await sem.acquire()
        try:
            return await asyncio.wait_for(loop.run_in_executor(ex, fn, *args), timeout)
        except TimeoutError:
            if slot is not None:
                slot.stats.timeouts += 1
                if slot.executor is ex:
                    ex.shutdown(wait=False)   # type: ignore[union-attr]
                    slot.executor = None
            raise DeviceTimeout(f"{self.backend.name} {what} took longer than {timeout:g} s") from None
        finally:
            if sem is not None:
                sem.release()

    async def blocking(self, slot: Slot | None, fn: Callable[[], Any], timeout: float | None, what: str) -> Any:
        """A backend call (create, reconnect): inline in-process, else in a worker thread."""
        if self.backend.in_process:
            return fn()
        return await self.in_thread(slot, fn, (), timeout, what)

    async def invoke(self, slot: Slot, name: str, args: tuple) -> Any:
        """One device call under the per-call deadline: inline with the deadline checked on
        return (in-process backends), awaited on the loop (devices with async methods, e.g.
        ``aact``), or in the device's worker thread."""
        timeout = self.deadline(name)
        if self.backend.in_process:
            t0 = time.monotonic()
            out = getattr(slot.device, name)(*args)
            if timeout is not None and time.monotonic() - t0 > timeout:
                slot.stats.timeouts += 1
                raise DeviceTimeout(f"{self.backend.name} device {slot.index}: {name}() took "
                                    f"{time.monotonic() - t0:.1f} s, over its {timeout:g} s deadline", completed=True)
            return out
        what = f"device {slot.index}: {name}()"
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            afn = getattr(slot.device, "a" + name, None)
            if afn is None:
                return await self.in_thread(slot, getattr(slot.device, name), args, timeout, what)
            try:
                return await _within(afn(*args), timeout)
            except TimeoutError:
                slot.stats.timeouts += 1
                raise DeviceTimeout(f"{self.backend.name} {what} took longer than {timeout:g} s") from None
        finally:
            self.in_flight -= 1

    # ------------------------------------------------------------------ the policy
    async def call(self, slot: Slot, name: str, args: tuple) -> Any:
        """A device call with the pool's policy: deadline, then one reconnect-and-retry; a
        call that missed its deadline tells the adaptive limit."""
        if self.adaptive is None:
            return await self._call_retry(slot, name, args)
        token = self.adaptive.token()
        try:
            return await self._call_retry(slot, name, args)
        except DeviceError as e:
            if missed_deadline(e):
                self.adaptive.miss(token, f"{name}: {e.reason}")
            raise

    async def _call_retry(self, slot: Slot, name: str, args: tuple) -> Any:
        try:
            return await self.invoke(slot, name, args)
        except DeviceError as e:
            if e.reason not in self.cfg.retry_reasons or getattr(e, "completed", False):
                raise
            first: DeviceError = e
        except OSError as e:   # sockets, subprocess pipes: transport trouble
            first = DeviceError("connection", f"{type(e).__name__}: {e}")
        slot.stats.reconnects += 1
        try:
            fresh = await self.blocking(slot, lambda: self.backend.reconnect(slot.device, slot.index),
                                        self.cfg.reconnect_timeout_s, f"reconnect device {slot.index}")
        except Exception as e:  # noqa: BLE001 - a failed reconnect ends in the first error
            log.info("reconnect of %s device %d failed: %s", self.backend.name, slot.index, e)
            fresh = None
        if fresh is None:
            raise first
        slot.device = fresh
        try:
            return await self.invoke(slot, name, args)
        except OSError as e:
            raise DeviceError("connection", f"{type(e).__name__}: {e}") from e

    # ------------------------------------------------------------------ closing
    def close_device(self, slot: Slot) -> None:
        """Close a device now; on the loop's own thread (a release from a callback there),
        in the background instead."""
        if self._aio is not None and self._aio.in_loop():
            t = self._aio.loop.create_task(self.aclose(slot))
            self._closing.add(t)
            t.add_done_callback(self._closing.discard)
            return
        try:
            self.drive(self.aclose(slot))
        except RuntimeError as e:       # the loop is already gone
            log.debug("closing device %d failed: %s", slot.index, e)

    async def aclose(self, slot: Slot) -> None:
        try:
            await self.invoke(slot, "close", ())
        except Exception as e:  # noqa: BLE001 - closing is best effort
            log.debug("closing device %d failed: %s", slot.index, e)
        if slot.executor is not None:
            slot.executor.shutdown(wait=False)
            slot.executor = None

    def close(self) -> None:
        """Stop the pool's loop (after its devices were closed)."""
        if self._aio is not None:
            self._aio.close()


async def _within(coro: Any, timeout: float | None) -> Any:
    """``await coro`` under ``timeout`` (TimeoutError past it), in the calling task: unlike
    ``asyncio.wait_for`` before Python 3.12 it creates no task per call (two per runner step)."""
    if timeout is None:
        return await coro
    if _timeout_cm is None:   # Python 3.10
        return await asyncio.wait_for(coro, timeout)
    async with _timeout_cm(timeout):
        return await coro


_timeout_cm = getattr(asyncio, "timeout", None)
