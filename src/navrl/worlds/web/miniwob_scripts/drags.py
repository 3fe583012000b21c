"""Scripted solutions of MiniWoB++'s drag tasks. The elements that take a mouse drag (jQuery UI's
draggable boxes and sortable items, d3's draggable shapes) carry the action "drag" in the tree;
``Drag "A" to "B"`` drags A's centre onto B's, ``Drag "A" up`` drags it 40% of the screen up
(the device sends both as mouse drags). Each script reads the goal and the UI tree and returns
the next Step."""
from __future__ import annotations

import re
from typing import Any

from navrl.observation import Observation, UINode, drawn_thing
from navrl.worlds.web.miniwob_scripts.common import MiniWoBTask, Script, ref
from navrl.worlds.web.miniwob_scripts.visual import _colour

__all__ = ["SCRIPTS", "TASKS"]


def _draggable(obs: Observation) -> list[UINode]:
    return [n for n in obs.nodes if "drag" in n.actions]


def _drag(obs: Observation, a: UINode, b: UINode) -> str:
    return f"Drag {ref(obs, a, 'drag')} to {ref(obs, b)}"


def _inside(a: UINode, b: UINode) -> bool:
    """Whether a's centre lies inside b."""
    x, y = a.center
    return b.bounds[0] <= x < b.bounds[2] and b.bounds[1] <= y < b.bounds[3]


def _s_drag_box(goal: str, obs: Observation, dev: Any = None) -> str:
    """Drag the small box "s" onto the large box "L" (centre onto centre: inside it), then Submit
    once it lies inside L (where it covers L's centre the tree no longer lists L: it is inside)."""
    small = next((n for n in _draggable(obs) if n.label == "s"), None)
    large = next((n for n in obs.nodes if n.label == "L"), None)
    if small is None or large is None or all(
            a < b for a, b in zip(large.bounds[:2] + small.bounds[2:], small.bounds[:2] + large.bounds[2:])):
        return 'Tap "Submit"'
    return _drag(obs, small, large)


_MOVED = "() => [...document.querySelectorAll('svg circle, svg rect, svg polygon')].some((e) => e.hasAttribute('transform'))"


def _s_drag_direction(goal: str, obs: Observation, dev: Any = None) -> str:
    """Drag the one drawn shape in the goal's direction, then Submit. Whether it has been dragged
    is read off the page (d3 moves it by a transform); a person remembers having done it."""
    m = re.search(r"\b(up|down|left|right)\b", goal)
    shape = next(iter(_draggable(obs)), None)
    if m is None or shape is None or (dev is not None and dev.evaluate(_MOVED)):
        return 'Tap "Submit"'
    return f"Drag {ref(obs, shape, 'drag')} {m.group(1)}"


def _kind(n: UINode) -> str:
    """A drawn shape's kind as MiniWoB names it: rectangle (drawn as a square), circle, triangle."""
    return drawn_thing("image", n.label, "shape").what


def _colour_of(n: UINode) -> str:
    return drawn_thing("image", n.label, "shape").colour


def _sort_shapes(obs: Observation, goal: str) -> str:
    """drag-shapes and drag-shapes-2: each shape that the goal puts in a box and that is not in
    it yet is dragged onto the box's centre; then Submit. The boxes are the drawn rectangles that
    take no drag; "the left box" is the one further left."""
    shapes = [n for n in _draggable(obs) if n.role == "image"]
    boxes = sorted((n for n in obs.nodes if n.role == "image" and n.description == "shape" and "drag" not in n.actions
                    and _kind(n) == "rectangle"), key=lambda n: n.center[0])
    if not boxes:
        return 'Tap "Submit"'
    m = re.search(r"Drag all (\w+) (?:shapes )?into the (black|left) box", goal)
    what = m.group(1).lower() if m else ""
    shape_kind = what[:-1] if what in ("rectangles", "circles", "triangles") else None

    def fits(n: UINode) -> bool:
        return _kind(n) == shape_kind if shape_kind else _colour_of(n) == _colour(what)
    for n in shapes:
        box = boxes[0] if fits(n) else (boxes[-1] if len(boxes) > 1 and "everything else" in goal else None)
        if box is not None and not _inside(n, box):
            return _drag(obs, n, box)
    return 'Tap "Submit"'


