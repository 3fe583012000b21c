"""iOS backend without hardware: pixel↔point conversion, WDA request construction,
source-tree parsing of committed WDA samples, and the device against a fake
WebDriverAgent on 127.0.0.1 — including one that stops answering."""
from __future__ import annotations

import base64
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from navrl.actions import Action
from navrl.device.base import DeviceError
from navrl.device.ios import (IOSBackend, IOSConfig, IOSDevice, IOSSnapshot, bounds_to_pixels, parse_wda_source,
                              to_pixels, to_points, wda_requests)
from navrl.device.pool import DevicePool, DeviceTimeout, PoolConfig

pytest.importorskip("wda")

FIX = Path(__file__).parent / "fixtures"


# ------------------------------------------------------------------ coordinates
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 3000), st.sampled_from([1.0, 2.0, 3.0, 2.608, 1.5]))
def test_pixels_to_points_and_back(x, y, scale):
    px, py = to_points(x, y, scale)
    assert to_pixels(px, py, scale) == (x, y)
    assert abs(px * scale - x) <= scale * 0.0005 + 1e-9


def test_conversion_examples():
    assert to_points(300, 600, 3) == (100.0, 200.0)
    assert to_points(1169, 2531, 3) == (389.667, 843.667)
    assert to_pixels(195, 422, 3) == (585, 1266)
    assert bounds_to_pixels(16, 364, 358, 45, 3) == (48, 1092, 1122, 1227)
    assert bounds_to_pixels(0.5, 0.5, 10, 10, 2) == (1, 1, 21, 21)
    with pytest.raises(ValueError):
        to_points(1, 1, 0)


def test_wda_requests_are_in_points():
    size, s = (1170, 2532), 3.0
    assert wda_requests(Action.tap(300, 600), size, s) == [("POST", "/wda/tap", {"x": 100.0, "y": 200.0})]
    assert wda_requests(Action.long_press(300, 600, 2.0), size, s) == [
        ("POST", "/wda/touchAndHold", {"x": 100.0, "y": 200.0, "duration": 2.0})]
    [(_, path, body)] = wda_requests(Action.swipe("up"), size, s)
    assert path == "/wda/dragfromtoforduration"
    assert body == {"fromX": 195.0, "fromY": 422.0, "toX": 195.0, "toY": 84.667, "duration": 0.05}
    assert wda_requests(Action.home(), size, s) == [("POST", "/wda/homescreen", None)]
    assert wda_requests(Action.type("a'b"), size, s) == [("POST", "/wda/keys", {"value": ["a", "'", "b"]})]


# ------------------------------------------------------------------ source samples
def test_parse_settings_source():
    nodes, app = parse_wda_source((FIX / "wda_settings.xml").read_bytes(), 3.0)
    assert app == "Settings" and len(nodes) == 12
    by = {n.label: n for n in nodes}
    assert by["Settings"].role == "header" and by["Settings"].bounds == (48, 273, 393, 396)
    wifi = by["Wi‑Fi"]
    assert wifi.role == "cell" and wifi.value == "HomeNet 5G" and wifi.bounds == (48, 1092, 1122, 1227)
    assert wifi.center == (585, 1159) and wifi.actions == ("tap", "long_press")
    assert by["Search"].role == "textfield" and by["Search"].value is None        # placeholder is no value
    assert not by["Personal Hotspot"].enabled
    assert [n.value for n in nodes if n.role == "switch"] == ["off"]
    labels = {n.label for n in nodes}
    assert "Privacy & Security" not in labels                   # visible="false"
    assert not labels & {"q", "search", "9:41"}                  # keyboard and status bar skipped
    assert "AX-Settings-Profile" not in labels                   # decorative image


def test_parse_clock_source_tabs_and_switches():
    nodes, app = parse_wda_source((FIX / "wda_clock_alarms.xml").read_bytes(), 2.0)
    assert app == "Clock" and len(nodes) == 12
    tabs = [n for n in nodes if n.role == "tab"]
    assert [t.label for t in tabs] == ["World Clock", "Alarms", "Stopwatch", "Timers"]
    assert [t.value for t in tabs] == [None, "selected", None, None]
    assert tabs[0].bounds == (4, 1238, 184, 1334)
    assert [(n.label, n.value) for n in nodes if n.role == "switch"] == [("6:30 AM", "on"), ("7:15 AM", "off")]
    assert [n.label for n in nodes if n.role == "header"] == ["Alarms"]
    assert 'Gym "early" & run' in [n for n in nodes if n.role == "cell"][1].label


# ------------------------------------------------------------------ a fake WebDriverAgent
def _png_b64(w: int, h: int) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (250, 250, 250)).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


