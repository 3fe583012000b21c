"""The Chromium device on local pages (127.0.0.1): touch input, typing, home, the UI tree,
device-pixel screenshots, the network sandbox, hung pages, navigation timeouts, crashes."""
from __future__ import annotations

import math
import threading
import time

import pytest

from navrl.actions import Action, ActionError
from navrl.device.base import DeviceError
from navrl.device.browser import browser_ready

pytestmark = pytest.mark.skipif(browser_ready() is not None,
                                reason=f"browser tests need Playwright and a Chromium: {browser_ready()}")

from navrl.device.browser import BrowserDevice, WebApp, WebSnapshot  # noqa: E402


def node(obs, label):
    hits = [n for n in obs.nodes if n.label == label]
    assert hits, f"no node {label!r} in:\n{obs.ui_text()}"
    return hits[0]


@pytest.fixture(scope="module")
def index_app(site):
    return WebApp("test", site.url("index.html"))


@pytest.fixture(scope="module")
def dev(host, index_app):
    d = BrowserDevice(index_app, host=host)
    yield d
    d.close()


@pytest.fixture(scope="module")
def pixel_dev(host, site):
    d = BrowserDevice(WebApp("test", site.url("index.html")), phone="pixel", host=host)
    yield d
    d.close()


@pytest.fixture()
def fresh(dev, index_app):
    dev.restore(WebSnapshot.start(index_app))
    return dev


# ------------------------------------------------------------------ screen, coordinates, tree
@pytest.mark.parametrize("which", ["dev", "pixel_dev"])
def test_screenshot_is_in_device_pixels_and_bounds_map_exactly(request, which):
    d = request.getfixturevalue(which)
    d.restore(WebSnapshot.start(request.getfixturevalue("index_app"), phone="iphone" if which == "dev" else "pixel"))
    emu = d.emulation
    obs = d.observe()
    assert obs.platform == "web" and obs.app == "test"
    assert obs.screen_size == emu.screen == obs.screenshot.size
    w, h = emu.viewport
    assert abs(obs.screen_size[0] - w * emu.scale) <= 1 and abs(obs.screen_size[1] - h * emu.scale) <= 1
    assert emu.descriptor == ("iPhone 13" if which == "dev" else "Pixel 7") and emu.has_touch and emu.is_mobile
    b = node(obs, "Tap me")
    # the button is at left 20, top 20, 140x50 CSS px, painted rgb(0, 200, 0)
    s = emu.scale
    assert b.bounds == (math.floor(20 * s), math.floor(20 * s), math.ceil(160 * s), math.ceil(70 * s))
    img = obs.screenshot
    x0, y0, x1, y1 = b.bounds
    for x, y in [(x0 + 1, y0 + 1), (x1 - 2, y1 - 2), b.center]:
        assert img.getpixel((x, y)) == (0, 200, 0)
    for x, y in [(x0 - 2, y0 + 5), (x1 + 1, y0 + 5), (x0 + 5, y1 + 1)]:
        assert img.getpixel((x, y)) != (0, 200, 0)


def test_ui_tree_roles_names_values_focus(fresh):
    obs = fresh.observe()
    by = {n.label: n for n in obs.nodes}
    assert by["Tap me"].role == "button" and by["Tap me"].actions == ("tap",)
    assert by["Hold me"].role == "button"
    name = by["Name"]
    assert name.role == "textfield" and name.value is None and not name.focused
    assert [n.label for n in obs.nodes].count("Name") == 1     # the <label> names the field, no extra node
    assert by["idle"].role == "text" and by["idle"].actions == ()
    assert by["Next page"].role == "link"
    assert "[textfield] Name" in obs.ui_text()


# ------------------------------------------------------------------ input
def test_a_control_partly_covered_is_listed_by_a_part_a_tap_reaches(host, site):
    """A control whose centre another covers (MiniWoB++ places buttons at random) is in the tree,
    its bounds the part of it nearest its centre that a tap reaches; one covered whole is not."""
    d = BrowserDevice(WebApp("test", site.url("overlap.html")), host=host)
    try:
        obs = d.observe()
        labels = [n.label for n in obs.nodes]
        assert "Hidden" not in labels and {"Under", "Over", "Lid"} <= set(labels)
        under = node(obs, "Under")
        x0, y0, x1, y1 = under.bounds
        assert x1 - x0 < 80 and y1 - y0 < 80        # a part, not the whole button
        d.act(Action.tap(*under.center))
        assert d.evaluate("document.title") == "under"
    finally:
        d.close()


