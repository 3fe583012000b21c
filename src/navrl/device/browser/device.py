"""The Chromium device: the Device protocol over Playwright, with mobile emulation.

- **Phone**: a Playwright device descriptor (``iphone`` = iPhone 13, ``pixel`` = Pixel 7,
  or any descriptor name): user agent, touch, mobile viewport, device scale factor. An
  app may zoom its page (``WebApp.content_width``: MiniWoB's 160 CSS px fill the width).
- **Coordinates**: observations and actions use screenshot pixels, i.e. device pixels;
  CSS pixel = device pixel / ``scale`` exactly (``scale`` = descriptor DPR x zoom).
- **Input**: tap and long press are touch events, swipes real touch sequences
  (:mod:`navrl.device.browser.touch`), typing ``Input.insertText`` into the focused element
  (the text is data, never evaluated), ``home`` goes back to the task's start page.
- **UI tree**: one script call reads role, name, bounds, value, focus and enabled state
  of what is visible and reachable (:mod:`navrl.device.browser._js`), together with the
  app's own state (MiniWoB's reward) into :class:`WebObservation.page`.
- **Reset**: a fresh browser context per episode (the browser process is reused), or the
  app's own reset hook on the loaded page; mid-episode snapshots are storage states.
- **Sandbox**: only the app's allowed origins load; service workers are blocked.
- **Failures**: hung pages, navigation timeouts and crashes raise DeviceError; a crashed
  browser is relaunched at the next restore.
"""
from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable

from PIL import Image

from navrl.actions import Action, ActionError, ActionKind
from navrl.device.base import ActResult, Device, DeviceError, Health
from navrl.device.browser import mouse, touch
from navrl.device.browser._js import INIT_JS, MOUSE_DRAG_AT_JS, OBSERVE_JS
from navrl.device.browser.app import Emulation, WebApp, WebSnapshot, resolve_emulation
from navrl.device.browser.host import BrowserHost, default_host, map_error
from navrl.device.browser.sandbox import OriginPolicy
from navrl.lru import BoundedCache
from navrl.observation import Observation, UINode

log = logging.getLogger(__name__)

__all__ = ["BrowserDevice", "WebObservation", "LONG_PRESS_MS"]

LONG_PRESS_MS = 500
"""A touch held this long without moving is a long press."""

SCREENSHOT_MODES = ("eager", "thumb", "on_read", "off")

THUMB_WIDTH = 128
"""Width in pixels of a ``screenshots="thumb"`` observation's image: enough for a perceptual
hash (``imagehash.phash`` reads 32 x 32), a few KB instead of a full phone screen's PNG."""


@dataclass
class WebObservation(Observation):
    """An observation of a web page: the UI tree, the screenshot, the URL, and ``page``:
    the app's own view of the task (``done``/``reward``/``raw_reward`` for MiniWoB,
    ``success`` for a suite's JavaScript check). Once an episode's page reports
    ``done``, that result is kept for the rest of the episode (``page["latched"]``)."""

    url: str = ""
    page: dict = field(default_factory=dict)


# The goal a page stated at the start of an episode (MiniWoB's utterance, ``page["utterance"]``
# of the first observation), by (start URL, seed): the task layer reads it from here instead of
# starting the same instance once more on a tab of its own (devices in this process only).
STATED_GOALS: BoundedCache[tuple[str, int], str] = BoundedCache(100_000)

_REATTACH = ("not attached", "session closed", "target closed", "detached", "no target with given id")


_SWAP = ("context", "navigat", "destroyed")
# Chromium refuses a screenshot while a navigation has committed but painted no frame yet
# (seen in CI right after a tap on a link): the same transient state as a swapped document.
_NO_FRAME = ("unable to capture screenshot",)


def _document_swapped(e: BaseException) -> bool:
    """``e`` says the page's document went away under a call (a navigation), not that the
    CDP session itself was lost (:data:`_REATTACH`)."""
    low = str(e).lower()
    return any(k in low for k in _SWAP + _NO_FRAME) and not any(k in low for k in _REATTACH)


def _swapped_or_detached(e: BaseException) -> bool:
    low = str(e).lower()
    return any(k in low for k in _SWAP + _REATTACH)


