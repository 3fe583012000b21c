"""``audit.html`` of ``navrl judge audit`` in a real headless Chromium: the page loads from the
file alone, its tables are there, and it shows the worst disagreements in order, each with its
screens decoded from the inlined PNG data URIs."""
from __future__ import annotations

import json

import pytest

from navrl.cli.main import main
from navrl.device.browser import browser_ready

pytestmark = pytest.mark.skipif(browser_ready() is not None,
                                reason=f"the audit page test needs Playwright and a Chromium: {browser_ready()}")

LOOK = """() => ({
  title: document.title,
  tables: document.querySelectorAll('table').length,
  summary: document.querySelector('table').innerText,
  items: [...document.querySelectorAll('#disagreements .disagreement')].map(d => ({
      text: d.innerText,
      images: [...d.querySelectorAll('img')].map(i => ({alt: i.alt, complete: i.complete, w: i.naturalWidth,
                                                         h: i.naturalHeight, shown: i.getBoundingClientRect().width,
                                                         inline: i.src.startsWith('data:image/png;base64,')}))})),
  requests: performance.getEntriesByType('resource').map(e => e.name)
})"""

DRAWN = """async () => {
  const out = [];
  for (const img of document.querySelectorAll('#disagreements img')) {
    let decoded = true;
    try { await img.decode(); } catch (e) { decoded = false; }
    const c = document.createElement('canvas');
    c.width = img.naturalWidth; c.height = img.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const row = g.getImageData(0, c.height - 1, c.width, 1).data;   // a cut-off PNG leaves its bottom empty
    let opaque = 0;
    for (let i = 3; i < row.length; i += 4) opaque += row[i] === 255 ? 1 : 0;
    out.push({decoded, bottom: opaque / c.width});
  }
  return out;
}"""


def test_the_audit_page_renders_and_shows_the_worst_disagreements(host, tmp_path):
    out = tmp_path / "audit"
    assert main(["judge", "audit", "--judge", "noisy:step_fp=0.3,step_fn=0.2,terminal_fp=0.5,seed=1", "-n", "12",
                 "--planner", "mix:0.4", "--out", str(out)]) == 0
    audit = json.loads((out / "audit.json").read_text())
    url = (out / "audit.html").as_uri()

    async def look():
        browser = await host.browser()
        ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = await ctx.new_page()
            await page.goto(url)
            await page.wait_for_load_state("load")
            return {**await page.evaluate(LOOK), "drawn": await page.evaluate(DRAWN)}
        finally:
            await ctx.close()

    seen = host.run(look, timeout=60, what="audit page")
    assert seen["title"].startswith("Judge audit: noisy:") and "on test-ios" in seen["title"]
    assert seen["tables"] >= 5                       # summary, three confusion matrices, latency
    fp = audit["step"]["false_positive"]
    assert f"{100 * fp['rate']:.1f}% ({fp['k']}/{fp['n']})" in seen["summary"]
    assert seen["requests"] == []                    # self-contained: nothing fetched besides the file
    items, worst = seen["items"], audit["worst"]
    assert len(items) == len(worst) == 10
    for item, w in zip(items, worst):
        assert w["task"] in item["text"]
        assert f"exact {w['exact']}, judged {w['judged']}" in item["text"]
        # a step: before (the tap marked) and after; a question: its screen; an ending: the last two screens
        want = {"step": {2}, "ask": {1}, "terminal": {1, 2}}[w["kind"]]
        assert len(item["images"]) in want, item
        for im in item["images"]:
            assert im["inline"] and im["complete"] and im["w"] >= 300 and im["h"] >= 600 and im["shown"] > 0, im
    assert len(seen["drawn"]) == sum(len(i["images"]) for i in items)
    assert all(d["decoded"] and d["bottom"] == 1.0 for d in seen["drawn"]), seen["drawn"]   # whole screens drawn
    assert worst[0]["severity"] == 3.0 and "moves the reward by 3" in items[0]["text"]