def test_icons_are_named_buttons_and_a_scrolled_lists_fold_hides_its_rows(host, site):
    """A clickable element that shows only a picture is a button named by its title, else the
    words of its id or class; one that cannot be clicked is not listed; rows below a scrolling
    container's fold are not on screen."""
    d = BrowserDevice(WebApp("test", site.url("icons.html")), host=host)
    try:
        obs = d.observe()
        icons = {n.label: n for n in obs.nodes if n.description == "icon"}
        assert set(icons) == {"send reply", "trash", "Archive"}
        assert all(n.role == "button" and n.actions == ("tap",) for n in icons.values())
        d.act(Action.tap(*icons["trash"].center))
        assert d.evaluate("document.title") == "trash"
        rows = [n.label for n in obs.nodes if n.label.startswith("Row")]
        assert rows == ["Row one", "Row two"]
        assert node(obs, "Row two").bounds[3] <= node(obs, "Row one").bounds[3] + 32 * 3
    finally:
        d.close()


def test_tap_is_a_touch_that_clicks_the_element(fresh):
    obs = fresh.observe()
    b = node(obs, "Tap me")
    r = fresh.act(Action.tap(*b.center))
    assert r.changed
    ev = fresh.evaluate("events")
    assert ev[0][0] == "click"
    cx, cy = fresh.emulation.to_css(*b.center)
    assert abs(ev[0][1] - cx) <= 1 and abs(ev[0][2] - cy) <= 1
    after = fresh.observe()
    assert "tapped" in after.labels()
    # a tap on empty space changes nothing (the first one takes the focus off the button)
    w, h = obs.screen_size
    fresh.act(Action.tap(w - 5, h - 5))
    assert not fresh.act(Action.tap(w - 5, h - 5)).changed
    with pytest.raises(ActionError):
        fresh.act(Action.tap(w + 10, 5))


def test_tap_waits_for_short_timers_it_set_off(fresh):
    obs = fresh.observe()
    fresh.act(Action.tap(*node(obs, "Later").center))
    assert "later done" in fresh.observe().labels()


def test_long_press_holds_the_touch_and_does_not_click(fresh):
    obs = fresh.observe()
    t0 = time.perf_counter()
    r = fresh.act(Action.long_press(*node(obs, "Hold me").center, duration=0.7))
    assert time.perf_counter() - t0 >= 0.7 and r.changed
    ev = [e[0] for e in fresh.evaluate("events")]
    assert ev[:2] == ["touchstart", "contextmenu"] and "touchend" in ev and "hold-click" not in ev
    held = [e for e in fresh.evaluate("events") if e[0] == "touchend"][0][1]
    assert held >= 650
    assert "long pressed" in fresh.observe().labels()


HOSTILE = ['hello "$(rm -rf /)" `whoami` ${1+1} %s %n',
           '"; window.evalCanary = 1; "',
           "</script><script>window.evalCanary = 2</script>",
           "'); window.evalCanary = 3; ('",
           "naïve café \u2603 \U0001F600"]


def test_type_inserts_text_verbatim_and_never_evaluates_it(fresh):
    obs = fresh.observe()
    assert not fresh.act(Action.type("nobody listens")).changed     # nothing focused yet
    fresh.act(Action.tap(*node(obs, "Name").center))
    assert fresh.observe().focused_node().label == "Name"
    typed = ""
    for text in HOSTILE:
        assert fresh.act(Action.type(text)).changed
        typed += text
    f = [n for n in fresh.observe().nodes if n.role == "textfield"][0]
    assert f.value == typed and f.focused
    assert fresh.evaluate("window.evalCanary") == 0
    assert fresh.evaluate("document.getElementById('name').value") == typed