class _DocumentSwapped(Exception):
    """The document went away while the UI tree was being read (a navigation under way)."""


class _Session:
    """The device's own CDP session to its page (screenshots in device pixels, touch input,
    the UI-tree script), opened again when a navigation swaps the page's renderer."""

    def __init__(self, ctx: Any, page: Any, metrics: dict):
        self.ctx, self.page, self.metrics = ctx, page, metrics
        self.s: Any = None

    async def open(self) -> "_Session":
        self.s = await self.ctx.new_cdp_session(self.page)
        # the screenshot of this session is taken in device pixels only with the metrics set here too
        await self.s.send("Emulation.setDeviceMetricsOverride", self.metrics)
        return self

    async def send(self, method: str, params: dict | None = None) -> Any:
        for attempt in range(4):
            try:
                return await self.s.send(method, params or {})
            except Exception as e:  # noqa: BLE001 - re-raised unless a re-attach helps
                msg = str(e).lower()
                if attempt == 3 or self.page.is_closed() or not any(k in msg for k in _REATTACH):
                    raise
            await asyncio.sleep(0.05 * (attempt + 1))
            try:
                await self.s.detach()
            except Exception:  # noqa: BLE001
                pass
            await self.open()
        raise AssertionError("unreachable")


class BrowserDevice(Device):
    """One browser tab on an emulated phone, reused across episodes.

    ``phone``: default emulation when a snapshot does not name one; ``host``: the
    :class:`BrowserHost` (default: the process-wide one); ``screenshots``: ``"eager"``
    (a PNG with every observation), ``"thumb"`` (a :data:`THUMB_WIDTH` px wide PNG of the
    whole screen, for perceptual hashes only: GiGPO's state keys with a text planner; the
    observation's ``screen_size`` and coordinates stay in device pixels), ``"on_read"`` (the
    screenshot is taken when the observation's image is first read, in the same process and
    while the page has not been acted on since: MiniWoB RL's GiGPO hashes, which the runner
    caches per UI tree and reads for ~1 step in 4) or ``"off"`` (UI tree only: text planners,
    fast RL);
    ``timeout_s``: deadline of observe/act/health; ``nav_timeout_s``: of page loads.
    ``app``/``seed``: start that app right away (otherwise the first :meth:`restore` does).
    """

    platform = "web"

    def __init__(self, app: WebApp | None = None, seed: int | None = None, phone: str = "iphone",
                 host: BrowserHost | None = None, screenshots: str = "eager", timeout_s: float = 10.0,
                 nav_timeout_s: float = 20.0):
        if screenshots not in SCREENSHOT_MODES:
            raise ValueError(f"screenshots must be one of {SCREENSHOT_MODES}, got {screenshots!r}")
        self.host = host or default_host()
        self.phone = phone
        self.screenshots = screenshots
        self.timeout_s = timeout_s
        self.nav_timeout_s = nav_timeout_s
        # everything below is touched on the host's loop only
        self._ctx: Any = None
        self._page: Any = None
        self._cdp: Any = None
        self._ctx_incarnation = -1
        self._emu: Emulation | None = None
        self._app: WebApp | None = None
        self._phone_now: str | None = None
        self._seed: int | None = None
        self._policy: OriginPolicy | None = None
        self._observe_expr = ""
        self._start_url = ""
        self._prefetch: tuple | None = None
        self._episodes_on_page = 0
        self._latched: dict | None = None
        self._goal_key: tuple[str, int] | None = None     # set by a fresh start until its goal is read
        self._sig: str | None = None
        self._crashed: str | None = None
        self._closed = False
        self._moves = 0         # acts, restores and evaluations so far: an on_read screenshot's check
        self.episodes = 0
        self.contexts_created = 0
        self.app_switches = 0
        """Episodes started by navigating to another app in the same context."""
        self._origins: tuple[str, ...] = ()
        if app is not None:
            self.restore(WebSnapshot.start(app, seed, phone))

    # ================================================================== sync API (any thread)
    def _run(self, fn, timeout: float, what: str, timeout_reason: str = "page_hung"):
        if self._closed:
            raise DeviceError("device_closed", "this browser device was closed")
        try:
            return self.host.run(fn, timeout, what, timeout_reason)
        except DeviceError as e:
            if e.reason == "page_hung":
                self._crashed = "page_hung"      # the tab is written off until the next restore
            raise

    def restore(self, snapshot: object) -> None:
        if not isinstance(snapshot, WebSnapshot):
            raise TypeError(f"a browser device restores WebSnapshot handles, not {type(snapshot).__name__}")
        self._run(lambda: self._a_restore(snapshot), self.nav_timeout_s * 2 + self.timeout_s + 10, "restore",
                  "app_never_loads")

    def reset(self) -> None:
        """Start a new episode of the current app (same seed)."""
        if self._app is None:
            raise DeviceError("not_restored", "the browser device runs no app yet")
        self.restore(WebSnapshot.start(self._app, self._seed, self._phone_now or self.phone))

    def observe(self) -> WebObservation:
        return self._run(self._a_observe, self.timeout_s, "observe")

    def act(self, action: Action) -> ActResult:
        if not action.is_device_action:
            raise ActionError(f"{action.kind.value} is not a device action")
        emu = self._emu
        action.validate(emu.screen if emu is not None else None)
        extra = action.duration if action.kind is ActionKind.LONG_PRESS else 0.0
        if action.kind is ActionKind.HOME:
            extra = self.nav_timeout_s + 5
        return self._run(lambda: self._a_act(action), self.timeout_s + extra, f"act {action.kind.value}")

    def snapshot(self) -> WebSnapshot:
        return self._run(self._a_snapshot, self.timeout_s, "snapshot")

    def health(self) -> Health:
        try:
            return self._run(self._a_health, min(self.timeout_s, 5.0), "health")
        except DeviceError as e:
            return Health(False, e.reason, {"error": str(e)})

    def close(self) -> None:
        if self._closed:
            return
        try:
            self.host.run(self._a_close, 10.0, "close")
        except DeviceError:
            pass
        self._closed = True

    def evaluate(self, expression: str, arg: Any = None, timeout_s: float | None = None) -> Any:
        """Evaluate trusted JavaScript (a function expression taking ``arg``, or a plain
        expression) in the page. For tests and task checks, never for agent input."""
        async def go() -> Any:
            await self._drop_prefetch()
            self._moves += 1
            page = self._live()[0]
            return await page.evaluate(expression, arg)
        return self._run(go, timeout_s or self.timeout_s, "evaluate")

    @property
    def emulation(self) -> Emulation | None:
        return self._emu

    @property
    def screen_size(self) -> tuple[int, int] | None:
        return self._emu.screen if self._emu is not None else None

    @property
    def blocked_requests(self) -> list[str]:
        """URLs the sandbox refused in this browser context (most recent last)."""
        return list(self._policy.blocked) if self._policy is not None else []

    @property
    def app(self) -> WebApp | None:
        return self._app

    def __repr__(self) -> str:
        return f"BrowserDevice(app={self._app.name if self._app else None!r}, phone={self._phone_now or self.phone!r})"

    # ================================================================== loop side
    def _live(self) -> tuple[Any, Any]:
        if self._page is None or self._app is None:
            raise DeviceError("not_restored", "the browser device runs no app yet")
        if self._crashed:
            raise DeviceError(self._crashed, "the page is gone")
        if self._ctx_incarnation != self.host.incarnation or not self.host.alive:
            raise DeviceError("browser_crashed", "the browser process behind this page died")
        return self._page, self._cdp

    async def _a_close_ctx(self) -> None:
        await self._drop_prefetch()
        ctx, self._ctx, self._page, self._cdp = self._ctx, None, None, None
        if ctx is not None:
            # in the background: a context whose page hangs can take seconds to go
            task = asyncio.get_running_loop().create_task(_close_quietly(ctx))
            _CLOSING.add(task)
            task.add_done_callback(_CLOSING.discard)

    async def _a_close(self) -> None:
        await self._a_close_ctx()
        if _CLOSING:
            await asyncio.wait(list(_CLOSING), timeout=5)

    async def _emulation(self, app: WebApp, phone: str) -> Emulation:
        await self.host.browser()
        try:
            return resolve_emulation(self.host.playwright.devices, phone, app.content_width)
        except ValueError as e:
            raise DeviceError("bad_phone", str(e)) from None

    async def _a_restore(self, snap: WebSnapshot) -> None:
        await self._drop_prefetch()
        self._moves += 1
        await self._a_restore_inner(snap)
        # no prefetched observation here: a pool probes the page's health first and the runner
        # looks later than PREFETCH_TTL_S, so the read (a DOM walk and a screenshot) was thrown
        # away and made again for ~8 restores in 10 of MiniWoB++ RL (202-232 of 256 counted)

    async def _a_restore_inner(self, snap: WebSnapshot) -> None:
        browser = await self.host.browser()
        emu = await self._emulation(snap.app, snap.phone)
        app = snap.app
        self._latched, self._sig = None, None
        can_reuse = (snap.fresh and app.reset_in_place and app.start_js and self._page is not None
                     and not self._crashed and self._ctx_incarnation == self.host.incarnation
                     and self._app == app and self._emu == emu
                     and (app.reload_every <= 0 or self._episodes_on_page < app.reload_every))
        if can_reuse:
            try:
                self._seed = snap.seed
                if self._policy is not None:
                    self._policy.blocked.clear()
                await self._a_start_episode()
                self._episodes_on_page += 1
                self.episodes += 1
                return
            except DeviceError as e:
                log.info("in-place reset failed (%s); starting a fresh context", e)
        elif (snap.fresh and snap.storage is None and snap.url is None and app.reset_in_place
              and self._page is not None and self._app is not None and not self._crashed
              and self._ctx_incarnation == self.host.incarnation and self._emu == emu
              and self._app.context_key() == app.context_key()):
            try:    # another page of the same kind of app: navigate, keep the context
                await self._a_switch_app(snap, app)
                return
            except DeviceError as e:
                log.info("switching %s -> %s in place failed (%s); starting a fresh context",
                         self._app.name, app.name, e)
        await self._a_close_ctx()
        self._crashed = None
        self._app, self._emu, self._seed, self._phone_now = app, emu, snap.seed, snap.phone
        try:
            self._start_url, origins = app.resolve()
        except (OSError, ValueError) as e:
            raise DeviceError("app_never_loads", f"{app.name}: {e}") from e
        self._policy, self._origins = OriginPolicy(origins), origins
        opts = emu.context_options()
        opts["service_workers"] = "block"
        if snap.storage is not None:
            opts["storage_state"] = snap.storage
        ctx = await browser.new_context(**opts)
        self._ctx = ctx
        self._ctx_incarnation = self.host.incarnation
        self.contexts_created += 1
        ctx.set_default_timeout(self.timeout_s * 1000)
        ctx.set_default_navigation_timeout(self.nav_timeout_s * 1000)
        init = INIT_JS % {"timer_ms": int(app.settle_timer_ms), "long_press_ms": LONG_PRESS_MS}
        await ctx.add_init_script(init)
        extra = _document_additions(app)
        if extra:
            await ctx.add_init_script(extra)
        if app.init_js:
            await ctx.add_init_script(app.init_js)
        policy = self._policy

        async def route(r: Any) -> None:
            url = r.request.url
            try:
                if policy.allows(url):
                    await r.continue_()
                else:
                    policy.record(url)
                    await r.abort("blockedbyclient")
            except Exception as e:  # noqa: BLE001 - the page may be gone meanwhile
                log.debug("route of %s failed: %s", url, e)
        await ctx.route("**/*", route)
        if hasattr(ctx, "route_web_socket"):
            async def ws_route(ws: Any) -> None:
                policy.record(ws.url)
                try:
                    await ws.close(code=1008, reason="blocked by the navrl sandbox")
                except Exception:  # noqa: BLE001
                    pass
            await ctx.route_web_socket(lambda url: not policy.allows(url), ws_route)
        page = await ctx.new_page()
        self._page = page

        def crashed(_: Any = None) -> None:
            self._crashed = "page_crashed"
        page.on("crash", crashed)
        self._cdp = await _Session(ctx, page, emu.metrics_override()).open()
        self._observe_expr = self._build_observe_expr(app, emu)
        url = snap.url or self._start_url
        await self._a_goto(url)
        self._episodes_on_page = 1
        self.episodes += 1
        if snap.fresh and app.start_js:
            await self._a_start_episode()

    async def _a_switch_app(self, snap: WebSnapshot, app: WebApp) -> None:
        """Load ``app`` in this device's context (same sandbox and init scripts, see
        :meth:`WebApp.context_key`) and start its episode."""
        start_url, origins = app.resolve()
        if self._policy is None or tuple(sorted(origins)) != tuple(sorted(self._origins)):
            raise DeviceError("browser_error", "the apps' origins differ")
        self._policy.blocked.clear()
        self._app, self._seed = app, snap.seed
        self._start_url = start_url
        self._observe_expr = self._build_observe_expr(app, self._emu)  # type: ignore[arg-type]
        await self._a_goto(start_url)
        self._episodes_on_page = 1
        self.episodes += 1
        self.app_switches += 1
        await self._a_start_episode()

    async def _a_goto(self, url: str) -> None:
        page = self._page
        try:
            resp = await page.goto(url, wait_until="load", timeout=self.nav_timeout_s * 1000)
        except Exception as e:  # noqa: BLE001 - mapped
            err = map_error(e, "goto " + url, "navigation_timeout")
            if err.reason == "browser_error":
                err = DeviceError("app_never_loads", str(e).splitlines()[0] if str(e) else "navigation failed")
            raise err from e
        if resp is not None and resp.status >= 400:
            raise DeviceError("app_never_loads", f"{url} answered HTTP {resp.status}")
        # let the new document reach the screen (and the compositor learn its touch regions)
        try:
            await self._cdp.send("Runtime.evaluate", {
                "expression": "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))",
                "awaitPromise": True})
        except Exception as e:  # noqa: BLE001
            raise map_error(e, "first frame of " + url) from e

    async def _a_start_episode(self) -> None:
        app, page = self._app, self._page
        assert app is not None and page is not None
        try:
            # a tap leaves the page hovering what it touched (social-media's icons change picture on
            # :hover), and a reset in place keeps it: the pointer leaves the page, as on a fresh load
            await page.mouse.move(-5, -5)
            await page.evaluate(f"async (seed) => {{ {app.start_js}\n}}", self._seed)
        except Exception as e:  # noqa: BLE001
            raise map_error(e, f"start hook of {app.name}", "app_never_loads") from e
        self._latched, self._sig = None, None
        self._goal_key = (app.start_url, self._seed) if self._seed is not None else None

    @staticmethod
    def _build_observe_expr(app: WebApp, emu: Emulation) -> str:
        args = json.dumps({"scale": emu.scale, "width": emu.screen[0], "height": emu.screen[1], "maxNodes": 400})
        return f"({OBSERVE_JS})({args}, function(){{ {app.state_function()}\n}})"

    # An action starts reading the next observation as soon as the page has
    # settled; observe() takes it if it comes within PREFETCH_TTL_S, else reads afresh.
    PREFETCH_TTL_S = 0.05

    def _start_prefetch(self, tree: dict | None = None) -> None:
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._a_observe_now(tree))
        box: dict = {"done_at": None}

        def done(t: asyncio.Task) -> None:
            box["done_at"] = loop.time()
            if not t.cancelled():
                t.exception()            # retrieved here; re-raised to whoever awaits it
        task.add_done_callback(done)
        self._prefetch = (task, box)

    async def _drop_prefetch(self) -> None:
        """Let an unread prefetch finish first (a screenshot still being taken must not
        overlap the next input), then forget it."""
        pf, self._prefetch = self._prefetch, None
        if pf is not None and not pf[0].done():
            try:
                await asyncio.wait_for(asyncio.shield(pf[0]), self.timeout_s)
            except BaseException as e:  # noqa: BLE001 - its outcome no longer matters
                if isinstance(e, asyncio.CancelledError) and not pf[0].done():
                    raise

    async def _a_observe(self) -> WebObservation:
        pf, self._prefetch = self._prefetch, None
        if pf is not None:
            task, box = pf
            # done_at is None for a task that finished but whose done callback has not run yet
            # (callbacks run one loop turn later): it has only just finished, so it is fresh
            fresh = (not task.done() or box["done_at"] is None
                     or asyncio.get_running_loop().time() - box["done_at"] <= self.PREFETCH_TTL_S)
            if fresh:
                try:
                    return await task
                except asyncio.CancelledError:
                    pass
        return await self._a_observe_now()

    async def _a_observe_now(self, tree: dict | None = None) -> WebObservation:
        # A tap on a link can start its navigation after the page looked settled: a read that
        # lands in the new document before it is parsed (or in the old one while it unloads)
        # waits for the new document and reads again. ``tree``: the UI tree script's value,
        # read already (with the settle after an action), for the first attempt.
        for _ in range(3):
            try:
                obs = await self._a_read_observation(tree)
            except _DocumentSwapped:
                obs = None
            tree = None
            if obs is not None:
                return obs
            await self._a_await_document()
        raise DeviceError("navigation_timeout", "the page kept replacing its document while being observed")

    async def _a_read_observation(self, value: dict | None = None) -> WebObservation | None:
        """One read of the UI tree (and screenshot); None when the document was not ready.
        ``value``: the tree script's value read already (then only the screenshot is taken)."""
        page, cdp = self._live()
        emu, app = self._emu, self._app
        assert emu is not None and app is not None
        tree = (cdp.send("Runtime.evaluate", {"expression": self._observe_expr, "returnByValue": True})
                if value is None else asyncio.sleep(0, {"result": {"value": value}}))
        try:
            if self.screenshots not in ("off", "on_read"):
                params: dict = {"format": "png", "captureBeyondViewport": False, "optimizeForSpeed": True}
                if self.screenshots == "thumb":     # the page rendered at a smaller scale
                    vw, vh = emu.viewport
                    params["clip"] = {"x": 0, "y": 0, "width": vw, "height": vh,
                                      "scale": min(1.0, THUMB_WIDTH / emu.screen[0])}
                res, shot = await asyncio.gather(tree, cdp.send("Page.captureScreenshot", params))
            else:
                res, shot = await tree, None
        except Exception as e:  # noqa: BLE001 - only a document swapped mid-read is retried
            if _document_swapped(e):
                raise _DocumentSwapped() from e
            raise
        if "exceptionDetails" in res:
            d = res["exceptionDetails"]
            msg = (d.get("exception") or {}).get("description") or d.get("text", "")
            raise DeviceError("browser_error", f"UI tree script failed: {msg.splitlines()[0] if msg else d}")
        v = res["result"].get("value") or {}
        if v.get("ready") is False:
            return None
        nodes = tuple(UINode(str(n["id"]), n["role"], n["label"], tuple(n["bounds"]), bool(n["enabled"]),
                             bool(n["focused"]), n.get("value"), n.get("desc") or "", tuple(n["actions"]),
                             n.get("hidden") or "")
                      for n in v.get("nodes", ()))
        state = v.get("state") or {}
        if self._goal_key is not None:
            if isinstance(state.get("utterance"), str) and state["utterance"]:
                STATED_GOALS.put(self._goal_key, state["utterance"])
            self._goal_key = None
        if self._latched is not None:
            state = dict(self._latched, latched=True)
        elif state.get("done"):
            self._latched = dict(state)
        self._sig = v.get("sig")
        png = base64.b64decode(shot["data"]) if shot is not None else None
        size = emu.screen
        if png is not None and self.screenshots == "eager":
            size = _png_size(png) or size
        obs = WebObservation(nodes=nodes, app=app.name, screen_size=size, platform="web", _png=png,
                             url=v.get("url", ""), page=state)
        if self.screenshots == "on_read":
            obs.render = self._screenshot_on_read(obs, self._moves)
        return obs

    def _screenshot_on_read(self, obs: WebObservation, moves: int) -> Callable[[], Image.Image]:
        """``obs``'s image, taken when first read: the page as it is then, which is the page
        ``obs`` saw as long as nothing acted on it since (else DeviceError ``screenshot_gone``).
        Call from any thread but the host's loop (the runner's, when it hashes the screen)."""
        def read() -> Image.Image:
            async def shoot() -> bytes:
                if self._moves != moves:
                    raise DeviceError("screenshot_gone", "the page was acted on since this observation")
                _, cdp = self._live()
                shot = await cdp.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False,
                                                                  "optimizeForSpeed": True})
                return base64.b64decode(shot["data"])
            png = self._run(shoot, self.timeout_s, "screenshot")
            obs._png = png
            return Image.open(io.BytesIO(png)).convert("RGB")
        return read

    async def _a_settle(self, scrolled: bool = False) -> str | None:
        """Wait for what the action set off (short timers, requests, a navigation; the
        scroll coming to rest after a swipe) and return the change signature (None when
        the document went away meanwhile)."""
        return (await self._a_settle_read(scrolled, read=False))[0]

    async def _a_settle_read(self, scrolled: bool, read: bool = True) -> tuple[str | None, dict | None]:
        """:meth:`_a_settle`, and with ``read`` the UI tree script's value read in the same
        call once the page is still (one round trip per step instead of two; None when the
        script failed: the observation reads it again and reports why)."""
        page, cdp = self._live()
        app = self._app
        assert app is not None
        flag = "true" if scrolled else "false"
        expr = (f"(window.__navrl ? window.__navrl.settle({int(app.settle_max_ms)}, {flag}) : "
                f"[0,0,location.href,Math.round(scrollX),Math.round(scrollY)].join('|'))")
        if read:
            expr = (f"Promise.resolve({expr}).then((sig) => sig === null ? null : "
                    f"[sig, (() => {{ try {{ return {self._observe_expr}; }} catch (e) {{ return null; }} }})()])")
        try:
            r = await cdp.send("Runtime.evaluate", {"expression": expr, "awaitPromise": True, "returnByValue": True})
            if "exceptionDetails" not in r:
                v = r["result"].get("value")
                if v is not None:          # null: the document is unloading
                    return (v[0], v[1]) if read else (v, None)
        except Exception as e:  # noqa: BLE001
            if not _swapped_or_detached(e):
                raise map_error(e, "settle") from e
        await self._a_await_document()
        return None, None

    async def _a_await_document(self) -> None:
        """After an action that replaced the document: wait until the new one is loaded (the
        init script marks the old one ``leaving``), then for its first frame."""
        _, cdp = self._live()
        expr = ("(document.readyState === 'complete' && !(window.__navrl && window.__navrl.leaving)) "
                "? location.href : ''")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.nav_timeout_s
        while True:
            try:
                r = await cdp.send("Runtime.evaluate", {"expression": expr, "returnByValue": True})
                if (r.get("result") or {}).get("value"):
                    break
            except Exception as e:  # noqa: BLE001 - the document is being swapped
                if not _swapped_or_detached(e):
                    raise map_error(e, "navigation after an action") from e
            if loop.time() > deadline:
                raise DeviceError("navigation_timeout", f"no new document after {self.nav_timeout_s:g} s")
            await asyncio.sleep(0.02)
        try:
            await cdp.send("Runtime.evaluate", {
                "expression": "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))",
                "awaitPromise": True})
        except Exception:  # noqa: BLE001 - best effort
            pass

    async def _a_act(self, a: Action) -> ActResult:
        await self._drop_prefetch()
        self._moves += 1
        page, cdp = self._live()
        emu = self._emu
        assert emu is not None
        k = a.kind
        before = self._sig
        if before is None:
            before = await self._a_settle()
        note = ""
        if k is ActionKind.TAP:
            x, y = emu.to_css(a.x, a.y)  # type: ignore[arg-type]
            await touch.tap(cdp, x, y)
        elif k is ActionKind.LONG_PRESS:
            x, y = emu.to_css(a.x, a.y)  # type: ignore[arg-type]
            await touch.long_press(cdp, x, y, a.duration)
        elif k is ActionKind.SWIPE:
            x1, y1, x2, y2 = touch.swipe_endpoints(a, emu.screen)
            p1, p2 = emu.to_css(x1, y1), emu.to_css(x2, y2)
            r = await cdp.send("Runtime.evaluate", {"expression": f"{MOUSE_DRAG_AT_JS}({p1[0]}, {p1[1]})",
                                                    "returnByValue": True})
            if (r.get("result") or {}).get("value") is True:   # an element that takes a mouse drag
                await mouse.drag(cdp, p1[0], p1[1], p2[0], p2[1])
            else:
                await touch.swipe(cdp, p1[0], p1[1], p2[0], p2[1], emu.viewport)
        elif k is ActionKind.TYPE:
            # a date / time field takes no inserted text: the page sets the typed date or time
            r = await cdp.send("Runtime.evaluate", {
                "expression": "window.__navrl && window.__navrl.typeIntoDateTime ? window.__navrl.typeIntoDateTime("
                              + json.dumps(a.text or "") + ") : false", "returnByValue": True})
            if not (r.get("result") or {}).get("value"):
                await cdp.send("Input.insertText", {"text": a.text or ""})
        elif k is ActionKind.HOME:
            if self._latched is None:
                try:
                    await self._a_latch_state()
                except DeviceError:
                    pass
            latched = self._latched
            app = self._app
            assert app is not None
            await self._a_goto(self._start_url)
            if app.start_js:
                await self._a_start_episode()
            self._latched = latched
            self._sig = None
            self._start_prefetch()
            return ActResult(True, "went to the start page")
        after, tree = await self._a_settle_read(scrolled=k is ActionKind.SWIPE)
        self._sig = after
        self._start_prefetch(tree)
        changed = after is None or before is None or after != before
        if k is ActionKind.TYPE and not changed:
            note = "nothing took the text (no focused field?)"
        return ActResult(changed, note)

    async def _a_latch_state(self) -> None:
        page, cdp = self._live()
        app = self._app
        assert app is not None
        r = await cdp.send("Runtime.evaluate", {"expression": f"(function(){{ {app.state_function()}\n}})()",
                                               "returnByValue": True})
        st = (r.get("result") or {}).get("value") or {}
        if st.get("done"):
            self._latched = dict(st)

    async def _a_snapshot(self) -> WebSnapshot:
        page, _ = self._live()
        assert self._app is not None and self._ctx is not None
        storage = await self._ctx.storage_state()
        return WebSnapshot(self._app, self._seed, self._phone_now or self.phone, url=page.url, storage=storage,
                           fresh=False)

    async def _a_health(self) -> Health:
        if self._page is None:
            await self.host.browser()
            return Health(True, "idle", {"incarnation": self.host.incarnation})
        page, cdp = self._live()
        r = await asyncio.wait_for(cdp.send("Runtime.evaluate", {"expression": "document.readyState",
                                                                "returnByValue": True}), 3)
        state = (r.get("result") or {}).get("value")
        return Health(True, "ready", {"readyState": state, "incarnation": self.host.incarnation,
                                      "url": page.url})


