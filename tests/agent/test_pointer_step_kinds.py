"""A task's action space (``step_kinds``, navrl.tasks.task) reaches the pointer planner through its
prompt: the kinds outside it are no legal decision, in sampling, greedy choice and re-scoring alike."""
from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest
import torch

from navrl.agent.planner import PlannerContext
from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
from navrl.agent.policy.pointer.features import encode, step_kinds_mask, KIND_ID
from navrl.agent.steps import parse_step
from navrl.observation import Observation, UINode
from navrl.tasks.task import TaskError, step_kinds_of
from navrl.worlds.phone.task import TaskSpec, make_task

SMALL = PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64)
NODES = (
    UINode("1", "header", "Transfer", (0, 0, 390, 40)),
    UINode("2", "textfield", "Amount", (10, 50, 380, 90), focused=True, value="", actions=("tap",)),
    UINode("3", "cell", "Recipe 2", (10, 150, 380, 190), actions=("tap", "long_press", "swipe")),
    UINode("4", "button", "Confirm", (10, 200, 380, 240), actions=("tap",)),
)


@dataclasses.dataclass(frozen=True)
class Restricted(TaskSpec):
    """A phone task whose world acts on ``step_kinds`` only."""
    step_kinds: tuple[str, ...] | None = ("tap", "type", "swipe")


def _contexts(kinds):
    base = make_task("bank_pay_payee", 3)
    task = base if kinds is None else Restricted(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)},
                                                 step_kinds=kinds)
    obs = Observation(NODES, "Bank", (390, 844), "ios")
    return [PlannerContext(task, obs, history=[("", 'Tap "Bank"')]) for _ in range(400)]


@pytest.fixture(scope="module")
def planner():
    torch.manual_seed(0)
    return PointerPlanner(phone_world_vocabulary(n_tasks=20), SMALL, seed=0)


def _kinds_sampled(planner, kinds) -> Counter:
    planner.sample, planner.temperature = True, 1.0
    outs = planner.plan(_contexts(kinds))
    return Counter(parse_step(o.text.split("Step: ")[1].split("\n")[0]).kind for o in outs), outs


def test_an_untrained_planner_samples_only_the_worlds_kinds(planner):
    free, _ = _kinds_sampled(planner, None)
    # without an action space the untrained planner ends, goes home or long-presses often
    assert free["complete"] + free["home"] + free["long_press"] >= 80, free
    got, outs = _kinds_sampled(planner, ("tap", "type", "swipe"))
    assert set(got) <= {"tap", "type", "swipe"} and got["tap"] >= 30 and got["type"] >= 30, got
    # the prompt carries the action space, so re-scoring applies the same mask: equal log-probs
    assert json.loads(outs[0].prompt)["k"] == ["swipe", "tap", "type"]
    with torch.no_grad():
        scored = planner.score([o.prompt for o in outs[:64]], [o.token_ids for o in outs[:64]])
    for o, lp, m in zip(outs[:64], scored.logprobs, scored.mask):
        assert float((lp * m).sum()) == pytest.approx(sum(o.logprobs), abs=1e-5)


def test_the_mask_and_an_unrestricted_prompt():
    m = step_kinds_mask(("tap", "swipe"))
    assert m.sum() == 6 and m[KIND_ID["tap"]] and m[KIND_ID["swipe_left"]] and not m[KIND_ID["complete"]]
    assert m[KIND_ID["drag"]]                                        # a drag is a swipe from a node
    assert step_kinds_mask(("complete",))[KIND_ID["answer"]]          # an answer is a completion
    free = _contexts(None)[0]
    assert step_kinds_of(free.task) is None
    planner = PointerPlanner(phone_world_vocabulary(n_tasks=5), SMALL, seed=0)
    (out,) = planner.plan([free])
    assert "k" not in json.loads(out.prompt)                         # the phone world's prompts are unchanged
    e = encode(out.prompt, planner.vocab)
    assert e.kind_mask[KIND_ID["complete"]] and e.kind_mask[KIND_ID["home"]]


def test_an_unknown_step_kind_is_a_task_error():
    (ctx,) = _contexts(("tap", "jump"))[:1]
    with pytest.raises(TaskError, match="unknown step kinds \\['jump'\\]"):
        step_kinds_of(ctx.task)
