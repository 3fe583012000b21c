"""One Chromium process, driven by Playwright from a private event-loop thread.

Playwright objects belong to the thread and event loop that made them, while navrl calls
devices from anywhere (the runner's thread, a pool's per-device worker threads, a Ray
actor). So a :class:`BrowserHost` owns an asyncio loop in a daemon thread, launches
Chromium there once, and every device call is a coroutine submitted to that loop under a
deadline (:meth:`BrowserHost.run`). Many devices (one browser context each) share one
host: the browser process is reused, contexts are cheap.

Failures become :class:`~navrl.device.base.DeviceError` with a reason:
``page_hung`` (a call overran its deadline: an endless script, a renderer that stopped
answering), ``navigation_timeout``, ``page_crashed``, ``browser_crashed`` (the process
died or disconnected), ``browser_error`` (any other protocol error), and
``browser_unavailable`` (no Chromium). A dead browser is relaunched by the next
:meth:`BrowserHost.browser` call (each launch is a new :attr:`incarnation`), so a pool
carries on after a crash; the episodes that were running on it are masked.
"""
from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
import time
from typing import Any, Awaitable, Callable, TypeVar

from navrl.device.base import DeviceError
from navrl.device.browser.chromium import LAUNCH_ARGS, BrowserUnavailable, find_chromium

log = logging.getLogger(__name__)

__all__ = ["BrowserHost", "default_host", "map_error", "shutdown_default_host"]

T = TypeVar("T")


def map_error(e: BaseException, what: str = "", timeout_reason: str = "page_hung") -> DeviceError:
    """The DeviceError for an exception raised while driving the browser."""
    if isinstance(e, DeviceError):
        return e
    if isinstance(e, (asyncio.TimeoutError, concurrent.futures.TimeoutError, TimeoutError)):
        return _missed(DeviceError(timeout_reason, f"{what} did not finish in time"))
    if isinstance(e, BrowserUnavailable):
        return DeviceError("browser_unavailable", str(e))
    try:
        from playwright.async_api import Error as PWError
        from playwright.async_api import TimeoutError as PWTimeout
    except ImportError:  # pragma: no cover - playwright is present whenever a host runs
        PWError = PWTimeout = ()  # type: ignore[assignment]
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if PWTimeout and isinstance(e, PWTimeout):
        return _missed(DeviceError("navigation_timeout" if "goto" in what or "navigat" in what else timeout_reason,
                                   f"{what}: {msg}"))
    if PWError and isinstance(e, PWError):
        low = msg.lower()
        if "crash" in low:
            return DeviceError("page_crashed", f"{what}: {msg}")
        if "closed" in low or "disconnected" in low or "not connected" in low:
            return DeviceError("browser_crashed", f"{what}: {msg}")
        return DeviceError("browser_error", f"{what}: {msg}")
    return DeviceError("browser_error", f"{what}: {type(e).__name__}: {msg}")


def _missed(e: DeviceError) -> DeviceError:
    """Mark ``e`` as a deadline overrun (:func:`navrl.device.adaptive.missed_deadline`): the
    page did not answer in time, which under load says the machine is over-committed."""
    e.deadline_missed = True   # type: ignore[attr-defined]
    return e


