"""Issue #28: the pointer planner's inputs about drawn things and grid points on MiniWoB++ pages
(grid-coordinate, count-shape, click-shape, drag-shapes, identify-shape) and a shown number that
meets the goal (generate-number): each column flags what it should on a fixture page laid out as
the browser lists the page, nothing without ``type_on_screen``, and a planner cloned on fixture pages
decides by it where one cloned without it does not."""
from __future__ import annotations

import random

import numpy as np
from test_pointer_expressive import W, _hits_with_and_without, _planner, _prompt, _screen_typer, _tap

from navrl.agent.policy.pointer import features as F
from navrl.observation import UINode


def _grid_page(x: int, y: int) -> tuple[str, list[UINode], int]:
    """A grid-coordinate page as the browser lists it: 25 tappable points (column by column), then
    the axes' names and numbers (x's under the middle row, y's left of the middle column; "0" once,
    at the origin). Returns (goal, nodes, the index of the point at (x, y))."""
    goal = f"Click on the grid coordinate ({x},{y})."
    nodes = [UINode("q", "text", goal, (3, 3, 157, 14))]
    for cx in range(5):
        for cy in range(5):
            nodes.append(UINode(f"p{cx}{cy}", "image", "small blue circle", (15 + 30 * cx, 65 + 30 * cy,
                                23 + 30 * cx, 73 + 30 * cy), description="shape", actions=("tap",)))
    nodes += [UINode("ax", "text", "x", (148, 127, 155, 141)), UINode("ay", "text", "y", (69, 50, 76, 64)),
              UINode("o", "text", "0", (68, 132, 75, 146))]
    for k, v in enumerate((-2, -1, 1, 2)):
        left = (12, 42, 105, 135)[k]
        nodes.append(UINode(f"x{v}", "text", str(v), (left, 132, left + 8, 143)))
    for k, v in enumerate((-2, -1, 1, 2)):
        top = (185, 155, 92, 62)[k]
        nodes.append(UINode(f"y{v}", "text", str(v), (65, top, 74, top + 11)))
    return goal, nodes, 1 + 5 * (x + 2) + (2 - y)


def test_the_grid_point_column_flags_the_point_the_goals_coordinates_name(monkeypatch):
    """grid-coordinate: the point where the column of the axis number x crosses the row of the
    axis number y (the origin's "0" serves both axes); nothing without "(x,y)" in the goal; cloned
    from 40 pages, the planner taps the named point of most of 20 unseen ones."""
    for x, y in ((2, 1), (0, 0), (-2, -1), (0, -1), (1, 2), (-1, 0)):
        goal, nodes, at = _grid_page(x, y)
        e = _screen_typer(True).state(_prompt(goal, nodes))
        assert list(np.flatnonzero(e.node_feats[:, F._COL_GRID_POINT])) == [at], (x, y)
        assert not _planner().state(_prompt(goal, nodes)).node_feats[:, F._COL_GRID_POINT].any()
    _, nodes, _ = _grid_page(1, 1)
    assert not _screen_typer(True).state(_prompt("Click on the point 1, 1.", nodes)).node_feats[:, F._COL_GRID_POINT].any()

    def demos(pol, seed: int, n: int):
        rng, out = random.Random(seed), []
        for _ in range(n):
            goal, nodes, at = _grid_page(rng.randrange(-2, 3), rng.randrange(-2, 3))
            out.append((_prompt(goal, nodes), _tap(at)))
        return out
    with_column, without = _hits_with_and_without(monkeypatch, "_grid_point_column", lambda *a: None, demos, 40)
    assert with_column >= 18 and with_column - without >= 8, (with_column, without)   # 20, 0


_KINDS_DRAWN = ("circle", "triangle", "rectangle")
_COLOURS_DRAWN = ("red", "green", "blue", "cyan", "magenta", "yellow")


def _drawn_page(rng: random.Random, goal: str, n: int = 5) -> list[UINode]:
    """A count-shape / click-shape page: ``n`` drawn things (shapes as images, letters and digits
    as text described by size and colour), then the number buttons 0 .. 5 in a random order."""
    nodes = [UINode("q", "text", goal, (3, 3, 150, 14))]
    for k in range(n):
        size, colour = rng.choice(("small", "large")), rng.choice(_COLOURS_DRAWN)
        box = (10 + 28 * k, 60 + 10 * (k % 3), 30 + 28 * k, 80 + 10 * (k % 3))
        if rng.random() < 0.5:
            nodes.append(UINode(f"d{k}", "image", f"{size} {colour} {rng.choice(_KINDS_DRAWN)}", box,
                                description="shape", actions=("tap",)))
        else:
            nodes.append(UINode(f"d{k}", "text", rng.choice("aKz37"), box, description=f"{size} {colour}",
                                actions=("tap",)))
    for k, v in enumerate(rng.sample(range(6), 6)):
        nodes.append(UINode(f"b{v}", "button", str(v), (4 + 26 * k, 185, 26 + 26 * k, 206), actions=("tap",)))
    return nodes


