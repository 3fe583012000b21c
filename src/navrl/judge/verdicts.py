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
    BUDGET = "budget"                # step budget exhausted
    INVALID = "invalid"              # infrastructure failure: masked, no reward
