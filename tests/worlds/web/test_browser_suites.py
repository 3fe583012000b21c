"""A user's own web app as a suite (YAML/JSON): loading, clear errors for bad files, the
JavaScript success check as the terminal judge; the sandbox's origin rules; the CLI."""
from __future__ import annotations

import json

import pytest

from navrl.device.browser import browser_ready
from navrl.device.browser.sandbox import OriginPolicy, SandboxError, normalize_origin
from navrl.device.browser.touch import TOUCH_SLOP, swipe_points
from navrl.worlds.phone.task import Family, TaskError
from navrl.worlds.web.tasks import WebSuiteError, load_web_suite

needs_browser = pytest.mark.skipif(browser_ready() is not None,
                                   reason=f"browser tests need Playwright and a Chromium: {browser_ready()}")

GOOD_YAML = """
name: shop
phone: pixel
start_url: http://127.0.0.1:8000/index.html
allowed_origins: [http://127.0.0.1:8000, "https://*.example.com"]
max_steps: 7
tasks:
  - id: tap-it
    goal: Tap the green button.
    success: document.getElementById('status').textContent === 'tapped'
  - id: name-it
    goal: Type my name into the Name field.
    start_url: http://127.0.0.1:8000/index.html?x=1
    success: |
      const v = document.getElementById('name').value;
      return v.length > 0;
    profile: {name: Ada}
    max_steps: 4
"""


# ------------------------------------------------------------------ no browser needed
def test_a_yaml_suite_loads(tmp_path):
    p = tmp_path / "shop.yaml"
    p.write_text(GOOD_YAML)
    a, b = load_web_suite(p)
    assert a.id == "shop:tap-it:pixel:0" and a.suite == "shop" and a.goal == "Tap the green button."
    assert a.max_steps == 7 and a.phone == "pixel" and a.judge == "check" and a.family is Family.SINGLE
    assert a.app.allowed_origins == ("http://127.0.0.1:8000", "https://*.example.com")
    assert b.max_steps == 4 and b.family is Family.ASK_USER and b.profile == {"name": "Ada"}
    assert "return v.length > 0" in b.app.success_js
    d = a.to_dict()
    assert d["goal"] == a.goal and d["apps"] == ["shop/tap-it"] and d["family"] == "single"


def test_the_same_suite_as_json_loads(tmp_path):
    import yaml
    p = tmp_path / "shop.json"
    p.write_text(json.dumps(yaml.safe_load(GOOD_YAML)))
    assert [t.id for t in load_web_suite(p)] == ["shop:tap-it:pixel:0", "shop:name-it:pixel:0"]


BAD = [
    ("[1, 2]", "top level must be a mapping"),
    ("tasks: []", "'tasks' must be a non-empty list"),
    ("name: x\ntaks: []", "unknown key 'taks'"),
    ("tasks:\n  - goal: g\n    success: 'true'", "'start_url' must be an http(s) URL"),
    ("tasks:\n  - goal: g\n    success: 'true'\n    start_url: file:///etc/passwd", "'start_url' must be an http(s) URL"),
    ("tasks:\n  - start_url: http://a.test/\n    success: 'true'", "'goal' must be a non-empty string"),
    ("tasks:\n  - start_url: http://a.test/\n    goal: g", "'success' must be a JavaScript expression"),
    ("tasks:\n  - start_url: http://a.test/\n    goal: g\n    success: 'f(('", "unterminated '('"),
    ("tasks:\n  - start_url: http://a.test/\n    goal: g\n    success: \"a === 'b\"", "unterminated string"),
    ("tasks:\n  - start_url: http://a.test/\n    goal: g\n    success: 'x)'", "unbalanced ')'"),
    ("tasks:\n  - start_url: http://a.test/\n    goal: g\n    success: 'true'\n    allowed_origins: [http://b.test]",
     "outside the allowed origins"),
    ("tasks:\n  - start_url: http://a.test/\n    goal: g\n    success: 'true'\n    allowed_origins: [http://a.test/path]",
     "not an origin"),
    ("tasks:\n  - start_url: http://a.test/\n    goal: g\n    success: 'true'\n    max_steps: 0", "'max_steps' must be"),
    ("tasks:\n  - start_url: http://a.test/\n    goal: g\n    success: 'true'\n    family: weird", "'family' must be"),
    ("tasks:\n  - id: a\n    start_url: http://a.test/\n    goal: g\n    success: 'true'\n"
     "  - id: a\n    start_url: http://a.test/\n    goal: g\n    success: 'true'", "duplicate id 'a'"),
    ("tasks:\n  - start_url: http://a.test/\n    goal: g\n    success: 'true'\n    profile: [1]", "'profile' must be"),
    ("tasks:\n  - start_url: http://a.test/\n    goal: g\n    success: 'true'\n    colour: red", "unknown key 'colour'"),
    ("tasks: [: :", "not valid YAML"),
]


@pytest.mark.parametrize("text,msg", BAD)
def test_bad_suite_files_are_rejected_with_a_clear_error(tmp_path, text, msg):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(WebSuiteError) as ei:
        load_web_suite(p)
    assert msg in str(ei.value) and str(p) in str(ei.value)
    assert "\n" not in str(ei.value)
    assert isinstance(ei.value, TaskError)


def test_missing_and_malformed_json_files(tmp_path):
    with pytest.raises(WebSuiteError, match="no such file"):
        load_web_suite(tmp_path / "nope.yaml")
    p = tmp_path / "s.json"
    p.write_text("{not json")
    with pytest.raises(WebSuiteError, match="not valid JSON"):
        load_web_suite(p)


