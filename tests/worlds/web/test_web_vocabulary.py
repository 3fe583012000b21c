"""The web world's planner vocabulary (navrl.worlds.web.vocabulary): the phone world's UI words
plus the words MiniWoB++'s goals repeat. With it "left" and "right", "width" and "larger" are
words a weight can learn, not entity placeholders: cloned on a resize-textarea-like page the
planner drags the grip the way the goal asks, where the phone world's vocabulary cannot tell
the goals apart."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
from navrl.agent.policy.pointer.features import decision_for
from navrl.observation import UINode
from navrl.worlds.web.vocabulary import WORDS_FILE, goal_words, web_vocabulary

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "agent"))
from fixtures.cloning import clone, hits  # noqa: E402
from test_pointer_drag import W, _box, _prompt  # noqa: E402

_WAY = {("width", "larger"): "right", ("width", "smaller"): "left",
        ("height", "larger"): "down", ("height", "smaller"): "up"}


def test_goal_words_keep_what_recurs_under_several_seeds():
    goals = [(s, f"Drag the circle {way} then press Submit.") for s in range(6) for way in ("left", "right")]
    goals += [(7, f"Click on {name}.") for name in ["Truman"] * 9]         # one seed's name on many pages
    goals += [(s, "Find the zebra.") for s in range(4)]                      # 4 goals only
    got = goal_words(goals, min_goals=5, min_seeds=5)
    assert {"drag", "circle", "left", "right", "press", "submit"} <= set(got)
    assert "truman" not in got and "zebra" not in got and "click" not in got


def test_the_web_vocabulary_is_the_phone_worlds_then_the_goal_words():
    phone, web = phone_world_vocabulary(), web_vocabulary()
    assert web[:len(phone)] == phone and len(web) == len(set(web))
    assert {"left", "right", "width", "height", "larger", "smaller"} <= set(web)
    assert not {"left", "width", "larger", "smaller"} & set(phone)
    words = [ln for ln in WORDS_FILE.read_text().splitlines() if ln and not ln.startswith("#")]
    assert words == sorted(words) and len(words) > 200


def _resize(rng: random.Random) -> tuple[str, list[UINode], str]:
    dim, d = rng.choice(["width", "height"]), rng.choice(["larger", "smaller"])
    goal = f"Resize the textarea so that the {dim} is {d} than its initial size then press Submit."
    x0, y0, x1, y1 = _box(rng, 50)
    grip = "ui resizable handle se gripsmall diagonal"
    nodes = [UINode("q", "text", goal, (0, 0, W, 36)),
             UINode("t", "textfield", "text field", (x0, y0, x1, y1), actions=("tap",)),
             UINode("g", "button", grip, (x1 - 16, y1 - 16, x1, y1), actions=("tap", "drag")),
             UINode("b", "button", "Submit", (54, 169, 150, 200), actions=("tap",))]
    return goal, nodes, f'Drag "{grip}" {_WAY[dim, d]}'


def _demos(pol, seed: int, n: int) -> list[tuple[str, list[int]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        goal, nodes, step = _resize(rng)
        p = _prompt(goal, nodes)
        out.append((p, decision_for(step, pol.state(p), pol.frames).ids()))
    return out


@pytest.mark.parametrize("vocabulary,at_least,at_most", [("web", 18, 20), ("phone", 0, 10)])
def test_cloned_with_the_goal_words_the_grip_goes_the_way_the_goal_asks(vocabulary, at_least, at_most):
    """40 demonstrations of the four (dimension, larger / smaller) pairs, 20 new pages: the drag's
    direction is read off the goal's words (18-20 / 20); with the phone world's vocabulary the
    words are entity placeholders and the goals alike (6-7 / 20 when written)."""
    words = web_vocabulary() if vocabulary == "web" else phone_world_vocabulary()
    pol = PointerPlanner(words, PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, type_on_screen=True), seed=0)
    train, test = _demos(pol, 0, 40), _demos(pol, 1, 20)
    clone(pol, train, steps=120)
    assert at_least <= hits(pol, test) <= at_most


def test_a_miniwob_planner_is_built_on_the_web_vocabulary_and_a_phone_planner_is_not():
    from navrl.experiments.pipeline import build_policy
    from navrl.rl.presets import get_preset
    preset = get_preset("quick-pointer")
    assert build_policy(preset, 0, "web").vocab.words[:len(web_vocabulary())] == web_vocabulary()
    assert "left" not in build_policy(preset, 0).vocab.index
