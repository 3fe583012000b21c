"""The reward table of docs/design.md §4b as one config object."""
from __future__ import annotations

from dataclasses import dataclass

from navrl.judge.verdicts import AskVerdict, EndReason, StepVerdict, TerminalVerdict


@dataclass(frozen=True)
class RewardConfig:
    """Rewards per event. ``dense`` rewards are discounted by gamma in the returns;
    ``terminal`` ones are added undiscounted to every step's return."""

    step_success: float = 1.0
    """Dense: the step made visible progress with grounded reasoning."""
    step_fail: float = 0.0
    """Dense: no progress, a hallucinated reason, or a repeated failed action."""
    step_overcomplete: float = -2.0
    """Dense: acting after the task was already done."""
    step_regress: float = 0.0
    """Dense, added to a failed step per step it put between the agent and the goal, where the
    judge counts them (the oracle: remaining steps after minus before), at most
    ``step_regress_max``: 0 in the design's table. With -1 (the ``potential`` preset) the dense
    reward is potential-based where it counts (Ng et al. 1999): a detour and the steps that undo
    it sum to 0 instead of earning the undoing's successes — the loops RL found at multi-app
    junctions (docs/results/exploration.md §13) — while undoing a mistake still earns its
    success."""
    step_regress_max: int = 2
    """The most added steps ``step_regress`` charges one step for (a step that makes the task
    impossible sends the oracle's count to its cap)."""
    ask_justified: float = 1.0
    """Dense: the asked information really was missing."""
    ask_unjustified: float = 0.0
    """Dense: asking for something on screen, in the goal, or already answered."""
    unparseable: float = -1.0
    """Empty or unparseable planner output: terminal scale, charged at that step."""
    done_complete: float = 2.0
    """Terminal: the task is done and declared complete."""
    blocked_complete: float = 0.5
    """Terminal: everything right until an unavoidable wall, then complete."""
    budget_exhausted: float = -0.75
    """Terminal: the step budget ran out."""
    false_complete: float = -1.0
    """Terminal: completion claimed but the task is not done."""
    ended_fail: float = -0.75
    """Terminal: the world ended the episode and the task is not done (a MiniWoB++ page's -1 after
    a wrong submit). As running out of steps, never less: a world that ends itself on a wrong try
    would otherwise teach the agent to stall until its budget runs out rather than try (measured:
    RL only on MiniWoB++ with -1 here looped on a harmless tap on click-button, 72% -> 6%)."""
    other_failure: float = 0.0
    """Terminal: any other failure."""
    discount_dense: bool = True
    """False for the ``cautionary`` preset: no discount at all (gamma forced to 1)."""

    def step(self, v: StepVerdict) -> float:
        return {StepVerdict.SUCCESS: self.step_success, StepVerdict.FAIL: self.step_fail,
                StepVerdict.OVERCOMPLETE: self.step_overcomplete}[v]

    def regress(self, added: int) -> float:
        """The dense charge of a failed step that added ``added`` steps to the judge's count."""
        return self.step_regress * min(max(0, added), self.step_regress_max)

    def ask(self, v: AskVerdict) -> float:
        return self.ask_justified if v is AskVerdict.JUSTIFIED else self.ask_unjustified

    def terminal(self, v: TerminalVerdict, end: EndReason) -> float:
        if end is EndReason.INVALID:
            return 0.0
        if v is not TerminalVerdict.FAIL and not end.finished:
            raise ValueError(f"terminal verdict {v.value} needs a declared completion or the world's end, "
                             f"not {end.value}")
        if v is TerminalVerdict.SUCCESS:
            return self.done_complete
        if v is TerminalVerdict.BLOCKED_COMPLETE:
            return self.blocked_complete
        if end is EndReason.BUDGET:
            return self.budget_exhausted
        if end is EndReason.DONE:
            return self.ended_fail
        if end is EndReason.COMPLETE:
            return self.false_complete
        return self.other_failure


DEFAULT_REWARDS = RewardConfig()

CAUTIONARY_REWARDS = RewardConfig(step_success=1.0, step_fail=0.0, step_overcomplete=0.0, ask_justified=1.0,
                                  ask_unjustified=0.0, unparseable=0.0, done_complete=10.0, blocked_complete=0.0,
                                  budget_exhausted=0.0, false_complete=0.0, ended_fail=0.0, other_failure=0.0,
                                  discount_dense=False)
"""The paper's cautionary GRPO reward: +1 per good step, +10 for a finish, nothing
negative, no discount. It taught the agent to prolong episodes."""

POTENTIAL_REWARDS = RewardConfig(step_regress=-1.0)
"""The default table with regressions charged per step (``step_regress`` -1): where the judge
counts steps, a detour and its return sum to 0."""

REWARD_PRESETS = {"default": DEFAULT_REWARDS, "cautionary": CAUTIONARY_REWARDS, "potential": POTENTIAL_REWARDS}


def reward_preset(name: str) -> RewardConfig:
    try:
        return REWARD_PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown reward preset {name!r}; choose from {sorted(REWARD_PRESETS)}") from None
