"""Verdicts of the step, ask-user and terminal judges (docs/design.md §4a)."""
from __future__ import annotations

import enum


class StepVerdict(str, enum.Enum):
    SUCCESS = "success"
    FAIL = "fail"
    OVERCOMPLETE = "overcomplete"


class AskVerdict(str, enum.Enum):
    JUSTIFIED = "justified"
    UNJUSTIFIED = "unjustified"


class TerminalVerdict(str, enum.Enum):
    SUCCESS = "success"
    FAIL = "fail"
    BLOCKED_COMPLETE = "blocked_complete"


class EndReason(str, enum.Enum):
    """How an episode ended; with the terminal verdict it picks the terminal reward."""
    COMPLETE = "complete"            # the agent declared completion
    DONE = "done"                    # the task's world reported the task over (a MiniWoB++ page's done)
    BUDGET = "budget"                # step budget exhausted
    INVALID = "invalid"              # infrastructure failure: masked, no reward

    @property
    def finished(self) -> bool:
        """True for the ends a terminal judge judges on their merits: a declared completion, or
        the world's own end (Gymnasium's ``terminated``); False for running out of steps and
        for infrastructure failure."""
        return self is EndReason.COMPLETE or self is EndReason.DONE
