"""The pointer planner's drag (issue #28's drag pages): a node that takes a mouse drag is dragged
onto another node or in a direction (its destination is the decision's third factor); cloned on
drag-box- and drag-circle-like pages it picks the dragged node, the box and the direction the goal
names on pages it has not seen; plan and score agree on its log-probs; a planner saved before the
drag kind loads and decides as it did."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from navrl.agent.planner import PlannerContext
from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
from navrl.agent.policy.pointer.features import (DRAG_DIRECTIONS, K_FIRST, KIND_ID, MAX_NODES, Decision,
                                                 context_prompt, decision_for)
from navrl.agent.policy.pointer.planner import _KIND_ROWS
from navrl.observation import Observation, UINode

from fixtures.cloning import clone, hits

W, H = 160, 210
DRAG = KIND_ID["drag"]


class _Task:
    def __init__(self, goal: str) -> None:
        self.id, self.goal = "t", goal


def _prompt(goal: str, nodes: list[UINode]) -> str:
    return context_prompt(PlannerContext(_Task(goal), Observation(tuple(nodes), None, (W, H), "web"), history=[]))


def _planner(seed: int = 0) -> PointerPlanner:
    return PointerPlanner(phone_world_vocabulary(n_tasks=40),
                          PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, type_on_screen=True), seed=seed)


def _box(rng: random.Random, side: int) -> tuple[int, int, int, int]:
    x, y = rng.randrange(5, 150 - side), rng.randrange(60, 160 - side)
    return x, y, x + side, y + side


def _drag_box(rng: random.Random) -> tuple[str, list[UINode], str]:
    """drag-box: the small box "s" goes into the large box "L" (both draggable, in either order)."""
    goal = "Drag the smaller box so that it is completely inside the larger box."
    boxes = [UINode("s", "text", "s", _box(rng, 20), actions=("tap", "drag")),
             UINode("L", "text", "L", _box(rng, 50), actions=("tap", "drag"))]
    rng.shuffle(boxes)
    nodes = [UINode("q", "text", goal, (0, 0, W, 50)), *boxes,
             UINode("b", "button", "Submit", (60, 170, 100, 190), actions=("tap",))]
    return goal, nodes, 'Drag "s" to "L"'


def _drag_circle(rng: random.Random) -> tuple[str, list[UINode], str]:
    """drag-circle: the circle goes the way the goal says."""
    way = rng.choice(DRAG_DIRECTIONS)
    colour = rng.choice(["red", "blue", "green", "black"])
    goal = f"Drag the circle {way} then press Submit."
    label = f"large {colour} circle"
    nodes = [UINode("q", "text", goal, (0, 0, W, 50)), UINode("c", "image", label, _box(rng, 30),
                                                             actions=("tap", "drag")),
             UINode("b", "button", "Submit", (60, 170, 100, 190), actions=("tap",))]
    return goal, nodes, f'Drag "{label}" {way}'


def _demos(pol: PointerPlanner, seed: int, n: int) -> list[tuple[str, list[int]]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        goal, nodes, step = (_drag_box if i % 2 else _drag_circle)(rng)
        p = _prompt(goal, nodes)
        d = decision_for(step, pol.state(p), pol.frames)
        out.append((p, None if d is None else d.ids()))
    return out


def test_the_demonstrations_are_drags_to_a_node_and_in_a_direction():
    pol = _planner()
    demos = _demos(pol, 0, 40)
    assert all(d is not None and d[0] == DRAG and len(d) == 3 for _, d in demos)
    dests = {d[2] >= MAX_NODES for _, d in demos}
    assert dests == {True, False}           # both: onto a node, and in a direction
    # a direction's index names it: "up" is MAX_NODES + 0
    goal, nodes, _ = _drag_circle(random.Random(3))
    p = _prompt(goal, nodes)
    assert decision_for(f'Drag "{nodes[1].label}" up', pol.state(p), []).frame == MAX_NODES
    # a node that takes no drag cannot be dragged, nor dropped onto itself
    assert decision_for('Drag "Submit" up', pol.state(p), []) is None
    assert decision_for(f'Drag "{nodes[1].label}" to "{nodes[1].label}"', pol.state(p), []) is None


def test_cloned_on_drag_pages_it_drags_the_right_node_the_right_way_on_new_pages():
    """60 demonstrations of the two pages, 20 new ones: the dragged node, the box it goes onto
    and the direction the goal names (each of four) are all read off the page and the goal."""
    pol = _planner()
    train, test = _demos(pol, 0, 60), _demos(pol, 1, 20)
    untrained = hits(pol, test)
    clone(pol, train, steps=120)
    assert hits(pol, test) >= 19 > untrained
    # the text a decision renders grounds back to the same decision
    for p, d in test[:6]:
        out = pol.decide(p)
        assert out.ids() == d
        assert decision_for(_step_of(pol, p, out), pol.state(p), pol.frames) == out


def _step_of(pol, p, d) -> str:
    from navrl.agent.policy.pointer.features import render_step
    return render_step(d, pol.state(p), pol.frames)


@pytest.mark.parametrize("T", [1.0, 0.7])
def test_plan_and_score_agree_on_a_drags_log_probs(T):
    pol = _planner(seed=2)
    rng = random.Random(5)
    pages = [(_drag_box if i % 2 else _drag_circle)(rng) for i in range(24)]
    ctxs = [PlannerContext(_Task(g), Observation(tuple(n), None, (W, H), "web"), history=[]) for g, n, _ in pages]
    pol.sample, pol.temperature = True, T
    pol.generator.manual_seed(0)
    outs = pol.plan(ctxs)
    drags = [o for o in outs if o.token_ids[0] == DRAG]
    assert len(drags) >= 3 and {len(o.token_ids) for o in drags} == {3}
    sb = pol.score([o.prompt for o in outs], [o.token_ids for o in outs], temperature=T)
    got = sb.logprobs.sum(-1)
    want = torch.tensor([sum(o.logprobs) for o in outs])
    assert torch.allclose(got, want, atol=1e-5)
    # the destination's log-prob reaches the destination layers
    got[[i for i, o in enumerate(outs) if o.token_ids[0] == DRAG]].sum().backward()
    assert pol.model.drag_node[0].weight.grad.abs().sum() > 0
    assert pol.model.drag_dir[0].weight.grad.abs().sum() > 0
    assert sb.mask[[i for i, o in enumerate(outs) if o.token_ids[0] == DRAG], 2].eq(1).all()


def test_a_planner_saved_before_the_drag_kind_loads_and_decides_as_it_did():
    """The kind-sized weights cut back to the first 11 kinds and the destination layers dropped
    (what a planner saved before the drag kind holds): it loads with zero rows for the new kind
    and decides as the planner it was cut from, drag pages aside."""
    pol = _planner(seed=1)
    demos = _demos(pol, 0, 10)
    clone(pol, [(p, d) for p, d in demos], steps=5)
    state = pol.state_dict_all()
    model = {k: v for k, v in state["model"].items() if not k.startswith("drag_")}
    for name in _KIND_ROWS:
        model[name] = model[name][:K_FIRST]
    from navrl.agent.policy.pointer.model import CAND_FEATS_FIRST
    w = model["cand_w.0.weight"]
    at = CAND_FEATS_FIRST + K_FIRST
    model["cand_w.0.weight"] = torch.cat([w[:, :at], w[:, at + 1:]], 1)
    old = {**state, "model": model, "layout": {**state["layout"], "kinds": K_FIRST}}
    back = PointerPlanner.from_state(old)
    rng = random.Random(9)
    # pages without a draggable node: the same decisions and log-probs
    for _ in range(6):
        goal = "Click the Submit button."
        nodes = [UINode("q", "text", goal, (0, 0, W, 50)), UINode("b", "button", "Submit", _box(rng, 20),
                                                                  actions=("tap",)),
                 UINode("c", "button", "Cancel", _box(rng, 20), actions=("tap",))]
        p = _prompt(goal, nodes)
        assert back.decide(p) == pol.decide(p)
        ids = pol.decide(p).ids()
        assert np.allclose(back.score([p], [ids]).logprobs.detach(), pol.score([p], [ids]).logprobs.detach(),
                           atol=1e-6)
    # the cut planner's new kind starts at zero weights (its logit is the hidden layer's 0)
    assert back.model.kind_head[2].weight[DRAG].abs().sum() == 0
