"""Browser farms. Renderer processes, counted in /proc: one per page (no omnibox WebUI
renderers per context), a failed page closed with its renderer, and none left once the farm
is closed (a dedicated Chromium per test, so other tests' pages are not counted); thumbnail
screenshots for perceptual hashes."""
from __future__ import annotations

import time

import pytest

try:
    from navrl.device.browser import browser_ready
    from navrl.worlds.web.tasks import miniwob_available
    _why = browser_ready() or miniwob_available()
except Exception as e:  # noqa: BLE001 - reported as the skip reason
    _why = str(e)
pytestmark = pytest.mark.skipif(_why is not None, reason=f"browser farm tests need: {_why}")


def _wait_gone(pids: set[int], timeout: float = 10.0) -> set[int]:
    from navrl.device.browser.chromium import renderer_processes
    end = time.monotonic() + timeout
    while True:
        left = pids & set(renderer_processes())
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.1)


@pytest.fixture
def farm():
    from navrl.device.browser import BrowserBackend
    from navrl.device.browser.backend import farm_config
    backend = BrowserBackend(screenshots="off", dedicated=True, timeout_s=2.0)
    from navrl.device.pool import DevicePool
    pool = DevicePool(backend, farm_config(3))
    yield pool
    pool.close()
    backend.host().close()


def test_a_closed_farm_leaves_no_renderer_process(farm):
    from navrl.device.browser.chromium import renderer_processes
    from navrl.worlds.web.tasks import miniwob_task
    before = set(renderer_processes())
    tasks = [miniwob_task(n, 7, phone="160x210@1") for n in ("click-test", "click-button", "enter-text")]
    devs = farm.lease_batch(tasks)
    assert all(d.observe().nodes for d in devs)
    mine = set(renderer_processes()) - before
    # one renderer per page, plus at most Chromium's spare (no omnibox popups per context)
    assert 3 <= len(mine) <= 4, mine
    farm.release_batch(devs)
    farm.close()
    assert _wait_gone(mine) == set()


def _cpu_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[11]) + int(rest[12])
    except OSError:
        return 0


def test_a_page_that_hangs_is_closed_with_its_renderer(farm):
    from navrl.device.base import DeviceError
    from navrl.device.browser.chromium import renderer_processes
    from navrl.worlds.web.tasks import miniwob_task
    before = set(renderer_processes())
    a, b = farm.lease_batch([miniwob_task("click-test", 1, phone="160x210@1"),
                             miniwob_task("click-button", 2, phone="160x210@1")])
    mine = set(renderer_processes()) - before
    a.evaluate("() => { setTimeout(() => { while (true) {} }, 50); }")    # an endless script starts
    time.sleep(0.3)
    with pytest.raises(DeviceError) as e:
        a.observe()                                                    # ... and the page does not answer
    assert e.value.reason == "page_hung"
    # the hung page's renderer is the one spinning: it burns CPU while the others idle
    # (a busy machine gives it less than a core: the one that ran most, by far, in 2 s)
    t0 = {p: _cpu_ticks(p) for p in mine}
    time.sleep(2.0)
    used = sorted(((_cpu_ticks(p) - t0[p], p) for p in mine), reverse=True)
    assert used[0][0] >= 10 and all(u * 3 < used[0][0] for u, _ in used[1:]), used
    spinning = {used[0][1]}
    farm.release(a)                          # its failure closes it (a browser page is disposable)
    st = farm.stats()
    assert st["quarantined"] == 1 and st["devices"] == 1
    assert _wait_gone(spinning) == set()     # ... and its renderer with it
    assert b.observe().nodes                 # the other page carries on
    farm.release(b)


def test_thumb_screenshots_hash_like_full_ones_at_a_fraction_of_the_pixels():
    from navrl.device.browser.device import THUMB_WIDTH, BrowserDevice
    from navrl.imaging import phash64
    from navrl.worlds.web.tasks import miniwob_task
    snap = miniwob_task("click-checkboxes", 3).web_snapshot()          # the iphone screen
    full, thumb = BrowserDevice(screenshots="eager"), BrowserDevice(screenshots="thumb")
    try:
        full.restore(snap)
        thumb.restore(snap)
        a, b = full.observe(), thumb.observe()
        assert a.screen_size == b.screen_size == full.emulation.screen
        assert a.screenshot.size == a.screen_size
        assert b.screenshot.size[0] == THUMB_WIDTH and b.screenshot.size[0] * 5 < a.screenshot.size[0]
        assert a.nodes == b.nodes                                         # same tree, same coordinates
        assert bin(phash64(a.screenshot) ^ phash64(b.screenshot)).count("1") <= 6
    finally:
        full.close()
        thumb.close()
