"""The Planner interface and the built-in non-learning planners (expert, random, the two mixed)."""
from __future__ import annotations

import abc
import random
from dataclasses import dataclass, field

from navrl.observation import Observation
# PlannerOutput's home is navrl.planning (the task layer's scripted planners build it too);
# imported here so that navrl.agent.planner.PlannerOutput keeps working
from navrl.planning import Memory, PlannerOutput  # noqa: F401  (Memory re-exported)
from navrl.tasks.task import Task


@dataclass
class PlannerContext:
    """Everything the planner may read at one step (docs/design.md §3)."""

    task: Task
    obs: Observation
    history: list[tuple[str, str]] = field(default_factory=list)   # (reasoning, step) of earlier steps
    remaining: str = ""                                             # the remaining plan written last step
    answers: list[tuple[str, str]] = field(default_factory=list)    # (question, user answer)
    device: object | None = None   # the live device; only privileged planners (the expert) read it
    seen: tuple[str, ...] = ()     # texts of the last screens of the apps used before this one (episode memory)
    apps: tuple[str, ...] = ()     # apps used earlier in this episode, not the current one (oldest first)


class Planner(abc.ABC):
    """Batched: one output per context."""

    name = "planner"

    @abc.abstractmethod
    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]: ...


class ExpertPlanner(Planner):
    """Each task's own expert speaking the planner protocol (:meth:`navrl.tasks.task.Task.expert_step`):
    the phone world's scripted expert (privileged: reads the device), MiniWoB++'s scripted
    solutions (read the observation). A task without one raises :class:`navrl.tasks.task.NoExpert`."""

    name = "expert"

    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        return [PlannerOutput(c.task.expert_step(c.obs, c.device, list(c.answers))) for c in contexts]


class RandomPlanner(Planner):
    """Taps, swipes and types at random among what is on screen; completes rarely."""

    name = "random"

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        return [random_step(self.rng, c.obs) for c in contexts]


def random_step(rng: random.Random, obs: Observation) -> PlannerOutput:
    """A random step among what is on screen (the random planner's)."""
    labels = [n.label for n in obs.nodes if n.label and n.actions] or ["Search"]
    r = rng.random()
    if r < 0.7:
        step = f'Tap "{rng.choice(labels)}"'
    elif r < 0.8:
        step = f"Swipe {rng.choice(['up', 'down'])}"
    elif r < 0.9:
        step = f'Type "{rng.choice(["hello", "shoes", "Paris", "42"])}"'
    elif r < 0.97:
        step = "Go home"
    else:
        step = "Complete"
    return PlannerOutput(f"Reasoning: I try something.\nStep: {step}\nRemaining: unknown")


class MixedPlanner(Planner):
    """The expert, except that each step is a random one with probability ``p`` (so wrong
    steps occur and the expert recovers from them: ``navrl judge audit --planner mix:P``).
    Which steps go random is fixed by (seed, task id, step index), whatever the batching."""

    name = "mix"

    def __init__(self, p: float, seed: int = 0):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"the random-step probability must be in [0, 1], got {p}")
        self.p, self.seed = p, seed
        self.expert = ExpertPlanner()

    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        out: list[PlannerOutput | None] = []
        for c in contexts:
            rng = random.Random(f"{self.seed}|{c.task.id}|{len(c.history)}")
            out.append(random_step(rng, c.obs) if rng.random() < self.p else None)
        expert = iter(self.expert.plan([c for c, o in zip(contexts, out) if o is None]))
        return [o if o is not None else next(expert) for o in out]