def _s_drag_shapes(goal: str, obs: Observation, dev: Any = None) -> str:
    """Drag every shape of the asked kind into the black box, then Submit."""
    return _sort_shapes(obs, goal)


def _s_drag_shapes_2(goal: str, obs: Observation, dev: Any = None) -> str:
    """Drag the shapes of the asked kind or colour into the left box and all others into the
    right box, then Submit."""
    return _sort_shapes(obs, goal)


def _s_drag_sort_numbers(goal: str, obs: Observation, dev: Any = None) -> str:
    """A selection sort: drag the smallest number below row i up onto row i's handle icon; Submit
    once the numbers increase. jQuery UI's sortable moves a dragged item above a row once the
    pointer, moving up, is in the row's upper half: the icon's centre is 2 CSS px above the
    row's middle, where the number's centre is and which rounding puts on either side."""
    rows = [n for n in _draggable(obs) if n.role == "text" and re.fullmatch(r"-?\d+", n.label)]
    icons = [n for n in _draggable(obs) if n.role == "button"]
    nums = [int(n.label) for n in rows]
    if len(icons) != len(rows):
        return 'Tap "Submit"'
    for i in range(len(nums)):
        j = min(range(i, len(nums)), key=lambda k: (nums[k], k))
        if nums[j] < nums[i]:
            return f"Drag {ref(obs, rows[j], 'drag')} to {ref(obs, icons[i])}"
    return 'Tap "Submit"'


# The text area's size now and when the script first read it (kept on the element, which each
# episode makes anew: a person remembers the size they started from).
_TEXTAREA_SIZE = ("() => { const t = document.getElementById('tt'); const now = [$(t).width(), $(t).height()];"
                  " t.navrlSize0 = t.navrlSize0 || now; return [t.navrlSize0, now]; }")
_RESIZE_DIRECTION = {("width", "larger"): "right", ("width", "smaller"): "left",
                     ("height", "larger"): "down", ("height", "smaller"): "up"}


def _s_resize_textarea(goal: str, obs: Observation, dev: Any = None) -> str:
    """Drag the text area's resize handle (jQuery UI's south-east grip) the way that makes the
    asked dimension larger or smaller (width: right / left, height: down / up), then Submit once
    its size changed."""
    m = re.search(r"the (width|height) is (larger|smaller)", goal)
    grip = next(iter(_draggable(obs)), None)
    if m is None or grip is None:
        return 'Tap "Submit"'
    if dev is not None:
        (w0, h0), (w, h) = dev.evaluate(_TEXTAREA_SIZE)
        if (w, h) != (w0, h0):
            return 'Tap "Submit"'
    return f"Drag {ref(obs, grip, 'drag')} {_RESIZE_DIRECTION[m.group(1), m.group(2)]}"


SCRIPTS: dict[str, Script] = {
    "drag-box": _s_drag_box,
    "drag-circle": _s_drag_direction,
    "drag-single-shape": _s_drag_direction,
    "drag-shapes": _s_drag_shapes,
    "drag-shapes-2": _s_drag_shapes_2,
    "drag-sort-numbers": _s_drag_sort_numbers,
    "resize-textarea": _s_resize_textarea,
}

TASKS: tuple[MiniWoBTask, ...] = (
    MiniWoBTask("drag-box", 4, "drag the small box into the large one and submit"),
    MiniWoBTask("drag-circle", 4, "drag the circle in the asked direction and submit"),
    MiniWoBTask("drag-single-shape", 4, "drag the shape in the asked direction and submit"),
    MiniWoBTask("drag-shapes", 8, "drag every shape of the asked kind into the black box and submit"),
    MiniWoBTask("drag-shapes-2", 10, "drag the asked shapes into the left box, the others into the right one, and submit"),
    MiniWoBTask("drag-sort-numbers", 6, "sort a list of four numbers by dragging, then submit"),
    MiniWoBTask("resize-textarea", 4, "drag the text area's grip to make the asked dimension larger or smaller, then submit"),
)
"""One record per scripted task here: its step limit (the expert's steps with room to spare) and a line on what the script does."""