def _fits_by_hand(nd: UINode, want: str) -> bool:
    """Whether a drawn thing of :func:`_drawn_page` fits "small items", "red items", "letters",
    "digits" or "circles" (the test's own reading, apart from the encoder's)."""
    what = nd.label if nd.role == "text" else nd.label.split()[-1]
    size, colour = (nd.description if nd.role == "text" else nd.label).split()[:2]
    return {"letters": what.isalpha() and nd.role == "text", "digits": what.isdigit(),
            "circles": what == "circle"}.get(want, want.split()[0] in (size, colour))


def test_the_drawn_things_columns_flag_what_fits_the_description_and_how_many_do(monkeypatch):
    """click-shape / drag-shapes / count-shape: the drawn things that fit the goal's size, colour
    and kind (a shape, "letter", "digit", a character, "item"; plurals, "aqua" for cyan, "square"
    for MiniWoB's rectangle), and where the goal asks "how many" the button of their number;
    cloned from 40 count-shape pages, the planner taps the count on most of 20 unseen ones."""
    nodes = [UINode("q", "text", "", (0, 0, W, 14)),
             UINode("a", "image", "large cyan rectangle", (10, 40, 30, 60), description="shape", actions=("tap",)),
             UINode("b", "text", "K", (40, 40, 50, 60), description="small cyan", actions=("tap",)),
             UINode("c", "image", "small red circle", (60, 40, 70, 50), description="shape", actions=("tap",)),
             UINode("d", "text", "7", (80, 40, 90, 60), description="large red", actions=("tap",)),
             UINode("e", "text", "k", (100, 40, 110, 60), description="large cyan", actions=("tap",))]
    nodes += [UINode(f"n{v}", "button", str(v), (8 + 29 * v, 185, 33 + 29 * v, 206), actions=("tap",))
              for v in range(5)]

    def flagged(goal: str, col: int) -> list[str]:
        e = _screen_typer(True).state(_prompt(goal, nodes))
        return [nodes[i].id for i in np.flatnonzero(e.node_feats[:, col])]
    fits = F._COL_FITS_DESCRIPTION
    assert flagged("Click on a large item", fits) == ["a", "d", "e"]
    assert flagged("Click on a letter", fits) == ["b", "e"]
    assert flagged("Click on a small red item", fits) == ["c"]
    assert flagged("Click on a 7", fits) == ["d"]
    assert flagged("Drag all squares into the black box.", fits) == ["a"]
    assert flagged("How many aqua items are there?", fits) == ["a", "b", "e"]
    assert flagged("How many aqua items are there?", F._COL_COUNT_ANSWER) == ["n3"]
    assert flagged("How many Ks are there?", fits) == ["b"]                 # a drawn character keeps its case
    assert flagged("How many red digits are there?", F._COL_COUNT_ANSWER) == ["n1"]
    assert flagged("How many green items are there?", F._COL_COUNT_ANSWER) == ["n0"]
    assert flagged("Click on a large item", F._COL_COUNT_ANSWER) == []   # no count asked
    assert flagged("Enter the large item", fits) == []                   # no description read
    assert not _planner().state(_prompt("Click on a large item", nodes)).node_feats[:, fits].any()

    def demos(pol, seed: int, n: int):
        rng, out = random.Random(seed), []
        for _ in range(n):
            want = rng.choice((f"{rng.choice(('small', 'large'))} items", f"{rng.choice(_COLOURS_DRAWN)} items",
                               "letters", "digits", "circles"))
            goal = f"How many {want} are there?"
            page = _drawn_page(rng, goal)
            count = sum(_fits_by_hand(nd, want) for nd in page[1:6])
            at = next(i for i, nd in enumerate(page) if nd.role == "button" and nd.label == str(count))
            out.append((_prompt(goal, page), _tap(at)))
        return out
    with_column, without = _hits_with_and_without(monkeypatch, "_drawn_things_columns", lambda *a: None, demos, 40)
    assert with_column >= 16 and with_column - without >= 8, (with_column, without)   # 18, 8 (70 steps)


def _figure_page(rng: random.Random) -> tuple[list[UINode], str]:
    """An identify-shape page: one drawn figure and the five category buttons. Returns (nodes, the
    button's label that describes the figure)."""
    goal = "Click the button that best describes the figure below."
    nodes = [UINode("q", "text", goal, (3, 3, 122, 25))]
    kind = rng.choice(("circle", "square", "triangle", "letter", "digit"))
    colour = rng.choice(_COLOURS_DRAWN)
    if kind in ("letter", "digit"):
        nodes.append(UINode("f", "text", rng.choice("abjKQz" if kind == "letter" else "0123456789"), (68, 67, 86, 101),
                            description=f"large {colour}", actions=("tap",)))
    else:
        nodes.append(UINode("f", "image", f"large {colour} {kind}", (60, 60, 100, 100), description="shape",
                            actions=("tap",)))
    labels = ["Rectangle", "Circle", "Triangle", "Letter", "Number"]
    rng.shuffle(labels)
    for k, lab in enumerate(labels):
        nodes.append(UINode(f"b{k}", "button", lab, (10 + 30 * k, 150, 38 + 30 * k, 170), actions=("tap",)))
    want = {"square": "Rectangle", "letter": "Letter", "digit": "Number"}.get(kind, kind.capitalize())
    return nodes, want


