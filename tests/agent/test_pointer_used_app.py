"""The used-app input of the pointer planner (issue 26): the prompt lists the apps an episode
used before the current screen (``"u"``), and the node whose label names one of them carries a
flag in the last node column — what lets a planner back on the home screen open the *next* app
of a multi-app task instead of the one the goal names first. The column was appended with a zero
weight: a planner saved before it loads and decides exactly as before."""
from __future__ import annotations

import json

import torch

from navrl.agent.planner import PlannerContext
from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
from navrl.agent.policy.pointer.features import _COL_USED_APP, FEATURE_LAYOUT, NODE_FEATS, context_prompt
from navrl.agent.policy.pointer.planner import widen_node_inputs
from navrl.observation import Observation, UINode

HOME = ("Maps", "Calendar", "Mail", "Weather")
GOAL = ("Check in Maps how long the drive from San Jose Airport to Apple Park takes, then add a calendar "
        "event on Monday, July 8 at 2 PM titled \"Drive to Apple Park - \" followed by that drive time.")


class _Task:
    id, goal = "t", GOAL


def _home_ctx(apps=()):
    nodes = tuple(UINode(str(i), "icon", lab, (10 + 90 * i, 100, 80 + 90 * i, 170)) for i, lab in enumerate(HOME))
    return PlannerContext(_Task(), Observation(nodes, None, (390, 844), "ios"),
                          history=[("", 'Tap "Maps"'), ("", "Go home")], apps=tuple(apps))


def _planner(seed=0):
    return PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64),
                          seed=seed)


def test_the_prompt_lists_used_apps_only_when_there_are_some():
    assert "\"u\"" not in context_prompt(_home_ctx())
    assert json.loads(context_prompt(_home_ctx(["Maps"])))["u"] == ["Maps"]


def test_the_node_naming_a_used_app_is_flagged_and_no_other():
    pol = _planner()
    col = _COL_USED_APP
    fresh = pol.state(context_prompt(_home_ctx()))
    used = pol.state(context_prompt(_home_ctx(["Maps"])))
    assert fresh.node_feats[:, col].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert used.node_feats[:, col].tolist() == [1.0, 0.0, 0.0, 0.0]
    # every other input of the two states is the same
    other = [c for c in range(NODE_FEATS) if c != col]
    assert (fresh.node_feats[:, other] == used.node_feats[:, other]).all()


def test_a_new_planner_starts_with_a_zero_weight_for_the_column_and_training_can_move_it():
    pol = _planner()
    w = pol.model.node_in.weight
    assert w.shape[1] == NODE_FEATS and torch.count_nonzero(w[:, _COL_USED_APP]) == 0
    assert torch.count_nonzero(w[:, :_COL_USED_APP]) > 0
    # the flag reaches the loss: a gradient on the column when the flag is on
    prompt = context_prompt(_home_ctx(["Maps"]))
    d = pol.decide(prompt)
    out = pol.score([prompt], [d.ids()])
    out.logprobs.sum().backward()
    assert float(w.grad[:, _COL_USED_APP].abs().sum()) > 0


def test_a_planner_saved_before_the_column_loads_and_decides_as_before():
    pol = _planner(seed=3)
    state = pol.state_dict_all()
    # the same planner as an earlier navrl saved it: 27 node columns, layout saying so
    old = {**state, "model": {**state["model"], "node_in.weight": state["model"]["node_in.weight"][:, :27].clone()},
           "layout": {**FEATURE_LAYOUT, "node": 27}}
    widened = widen_node_inputs(old)
    assert widened["layout"] == FEATURE_LAYOUT
    assert torch.equal(widened["model"]["node_in.weight"], state["model"]["node_in.weight"])
    loaded = PointerPlanner.from_state(old)
    prompts = [context_prompt(_home_ctx()), context_prompt(_home_ctx(["Maps"]))]
    for p in prompts:
        a, b = pol.decide(p), loaded.decide(p)
        assert a.ids() == b.ids()
        assert torch.allclose(pol.score([p], [a.ids()]).logprobs, loaded.score([p], [b.ids()]).logprobs)
    # any other layout difference is still refused
    other = {**old, "layout": {**old["layout"], "hist": 4}}
    assert widen_node_inputs(other) is other
