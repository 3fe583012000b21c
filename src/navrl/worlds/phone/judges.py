"""Oracle judges for the phone world, from the tasks' own checks (docs/design.md §4a).

- progress: the expert's remaining-step count went down (``progress="best"``: below the fewest
  the episode had reached, so a step that undoes the agent's own earlier regression — clearing
  the text it typed into the wrong field, returning to the app it left — is not progress again);
- hallucination: the reasoning quotes text that is not on the before-screen (nor in the
  goal, the typed text or the user's answers), or the step targets a label that is not there;
- repeating an action that already failed on the same screen: fail;
- anything after the goal is met: overcomplete.

The facts come with the snapshots: a task's phone world computes them where it lives
(:mod:`navrl.worlds.phone.facts`; after the expert's own action they follow from the previous
ones), so judging a step reads a few numbers — no world is built, restored or replayed.
Snapshots without facts (a world built without its task's oracle) are judged the old way,
on a scratch world restored from the snapshot, and counted in ``replays``.
"""
from __future__ import annotations

import re

from navrl.worlds.phone.sim import PhoneWorld
from navrl.judge.base import AskJudge, Judgement, StepContext, StepJudge, TerminalContext, TerminalJudge
from navrl.judge.verdicts import AskVerdict, EndReason, StepVerdict, TerminalVerdict
from navrl.lru import BoundedCache
from navrl.worlds.phone.expert import expert_remaining
from navrl.worlds.phone.facts import OracleFacts
from navrl.worlds.phone.task import Family, TaskSpec, answers_match
from navrl.tasks.user import UNKNOWN, ProfileUser

_QUOTED = re.compile(r'"([^"]{1,80})"')


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


class _Worlds:
    """One scratch PhoneWorld per task, restored from snapshots, for snapshots that carry no
    oracle facts. Scratch worlds have no infrastructure faults: the oracle judges the agent,
    not the farm."""

    def __init__(self, size: int = 256):
        self.cache: BoundedCache[str, PhoneWorld] = BoundedCache(size, touch=True)   # least recently used goes

    def at(self, task: TaskSpec, snapshot: bytes) -> PhoneWorld:
        w = self.cache.get(task.id)
        if w is None:
            w = task.make_device()
            w.faults = type(w.faults)()
            self.cache.put(task.id, w)
        w.restore(snapshot)
        return w


