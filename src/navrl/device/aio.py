"""The event loop a connected pool waits on: thousands of device calls in flight, no thread each.

A :class:`~navrl.device.pool.DevicePool` over a connected backend (``in_process = False``)
runs every device call as a coroutine on one :class:`DeviceLoop` (one daemon thread per
pool). A call to a device with async methods (``aact``, ``aobserve`` … — the latency
model's devices) is awaited on the loop itself, so a wait costs a timer, not a thread; a
call to a blocking device runs in that device's own worker thread and the loop awaits it.

:func:`run_now` drives a coroutine that never really suspends (the pool's in-process path)
to its end in the calling thread, so the pool's policy (deadline, reconnect-and-retry) is
written once, as coroutines, for both kinds of backend.

Layer 2 (device): standard library only.
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import heapq
import logging
import threading
import time
from typing import Any, Awaitable, Callable, Coroutine, Sequence

log = logging.getLogger(__name__)

__all__ = ["DeviceLoop", "Expiry", "resolve", "run_now"]


def run_now(coro: Coroutine) -> Any:
    """Run ``coro`` to its end here and now; it must not suspend (await nothing pending)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("run_now: the coroutine suspended; in-process calls must not await")


class DeviceLoop:
    """An asyncio loop in a daemon thread, fed from other threads.

    :meth:`spawn` starts many coroutines with one hand-off and gives one
    :class:`concurrent.futures.Future` per coroutine: cancelling a future cancels its task,
    and a task that finishes after its future was cancelled hands its result to ``orphan``
    (a lease that completed as its deadline passed is given back, never lost)."""

    def __init__(self, name: str):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def in_loop(self) -> bool:
        """True on the loop's own thread (which must never block on the loop)."""
        return threading.current_thread() is self._thread

    def spawn(self, coros: Sequence[Coroutine], orphan: Callable[[Any], None] | None = None) -> list[cf.Future]:
        futs = [cf.Future() for _ in coros]
        if not coros:
            return futs

        def start() -> None:
            for coro, fut in zip(coros, futs):
                task = self.loop.create_task(coro)
                task.add_done_callback(lambda t, f=fut: _settle(t, f, orphan))
                fut.add_done_callback(lambda f, t=task: f.cancelled() and self.loop.call_soon_threadsafe(t.cancel))
        try:
            self.loop.call_soon_threadsafe(start)
        except RuntimeError:        # the loop was closed
            for coro in coros:
                coro.close()
            raise
        return futs

    def run(self, coro: Awaitable, timeout: float | None = None) -> Any:
        """Run ``coro`` on the loop and wait for its result in this (other) thread."""
        if self.in_loop():
            raise RuntimeError("a blocking device call from the device loop's own thread would deadlock")
        (fut,) = self.spawn([coro])  # type: ignore[list-item]
        return fut.result(timeout)

    def close(self) -> None:
        """Cancel what is still running and stop the thread."""
        def stop() -> None:
            for t in asyncio.all_tasks(self.loop):
                t.cancel()
            self.loop.call_soon(self.loop.stop)
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(stop)
            if not self.in_loop():
                self._thread.join(5.0)


def resolve(fut: cf.Future, outcome: Any) -> bool:
    """Complete ``fut`` with ``outcome`` (an exception is raised by ``result()``) unless it is
    already done (cancelled, expired); True when this call completed it."""
    try:
        if isinstance(outcome, BaseException):
            fut.set_exception(outcome)
        else:
            fut.set_result(outcome)
    except cf.InvalidStateError:
        return False
    return True


class Expiry:
    """One daemon thread that runs callbacks at given times (deadlines of calls that no
    thread waits on): ``at(when, fn)`` with ``when`` on ``time.monotonic()``."""

    def __init__(self, name: str):
        self._heap: list[list] = []     # [when, n, fn or None when cancelled]
        self._cv = threading.Condition()
        self._n = 0
        self._closed = False
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def at(self, when: float, fn: Callable[[], None]) -> list:
        """Run ``fn`` at ``when``; the returned handle goes to :meth:`cancel`."""
        with self._cv:
            self._n += 1
            entry = [when, self._n, fn]
            heapq.heappush(self._heap, entry)
            self._cv.notify()
        return entry

    @staticmethod
    def cancel(entry: list) -> None:
        """Forget a callback (its entry stays in the heap, holding nothing, until its time)."""
        entry[2] = None

    def _main(self) -> None:
        while True:
            with self._cv:
                while not self._closed and (not self._heap or self._heap[0][0] > time.monotonic()):
                    self._cv.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                if self._closed:
                    return
                _, _, fn = heapq.heappop(self._heap)
            if fn is None:
                continue
            try:
                fn()
            except Exception:  # noqa: BLE001 - a failing callback must not stop the others
                log.exception("expiry callback failed")

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()


def _settle(task: asyncio.Task, fut: cf.Future, orphan: Callable[[Any], None] | None) -> None:
    """Copy a finished task's outcome into its future (or to ``orphan`` if nobody waits)."""
    if not fut.set_running_or_notify_cancel():
        if orphan is not None and not task.cancelled() and task.exception() is None:
            orphan(task.result())
        return
    if task.cancelled():
        fut.set_exception(cf.CancelledError())
    elif task.exception() is not None:
        fut.set_exception(task.exception())   # type: ignore[arg-type]
    else:
        fut.set_result(task.result())