class BrowserHost:
    """A Chromium process and the event loop that drives it. Thread-safe.

    ``executable``: the Chromium to launch (default :func:`find_chromium`); ``args``: extra
    flags after :data:`LAUNCH_ARGS`. Nothing starts until the first call.
    """

    def __init__(self, executable: str | None = None, args: tuple[str, ...] = (), headless: bool = True,
                 launch_timeout_s: float = 60.0):
        self.executable = executable
        self.args = tuple(args)
        self.headless = headless
        self.launch_timeout_s = launch_timeout_s
        self.incarnation = 0
        self.launches = 0
        self.crashes = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pw: Any = None
        self._browser: Any = None
        self._launching: asyncio.Lock | None = None
        self._closed = False

    # ------------------------------------------------------------------ loop
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise DeviceError("browser_closed", "this browser host was closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                t = threading.Thread(target=loop.run_forever, name="navrl-browser-loop", daemon=True)
                t.start()
                self._loop, self._thread = loop, t
            return self._loop

    @property
    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, coro_fn: Callable[[], Awaitable[T]], timeout: float | None, what: str = "browser call",
            timeout_reason: str = "page_hung") -> T:
        """Run ``coro_fn()`` on the host's loop and wait at most ``timeout`` seconds.

        The coroutine is cancelled at the deadline; every failure is a DeviceError."""
        if self.in_loop_thread:
            raise RuntimeError("BrowserHost.run called from its own loop thread (would deadlock)")
        loop = self._ensure_loop()

        async def guarded() -> T:
            if timeout is None:
                return await coro_fn()
            return await asyncio.wait_for(coro_fn(), timeout)
        fut = asyncio.run_coroutine_threadsafe(guarded(), loop)
        try:
            return fut.result(None if timeout is None else timeout + 5.0)
        except BaseException as e:  # noqa: BLE001 - mapped to DeviceError
            fut.cancel()
            if isinstance(e, KeyboardInterrupt):
                raise
            raise map_error(e, what, timeout_reason) from e

    # ------------------------------------------------------------------ browser (call on the loop)
    @property
    def alive(self) -> bool:
        b = self._browser
        return b is not None and b.is_connected()

    async def browser(self) -> Any:
        """The live Playwright Browser, launched (or relaunched after a crash) on demand."""
        if self.alive:
            return self._browser
        if self._launching is None:
            self._launching = asyncio.Lock()
        async with self._launching:
            if self.alive:
                return self._browser
            if self._browser is not None:
                self.crashes += 1
                log.warning("chromium (incarnation %d) is gone; relaunching", self.incarnation)
                try:
                    await asyncio.wait_for(self._browser.close(), 5)
                except Exception:  # noqa: BLE001 - it is dead already
                    pass
                self._browser = None
            exe = self.executable or find_chromium()
            if self._pw is None:
                from playwright.async_api import async_playwright
                self._pw = await async_playwright().start()
            t0 = time.perf_counter()
            self._browser = await asyncio.wait_for(self._pw.chromium.launch(
                executable_path=exe, headless=self.headless, args=list(LAUNCH_ARGS + self.args),
                handle_sigint=False, handle_sigterm=False, handle_sighup=False), self.launch_timeout_s)
            self.incarnation += 1
            self.launches += 1
            log.info("chromium %s launched in %.2f s (incarnation %d)", exe, time.perf_counter() - t0,
                     self.incarnation)
            return self._browser

    @property
    def playwright(self) -> Any:
        return self._pw

    def ensure_started(self, timeout: float | None = None) -> None:
        """Launch Chromium now (otherwise the first device call does)."""
        self.run(self.browser, timeout or self.launch_timeout_s + 5, "browser launch", "browser_unavailable")

    async def crash_for_test(self) -> None:
        """Kill the browser process through the protocol (tests of crash recovery)."""
        b = await self.browser()
        s = await b.new_browser_cdp_session()
        try:
            await asyncio.wait_for(s.send("Browser.crash"), 2)
        except Exception:  # noqa: BLE001 - the connection dies with the process
            pass

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Close the browser and stop the loop thread (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop = self._loop
        if loop is None:
            return

        async def stop() -> None:
            try:
                if self._browser is not None:
                    await asyncio.wait_for(self._browser.close(), 10)
            except Exception:  # noqa: BLE001 - best effort
                pass
            try:
                if self._pw is not None:
                    await asyncio.wait_for(self._pw.stop(), 10)
            except Exception:  # noqa: BLE001
                pass
        if not self.in_loop_thread and loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(stop(), loop).result(25)
            except Exception:  # noqa: BLE001
                pass
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(5)

    def __repr__(self) -> str:
        return f"BrowserHost(incarnation={self.incarnation}, alive={self.alive})"


_default: BrowserHost | None = None
_default_lock = threading.Lock()


def default_host() -> BrowserHost:
    """The process-wide shared host (one Chromium for every device of this process)."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = BrowserHost()
        return _default


def shutdown_default_host() -> None:
    global _default
    with _default_lock:
        h, _default = _default, None
    if h is not None:
        h.close()


atexit.register(shutdown_default_host)