_CLOSING: set = set()


async def _close_quietly(ctx: Any) -> None:
    try:
        await asyncio.wait_for(ctx.close(), 10)
    except BaseException as e:  # noqa: BLE001 - a dead or hung context is dropped anyway
        log.debug("closing a browser context failed: %s", e)


def _document_additions(app: WebApp) -> str:
    """Init script adding the app's style sheet and a mobile viewport meta tag."""
    if not app.css and not app.mobile_viewport:
        return ""
    css = json.dumps(app.css)
    meta = "true" if app.mobile_viewport else "false"
    return ("(() => { const add = () => { const h = document.head || document.documentElement; if (!h) return;"
            f" if ({meta} && !document.querySelector('meta[name=viewport]')) {{ const m = document.createElement('meta');"
            " m.name = 'viewport'; m.content = 'width=device-width, initial-scale=1'; h.prepend(m); }"
            f" if ({css}) {{ const s = document.createElement('style'); s.setAttribute('data-navrl', ''); s.textContent = {css};"
            " h.appendChild(s); } };"
            " if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', add, { once: true });"
            " else add(); })();")


def _png_size(png: bytes) -> tuple[int, int] | None:
    if len(png) >= 24 and png[:8] == b"\x89PNG\r\n\x1a\n":
        import struct
        w, h = struct.unpack(">II", png[16:24])
        return int(w), int(h)
    try:
        return Image.open(io.BytesIO(png)).size
    except Exception:  # noqa: BLE001
        return None
