"""VLM grounder (coordinate formats, refusals, scaling, outages) and the router grounder."""
from __future__ import annotations

import pytest

from navrl.actions import Action, ActionKind
from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.grounders.base import Grounder, GroundingError
from navrl.agent.grounders.router import RouterGrounder
from navrl.agent.grounders.vlm import VLMGrounder, VLMGrounderConfig, parse_point
from navrl.device.base import DeviceError
from navrl.worlds.phone.sim import PerturbConfig
from navrl.observation import Observation
from navrl.worlds.phone.task import make_task
from fake_api import reply, request_images, request_text, status

SIZE = (400, 800)


@pytest.mark.parametrize("text,coords,want", [
    ("(120, 340)", "auto", (120, 340)),
    ("Tap at (120,340).", "pixel", (120, 340)),
    ("click(x=120, y=340)", "auto", (120, 340)),
    ("x: 120.4, y: 339.6", "auto", (120, 340)),
    ("[120, 340]", "auto", (120, 340)),
    ('{"x": 120, "y": 340}', "auto", (120, 340)),
    ('Sure: {"point": [120, 340]}', "auto", (120, 340)),
    ("<point>120 340</point>", "pixel", (120, 340)),
    ("<point>(120, 340)</point>", "pixel", (120, 340)),
    ("[100, 300, 140, 380]", "auto", (120, 340)),                  # a box: its centre
    ('{"bbox": [100, 300, 140, 380]}', "auto", (120, 340)),
    ("(0.25, 0.5)", "auto", (100, 400)),                           # fractions: normalised 0-1
    ("(0.25, 0.5)", "norm1", (100, 400)),
    ("(1, 1)", "auto", (1, 1)),                                    # integers stay pixels
    ("<point>250 500</point>", "norm1000", (100, 400)),
    ("(250, 500) in normalized 0-1000 coordinates", "auto", (100, 400)),
    ("normalised: (0.5, 0.25)", "auto", (200, 200)),
    ("<point>1000 1000</point>", "norm1000", (399, 799)),          # the far edge clamps onto the last pixel
    ("The search field is at (10, 20) I think", "auto", (10, 20)),
])
def test_parse_point_formats(text, coords, want):
    assert parse_point(text, SIZE, coords) == want


@pytest.mark.parametrize("text,coords", [
    ("", "auto"), ("   ", "auto"), ("NOT_FOUND", "auto"), ("I cannot find that element.", "auto"),
    ("The button isn't visible on this screen.", "auto"), ("no numbers here", "auto"),
    ("(500, 100)", "pixel"), ("(-3, 10)", "auto"), ("<point>1200 10</point>", "norm1000"),
    ("(1.5, 0.2)", "norm1"),
])
def test_parse_point_refuses(text, coords):
    with pytest.raises(GroundingError):
        parse_point(text, SIZE, coords)


def test_bad_coord_format_config():
    with pytest.raises(ValueError):
        VLMGrounderConfig(coords="percent")


@pytest.fixture
def obs():
    task = make_task("settings_toggle", 3, perturb=PerturbConfig.off())
    return task.make_device().observe()


def test_vlm_grounder_tap_long_press_and_swipe(fake_server, make_client, obs):
    W, H = obs.screen_size
    g = VLMGrounder(make_client())
    fake_server.push(reply("(30, 60)"), reply('{"x": 31, "y": 61}'), reply("<point>(32, 62)</point>"))
    assert g.ground('Tap "Settings"', obs) == Action.tap(30, 60)
    assert g.ground('Long press "Notes"', obs) == Action.long_press(31, 61)
    a = g.ground('Swipe left on "Mail"', obs)
    assert a.kind is ActionKind.SWIPE and (a.direction, a.x, a.y) == ("left", 32, 62)
    body = fake_server.chat_requests[0]["body"]
    assert len(request_images(body)) == 1
    text = request_text(body)
    assert 'Tap "Settings"' in text and "Element: Settings" in text and f"{W}x{H}" in text


def test_vlm_grounder_needs_no_call_for_screenless_steps(fake_server, make_client, obs):
    g = VLMGrounder(make_client())
    assert g.ground("Go home", obs) == Action.home()
    assert g.ground('Type "$(rm -rf /)"', obs) == Action.type("$(rm -rf /)")
    assert g.ground("Swipe up", obs) == Action.swipe("up")
    assert g.ground("Ask user: which size?", obs) == Action.ask_user("which size?")
    assert g.ground("Complete: 42", obs) == Action.complete("42")
    with pytest.raises(GroundingError):
        g.ground("Dance wildly", obs)
    assert not fake_server.chat_requests


