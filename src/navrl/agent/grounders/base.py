"""Grounder interface: (step text, observation) -> Action with exact coordinates."""
from __future__ import annotations

import abc

from navrl.actions import Action
from navrl.agent.steps import StepCommand, parse_step
from navrl.observation import Observation


class GroundingError(ValueError):
    """The grounder could not turn the step into an action (no such element, unclear step)."""


class Grounder(abc.ABC):
    """Frozen during RL. Raises GroundingError when it cannot act (never guesses)."""

    @abc.abstractmethod
    def ground_command(self, cmd: StepCommand, obs: Observation) -> Action: ...

    def ground(self, step: str, obs: Observation) -> Action:
        return self.ground_command(parse_step(step), obs)

    @staticmethod
    def episode_action(cmd: StepCommand) -> Action | None:
        """Actions that need no screen: home, ask user, complete, direction-only swipe."""
        if cmd.kind == "home":
            return Action.home()
        if cmd.kind == "ask_user":
            if not cmd.text:
                raise GroundingError("Ask user needs a question")
            return Action.ask_user(cmd.text)
        if cmd.kind == "complete":
            return Action.complete(cmd.text)
        if cmd.kind == "unknown":
            raise GroundingError(f"not a step I know how to do: {cmd.raw[:80]!r}")
        return None