@pytest.mark.parametrize("which", ["dev", "pixel_dev"])
def test_swipe_scrolls_the_page_by_the_drag_distance(request, site, which):
    d = request.getfixturevalue(which)
    d.restore(WebSnapshot.start(WebApp("scroll", site.url("scroll.html")), phone="iphone" if which == "dev" else "pixel"))
    s = d.emulation.scale
    w, h = d.observe().screen_size
    for y1, y2 in [(int(h * 0.75), int(h * 0.45)), (int(h * 0.6), int(h * 0.55)), (int(h * 0.3), int(h * 0.6))]:
        before = d.evaluate("scrollY")
        r = d.act(Action.swipe(None, w // 2, y1, w // 2, y2))
        moved = d.evaluate("scrollY") - before
        assert r.changed
        assert abs(moved - (y1 - y2) / s) <= 1.0, (y1, y2, moved, (y1 - y2) / s)
    # direction only: 40% of the screen from the centre, finger up = content moves up (page scrolls down)
    before = d.evaluate("scrollY")
    d.act(Action.swipe("up"))
    assert abs(d.evaluate("scrollY") - before - int(h * 0.4) / s) <= 1.0
    # rows moved on screen accordingly
    top = [n for n in d.observe().nodes if n.label.startswith("Row ")][0]
    assert int(top.label.split()[1]) > 5


def test_home_returns_to_the_start_page(fresh):
    obs = fresh.observe()
    assert fresh.act(Action.tap(*node(obs, "Next page").center)).changed
    o2 = fresh.observe()
    assert o2.url.endswith("/second.html") and "Second page" in o2.labels()
    assert fresh.act(Action.home()).changed
    o3 = fresh.observe()
    assert o3.url.endswith("/index.html") and "Tap me" in o3.labels()


def test_a_screenshot_refused_between_documents_is_read_again(fresh):
    """Chromium answers "Unable to capture screenshot" while a committed navigation has no
    frame yet (a CI failure right after a tap on a link): observe waits and reads again."""
    fresh.evaluate("1")                       # no prefetched observation left to take
    session = fresh._cdp
    real_send, refused = session.send, []

    async def send(method, params=None):
        if method == "Page.captureScreenshot" and not refused:
            refused.append(method)
            raise Exception("Protocol error (Page.captureScreenshot): Unable to capture screenshot")
        return await real_send(method, params)
    session.send = send
    try:
        obs = fresh.observe()
    finally:
        del session.send
    assert refused == ["Page.captureScreenshot"]
    assert "Tap me" in obs.labels() and obs._png is not None and len(obs._png) > 100


def test_select_opens_a_touch_picker(host, site):
    d = BrowserDevice(WebApp("select", site.url("select.html")), host=host)
    try:
        obs = d.observe()
        sel = node(obs, "Fruit")
        assert sel.role == "combobox" and sel.value == "Apple"
        d.act(Action.tap(*sel.center))
        picker = d.observe()
        assert [n.label for n in picker.nodes if n.role == "option"] == ["Apple", "Banana", "Cherry"]
        assert "Fruit" not in [n.label for n in picker.nodes if n.role == "combobox"]   # covered by the picker
        d.act(Action.tap(*node(picker, "Banana").center))
        after = d.observe()
        assert node(after, "Fruit").value == "Banana" and "chose Banana" in after.labels()
        assert not any(n.role == "option" for n in after.nodes)
    finally:
        d.close()


def test_snapshot_and_restore_carry_storage_and_url(host, site):
    d = BrowserDevice(WebApp("test", site.url("index.html")), host=host, screenshots="off")
    try:
        d.evaluate("localStorage.setItem('cart', '3'); document.cookie = 'sid=abc'")
        obs = d.observe()
        d.act(Action.tap(*node(obs, "Next page").center))
        snap = d.snapshot()
        assert not snap.fresh and snap.url.endswith("/second.html")
        d.evaluate("localStorage.setItem('cart', '99')")
        d.act(Action.home())
        d.restore(snap)
        assert d.observe().url.endswith("/second.html")
        assert d.evaluate("localStorage.getItem('cart')") == "3"
        assert "sid=abc" in d.evaluate("document.cookie")
        d.reset()                                    # a fresh start: a new context, nothing kept
        assert d.evaluate("localStorage.getItem('cart')") is None
    finally:
        d.close()


def test_one_device_per_thread_in_parallel(host, site):
    app = WebApp("test", site.url("index.html"))
    devs = [BrowserDevice(app, host=host, screenshots="off") for _ in range(3)]
    errors: list[BaseException] = []

    def work(d):
        try:
            for _ in range(2):
                obs = d.observe()
                d.act(Action.tap(*node(obs, "Tap me").center))
                assert "tapped" in d.observe().labels()
                d.reset()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=work, args=(d,)) for d in devs]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    for d in devs:
        d.close()
    assert not errors, errors


