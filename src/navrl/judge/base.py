"""Judge interfaces and the records they read."""
from __future__ import annotations

import abc
from dataclasses import dataclass, field

from navrl.actions import Action
from navrl.agent.plan import Plan
from navrl.observation import Observation
from navrl.planning import Memory
from navrl.tasks.task import Task
from navrl.judge.verdicts import AskVerdict, EndReason, StepVerdict, TerminalVerdict


class JudgeUnavailable(RuntimeError):
    """A judge that stays unreachable after retries: the trajectory becomes invalid."""

    reason = "judge_unavailable"


@dataclass(frozen=True)
class PastStep:
    """What judges need to know of an earlier step."""
    step: str
    action: str | None        # Action.to_text(), None when nothing was executed
    screen_hash: str          # hash of the before-screen's UI tree
    verdict: str | None
    steps_left: tuple[int, int] | None = None
    """(before, after): the steps to the goal the judge counted around this step, where it counts
    them (:attr:`Judgement.steps_left`); None elsewhere."""


@dataclass
class StepContext:
    task: Task
    before: Observation
    after: Observation | None
    plan: Plan
    action: Action | None     # None: the step could not be grounded
    history: list[PastStep]
    memory: Memory
    screen_hash: str
    device_before: object | None = None   # backend snapshot (the oracle replays from it)
    device_after: object | None = None


@dataclass
class TerminalContext:
    task: Task
    end: EndReason
    answer: str | None
    last_screens: list[Observation]       # the last 3
    history: list[PastStep]
    device_final: object | None = None


@dataclass
class Judgement:
    verdict: StepVerdict | AskVerdict | TerminalVerdict
    reason: str = ""
    info: dict = field(default_factory=dict)
    steps_left: tuple[int, int] | None = None
    """(before, after): the steps to the goal a step judge counted around the step, where it
    counts them (the oracle); the stepper keeps them in :attr:`PastStep.steps_left` and the
    ``potential`` reward charges a failed step per step it added."""


class StepJudge(abc.ABC):
    wants_snapshots: bool = False
    """True for judges that read device snapshots (the phone world's oracle): the stepper
    takes one after every step only when a judge wants them."""

    @abc.abstractmethod
    def judge_step(self, ctx: StepContext) -> Judgement: ...


class AskJudge(abc.ABC):
    @abc.abstractmethod
    def judge_ask(self, ctx: StepContext) -> Judgement: ...


class TerminalJudge(abc.ABC):
    wants_snapshots: bool = False

    @abc.abstractmethod
    def judge_terminal(self, ctx: TerminalContext) -> Judgement: ...


def undeclared_end(ctx: TerminalContext) -> Judgement | None:
    """Fail, without looking, an episode that neither the agent ended by declaring completion
    nor its world ended (invalid, out of steps, or stopped: docs/design.md §4a); None when it
    did end so (:attr:`EndReason.finished`)."""
    if ctx.end is EndReason.INVALID:
        return Judgement(TerminalVerdict.FAIL, "invalid episode")
    if not ctx.end.finished:
        return Judgement(TerminalVerdict.FAIL, "step budget exhausted" if ctx.end is EndReason.BUDGET
                         else "the agent never declared completion")
    return None
