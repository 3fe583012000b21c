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
replay; only a detour costs a replay, on the device's side, and a replay stops at the first
state whose expert run an earlier replay already played (:meth:`TaskOracle._replay`).
"""
from __future__ import annotations

from dataclasses import dataclass

from navrl.actions import Action
from navrl.worlds.phone.sim import PhoneWorld
from navrl.lru import BoundedCache
from navrl.planning import Memory
from navrl.worlds.phone.expert import Ev, ExpertStuck, expert_step, intent_action, interruption
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

    def _compute(self, world: PhoneWorld, state: bytes, memo: bool = True) -> OracleFacts:
        """The facts about ``world``'s state (``state``: its pickle) by replaying the expert on
        a scratch copy; ``memo=False``: the whole replay, no remembered runs."""
        task = self.task
        met, blocked = self._checks(world)
        steps, asks, path = self._replay(world.scratch(state), state, memo)
        if steps is None:
            return OracleFacts(task.id, met, blocked, None, cap=self.cap)
        return OracleFacts(task.id, met, blocked, steps, asks, path, self.cap)

    def _replay(self, scratch: PhoneWorld, state: bytes, memo: bool) -> tuple:
        """(steps or None, asks, path) of the expert played on ``scratch`` (at ``state``; it
        is changed) with no answers, asks answered by the simulated user, as
        :func:`~navrl.worlds.phone.expert.run_expert` plays it with ``max_steps=cap + 4``.

        The expert is deterministic and reads the world's state and its memory (the answers
        it has been given) alone, so from a state this run passes through, with the answers
        given so far, the expert's run is the rest of this one. ``memo``: each such (state,
        answers)'s run is remembered (``_TAILS``, by the state without its step counter,
        which only fault injection reads: sibling rollouts' detours and returns lead to the
        same states at other step counts), and a replay that reaches a remembered (state,
        answers) takes the rest of its run from there — where that gives exactly what the
        whole replay under the step budget gives (else: the whole replay). An ask-user task's
        expert asks first: its replays meet remembered runs after the ask (before
        2026-12-05 only runs before any ask were remembered, and 107 of an update's 262
        replays of ten or more steps were such tasks' replays that met none)."""
        task = self.task
        budget = self.cap + 4     # the expert may ask: room for its asks beyond the cap (an answer known saves a step)
        keys: list[tuple[tuple, int]] = []    # (the key of a state the run passed, the steps taken before it)
        if memo:
            keys.append((self._key(scratch, ()), 0))
            r = _use(_TAILS.get(keys[0][0]), 0, (), budget)
            if r is not None:
                return r
        user, memory = ProfileUser(), Memory()
        path: list[tuple[str, str]] = []
        n, end = 0, None          # the step under way; "ok" (goal met or wall reached) / "fail" when the run ended
        try:
            while n < budget:
                n += 1
                s = expert_step(task, scratch, memory)
                kind = s.intent[0]
                if kind == "ask":
                    answer = user.answer(task, s.intent[1])
                    path.append(("ask", answer))
                    memory.qa.append((s.intent[1], answer))
                    continue
                if kind == "complete":
                    wall = task.blocked(scratch)
                    met = task.family is not Family.ANSWER and task.check(scratch)
                    path.append(("end" if met or wall else "stage", ""))
                    end = "ok" if task.check(scratch, s.intent[1]) or wall else "fail"
                    break
                obs = scratch.observe()
                tag = "int" if interruption(Ev(scratch, task, Memory())) is not None else "stage"
                act = intent_action(obs, s.intent)
                path.append((tag, act.to_text()))
                scratch.act(act)
                if memo:
                    k = self._key(scratch, tuple(memory.qa))
                    hit = _TAILS.get(k)
                    if hit is not None:
                        r = _use(hit, n, path, budget)
                        if r is None:       # not exact under this budget (rare): the whole replay
                            return self._replay(scratch.scratch(state), state, False)
                        _remember(keys, n + hit[1], r)
                        return r
                    keys.append((k, n))
        except ExpertStuck:      # the agent made the task impossible (e.g. deleted what it needed)
            end = "fail"
        if end is None:          # out of steps: failed, unless the last one reached the wall
            r = (n, tuple(t for k, t in path if k == "ask"), tuple(path)) if task.blocked(scratch) else _FAIL
            if memo:
                _TAILS.put(keys[0][0], ("top", r))     # (this budget's answer: for this state alone)
            return r
        r = (n, tuple(t for k, t in path if k == "ask"), tuple(path)) if end == "ok" else _FAIL
        if memo:
            _remember(keys, n, r)
        return r

    def _key(self, scratch: PhoneWorld, qa: tuple) -> tuple:
        """``_TAILS``'s key of ``scratch``'s state with the answers ``qa`` given: its pickle with
        the step counter set to 0 (only fault injection reads it: a scratch world has none)."""
        scratch.state.steps = 0
        b = scratch.state_bytes()
        return (self.task.id, self.cap, scratch.perturb, hash(b), len(b), qa)

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


_TAILS: BoundedCache[tuple, tuple] = BoundedCache(100_000)
"""The expert's run from a state with the answers in its key (:meth:`TaskOracle._replay`):
("ok", steps, asks, path) when it meets the goal or reaches the wall in ``steps`` steps (``asks``:
the answers it is given on the way, ``path`` its steps), ("fail", steps) when it gets stuck or
completes short of both at its ``steps``-th step (both whatever the budget), or ("top", result)
when it ran out of steps (that state's own replay alone, with no answers)."""

_FAIL = (None, (), ())


def _use(hit: tuple | None, n: int, prefix: list | tuple, budget: int) -> tuple | None:
    """The replay's (steps, asks, path) from a remembered run ``hit`` of the state reached
    after ``n`` steps ``prefix`` (device actions and asks), or None when there is no hit or it
    does not settle the replay under ``budget`` steps."""
    if hit is None:
        return None
    if hit[0] == "ok" and n + hit[1] <= budget:
        return n + hit[1], tuple(t for k, t in prefix if k == "ask") + hit[2], tuple(prefix) + hit[3]
    if hit[0] == "fail" and n + hit[1] <= budget:
        return _FAIL
    if hit[0] == "top" and n == 0:
        return hit[1]
    return None


def _remember(keys: list[tuple[tuple, int]], total: int, r: tuple) -> None:
    """Remember the run of each state ``k`` of ``keys`` (reached after the replay's ``i``-th
    step, for each ``(k, i)``) from the replay's result ``r`` ending at its ``total``-th step."""
    steps, asks, path = r
    for k, i in keys:
        _TAILS.put(k, ("fail", total - i) if steps is None else
                   ("ok", steps - i, tuple(t for kind, t in path[i:] if kind == "ask"), path[i:]))