def test_the_names_drawn_column_flags_the_button_that_says_what_the_figure_is(monkeypatch):
    """identify-shape: "Number" for a drawn digit, "Letter" for a letter, "Rectangle" for MiniWoB's
    square, the shape's own name otherwise; nothing without a drawn thing or without
    ``type_on_screen``; cloned from 40 pages, the planner taps the right button on most of 20 unseen
    ones."""
    rng = random.Random(3)
    for _ in range(12):
        nodes, want = _figure_page(rng)
        e = _screen_typer(True).state(_prompt(nodes[0].label, nodes))
        assert [nodes[i].label for i in np.flatnonzero(e.node_feats[:, F._COL_NAMES_DRAWN])] == [want]
        assert not _planner().state(_prompt(nodes[0].label, nodes)).node_feats[:, F._COL_NAMES_DRAWN].any()
    plain = [nodes[0]] + nodes[2:]
    assert not _screen_typer(True).state(_prompt(nodes[0].label, plain)).node_feats[:, F._COL_NAMES_DRAWN].any()

    def demos(pol, seed: int, n: int):
        rng, out = random.Random(seed), []
        for _ in range(n):
            nodes, want = _figure_page(rng)
            out.append((_prompt(nodes[0].label, nodes), _tap(next(i for i, d in enumerate(nodes) if d.label == want))))
        return out
    with_column, without = _hits_with_and_without(monkeypatch, "_names_drawn_column", lambda *a: None, demos, 40)
    assert with_column >= 17 and with_column - without >= 4, (with_column, without)   # 19, 12 (70 steps)


def _generate_page(goal: str, shown: str) -> list[UINode]:
    return [UINode("q", "text", goal, (3, 3, 144, 25)), UINode("n", "text", shown, (75, 82, 85, 115)),
            UINode("g", "button", "Generate", (8, 134, 80, 165), actions=("tap",)),
            UINode("s", "button", "Submit", (94, 134, 152, 165), actions=("tap",))]


def test_the_meets_condition_column_flags_a_shown_number_that_meets_the_goal(monkeypatch):
    """generate-number: the shown number is flagged when it is less / greater than the goal's
    bound or odd / even as asked; not "-", not without a condition, not without ``type_on_screen``;
    cloned from 40 pages, the planner taps Submit when the number meets the goal and Generate when
    not on most of 20 unseen ones."""
    def flagged(goal: str, shown: str) -> bool:
        e = _screen_typer(True).state(_prompt(goal, _generate_page(goal, shown)))
        return bool(e.node_feats[1, F._COL_MEETS_CONDITION]) and e.node_feats[:, F._COL_MEETS_CONDITION].sum() == 1
    less, more = "Generate a number less than 5, then press submit.", "Generate a number greater than 4, then press submit."
    even, odd = "Generate an even number, then press submit.", "Generate an odd number, then press submit."
    assert [flagged(less, v) for v in ("3", "5", "9", "-2")] == [True, False, False, True]
    assert [flagged(more, v) for v in ("3", "4", "9")] == [False, False, True]
    assert [flagged(even, v) for v in ("3", "8", "0")] == [False, True, True]
    assert [flagged(odd, v) for v in ("3", "8", "-7")] == [True, False, True]
    assert not flagged(even, "-") and not flagged("Press submit.", "8")
    assert not _planner().state(_prompt(even, _generate_page(even, "8"))).node_feats[:, F._COL_MEETS_CONDITION].any()

    def demos(pol, seed: int, n: int):
        rng, out = random.Random(seed), []
        for _ in range(n):
            bound, v = rng.randrange(2, 9), rng.randrange(0, 10)
            goal, ok = rng.choice(((f"Generate a number less than {bound}, then press submit.", v < bound),
                                   (f"Generate a number greater than {bound}, then press submit.", v > bound),
                                   ("Generate an even number, then press submit.", v % 2 == 0),
                                   ("Generate an odd number, then press submit.", v % 2 == 1)))
            out.append((_prompt(goal, _generate_page(goal, str(v))), _tap(3 if ok else 2)))
        return out
    # (the column takes hold at 70 steps: 12 of 20 before, as without it)
    with_column, without = _hits_with_and_without(monkeypatch, "_meets_condition_column", lambda *a: None, demos, 40,
                                                  steps=100)
    assert with_column >= 16 and with_column - without >= 5, (with_column, without)   # 20, 12
