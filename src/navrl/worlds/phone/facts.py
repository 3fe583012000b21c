"""A task's oracle facts, computed where its phone world lives (docs/design.md §4a, issue #27).

The oracle judges need, for every state an episode passes through: is the goal met, is the
task at its unavoidable wall, and how many steps the scripted expert needs from there
(given what the user has already answered). :class:`TaskOracle` is the world's
:class:`~navrl.worlds.phone.sim.world.WorldOracle`: the world computes an :class:`OracleFacts`
when it is snapshotted and ships it inside the snapshot, so the judge (possibly in another
process) reads numbers instead of rebuilding the world and replaying the expert.

Facts are computed by playing the expert on a scratch copy with no answers (asks answered by
the simulated user, as :func:`~navrl.worlds.phone.expert.run_expert` does). The expert's asks do not
touch the device and an ask stage is done exactly when its answer is known, so from the same
state an expert that already knows ``k`` of the answers it would ask for takes ``k`` steps
fewer (:meth:`OracleFacts.remaining`). After the expert's own next device action (an agent
that follows the expert), the new state's facts are the old ones one step shorter — no
replay; only a detour costs a replay, on the device's side.
"""
from __future__ import annotations

from dataclasses import dataclass

from navrl.actions import Action
from navrl.worlds.phone.sim import PhoneWorld
from navrl.lru import BoundedCache
from navrl.planning import Memory
from navrl.worlds.phone.expert import Ev, ExpertStep, ExpertStuck, intent_action, interruption, run_expert
from navrl.worlds.phone.task import Family, TaskSpec
from navrl.tasks.user import ProfileUser

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
    path: tuple[tuple[str, str], ...] = ()
    """The expert's steps on its way as (kind, device action text): kind ``int`` (clears an
    interruption), ``stage`` (works on a sub-goal), ``ask`` (text: the user's answer) or
    ``end`` (Complete because the goal is met or the wall reached; text empty). What
    :meth:`TaskOracle.advance` derives the next state's facts from."""
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
        key = (self.task.id, self.cap, hash(state), len(state))
        f = _FACTS.get(key)
        if f is None:
            f = _FACTS.put(key, self._compute(world, state))
        return f

    def _compute(self, world: PhoneWorld, state: bytes) -> OracleFacts:
        task = self.task
        met, blocked = self._checks(world)
        scratch = world.scratch(state)
        steps: list[ExpertStep] = []
        path: list[tuple[str, str]] = []
        user = ProfileUser()

        def note(s: ExpertStep, obs) -> None:
            steps.append(s)
            kind = s.intent[0]
            if kind == "ask":
                path.append(("ask", user.answer(task, s.intent[1])))
            elif kind == "complete" and ((task.family is not Family.ANSWER and task.check(scratch))
                                         or task.blocked(scratch)):
                path.append(("end", ""))
            elif kind == "complete":
                path.append(("stage", ""))
            else:
                tag = "int" if interruption(Ev(scratch, task, Memory())) is not None else "stage"
                path.append((tag, intent_action(obs, s.intent).to_text()))
        # the expert may ask: room for its asks beyond the cap (an answer known saves a step)
        try:
            run = run_expert(task, scratch, max_steps=self.cap + 4, on_step=note, user=user)
        except ExpertStuck:      # the agent made the task impossible (e.g. deleted what it needed)
            return OracleFacts(task.id, met, blocked, None, cap=self.cap)
        if not (run.success or run.blocked):
            return OracleFacts(task.id, met, blocked, None, cap=self.cap)
        asks = tuple(t for k, t in path if k == "ask")
        return OracleFacts(task.id, met, blocked, len(steps), asks, tuple(path), self.cap)

    def advance(self, facts: OracleFacts, action: Action, world: PhoneWorld) -> OracleFacts | None:
        """After the expert's own next device action: its run from the new state is the old
        one without that action (the expert is deterministic). An expert that asks first asks
        before its first step that is not clearing an interruption, unless that step is the
        final Complete of a met goal or a reached wall."""
        if facts.task != self.task.id or facts.steps is None or len(facts.asks) > 1:
            return None
        rest = [e for e in facts.path if e[0] != "ask"]
        if not rest or rest[0][0] not in ("int", "stage") or rest[0][1] != action.to_text() or not rest[0][1]:
            return None
        rest = rest[1:]
        if facts.asks:
            j = next((i for i, e in enumerate(rest) if e[0] != "int"), None)
            if j is None:
                return None
            if rest[j][0] != "end":
                rest.insert(j, ("ask", facts.asks[0]))
        asks = tuple(t for k, t in rest if k == "ask")
        met, blocked = self._checks(world)
        return OracleFacts(facts.task, met, blocked, len(rest), asks, tuple(rest), facts.cap)


_FACTS: BoundedCache[tuple, OracleFacts] = BoundedCache(50_000)
"""Facts by (task, cap, state): the rollouts of one task share their starting state's."""
