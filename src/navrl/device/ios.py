"""iOS devices and simulators through WebDriverAgent (``facebook-wda``; ``pip install 'navrl[ios]'``).

- actions: ``/wda/tap``, ``/wda/touchAndHold`` (long press), ``/wda/dragfromtoforduration``
  (swipe), ``/wda/keys`` (text, sent as JSON data: nothing is ever interpreted),
  ``/wda/homescreen``;
- observation: ``/screenshot`` (PNG in *pixels*) and ``/source`` (XCUITest tree in
  *points*). Actions are grounded on the screenshot, so every coordinate is converted
  between the two with the device scale (``/wda/screen``: 2 or 3 on iPhones):
  ``points = pixels / scale``; tree boxes are turned into pixels the same way;
- rollback: iOS has no device snapshots. :class:`IOSSnapshot` terminates the task's
  apps, goes home and (optionally) relaunches them; data resets need the app's own
  reset hooks (launch arguments) or a reinstall — see docs/devices.md;
- every HTTP request runs under ``timeout_s``; failures raise :class:`DeviceError`
  (``timeout``, ``connection``, ``wda_error``), which the pool retries once after a reconnect.

WebDriverAgent is reached at ``http://127.0.0.1:8100`` by default (``iproxy 8100 8100``
for a USB device; a simulator listens there itself). Set-up: docs/devices.md.
"""
from __future__ import annotations

import base64
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from navrl.actions import Action, ActionKind
from navrl.device.android import png_size, swipe_endpoints
from navrl.device.backend import DeviceTimeout
from navrl.device.base import ActResult, DeviceError, Health
from navrl.device.mobile import MobileBackend, MobileDevice, import_client
from navrl.observation import Observation, UINode

__all__ = ["IOSBackend", "IOSConfig", "IOSDevice", "IOSSnapshot", "bounds_to_pixels", "parse_wda_source",
           "to_pixels", "to_points", "wda_requests"]

_BUNDLE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.\-]*$")


# ---------------------------------------------------------------------------------- coordinates
def to_points(x: float, y: float, scale: float) -> tuple[float, float]:
    """Screenshot pixels → WDA points (``pixels / scale``), rounded to 1/1000 point."""
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    return round(x / scale, 3), round(y / scale, 3)


def to_pixels(x: float, y: float, scale: float) -> tuple[int, int]:
    """WDA points → screenshot pixels (``points * scale``, rounded)."""
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    return int(round(x * scale)), int(round(y * scale))


def bounds_to_pixels(x: float, y: float, w: float, h: float, scale: float) -> tuple[int, int, int, int]:
    """A WDA frame (x, y, width, height in points) → pixel bounds (x0, y0, x1, y1), x1/y1 exclusive."""
    x0, y0 = to_pixels(x, y, scale)
    x1, y1 = to_pixels(x + w, y + h, scale)
    return x0, y0, x1, y1


def wda_requests(a: Action, size_px: tuple[int, int], scale: float,
                 swipe_duration_s: float = 0.05) -> list[tuple[str, str, dict | None]]:
    """The WebDriverAgent requests ``(method, session path, JSON body)`` for a device
    action grounded on a ``size_px`` screenshot. ``home`` is session-less (path ``/wda/homescreen``)."""
    k = a.kind
    if k is ActionKind.TAP:
        x, y = to_points(a.x, a.y, scale)   # type: ignore[arg-type]
        return [("POST", "/wda/tap", {"x": x, "y": y})]
    if k is ActionKind.LONG_PRESS:
        x, y = to_points(a.x, a.y, scale)   # type: ignore[arg-type]
        return [("POST", "/wda/touchAndHold", {"x": x, "y": y, "duration": float(a.duration)})]
    if k is ActionKind.SWIPE:
        x1, y1, x2, y2 = swipe_endpoints(a, size_px)
        fx, fy = to_points(x1, y1, scale)
        tx, ty = to_points(x2, y2, scale)
        return [("POST", "/wda/dragfromtoforduration",
                 {"fromX": fx, "fromY": fy, "toX": tx, "toY": ty, "duration": swipe_duration_s})]
    if k is ActionKind.TYPE:
        if not a.text:
            raise DeviceError("text_unsupported", "nothing to type")
        return [("POST", "/wda/keys", {"value": list(a.text)})]
    if k is ActionKind.HOME:
        return [("POST", "/wda/homescreen", None)]
    raise ValueError(f"{k.value} is not a device action")