# ------------------------------------------------------------------ sandbox
def test_requests_outside_the_allowed_origins_are_blocked(host, site, other_site):
    other = f"http://127.0.0.1:{other_site.server_address[1]}"
    d = BrowserDevice(WebApp("outside", site.url(f"outside.html?other={other}")), host=host, screenshots="off")
    try:
        res = {}
        for _ in range(100):
            res = d.evaluate("window.results")
            if {"inside", "outside", "ws"} <= set(res):
                break
            time.sleep(0.05)
        assert res["inside"] == 200                     # the app's own origin loads
        assert res["outside"] == "blocked" and res["ws"] == "blocked"
        blocked = d.blocked_requests
        assert any(u.startswith(other + "/secret.txt") for u in blocked)
        assert any(u.startswith(other + "/pixel.png") for u in blocked)
        assert any(u.startswith("ws://127.0.0.1") for u in blocked)
        assert other_site.hits == []                    # nothing ever reached the other origin
    finally:
        d.close()


def test_start_url_must_be_inside_the_allowed_origins():
    with pytest.raises(ValueError, match="outside the allowed origins"):
        WebApp("x", "http://127.0.0.1:1/a.html", allowed_origins=("http://127.0.0.1:2",))


# ------------------------------------------------------------------ failures
def test_a_hung_page_raises_device_error_and_the_runner_masks_it(host, site):
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.worlds.web.judges import web_judges
    from navrl.rollout.runner import EpisodeRunner
    from navrl.worlds.web.tasks import WebTaskSpec

    app = WebApp("hang", site.url("hang.html"), success_js="false")
    d = BrowserDevice(app, host=host, timeout_s=2.0, screenshots="off")
    try:
        obs = d.observe()
        t0 = time.perf_counter()
        with pytest.raises(DeviceError) as ei:
            d.act(Action.tap(*node(obs, "Freeze").center))
        assert ei.value.reason == "page_hung" and time.perf_counter() - t0 < 15
        assert not d.health().ok
        d.reset()                                       # a fresh context: the device carries on
        assert "Fine" in d.observe().labels() and d.health().ok

        class Freeze:
            def plan(self, contexts):
                from navrl.planning import PlannerOutput
                return [PlannerOutput('Reasoning: freeze it.\nStep: Tap "Freeze"\nRemaining: none') for _ in contexts]
        task = WebTaskSpec(id="t:hang", suite="t", template="hang", seed=0, app=app, instruction="Freeze the page",
                           judge="check")
        sj, aj, tj = web_judges()
        tr = EpisodeRunner(Freeze(), AccessibilityGrounder(), sj, aj, tj).run([task], devices=[d])[0]
        assert not tr.valid and tr.invalid_reason == "page_hung" and tr.terminal_reward == 0.0
    finally:
        d.close()


def test_navigation_timeout_raises_device_error(host, silent_server):
    d = BrowserDevice(host=host, nav_timeout_s=1.5, screenshots="off")
    with pytest.raises(DeviceError) as ei:
        d.restore(WebSnapshot.start(WebApp("silent", silent_server + "/index.html")))
    assert ei.value.reason == "navigation_timeout"
    d.close()


