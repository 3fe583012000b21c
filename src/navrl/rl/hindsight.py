"""Hindsight relabelling (Andrychowicz et al. 2017, for language goals as in NNetNav and BAGEL):
an episode that declared completion without reaching its goal, but reached another goal its
task names (the email it did send, the note it did write: ``Trajectory.info["hindsight"]``,
set by the rollout's :class:`~navrl.rollout.step.Stepper` and accepted there by the task's own
checker), is a successful demonstration *of that goal*. Its steps, their prompts rewritten to
that goal, join the self-imitation buffer, so an exploring planner learns what its actions do
even from episodes the judges failed."""
from __future__ import annotations

from navrl.agent.policy.base import Policy
from navrl.rollout.records import Trajectory


def hindsight_outputs(policy: Policy, trajs: list[Trajectory]) -> tuple[list[tuple[str, list[int]]], int]:
    """(prompt, output ids) of every step of the relabelled valid trajectories in ``trajs``,
    each prompt as it reads under the reached goal (:meth:`Policy.relabel_prompt`) and its
    output encoded there (:meth:`Policy.encode_demo`: a pointer planner's text spans point
    into the new goal); and how many trajectories gave them. A trajectory gives nothing where
    any of its planned steps cannot be expressed under the new goal (half an episode is not
    a demonstration of it)."""
    items: list[tuple[str, list[int]]] = []
    used = 0
    for tr in trajs:
        goal = (tr.info.get("hindsight") or {}).get("goal")
        if not tr.valid or tr.success or goal is None:
            continue
        mine = []
        for s in tr.steps:
            if s.prompt is None or not s.token_ids:     # a guide's or the user's step: not the planner's
                continue
            prompt = policy.relabel_prompt(s.prompt, goal)
            ids = policy.encode_demo(prompt, s.output) if prompt is not None else None
            if ids is None:
                break
            mine.append((prompt, list(ids)))
        else:
            if mine:
                items += mine
                used += 1
    return items, used
