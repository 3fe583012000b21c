"""Scripted solutions of MiniWoB++'s tasks about drawn things: coloured boxes, SVG shapes,
letters and digits drawn in a picture. The device lists them as nodes named by what a person
sees: a coloured box is a ``box`` (a button where it reacts to taps) labelled by its colour
("red", "light blue"); a drawn shape is an ``image`` labelled "large red circle" (description
``shape``); a drawn letter or digit is text whose description is its size and colour ("small
blue"). Each script reads the goal and the UI tree and returns the next Step."""
from __future__ import annotations

import re
from typing import Any

from navrl.observation import SAME_COLOUR, DrawnThing, Observation, UINode, drawn_thing, fits_description
from navrl.worlds.web.miniwob_scripts.common import MiniWoBTask, Script, field, fill, nodes, q, tap

__all__ = ["SCRIPTS", "TASKS"]

def _colour(word: str) -> str:
    return SAME_COLOUR.get(word.lower(), word.lower())


def _boxes(obs: Observation) -> list[UINode]:
    return [n for n in obs.nodes if n.description == "box"]


def _s_click_color(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tap the box of the goal's colour (not the small swatch in the instruction's line)."""
    m = re.search(r"Click on the (\w+) colored box", goal)
    want = _colour(m.group(1)) if m else ""
    query = next((n for n in obs.nodes if n.role == "text"), None)
    below = [n for n in _boxes(obs) if "tap" in n.actions and (query is None or n.center[1] > query.bounds[3])]
    hit = next((n for n in below if n.label == want), None)
    return tap(obs, hit) if hit is not None else "Swipe up"


def _s_click_shades(goal: str, obs: Observation, dev: Any = None) -> str:
    """Select exactly the tiles of the goal's colour (a tile's colour is its label's last word:
    "light red" is a shade of red), then Submit."""
    m = re.search(r"shades of (\w+)", goal)
    want = m.group(1).lower() if m else ""
    for n in _boxes(obs):
        if "tap" in n.actions and (n.value == "selected") != (n.label.split()[-1] == want):
            return tap(obs, n)
    return 'Tap "Submit"'


def _items(obs: Observation) -> list[tuple[UINode, DrawnThing]]:
    """The drawn things of the picture, each with its node (:func:`navrl.observation.drawn_thing`)."""
    return [(n, t) for n in obs.nodes if (t := drawn_thing(n.role, n.label, n.description or "")) is not None]


def _s_click_shape(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tap the first drawn thing that fits the goal's description."""
    m = re.search(r"Click on an? (.+?)\.?$", goal.strip())
    desc = m.group(1) if m else "item"
    hit = next((n for n, t in _items(obs) if fits_description(t, desc.split())), None)
    return tap(obs, hit) if hit is not None else "Swipe up"


def _s_count_shape(goal: str, obs: Observation, dev: Any = None) -> str:
    """Count the drawn things that fit the goal's description and tap the button of that number."""
    m = re.search(r"How many (.+?)s are there", goal)
    desc = m.group(1) if m else "item"
    n = str(sum(fits_description(t, desc.split()) for _, t in _items(obs)))
    hit = next((b for b in nodes(obs, "button") if b.label == n), None)
    return tap(obs, hit) if hit is not None else "Swipe up"


def _s_identify_shape(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tap the button naming the one drawn thing: its shape, or Letter / Number."""
    its = _items(obs)
    if not its:
        return "Swipe up"
    _, t = its[0]
    name = {"letter": "Letter", "digit": "Number"}.get(t.type) or t.what.capitalize()
    return f"Tap {q(name)}"


def _s_grid_coordinate(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tap the point at the goal's (x,y): the points form a 5x5 grid centred on the origin,
    x growing rightwards and y upwards (as the axes' numbers show)."""
    m = re.search(r"\((-?\d+),(-?\d+)\)", goal)
    if not m:
        return "Swipe up"
    x, y = int(m.group(1)), int(m.group(2))
    pts = [n for n in obs.nodes if n.role == "image" and n.description == "shape" and "tap" in n.actions]
    xs = sorted({n.center[0] for n in pts})
    ys = sorted({n.center[1] for n in pts})
    if len(xs) != 5 or len(ys) != 5:
        return "Swipe up"
    hit = next(n for n in pts if n.center[0] == xs[x + 2] and n.center[1] == ys[2 - y])
    return tap(obs, hit)


def _s_ascending_numbers(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tap 1; the numbers then turn into black squares, which the tree lists in the numbers'
    order (the page's order: a person would remember where each number was): tap the first."""
    one = next((n for n in obs.nodes if n.role == "text" and n.label == "1" and "tap" in n.actions), None)
    if one is not None:
        return tap(obs, one)
    sq = [n for n in obs.nodes if n.role == "image" and n.description == "shape" and "tap" in n.actions]
    return tap(obs, sq[0]) if sq else "Swipe up"


def _s_visual_addition(goal: str, obs: Observation, dev: Any = None) -> str:
    """Count the blocks on both sides of the plus (the sum is their total), type it, Submit."""
    blocks = [n for n in _boxes(obs) if n.role == "image"]
    f = field(obs)
    if f is None:
        return "Swipe up"
    return fill(obs, f.label, str(len(blocks))) or 'Tap "Submit"'


SCRIPTS: dict[str, Script] = {
    "click-color": _s_click_color,
    "click-shades": _s_click_shades,
    "click-shape": _s_click_shape,
    "count-shape": _s_count_shape,
    "identify-shape": _s_identify_shape,
    "grid-coordinate": _s_grid_coordinate,
    "ascending-numbers": _s_ascending_numbers,
    "visual-addition": _s_visual_addition,
}

TASKS: tuple[MiniWoBTask, ...] = (
    MiniWoBTask("click-color", 5, "tap the box of the named colour"),
    MiniWoBTask("click-shades", 16, "select every tile that is a shade of the named colour and submit"),
    MiniWoBTask("click-shape", 5, "tap a drawn shape, letter or digit that fits a description"),
    MiniWoBTask("count-shape", 5, "count the drawn things that fit a description and tap that number"),
    MiniWoBTask("identify-shape", 5, "name the one drawn thing: rectangle, circle, triangle, letter or number"),
    MiniWoBTask("grid-coordinate", 5, "tap the point of a 5x5 grid at the given coordinates"),
    MiniWoBTask("ascending-numbers", 8, "tap five numbers in ascending order (they turn into squares after the first)"),
    MiniWoBTask("visual-addition", 8, "type the total number of blocks drawn and submit"),
)
"""One record per scripted task here: its step limit (the expert's steps with room to spare) and a line on what the script does."""