# ---------------------------------------------------------------------------------- UI tree
_ROLES = {
    "Button": "button", "StaticText": "text", "TextField": "textfield", "SecureTextField": "textfield",
    "SearchField": "textfield", "TextView": "textfield", "Switch": "switch", "Toggle": "switch", "Cell": "cell",
    "Image": "image", "Icon": "button", "Link": "link", "Slider": "slider", "Stepper": "button",
    "SegmentedControl": "tablist", "PageIndicator": "button", "Table": "list", "CollectionView": "list",
    "ScrollView": "list", "WebView": "web", "Alert": "dialog", "Sheet": "dialog", "MenuItem": "button",
    "Picker": "list", "PickerWheel": "slider", "Tab": "tab", "CheckBox": "checkbox",
}
_ACTIONS = {"button": ("tap",), "textfield": ("tap",), "switch": ("tap",), "cell": ("tap", "long_press"),
            "link": ("tap",), "tab": ("tap",), "checkbox": ("tap",), "list": ("swipe",), "slider": ("swipe",)}
_SKIP_SUBTREES = {"Keyboard", "StatusBar"}
_CONTAINERS = {"Application", "Window", "NavigationBar", "TabBar", "Toolbar"}


def parse_wda_source(xml: str | bytes, scale: float) -> tuple[tuple[UINode, ...], str | None]:
    """UI nodes of a WebDriverAgent ``/source`` XML (document order), in screenshot pixels,
    and the foreground app's name.

    Kept: visible elements with a non-empty frame that have a label (``label``, else
    ``name``) or react to something; the keyboard and status bar subtrees are skipped
    (typing goes through ``/wda/keys``), and so are bare containers (window, navigation
    bar, tab bar; ``Other`` unless accessible). Static text in a navigation bar is a ``header``,
    a button in a tab bar a ``tab``; switch values ``0``/``1`` read ``off``/``on``."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as e:
        raise DeviceError("ui_dump_failed", f"WDA source does not parse: {e}") from None
    app = (root.get("name") or root.get("label")) if root.tag.endswith("Application") else None
    nodes: list[UINode] = []
    counter = iter(range(1 << 30))

    def walk(el: ET.Element, ctx: str) -> None:
        t = (el.get("type") or el.tag).removeprefix("XCUIElementType")
        if t in _SKIP_SUBTREES:
            return
        i = next(counter)
        here = "navbar" if t == "NavigationBar" else "tabbar" if t == "TabBar" else ctx
        a = el.attrib
        if a.get("visible", "true") == "true":
            try:
                box = bounds_to_pixels(float(a.get("x", 0)), float(a.get("y", 0)), float(a.get("width", 0)),
                                       float(a.get("height", 0)), scale)
            except ValueError:
                box = (0, 0, 0, 0)
            role = _ROLES.get(t, "group")
            if role == "text" and ctx == "navbar":
                role = "header"
            if role == "button" and ctx == "tabbar":
                role = "tab"
            label = a.get("label") or a.get("name") or ""
            value = a.get("value")
            if role == "switch" and value in ("0", "1"):
                value = "on" if value == "1" else "off"
            elif role == "tab":
                value = "selected" if value == "1" else None
            elif role == "text" or value == label or value == a.get("placeholderValue"):
                value = None
            acts = _ACTIONS.get(role, ())
            emit = bool(acts) or (bool(label) and (role not in ("group", "image") or a.get("accessible") == "true"))
            if t in _CONTAINERS:
                emit = False
            if box[2] > box[0] and box[3] > box[1] and emit:
                nodes.append(UINode(id=f"{t}:{a.get('name') or i}", role=role, label=label, bounds=box,
                                    enabled=a.get("enabled", "true") == "true", focused=a.get("focused") == "true",
                                    value=value, actions=acts))
        for ch in el:
            walk(ch, here)

    walk(root, "")
    return tuple(nodes), app


# ---------------------------------------------------------------------------------- device
@dataclass(frozen=True)
class IOSSnapshot:
    """Rollback point of an iOS device: terminate ``bundle_ids``, go home, and relaunch
    them when ``relaunch`` (iOS has no device-level snapshots)."""

    bundle_ids: tuple[str, ...] = ()
    relaunch: bool = False

    def __post_init__(self) -> None:
        for b in self.bundle_ids:
            if not _BUNDLE_RE.match(b):
                raise ValueError(f"bad bundle id {b!r}")


@dataclass(frozen=True)
class IOSConfig:
    """How to reach one WebDriverAgent."""

    url: str = "http://127.0.0.1:8100"
    """WDA endpoint (``iproxy`` forwards a USB device's port 8100 to localhost)."""
    timeout_s: float = 20.0
    """Deadline of every HTTP request to WDA."""
    scale: float | None = None
    """Pixels per point; None asks WDA (``/wda/screen``) once per session."""
    settle_s: float = 0.4
    """Pause after an action before the next observation (animations)."""
    swipe_duration_s: float = 0.05
    """How long a drag presses before moving."""
    bundle_ids: tuple[str, ...] = ()
    """Apps reset by :meth:`IOSDevice.snapshot` handles."""


class IOSDevice(MobileDevice):
    """One iPhone/iPad or simulator behind WebDriverAgent."""

    platform = "ios"

    def __init__(self, config: IOSConfig, on_close: Callable[[], None] | None = None):
        wda, wda_errors = import_client("wda", "wda.usbmux.exceptions",
                                        missing="iOS needs facebook-wda: pip install 'navrl[ios]'")
        super().__init__(config, on_close)
        self._wda, self._HTTPError = wda, wda_errors.HTTPError
        self._client = wda.Client(config.url)
        self._session: Any = None
        self._scale: float | None = config.scale

    # -- transport ----------------------------------------------------------------------
    def _guard(self, fn: Callable[[], Any], what: str) -> Any:
        if self._closed:
            raise DeviceError("device_closed", self.cfg.url)
        try:
            return fn()
        except self._HTTPError as e:
            cause = e.args[0] if e.args else e
            if isinstance(cause, TimeoutError):
                raise DeviceTimeout(f"WDA {self.cfg.url}: {what} took over {self.cfg.timeout_s:g} s") from None
            raise DeviceError("connection", f"WDA {self.cfg.url}: {what}: {type(cause).__name__}: {cause}") from None
        except self._wda.WDAError as e:
            raise DeviceError("wda_error", f"WDA {self.cfg.url}: {what}: {e}") from None
        except TimeoutError as e:
            raise DeviceTimeout(f"WDA {self.cfg.url}: {what}: {e}") from None
        except OSError as e:
            raise DeviceError("connection", f"WDA {self.cfg.url}: {what}: {e}") from None

    def _get(self, path: str) -> Any:
        return self._guard(lambda: self._client.http.get(path, timeout=self.cfg.timeout_s), f"GET {path}").value

    def _post(self, path: str, data: dict | None = None, session: bool = True) -> Any:
        if session:
            s = self.session()
            return self._guard(lambda: s._session_http.post(path, data, timeout=self.cfg.timeout_s),
                               f"POST {path}").value
        return self._guard(lambda: self._client.http.post(path, data, timeout=self.cfg.timeout_s),
                           f"POST {path}").value

    def session(self) -> Any:
        """The WDA session (created once, without launching an app)."""
        if self._session is None:
            res = self._guard(lambda: self._client.http.post("session", {"capabilities": {}},
                                                             timeout=self.cfg.timeout_s), "POST /session")
            sid = res.get("sessionId") or (res.value or {}).get("sessionId")
            if not sid:
                raise DeviceError("wda_error", f"WDA {self.cfg.url} created no session")
            self._session = self._wda.Client(self.cfg.url, _session_id=sid)
        return self._session

    def scale(self) -> float:
        """Pixels per point (from the config, else ``/wda/screen``)."""
        if self._scale is None:
            s = self.session()
            v = self._guard(lambda: s._session_http.get("/wda/screen", timeout=self.cfg.timeout_s),
                            "GET /wda/screen").value
            scale = float((v or {}).get("scale") or 0)
            if scale <= 0:
                raise DeviceError("wda_error", f"WDA {self.cfg.url} reported no screen scale: {v!r}")
            self._scale = scale
        return self._scale

    # -- Device protocol ------------------------------------------------------------------
    def screenshot_png(self) -> bytes:
        raw = self._get("screenshot")
        try:
            return base64.b64decode(raw)
        except (ValueError, TypeError) as e:
            raise DeviceError("screenshot_failed", f"WDA screenshot is not base64: {e}") from None

    def observe(self) -> Observation:
        png = self.screenshot_png()
        size = png_size(png)
        xml = self._get("source?format=xml")
        nodes, app = parse_wda_source(xml, self.scale())
        if app in ("SpringBoard", "Home screen"):
            app = None
        self._size = size
        return Observation(nodes, app, size, "ios", _png=png)

    def act(self, action: Action) -> ActResult:
        size = getattr(self, "_size", None) or png_size(self.screenshot_png())
        self._size = size
        action.validate(size)
        if not action.is_device_action:
            raise ValueError(f"{action.kind.value} is an episode action, not a device action")
        scale = self.scale()
        for method, path, body in wda_requests(action, size, scale, self.cfg.swipe_duration_s):
            self._post(path, body, session=path != "/wda/homescreen")
        if self.cfg.settle_s:
            time.sleep(self.cfg.settle_s)
        return ActResult(True, "sent")

    def snapshot(self) -> IOSSnapshot:
        return IOSSnapshot(self.cfg.bundle_ids, relaunch=False)

    def restore(self, snapshot: object) -> None:
        if not isinstance(snapshot, IOSSnapshot):
            raise TypeError("IOSDevice.restore needs an IOSSnapshot")
        for b in snapshot.bundle_ids:
            self._post("/wda/apps/terminate", {"bundleId": b})
        self._post("/wda/homescreen", None, session=False)
        if snapshot.relaunch:
            for b in snapshot.bundle_ids:
                self._post("/wda/apps/launch", {"bundleId": b})

    def ping(self) -> None:
        self._get("status")

    def health(self) -> Health:
        st = self._get("status") or {}
        ready = st.get("ready", True) and st.get("state", "success") == "success"
        if not ready:
            return Health(False, f"WDA not ready: {st.get('message', st)!r}")
        locked = self._get("wda/locked")
        if locked:
            return Health(False, "the screen is locked")
        return Health(True, "ok", {"url": self.cfg.url, "scale": self._scale})


# ---------------------------------------------------------------------------------- pool backend
@dataclass
class IOSBackend(MobileBackend, device_type=IOSDevice, addresses_field="urls", address_setting="url",
                 address_kind="WebDriverAgent endpoints"):
    """A pool backend over WebDriverAgent endpoints (one per device, e.g. iproxy ports
    8100, 8101 …). ``snapshot_for(task)`` says which apps to reset for a task."""

    urls: Sequence[str] = ()
    config: IOSConfig = field(default_factory=IOSConfig)
    snapshot_for: Callable[[Any], IOSSnapshot] | None = None
    name: str = "ios"
    in_process: bool = False

    def default_snapshot(self) -> IOSSnapshot:
        return IOSSnapshot(self.config.bundle_ids, relaunch=False)