def test_origin_policy():
    p = OriginPolicy(("http://127.0.0.1:8000", "https://*.example.com", "https://x.org:443/"))
    assert p.allowed == ("http://127.0.0.1:8000", "https://*.example.com", "https://x.org")
    ok = ["http://127.0.0.1:8000/a?b", "https://a.example.com/x", "https://a.b.example.com/", "https://x.org/",
          "ws://127.0.0.1:8000/sock", "data:text/html,hi", "blob:http://127.0.0.1:8000/1", "about:blank"]
    no = ["http://127.0.0.1:8001/", "https://example.com/", "http://a.example.com/", "https://a.example.com:8443/",
          "file:///etc/passwd", "javascript:alert(1)", "http://evil.test/?u=http://127.0.0.1:8000",
          "http://127.0.0.1:8000@evil.test/", "chrome://settings", "ftp://127.0.0.1:8000/"]
    assert all(p.allows(u) for u in ok), [u for u in ok if not p.allows(u)]
    assert not any(p.allows(u) for u in no), [u for u in no if p.allows(u)]
    for bad in ["127.0.0.1:8000", "http://a.test/path", "http://user@a.test", "", "https://", "file:///x"]:
        with pytest.raises(SandboxError):
            normalize_origin(bad)


def test_swipe_path_pre_rolls_the_touch_slop_and_stays_on_screen():
    pts = swipe_points(100, 300, 100, 100, (390, 664))
    assert pts[0] == (100, 300 + TOUCH_SLOP) and pts[-1] == (100, 100)
    steps = [abs(b[1] - a[1]) for a, b in zip(pts, pts[1:])]
    assert steps[0] == TOUCH_SLOP - 1 and steps[1:4] == [1.0, 1.0, 1.0]   # up to the slop, then across it
    assert max(steps[1:]) <= 10.0 + 1e-9
    near_edge = swipe_points(100, 655, 100, 400, (390, 664))
    assert near_edge[0][1] < 664 and near_edge[-1] == (100, 400)
    assert swipe_points(10, 10, 10, 10, (390, 664)) == [(10, 10)]


# ------------------------------------------------------------------ in the browser
def _suite(tmp_path, site) -> list:
    p = tmp_path / "app.yaml"
    p.write_text(GOOD_YAML.replace("http://127.0.0.1:8000", site.origin).replace("phone: pixel", "phone: iphone"))
    return load_web_suite(p)


class Scripted:
    """Plays given steps in order."""

    def __init__(self, steps):
        self.steps = list(steps)

    def plan(self, contexts):
        from navrl.planning import PlannerOutput
        s = self.steps.pop(0)
        return [PlannerOutput(f"Reasoning: next.\nStep: {s}\nRemaining: -") for _ in contexts]


def _run(task, steps, device):
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.worlds.web.judges import web_judges
    from navrl.rollout.runner import EpisodeRunner
    sj, aj, tj = web_judges()
    return EpisodeRunner(Scripted(steps), AccessibilityGrounder(), sj, aj, tj).run([task], devices=[device])[0]


@needs_browser
def test_a_user_app_suite_runs_and_its_js_check_judges(tmp_path, site, host):
    from navrl.device.browser import BrowserDevice
    tap, name = _suite(tmp_path, site)
    dev = BrowserDevice(host=host, screenshots="off")
    try:
        dev.restore(tap.web_snapshot())
        tr = _run(tap, ['Tap "Tap me"', "Complete"], dev)
        assert tr.valid and tr.success and tr.terminal_reward == 2.0, tr.terminal_reason
        assert [s.verdict for s in tr.steps] == ["success", None]
        dev.restore(tap.web_snapshot())
        tr = _run(tap, ["Complete"], dev)
        assert tr.valid and not tr.success and tr.terminal_verdict == "fail"
        assert "success check does not hold" in tr.terminal_reason
        dev.restore(name.web_snapshot())
        tr = _run(name, ['Tap "Name"', 'Ask user: what is my name?', 'Type "Ada"', "Complete"], dev)
        assert tr.success and tr.steps[1].verdict == "justified" and tr.steps[1].user_answer == "Ada"
    finally:
        dev.close()


@needs_browser
def test_a_success_check_that_throws_is_a_configuration_error(tmp_path, site, host):
    from navrl.device.browser import BrowserDevice
    from navrl.worlds.web.judges import WebCheckError
    p = tmp_path / "broken.yaml"
    p.write_text(f"tasks:\n  - start_url: {site.url('index.html')}\n    goal: g\n    success: no_such_function()\n")
    (task,) = load_web_suite(p)
    dev = BrowserDevice(host=host, screenshots="off")
    try:
        dev.restore(task.web_snapshot())
        assert "no_such_function" in dev.observe().page["check_error"]
        with pytest.raises(WebCheckError, match="throws in the page"):
            _run(task, ["Complete"], dev)
    finally:
        dev.close()


def test_navrl_tasks_lists_the_miniwob_suite(capsys):
    from navrl.cli.main import main
    assert main(["tasks", "--suite", "miniwob"]) == 0
    out = capsys.readouterr().out
    assert "miniwob" in out and "click-checkboxes" in out and "use-autocomplete" in out


@pytest.mark.skipif(browser_ready() is not None, reason=f"needs Chromium: {browser_ready()}")
def test_navrl_eval_on_the_miniwob_suite(tmp_path, capsys):
    from navrl.cli.main import main
    out = tmp_path / "ev"
    assert main(["eval", "--suite", "miniwob", "-n", "4", "--batch", "2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "success: 100.0% (4/4)" in text
    res = json.loads((out / "results.json").read_text())
    assert res["suite"] == "miniwob" and res["n"] == 4 and res["masked"] == 0