def test_a_pool_relaunches_a_crashed_browser_and_carries_on(site):
    from navrl.device.browser import BrowserBackend
    from navrl.device.pool import DevicePool, PoolConfig
    from navrl.worlds.web.tasks import WebTaskSpec

    app = WebApp("test", site.url("index.html"), success_js="document.getElementById('status').textContent === 'tapped'")
    task = WebTaskSpec(id="t:crash", suite="t", template="index", seed=0, app=app, instruction="Tap it", judge="check")
    be = BrowserBackend(screenshots="off", dedicated=True)
    pool = DevicePool(be, PoolConfig(size=1, call_timeout_s=30))
    try:
        dev = pool.lease(task)
        assert "Tap me" in dev.observe().labels()
        h = be.host()
        h.run(h.crash_for_test, 10)
        # a pooled connected device answers observe() from its last observation until the next
        # act (the screen a step brought back), so the crash shows on the next device call
        with pytest.raises(DeviceError) as ei:
            dev.act(Action.tap(10, 10))
        assert ei.value.reason in ("browser_crashed", "page_crashed")
        pool.release(dev)
        dev2 = pool.lease(task)                         # the restore relaunches Chromium
        assert "Tap me" in dev2.observe().labels()
        assert h.launches == 2 and h.crashes == 1
        pool.release(dev2)
    finally:
        pool.close()
        be.host().close()


class _SlowBodyHandler(__import__("http.server").server.BaseHTTPRequestHandler):
    """/start: a link to /slow; /slow: the head at once, the body 0.6 s later (the new
    document exists, still loading, with no body yet)."""

    def log_message(self, *a):  # noqa: D401 - quiet
        pass

    def do_GET(self):  # noqa: N802 - stdlib name
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        if self.path.startswith("/slow"):
            self.wfile.write(b"<!doctype html><html><head><title>slow</title></head>" + b" " * 4096)
            self.wfile.flush()
            time.sleep(0.6)
            self.wfile.write(b"<body><button>Slow page</button></body></html>")
        else:
            self.wfile.write(b"<!doctype html><html><body><a href='/slow'>Go slow</a></body></html>")


@pytest.fixture(scope="module")
def slow_site():
    import http.server
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowBodyHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_observe_during_a_navigation_waits_for_the_new_document(host, slow_site):
    """A navigation the device did not wait for (a click that lands after the page looked
    settled) must not yield the half-loaded document's empty tree."""
    d = BrowserDevice(WebApp("slow", f"{slow_site}/start"), host=host)
    try:
        for _ in range(2):
            d.restore(WebSnapshot.start(WebApp("slow", f"{slow_site}/start")))
            assert "Go slow" in d.observe().labels()
            d.evaluate("() => { location.href = '/slow'; }")
            time.sleep(0.3)                     # the new document is committed, its body not yet sent
            obs = d.observe()
            assert obs.url.endswith("/slow") and "Slow page" in obs.labels(), obs.ui_text()
    finally:
        d.close()


def test_drawn_shapes_and_coloured_boxes_are_nodes_named_by_what_shows(host, site):
    """SVG shapes are images named "<size> <colour> <kind>" (small: under a tenth of the picture's
    longer side); drawn text carries its size and colour as description; boxes that show only a
    colour are named by it (a basic CSS name where the colour is one exactly, else its hue family
    with light/dark): buttons where they react to taps (value "selected" where so marked), images
    where not; a white box on white with no border, a shape with no fill and a large panel are
    not listed."""
    d = BrowserDevice(WebApp("test", site.url("drawn.html")), host=host, phone="160x210@1")
    try:
        obs = d.observe()
        shapes = [(n.role, n.label, n.actions) for n in obs.nodes if n.description == "shape"]
        assert shapes == [("image", "large red circle", ("tap",)), ("image", "small blue square", ()),
                          ("image", "large light blue rectangle", ()), ("image", "large cyan triangle", ())]
        circle = node(obs, "large red circle")
        assert circle.bounds == (10, 10, 30, 30)
        q = node(obs, "q")
        assert q.role == "text" and q.description == "large magenta"
        boxes = [(n.role, n.label, n.value, n.actions) for n in obs.nodes if n.description == "box"]
        assert boxes == [("button", "olive", None, ("tap",)), ("button", "white", None, ("tap",)),
                         ("button", "light green", "selected", ("tap",)), ("image", "dark red", None, ())]
        assert len(obs.nodes) == 9
        d.act(Action.tap(*circle.center))
        assert d.evaluate("document.title") == "circle"
        d.act(Action.tap(*node(obs, "light green").center))
        assert [n.value for n in d.observe().nodes if n.label == "light green"] == [None]
    finally:
        d.close()


