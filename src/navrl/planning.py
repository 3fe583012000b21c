"""The planner protocol's records that every layer from tasks up passes around (layer 1).

:class:`Plan` is one step's ``Reasoning / Step / Remaining`` block (docs/design.md §3; parsing it
is ``navrl.agent.plan``); :class:`PlannerOutput` is what a planner hands back for one step;
:class:`Memory` is what an episode has learnt outside the screen (the user's answers). They
live here, below ``navrl.tasks``, because scripted planners in the task layer (the
phone-world expert, the MiniWoB scripts) produce and read them as well as the agent layer's
planners.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Plan:
    """One step's block as the planner writes it (and :meth:`text` renders it back)."""

    reasoning: str
    step: str
    remaining: str

    def text(self) -> str:
        return f"Reasoning: {self.reasoning}\nStep: {self.step}\nRemaining: {self.remaining}"


@dataclass
class PlannerOutput:
    """One planner output: the text in the Reasoning / Step / Remaining form plus what a
    learning planner records for its update (tokens, log-probs, value, prompt, API usage)."""

    text: str
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    value: float | None = None
    prompt: str | None = None
    usage: dict = field(default_factory=dict)
    policy_logprobs: list[float] | None = None
    """Where the output was sampled from an exploring behaviour policy (a mixture of the
    planner with uniform or prior choices: ``exploration.explore``, ``explore_arg``,
    ``explore_prior``): the planner's own log-probs of the same tokens, ``logprobs`` being the
    behaviour's. None where the two are the same (``policy.off_policy_ratio`` reads both)."""


@dataclass
class Memory:
    """What the episode has learnt outside the screen: questions asked and answers."""

    qa: list[tuple[str, str]] = field(default_factory=list)

    def answers(self) -> list[str]:
        return [a for _, a in self.qa]

    def copy(self) -> "Memory":
        return Memory(list(self.qa))