def test_vlm_grounder_refusal_and_outside(fake_server, make_client, obs):
    g = VLMGrounder(make_client())
    fake_server.push(reply("NOT_FOUND"), reply("(99999, 5)"), reply("I see a cat."))
    for _ in range(3):
        with pytest.raises(GroundingError):
            g.ground('Tap "Nowhere"', obs)


def test_vlm_grounder_downscales_and_maps_back(fake_server, make_client, obs):
    W, H = obs.screen_size
    g = VLMGrounder(make_client(), VLMGrounderConfig(coords="norm1000", max_side=200))
    fake_server.push(reply("<point>500 500</point>"))
    a = g.ground('Tap "Settings"', obs)
    assert (a.x, a.y) == (W // 2, H // 2) or (abs(a.x - W / 2) <= 2 and abs(a.y - H / 2) <= 2)
    text = request_text(fake_server.chat_requests[0]["body"])
    assert "0-1000" in text
    import base64
    import io

    from PIL import Image
    url = request_images(fake_server.chat_requests[0]["body"])[0]
    assert max(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size) == 200
    fake_server.push(reply("(50, 100)"))   # pixels of the downscaled image -> scaled back
    a = VLMGrounder(make_client(), VLMGrounderConfig(coords="pixel", max_side=200)).ground('Tap "X"', obs)
    s = max(W, H) / 200
    assert abs(a.x - 50 * s) <= 2 and abs(a.y - 100 * s) <= 2


def test_vlm_grounder_outage_is_infrastructure(fake_server, make_client, obs):
    fake_server.default = status(503)
    with pytest.raises(DeviceError) as ei:
        VLMGrounder(make_client(max_retries=1)).ground('Tap "Settings"', obs)
    assert ei.value.reason == "grounder_unavailable"
    fake_server.default = status(400)
    with pytest.raises(DeviceError):
        VLMGrounder(make_client()).ground('Tap "Settings"', obs)


def test_vlm_grounder_without_screenshot(make_client):
    o = Observation(nodes=(), app=None, screen_size=(10, 10), platform="ios")
    with pytest.raises(GroundingError):
        VLMGrounder(make_client()).ground('Tap "A"', o)


class _Fixed(Grounder):
    def __init__(self, name, fail=False):
        self.name, self.fail, self.seen = name, fail, []

    def ground_command(self, cmd, obs):
        self.seen.append(cmd.kind)
        if self.fail:
            raise GroundingError(f"{self.name} cannot")
        if cmd.kind == "swipe":
            return Action(ActionKind.SWIPE, direction=cmd.direction, meta={"by": self.name})
        return Action(ActionKind.TAP, x=1, y=1, meta={"by": self.name})


def test_router_sends_chosen_kinds_to_secondary(obs):
    p, s = _Fixed("primary"), _Fixed("secondary")
    r = RouterGrounder(p, s)
    assert r.ground("Swipe up", obs).meta["by"] == "secondary"
    assert r.ground('Tap "A"', obs).meta["by"] == "primary"
    assert r.ground('Long press "A"', obs).meta["by"] == "primary"
    assert p.seen == ["tap", "long_press"] and s.seen == ["swipe"]
    r2 = RouterGrounder(p, s, kinds={"tap", "long_press"})
    assert r2.ground('Tap "A"', obs).meta["by"] == "secondary"
    assert r2.counts == {"primary": 0, "secondary": 1, "fallback": 0}
    with pytest.raises(ValueError):
        RouterGrounder(p, s, kinds={"scroll"})


def test_router_fallback(obs):
    p, s = _Fixed("primary", fail=True), _Fixed("secondary")
    with pytest.raises(GroundingError):
        RouterGrounder(p, s).ground('Tap "A"', obs)
    r = RouterGrounder(p, s, fallback=True)
    assert r.ground('Tap "A"', obs).meta["by"] == "secondary" and r.counts["fallback"] == 1
    with pytest.raises(GroundingError):
        r.ground("gibberish", obs)   # unknown steps are not handed on


def test_router_accessibility_plus_vlm_swipes(fake_server, make_client, obs):
    """The paper's hybrid: label matching for taps, the VLM for targeted swipes."""
    label = next(n.label for n in obs.nodes if n.label and "tap" in n.actions)
    r = RouterGrounder(AccessibilityGrounder(), VLMGrounder(make_client()))
    fake_server.push(reply("(40, 80)"))
    assert r.ground(f'Tap "{label}"', obs).kind is ActionKind.TAP
    a = r.ground(f'Swipe down on "{label}"', obs)
    assert (a.direction, a.x, a.y) == ("down", 40, 80) and len(fake_server.chat_requests) == 1
