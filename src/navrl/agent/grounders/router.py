"""A grounder that routes chosen step kinds to a second grounder (docs/design.md §3).

The paper's hybrid: the primary (direction-only) grounder handles everything except
swipes, which go to a VLM that can swipe from a specific spot. ``fallback=True`` also
tries the secondary when the primary raises GroundingError.
"""
from __future__ import annotations

from navrl.actions import Action
from navrl.agent.grounders.base import Grounder, GroundingError
from navrl.agent.steps import StepCommand
from navrl.observation import Observation

STEP_KINDS = frozenset({"tap", "long_press", "type", "swipe", "home", "ask_user", "complete", "unknown"})


class RouterGrounder(Grounder):
    def __init__(self, primary: Grounder, secondary: Grounder, kinds=frozenset({"swipe"}), fallback: bool = False):
        ks = {kinds} if isinstance(kinds, str) else set(kinds)
        ks = {getattr(k, "value", k) for k in ks}
        bad = ks - STEP_KINDS
        if bad:
            raise ValueError(f"unknown step kinds {sorted(bad)}; choose from {sorted(STEP_KINDS)}")
        self.primary, self.secondary = primary, secondary
        self.kinds = frozenset(ks)
        self.fallback = fallback
        self.counts = {"primary": 0, "secondary": 0, "fallback": 0}

    def __repr__(self) -> str:
        return f"RouterGrounder({self.primary!r}, {self.secondary!r}, kinds={sorted(self.kinds)})"

    def ground_command(self, cmd: StepCommand, obs: Observation) -> Action:
        if cmd.kind in self.kinds:
            self.counts["secondary"] += 1
            return self.secondary.ground_command(cmd, obs)
        self.counts["primary"] += 1
        try:
            return self.primary.ground_command(cmd, obs)
        except GroundingError:
            if not self.fallback or cmd.kind == "unknown":
                raise
            self.counts["fallback"] += 1
            return self.secondary.ground_command(cmd, obs)
