"""The text pointer reads the field the text goes into (``PointerConfig.text_reads_field``,
issue #26): the span query adds a zero-started projection of the focused node's encoded row, so
what to type can depend on where — a recipient into "To", the first app's fact into the message
body — instead of one choice per screen read through the state token alone. A new planner scores
exactly as without it; a planner saved before it loads and decides as before; cloned from a few
two-field screens it types what the focused field needs on names and lists it has not seen."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import torch

from navrl.agent.planner import PlannerContext
from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
from navrl.agent.policy.pointer.features import KIND_ID, Decision, context_prompt
from navrl.observation import Observation, UINode

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from cloning import clone, hits

FIRST = ["Omar", "Nina", "Tom", "Lena", "Ravi", "Sofia", "Jonas", "Mira", "Pablo", "Keiko", "Anders", "Bea",
         "Cyrus", "Dalia", "Emil", "Farah", "Gus", "Hana", "Ivo", "Jade", "Kurt", "Lia", "Milo", "Nell"]
LAST = ["Haddad", "Petrova", "Becker", "Ortiz", "Shah", "Rossi", "Berg", "Kato", "Diaz", "Mori", "Lund", "Cole",
        "Reyes", "Novak", "Stone", "Aziz", "Hale", "Ito", "Marsh", "Quint"]
ITEMS = ["Passport", "charger", "sunscreen", "milk", "eggs", "spinach", "rice", "coffee beans", "tickets", "hat",
         "keys", "bread", "apples", "tea", "socks", "towel"]


class _Task:
    def __init__(self, goal: str) -> None:
        self.id, self.goal = "t", goal


def _compose(rng: random.Random, focus: int | None) -> tuple[str, str]:
    """A message form inside the second app of a multi-app task (the first app's note in the
    episode memory): (prompt, the text the focused field needs — the goal's name in "To", the
    note in "Message")."""
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    note = ", ".join(rng.sample(ITEMS, 3))
    goal = f"Send {name} a message with the shopping list from the Notes app."
    nodes = (UINode("0", "text", "New Message", (0, 40, 390, 80)),
             UINode("1", "textfield", "To", (10, 100, 380, 140), focused=focus == 0, actions=("tap",)),
             UINode("2", "textfield", "Message", (10, 160, 380, 400), focused=focus == 1, actions=("tap",)),
             UINode("3", "button", "Send", (300, 420, 380, 460), actions=("tap",)))
    hist = [("", 'Tap "Notes"'), ("", 'Tap "Shopping"'), ("", "Go home"), ("", 'Tap "Messages"'), ("", 'Tap "New"')]
    ctx = PlannerContext(_Task(goal), Observation(nodes, "Messages", (390, 844), "ios"), history=hist,
                         seen=("Shopping", note))
    return context_prompt(ctx), name if focus == 0 else note


def _planner(seed: int = 0, on: bool = True) -> PointerPlanner:
    return PointerPlanner(phone_world_vocabulary(n_tasks=40),
                          PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, text_reads_field=on), seed=seed)


def _demos(pol: PointerPlanner, seed: int, n: int) -> list[tuple[str, list[int]]]:
    rng, out = random.Random(seed), []
    for i in range(n):
        p, want = _compose(rng, i % 2)
        out.append((p, Decision(KIND_ID["type"], pol.state(p).cand_text.index(want)).ids()))
    return out


def test_the_focus_is_the_focused_node_or_none():
    pol = _planner()
    rng = random.Random(0)
    assert pol.state(_compose(rng, 0)[0]).focus == 1
    assert pol.state(_compose(rng, 1)[0]).focus == 2
    assert pol.state(_compose(rng, None)[0]).focus == -1


def test_a_new_planner_scores_and_decides_exactly_as_without_the_field():
    on, off = _planner(seed=4, on=True), _planner(seed=4, on=False)
    assert torch.count_nonzero(on.model.field_q.weight) == 0 and off.model.field_q is None
    demos = _demos(on, 7, 6)
    prompts, ids = [p for p, _ in demos], [d for _, d in demos]
    assert torch.equal(on.score(prompts, ids).logprobs, off.score(prompts, ids).logprobs)
    assert [on.decide(p).ids() for p in prompts] == [off.decide(p).ids() for p in prompts]


def test_the_focused_fields_row_moves_the_text_scores_and_nothing_else():
    pol = _planner(seed=1)
    rng = random.Random(3)
    focused, unfocused = _compose(rng, 0)[0], _compose(rng, None)[0]
    e = pol.state(focused)
    outs = [Decision(KIND_ID["type"], j).ids() for j in range(min(8, len(e.cand_text)))]
    tap = [Decision(KIND_ID["tap"], 3).ids()]
    def scores():
        return tuple(pol.score(ps, ds).logprobs.detach() for ps, ds in
                     (([focused] * len(outs), outs), ([unfocused], tap), ([focused], tap)))
    before = scores()
    # a Type decision on a focused screen sends gradient into the layer; one without focus does not
    pol.score([focused], outs[:1]).logprobs.sum().backward()
    assert float(pol.model.field_q.weight.grad.abs().sum()) > 0
    pol.model.zero_grad()
    pol.score([_compose(rng, None)[0]], outs[:1]).logprobs.sum().backward()
    assert pol.model.field_q.weight.grad is None or float(pol.model.field_q.weight.grad.abs().sum()) == 0
    with torch.no_grad():
        pol.model.field_q.weight.normal_(0, 0.5)
    after = scores()
    text_col = 1
    assert float((after[0][:, text_col] - before[0][:, text_col]).abs().max()) > 1e-3   # the spans' scores moved
    assert torch.equal(after[0][:, 0], before[0][:, 0])                                  # the kind's did not
    assert torch.equal(after[1], before[1]) and torch.equal(after[2], before[2])         # nor a Tap's


def test_cloned_with_the_field_the_planner_types_what_the_focused_field_needs():
    """20 two-field screens (To focused: the goal's name; Message focused: the note in memory),
    60 full-batch steps, 3 seeds: with the field every seed types the right text on 40 unseen
    screens; without it (the query reads the state token alone) fewer do in the same budget."""
    right = {}
    for on in (True, False):
        right[on] = []
        for seed in (0, 1, 2):
            pol = _planner(seed, on)
            train, test = _demos(pol, 1, 20), _demos(pol, 2, 40)
            clone(pol, train)
            right[on].append(hits(pol, test))
    assert right[True] == [40, 40, 40]
    assert sum(right[False]) < sum(right[True])


def test_a_planner_saved_before_the_field_loads_with_it_and_decides_as_before():
    old = _planner(seed=2, on=False)
    state = old.state_dict_all()
    state = {**state, "config": {k: v for k, v in state["config"].items() if k != "text_reads_field"}}
    turned_on = {**state, "config": {**state["config"], "text_reads_field": True}}
    loaded = PointerPlanner.from_state(turned_on)
    assert loaded.model.field_q is not None and torch.count_nonzero(loaded.model.field_q.weight) == 0
    assert PointerPlanner.from_state(state).model.field_q is None
    demos = _demos(old, 5, 6)
    assert [loaded.decide(p).ids() for p, _ in demos] == [old.decide(p).ids() for p, _ in demos]