def test_icon_controls_with_hidden_words_are_named_buttons(host, site):
    """An <a> or button that shows a picture and whose own words lie outside its box (text-indent)
    is an icon button named by its title, else those words (disabled where jQuery UI marks it so);
    an aria-hidden control with a picture and no words at all is named by a direction word of its
    classes; aria-hidden decoration stays out."""
    d = BrowserDevice(WebApp("test", site.url("hidden_icons.html")), host=host, phone="160x210@1")
    try:
        obs = d.observe()
        icons = [(n.label, n.enabled) for n in obs.nodes if n.description == "icon"]
        assert icons == [("Prev", True), ("Next", False), ("up", True), ("down", True)]
        assert all(n.role == "button" and n.actions == ("tap",) for n in obs.nodes if n.description == "icon")
        assert not any(n.label == "deco" for n in obs.nodes)
        assert node(obs, "Shown words").description == ""
        d.act(Action.tap(*node(obs, "Prev").center))
        assert d.evaluate("document.title") == "prev"
        for _ in range(2):
            d.act(Action.tap(*node(obs, "up").center))
        d.act(Action.tap(*node(obs, "down").center))
        assert d.evaluate("document.getElementById('n').value") == "1"
    finally:
        d.close()


def test_settle_waits_for_running_animations_but_not_endless_ones(host, site):
    """After an action the device waits (up to a second) for jQuery's animations and the page's
    finite CSS / Web Animations, so the tree it reads shows where they end; an endless animation
    (a spinner) is not waited for."""
    d = BrowserDevice(WebApp("test", site.url("animated.html")), host=host, phone="160x210@1")
    try:
        obs = d.observe()
        for button, shows, at_least in (("Slide", "slid open", 0.45), ("Fade", "faded", 0.3)):
            t0 = time.monotonic()
            d.act(Action.tap(*node(obs, button).center))
            took = time.monotonic() - t0
            assert shows in d.observe().labels(), button
            assert at_least <= took < 1.8, (button, took)
        t0 = time.monotonic()
        d.act(Action.tap(*node(obs, "Plain").center))
        assert time.monotonic() - t0 < 0.5
        assert "pressed" in d.observe().labels()
    finally:
        d.close()


def test_type_into_date_and_time_fields_sets_their_value(host, site):
    """Typing into a focused date / time field (which takes no inserted text) sets the typed
    date or time as its value with input and change events; the tree shows it as the field does
    (05/20/2010, 02:30 PM); text it cannot take changes nothing; a text field still gets the
    inserted text."""
    d = BrowserDevice(WebApp("test", site.url("datetime.html")), host=host, phone="160x210@1")
    try:
        cases = (("day", "05/20/2010", "2010-05-20", "05/20/2010"), ("hour", "2:30 PM", "14:30", "02:30 PM"),
                 ("when", "12/31/2016 12:05 AM", "2016-12-31T00:05", "12/31/2016, 12:05 AM"),
                 ("plain", "2:30 PM", "2:30 PM", "2:30 PM"))
        for label, typed, value, shown in cases:
            obs = d.observe()
            d.act(Action.tap(*node(obs, label).center))
            assert d.act(Action.type(typed)).changed
            el = {"day": "d", "hour": "t", "when": "dt", "plain": "x"}[label]
            assert d.evaluate(f"document.getElementById('{el}').value") == value
            assert node(d.observe(), label).value == shown
        ev = d.evaluate("events")
        assert [e for e in ev if not e.startswith("x:")] == [f"{i}:{k}" for i in ("d", "t", "dt") for k in ("input", "change")]
        obs = d.observe()
        d.act(Action.tap(*node(obs, "day").center))
        r = d.act(Action.type("next tuesday"))
        assert not r.changed and d.evaluate("document.getElementById('d').value") == "2010-05-20"
    finally:
        d.close()