class FakeWDA:
    """Answers the WDA routes navrl uses; records (method, path, body); ``hang`` stalls."""

    def __init__(self, source: str, scale: int = 3, size_pt=(390, 844)):
        self.requests: list[tuple[str, str, object]] = []
        self.hang = False
        self.locked = False
        self.source, self.scale = source, scale
        self.shot = _png_b64(size_pt[0] * scale, size_pt[1] * scale)
        fake = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _reply(self, value, **extra):
                body = json.dumps({"value": value, "sessionId": "S1", "status": 0, **extra}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self, method):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n)) if n else None
                fake.requests.append((method, self.path, body))
                if fake.hang:
                    time.sleep(3)
                    return
                p = self.path
                if p == "/status":
                    return self._reply({"ready": True, "state": "success"})
                if p == "/session" and method == "POST":
                    return self._reply({"sessionId": "S1", "capabilities": {}})
                if p == "/session/S1/wda/screen":
                    return self._reply({"scale": fake.scale, "statusBarSize": {"width": 390, "height": 47}})
                if p == "/screenshot":
                    return self._reply(fake.shot)
                if p.startswith("/source"):
                    return self._reply(fake.source)
                if p == "/wda/locked":
                    return self._reply(fake.locked)
                return self._reply(None)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def posts(self, prefix: str = "/session/S1/wda/"):
        return [(p, b) for m, p, b in self.requests if m == "POST" and p.startswith(prefix)]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def wda_srv():
    srv = FakeWDA((FIX / "wda_settings.xml").read_text())
    yield srv
    srv.hang = False
    srv.close()


def _dev(srv, **kw):
    return IOSDevice(IOSConfig(url=srv.url, timeout_s=kw.pop("timeout_s", 1.0), settle_s=0.0, **kw))


def test_device_observes_in_pixels_and_acts_in_points(wda_srv):
    d = _dev(wda_srv)
    obs = d.observe()
    assert obs.screen_size == (1170, 2532) and obs.app == "Settings" and obs.platform == "ios"
    assert obs.nodes == parse_wda_source((FIX / "wda_settings.xml").read_text(), 3.0)[0]
    wifi = [n for n in obs.nodes if n.label == "Wi‑Fi"][0]
    d.act(Action.tap(*wifi.center))
    d.act(Action.long_press(300, 600, 1.5))
    d.act(Action.swipe("up"))
    d.act(Action.home())
    assert wda_srv.posts() == [
        ("/session/S1/wda/tap", {"x": 195.0, "y": 386.333}),
        ("/session/S1/wda/touchAndHold", {"x": 100.0, "y": 200.0, "duration": 1.5}),
        ("/session/S1/wda/dragfromtoforduration",
         {"fromX": 195.0, "fromY": 422.0, "toX": 195.0, "toY": 84.667, "duration": 0.05})]
    assert ("POST", "/wda/homescreen", None) in wda_srv.requests
    assert d.health().ok
    wda_srv.locked = True
    assert not d.health().ok


@pytest.fixture(scope="module")
def keys_srv():
    srv = FakeWDA((FIX / "wda_settings.xml").read_text())
    yield srv
    srv.close()


@settings(max_examples=100, deadline=None)
@given(text=st.text(min_size=1, max_size=40))
def test_typed_text_reaches_wda_literally(keys_srv, text):
    keys_srv.requests.clear()
    d = IOSDevice(IOSConfig(url=keys_srv.url, timeout_s=2.0, settle_s=0.0, scale=3.0))
    d._size = (1170, 2532)
    d.act(Action.type(text))
    [(path, body)] = keys_srv.posts()
    assert path == "/session/S1/wda/keys" and "".join(body["value"]) == text


def test_restore_terminates_the_task_apps_and_goes_home(wda_srv):
    d = _dev(wda_srv)
    d.restore(IOSSnapshot(("com.apple.Preferences",), relaunch=True))
    assert wda_srv.posts("/session/S1/wda/apps/") == [
        ("/session/S1/wda/apps/terminate", {"bundleId": "com.apple.Preferences"}),
        ("/session/S1/wda/apps/launch", {"bundleId": "com.apple.Preferences"})]
    assert ("POST", "/wda/homescreen", None) in wda_srv.requests
    with pytest.raises(ValueError):
        IOSSnapshot(("com.x; rm -rf /",))


def test_wda_that_stops_answering_times_out(wda_srv):
    d = _dev(wda_srv, timeout_s=0.3)
    d.observe()
    wda_srv.hang = True
    t0 = time.monotonic()
    with pytest.raises(DeviceTimeout):
        d.observe()
    assert time.monotonic() - t0 < 1.5


def test_pool_over_wda_gives_up_after_one_reconnect(wda_srv):
    be = IOSBackend(urls=[wda_srv.url], config=IOSConfig(timeout_s=0.3, settle_s=0.0),
                    snapshot_for=lambda task: IOSSnapshot(("com.apple.Preferences",)))
    with DevicePool(be, PoolConfig(size=1, call_timeout_s=5.0)) as pool:
        dev = pool.lease("ios-task")
        assert ("POST", "/session/S1/wda/apps/terminate", {"bundleId": "com.apple.Preferences"}) in wda_srv.requests
        obs = dev.observe()
        assert len(obs.nodes) == 12
        wda_srv.hang = True
        t0 = time.monotonic()
        with pytest.raises(DeviceError) as e:
            dev.act(Action.tap(585, 1159))
        dt = time.monotonic() - t0
        st = pool.stats()["per_device"][0]
    assert e.value.reason == "timeout" and st["reconnects"] == 1
    assert 0.5 <= dt < 2.5          # the call and the reconnect probe, 0.3 s each
