"""Guided starts: a guide (the phone world's expert) plays an episode's first steps, then the
learner takes over from the state the guide reached.

Restarting from states along a demonstration is how RL reaches the late stages of long
tasks it cannot yet reach on its own (Nair et al. 2018, "Overcoming exploration in RL with
demonstrations"; Salimans & Chen 2018, "Learning Montezuma's Revenge from a single
demonstration"). The guide's steps carry no output token ids, so they are never trained on
(:meth:`navrl.rl.batch.Batch.from_trajectories` keeps only the learner's sampled steps); they only set
the scene — the device, the history, the user's answers and the episode memory the learner
then reads, exactly as if it had taken those steps itself.
"""
from __future__ import annotations

from navrl.agent.plan import parse_plan
from navrl.agent.planner import Planner, PlannerContext
from navrl.agent.steps import parse_step
from navrl.planning import Plan, PlannerOutput


class GuidedPlanner(Planner):
    """``learner`` plans every episode except, for a task in :attr:`starts`, its first
    ``starts[task.id]`` steps, which ``guide`` plans. The guide hands over early instead of
    completing the task (the decision to stop stays the learner's)."""

    def __init__(self, learner: Planner, guide: Planner):
        self.learner, self.guide = learner, guide
        self.name = learner.name
        self.starts: dict[str, int] = {}
        """Task id -> how many first steps the guide plays (absent: none)."""
        self._handed: set[tuple[str, int]] = set()

    def reset(self, starts: dict[str, int] | None = None) -> None:
        """New episodes: the guided prefixes to play (task id -> steps)."""
        self.starts = dict(starts or {})
        self._handed.clear()

    def _guided(self, c: PlannerContext) -> bool:
        key = (c.task.id, id(c.device))      # sibling rollouts of a task run on different devices
        return key not in self._handed and len(c.history) < self.starts.get(c.task.id, 0)

    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        guided = [i for i, c in enumerate(contexts) if self._guided(c)]
        outs: list[PlannerOutput | None] = [None] * len(contexts)
        if guided:
            for i, o in zip(guided, self.guide.plan([contexts[i] for i in guided])):
                plan = parse_plan(o.text)
                if isinstance(plan, Plan) and parse_step(plan.step).kind == "complete":
                    # the guide would end the episode: the learner decides instead
                    self._handed.add((contexts[i].task.id, id(contexts[i].device)))
                else:
                    outs[i] = PlannerOutput(o.text)      # no token ids: never a training sample
        rest = [i for i, o in enumerate(outs) if o is None]
        if rest:
            for i, o in zip(rest, self.learner.plan([contexts[i] for i in rest])):
                outs[i] = o
        return outs  # type: ignore[return-value]
