"""A task's oracle facts, computed where its phone world lives (DESIGN.md §4, issue #27).

The oracle judges need, for every state an episode passes through: is the goal met, is the
task at its unavoidable wall, and how many steps the scripted expert needs from there
(given what the user has already answered). :class:`TaskOracle` is the world's
:class:`~navrl.device.phone.world.WorldOracle`: the world computes an :class:`OracleFacts`
when it is snapshotted and ships it inside the snapshot, so the judge (possibly in another
process) reads numbers instead of rebuilding the world and replaying the expert.

Facts are computed by playing the expert on a scratch copy with no answers (asks answered by
the simulated user, as :func:`~navrl.tasks.expert.run_expert` does). The expert's asks do not
touch the device and an ask stage is done exactly when its answer is known, so from the same
state an expert that already knows ``k`` of the answers it would ask for takes ``k`` steps
fewer (:meth:`OracleFacts.remaining`). After the expert's own next device action (an agent
that follows the expert), the new state's facts are the old ones one step shorter — no
replay; only a detour costs a replay, on the device's side.
"""
from __future__ import annotations

from dataclasses import dataclass

from navrl.actions import Action
from navrl.device.phone import PhoneWorld
from navrl.tasks.expert import ExpertStep, ExpertStuck, intent_action, run_expert
from navrl.tasks.spec import TaskSpec

CAP = 60
"""The step count the oracle reports when the expert can't finish (the judge's default cap)."""


def _norm(s: str) -> str:
    return str(s).strip().lower()


@dataclass(frozen=True)
class OracleFacts:
    """What the oracle judges need about one state of one task's world."""

    task: str
    """The task's id (facts of another task's world are not used)."""
    met: bool
    """The template's goal check on this state (answer tasks: True unless the template checks
    the world too; the answer itself is compared by the judge)."""
    blocked: bool
    """The task stands at its unavoidable wall."""
    steps: int | None
    """The expert's steps from here knowing no answers, its final Complete included; None when
    it can't finish (stuck, or more than ``cap`` steps with every answer known)."""
    asks: tuple[str, ...] = ()
    """The user's answers to the expert's asks on its way (an answer already known saves one step)."""
    path: tuple[str, ...] = ()
    """The expert's device actions on its way, as text (only when it asks nothing)."""
    cap: int = CAP

    def remaining(self, answers: tuple | list, cap: int | None = None) -> int:
        """The expert's remaining steps when the user has already given ``answers``;
        ``cap`` (default: the facts') when it can't finish within it."""
        cap = self.cap if cap is None else cap
        if self.steps is None:
            return cap
        known = {_norm(a) for a in answers}
        n = self.steps - sum(1 for a in self.asks if _norm(a) in known)
        return n if n <= cap else cap


class TaskOracle:
    """``task``'s oracle for its phone worlds (``TaskSpec.make_device`` passes one)."""

    __slots__ = ("task", "cap")

    def __init__(self, task: TaskSpec, cap: int = CAP):
        self.task, self.cap = task, cap

    def _checks(self, world: PhoneWorld) -> tuple[bool, bool]:
        t = self.task
        return t.tpl.check(world, t.params, None), t.blocked(world)

    def facts(self, world: PhoneWorld, state: bytes) -> OracleFacts:
        met, blocked = self._checks(world)
        scratch = world.scratch(state)
        steps: list[ExpertStep] = []
        acts: list[str] = []

        def note(s: ExpertStep, obs) -> None:
            steps.append(s)
            if s.intent[0] not in ("ask", "complete"):
                acts.append(intent_action(obs, s.intent).to_text())
        # the expert may ask: room for its asks beyond the cap (an answer known saves a step)
        room = self.cap + 4
        try:
            run = run_expert(self.task, scratch, max_steps=room, on_step=note)
        except ExpertStuck:      # the agent made the task impossible (e.g. deleted what it needed)
            return OracleFacts(self.task.id, met, blocked, None, cap=self.cap)
        if not (run.success or run.blocked):
            return OracleFacts(self.task.id, met, blocked, None, cap=self.cap)
        asks = tuple(_answers(self.task, steps))
        return OracleFacts(self.task.id, met, blocked, len(steps), asks, () if asks else tuple(acts), self.cap)

    def advance(self, facts: OracleFacts, action: Action, world: PhoneWorld) -> OracleFacts | None:
        if facts.task != self.task.id or facts.steps is None or not facts.path or facts.path[0] != action.to_text():
            return None
        # the expert is deterministic: after its own next action it needs one step fewer and goes on as planned
        met, blocked = self._checks(world)
        return OracleFacts(facts.task, met, blocked, facts.steps - 1, (), facts.path[1:], facts.cap)


def _answers(task: TaskSpec, steps: list[ExpertStep]) -> list[str]:
    from navrl.tasks.user import ProfileUser
    user = ProfileUser()
    return [user.answer(task, s.intent[1]) for s in steps if s.intent[0] == "ask"]
