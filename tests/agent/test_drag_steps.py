"""``Drag "A" to "B"`` / ``Drag "A" up``: parsed as swipes and grounded from the UI tree."""
from __future__ import annotations

import pytest

from navrl.actions import Action
from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.steps import StepCommand, is_drag, parse_step
from navrl.observation import Observation, UINode


@pytest.mark.parametrize("step,want", [
    ('Drag "s" to "L"', StepCommand("swipe", target="s", dest="L", raw='Drag "s" to "L"')),
    ('Drag \u201cs\u201d onto \u201cL\u201d.', StepCommand("swipe", target="s", dest="L", raw='Drag \u201cs\u201d onto \u201cL\u201d.')),
    ('Drag the 2nd "1" to the 3rd "4"',
     StepCommand("swipe", target="1", nth=2, dest="4", dest_nth=3, raw='Drag the 2nd "1" to the 3rd "4"')),
    ('Drag "circle" up', StepCommand("swipe", target="circle", direction="up", raw='Drag "circle" up')),
    ('drag the 2nd "x" left', StepCommand("swipe", target="x", direction="left", nth=2, raw='drag the 2nd "x" left')),
])
def test_drag_forms_parse_as_swipes(step: str, want: StepCommand) -> None:
    got = parse_step(step)
    assert got == want and is_drag(got)


def test_a_swipe_on_a_node_is_not_a_drag() -> None:
    c = parse_step('Swipe left on "Recipe 2"')
    assert (c.kind, c.target, c.direction, c.dest) == ("swipe", "Recipe 2", "left", None) and not is_drag(c)


def _obs() -> Observation:
    nodes = (UINode("0", "text", "s", (0, 0, 20, 20)),                       # a label, not draggable
             UINode("1", "generic", "s", (10, 100, 30, 120), actions=("drag",)),
             UINode("2", "generic", "L", (100, 200, 160, 260)),
             UINode("3", "generic", "L", (100, 300, 160, 360)),
             UINode("4", "generic", "s", (50, 50, 70, 70), actions=("swipe",)))
    return Observation(nodes, "web", (200, 400), "web")


def test_drag_grounds_to_explicit_endpoints_from_the_draggable_node() -> None:
    g = AccessibilityGrounder()
    assert g.ground('Drag "s" to "L"', _obs()) == Action.swipe(x=20, y=110, x2=130, y2=230)
    assert g.ground('Drag "s" to the 2nd "L"', _obs()) == Action.swipe(x=20, y=110, x2=130, y2=330)
    assert g.ground('Drag the 3rd "s" to "L"', _obs()) == Action.swipe(x=60, y=60, x2=130, y2=230)
    # a direction: from the draggable node's centre; "Swipe ... on" keeps looking for a swipe target
    assert g.ground('Drag "s" up', _obs()) == Action.swipe("up", 20, 110)
    assert g.ground('Swipe up on "s"', _obs()) == Action.swipe("up", 60, 60)


def test_a_mouse_drag_moves_in_small_steps_to_the_end_point() -> None:
    from navrl.device.browser.mouse import STEP_CSS, drag_points
    pts = drag_points(10, 20, 10, 101)
    assert pts[-1] == (10, 101) and len(pts) == 11
    assert all(abs(b[1] - a[1]) <= STEP_CSS for a, b in zip([(10, 20)] + pts, pts))