class OracleJudge(StepJudge, AskJudge, TerminalJudge):
    """All three oracle judges in one object (they share the remaining-steps cache)."""

    wants_snapshots = True

    def __init__(self, cap: int = 60, progress: str = "step"):
        if progress not in ("step", "best"):
            raise ValueError(f"progress must be 'step' or 'best', not {progress!r}")
        self.cap = cap
        self.progress = progress
        """``step``: a step that lowers the expert's remaining steps is progress (the design's rule).
        ``best``: only one that lowers them below the episode's best so far (:func:`best_so_far`)."""
        self.worlds = _Worlds()
        self._remaining: BoundedCache[tuple, tuple[int, tuple[str, ...]]] = BoundedCache(50_000)
        self._met: BoundedCache[tuple, bool] = BoundedCache(50_000)
        self.user = ProfileUser()
        self.replays = 0
        """Snapshots judged by restoring a scratch world (they carried no oracle facts)."""

    # ------------------------------------------------------------------ helpers
    def facts(self, task: TaskSpec, snapshot: object) -> OracleFacts | None:
        """The oracle facts ``snapshot`` carries for ``task``, if it carries usable ones."""
        f = getattr(snapshot, "oracle", None)
        if isinstance(f, OracleFacts) and f.task == task.id and f.cap >= self.cap:
            return f
        return None

    def remaining(self, task: TaskSpec, snapshot: bytes, answers: tuple) -> int:
        """Steps the expert needs from ``snapshot`` (``cap`` when it can't finish)."""
        f = self.facts(task, snapshot)
        if f is not None:
            return f.remaining(answers, self.cap)
        return self._expert(task, snapshot, answers)[0]

    def _expert(self, task: TaskSpec, snapshot: bytes, answers: tuple) -> tuple[int, tuple[str, ...]]:
        """(remaining steps, the expert's next device actions as text) from ``snapshot``."""
        key = (task.id, hash(snapshot), answers)
        r = self._remaining.get(key)
        if r is None:
            from navrl.worlds.phone.expert import Memory
            self.replays += 1
            w = self.worlds.at(task, snapshot)
            n, path = expert_remaining(task, w, Memory([("", a) for a in answers]), cap=self.cap)
            r = self._remember(key, n, tuple(a.to_text() for a in path))
        return r

    def _remember(self, key: tuple, n: int, path: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
        return self._remaining.put(key, (n, path))

    def goal_met(self, task: TaskSpec, snapshot: bytes) -> bool:
        if task.family is Family.ANSWER:
            return False   # an answer task is done only by answering
        f = self.facts(task, snapshot)
        if f is not None:
            return f.met
        key = (task.id, hash(snapshot))
        met = self._met.get(key)
        if met is None:
            self.replays += 1
            met = self._met.put(key, task.check(self.worlds.at(task, snapshot)))
        return met

    @staticmethod
    def hallucinated(ctx: StepContext) -> str | None:
        screen = {_norm(n.label) for n in ctx.before.nodes if n.label}
        screen |= {_norm(n.value) for n in ctx.before.nodes if n.value}
        allowed_text = _norm(ctx.task.goal) + " " + " ".join(_norm(a) for a in ctx.memory.answers())
        if ctx.action is not None and ctx.action.text:
            allowed_text += " " + _norm(ctx.action.text)
        for q in _QUOTED.findall(ctx.plan.reasoning):
            k = _norm(q)
            if k and k not in screen and k not in allowed_text:
                return f"reasoning mentions {q!r}, which is not on the screen"
        return None

    # ------------------------------------------------------------------ judges
    def judge_step(self, ctx: StepContext) -> Judgement:
        task = ctx.task
        if ctx.device_before is None or ctx.device_after is None:
            raise ValueError("the oracle judge needs device snapshots (phone world only)")
        if self.goal_met(task, ctx.device_before):
            return Judgement(StepVerdict.OVERCOMPLETE, "the task was already done")
        if ctx.action is None:
            return Judgement(StepVerdict.FAIL, "the step could not be grounded")
        act = ctx.action.to_text()
        for h in ctx.history:
            if h.action == act and h.screen_hash == ctx.screen_hash and h.verdict == StepVerdict.FAIL.value:
                return Judgement(StepVerdict.FAIL, "repeats an action that already failed on this screen")
        answers = tuple(ctx.memory.answers())
        f0, f1 = self.facts(task, ctx.device_before), self.facts(task, ctx.device_after)
        if f0 is not None and f1 is not None:
            r0, r1 = f0.remaining(answers, self.cap), f1.remaining(answers, self.cap)
            return self._progress(ctx, r0, r1)
        r0, path = self._expert(task, ctx.device_before, answers)
        if path and act == path[0]:
            # the expert is deterministic: after its own next action it needs one step fewer and
            # goes on as planned (no replay along the path the agent shares with the expert)
            r1, _ = self._remember((task.id, hash(ctx.device_after), answers), r0 - 1, path[1:])
        else:
            r1 = self.remaining(task, ctx.device_after, answers)
        return self._progress(ctx, r0, r1)

    def _progress(self, ctx: StepContext, r0: int, r1: int) -> Judgement:
        info, left = {"remaining_before": r0, "remaining_after": r1}, (r0, r1)
        if r1 >= r0:
            return Judgement(StepVerdict.FAIL, "no progress", info, left)
        if self.progress == "best" and r1 >= best_so_far(ctx.history, r0):
            return Judgement(StepVerdict.FAIL, "no progress past the episode's best (undoes its own regression)", info, left)
        h = self.hallucinated(ctx)
        if h:
            return Judgement(StepVerdict.FAIL, f"progress, but {h}", info, left)
        return Judgement(StepVerdict.SUCCESS, "progress", info, left)

    def judge_ask(self, ctx: StepContext) -> Judgement:
        q = ctx.action.text if ctx.action is not None else ""
        ans = self.user.answer(ctx.task, q or "")
        if ans == UNKNOWN:
            return Judgement(AskVerdict.UNJUSTIFIED, "the user has nothing to add for that question")
        if any(_norm(a) == _norm(ans) for a in ctx.memory.answers()):
            return Judgement(AskVerdict.UNJUSTIFIED, "already answered")
        if _norm(ans) in _norm(ctx.task.goal):
            return Judgement(AskVerdict.UNJUSTIFIED, "the goal already says it")
        return Judgement(AskVerdict.JUSTIFIED, "the information was missing")

    def judge_terminal(self, ctx: TerminalContext) -> Judgement:
        if ctx.end is EndReason.INVALID:
            return Judgement(TerminalVerdict.FAIL, "invalid episode")
        if ctx.device_final is None:
            raise ValueError("the oracle judge needs the final device snapshot")
        if ctx.end.finished:
            task = ctx.task
            f = self.facts(task, ctx.device_final)
            if f is not None:   # the facts the world shipped with its snapshot
                done = f.met and (task.family is not Family.ANSWER or answers_match(task.expected_answer, ctx.answer))
                blocked = f.blocked
            else:               # an old-style snapshot: restore a scratch world
                self.replays += 1
                w = self.worlds.at(task, ctx.device_final)
                done, blocked = task.check(w, ctx.answer), task.blocked(w)
            if done:
                return Judgement(TerminalVerdict.SUCCESS, "done and declared complete")
            if blocked:
                return Judgement(TerminalVerdict.BLOCKED_COMPLETE, "stopped at an unavoidable wall")
            return Judgement(TerminalVerdict.FAIL, "completion claimed but the task is not done")
        return Judgement(TerminalVerdict.FAIL, "step budget exhausted" if ctx.end is EndReason.BUDGET else "failed")


def best_so_far(history, r0: int) -> int:
    """The fewest remaining steps the episode has stood at before this step (whose before-count
    is ``r0``), from the ``steps_left`` of its judged steps: the lowest count any step reached,
    raised by whatever the world added *between* two steps (the next step began further away than
    the last one ended: not the agent's doing). A regression inside a step is charged to the
    agent, so the steps that undo it do not count as progress again; a pop-up that a step's own
    transition brings is such a regression too, and clearing it is progress again whenever the
    step that met it had made progress (the count then ends where it began)."""
    best = last = None
    for h in history:
        if h.steps_left is None:
            continue
        before, after = h.steps_left
        if best is None:
            best = before
        elif before > last:
            best += before - last
        best, last = min(best, before, after), after
    if best is None:
        return r0
    if r0 > last:
        best += r0 - last
    return min(best, r0)
