"""One step of one episode (docs/design.md §1): parse the plan, ground it, act, judge, reward.

:class:`Stepper` holds the rules of a step: the unparseable charge, grounding, the ask-user
branch (simulated user, ask judge, memory), the complete branch, the task world's action
space and its own end (``step_kinds``, ``ended``: navrl.tasks.task), the step judge with the
reward table, the step budget and the terminal judgement. The batched
:class:`~navrl.rollout.runner.EpisodeRunner` and the Gymnasium env both step through it, so
an episode scores the same in either.

A step is a generator: it yields the device action (if the step has one) and is resumed
with ``(observation after, snapshot)`` or the device's exception. The runner resumes all
episodes' steps after running their device actions together; :func:`play` runs one step
at once for callers with a single device.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Generator

from navrl.actions import Action, ActionError, ActionKind
from navrl.agent.grounders.base import Grounder, GroundingError
from navrl.agent.plan import UNPARSEABLE, Plan, Unparseable, parse_plan
from navrl.device.base import Device
from navrl.device.pool import step_devices
from navrl.judge.base import AskJudge, PastStep, StepContext, StepJudge, TerminalContext, TerminalJudge
from navrl.judge.rewards import RewardConfig
from navrl.judge.verdicts import EndReason, StepVerdict, TerminalVerdict
# ui_hash's home is navrl.observation (the judges read screen identities too); re-exported here
from navrl.observation import Observation, ui_hash  # noqa: F401
from navrl.planning import PlannerOutput
from navrl.rollout.episode import Episode
from navrl.rollout.records import Step
from navrl.tasks.task import hindsight_of, step_kinds_of, world_ended
from navrl.tasks.user import ProfileUser


@dataclass
class StepNotes:
    """What a finished step knows beyond its :class:`Step` record (the env reports these apart;
    the record joins them into ``judge_reason``)."""

    grounding_error: str | None = None
    judge_reason: str = ""           # the step or ask judge's own reason


class Stepper:
    """The rules of one step, for any number of episodes.

    ``timings`` (seconds spent grounding and judging) is added to in place, so a caller can
    hand in its own counters. ``phash(obs, ui_hash)``, when given, fills each step's
    perceptual hash. ``max_steps`` caps every task's own budget. ``hindsight``: an episode that
    declared completion without reaching its goal is relabelled where its task names the goal
    it did reach (:func:`navrl.tasks.task.hindsight_of`, from the final device snapshot, so
    only under judges that take snapshots): ``Trajectory.info["hindsight"]``.
    """

    def __init__(self, grounder: Grounder, step_judge: StepJudge, ask_judge: AskJudge,
                 terminal_judge: TerminalJudge, user: ProfileUser, rewards: RewardConfig, *,
                 max_steps: int | None = None, record_frames: bool = False,
                 phash: Callable[[Observation, str], int] | None = None, timings: dict | None = None,
                 hindsight: bool = False):
        self.grounder = grounder
        self.step_judge, self.ask_judge, self.terminal_judge = step_judge, ask_judge, terminal_judge
        self.user, self.rewards = user, rewards
        self.max_steps, self.record_frames, self.phash = max_steps, record_frames, phash
        self.timings = timings if timings is not None else {"grounder": 0.0, "judge": 0.0}
        self.hindsight = hindsight

    def wants_snapshots(self) -> bool:
        """Device snapshots are taken only for judges that read them (``wants_snapshots``: the oracle)."""
        return any(getattr(j, "wants_snapshots", False) for j in (self.step_judge, self.terminal_judge))

    def snapshot(self, device: Device) -> object | None:
        return device.snapshot() if self.wants_snapshots() else None

    def advance(self, ep: Episode, out: PlannerOutput, plan: Plan | Unparseable | None = None
                ) -> Generator[Action, tuple, StepNotes]:
        """One step of ``ep`` from the planner output ``out`` (parsed here unless ``plan`` is
        given); yields the device action, if any, and returns the step's :class:`StepNotes`."""
        tm, notes = self.timings, StepNotes()
        task, obs = ep.task, ep.obs
        assert obs is not None
        t = len(ep.traj.steps)
        shash = ui_hash(obs)
        st = Step(t=t, output=out.text, parsed=False, screen_hash=shash, ui_text=obs.ui_text(), prompt=out.prompt,
                  token_ids=out.token_ids, logprobs=out.logprobs, policy_logprobs=out.policy_logprobs,
                  value=out.value, usage=dict(out.usage))
        if self.record_frames:
            ep.traj.frames.append(obs.png)
        if self.phash is not None:
            st.phash = self.phash(obs, shash)
        ep.traj.steps.append(st)
        ep.traj.cost += float(st.usage.get("cost", 0.0) or 0.0)
        ep.screens = (ep.screens + [obs])[-3:]
        if plan is None:
            plan = parse_plan(out.text)
        budget = min(task.max_steps, self.max_steps) if self.max_steps else task.max_steps
        if plan is UNPARSEABLE:
            st.kind, st.reward, st.verdict = "unparseable", self.rewards.unparseable, StepVerdict.FAIL.value
            st.judge_reason = "empty or unparseable planner output"
            ep.history.append(PastStep("", None, shash, st.verdict))
            self._maybe_budget(ep, budget)
            return notes
        st.parsed, st.reasoning, st.step, st.remaining = True, plan.reasoning, plan.step, plan.remaining
        ep.plans.append((plan.reasoning, plan.step))
        ep.remaining = plan.remaining
        t0 = time.perf_counter()
        try:
            action = self.grounder.ground(plan.step, obs)
            action.validate(obs.screen_size)
        except (GroundingError, ActionError) as e:
            action = None
            notes.grounding_error = str(e)
            st.judge_reason = f"grounding failed: {e}"
        tm["grounder"] += time.perf_counter() - t0
        kinds = step_kinds_of(task)
        if action is not None and kinds is not None and action.kind.value not in kinds:
            # outside the world's action space: nothing happens, as for a step that does not ground
            notes.grounding_error = (f"this task's world takes no {action.kind.value} steps "
                                     f"(it takes {', '.join(sorted(kinds))})")
            st.judge_reason = notes.grounding_error
            action = None
        before_snap = ep.snap
        if action is not None and action.kind is ActionKind.COMPLETE:
            st.kind, st.action = "complete", action.to_text()
            ep.traj.answer = action.text
            self.finish(ep, EndReason.COMPLETE)
            return notes
        if action is not None and action.kind is ActionKind.ASK_USER:
            st.kind, st.action = "ask_user", action.to_text()
            ans = self.user.answer(task, action.text)
            st.user_answer = ans
            ctx = StepContext(task, obs, obs, plan, action, list(ep.history), ep.memory, shash, before_snap, before_snap)
            t0 = time.perf_counter()
            j = self.ask_judge.judge_ask(ctx)
            tm["judge"] += time.perf_counter() - t0
            st.verdict, st.reward, st.judge_reason = j.verdict.value, self.rewards.ask(j.verdict), j.reason
            notes.judge_reason = j.reason
            ep.memory.qa.append((action.text, ans))
            ep.history.append(PastStep(plan.step, st.action, shash, st.verdict))
            self._maybe_budget(ep, budget)
            return notes
        after = obs
        if action is None:
            st.kind = "ungrounded"
        else:
            st.action = action.to_text()
            key = (shash, st.action)
            if key in ep.seen:
                ep.traj.loops += 1
            ep.seen.add(key)
            after, ep.snap = yield action   # the caller runs the device action (the runner: all episodes' together)
        ctx = StepContext(task, obs, after, plan, action, list(ep.history), ep.memory, shash, before_snap, ep.snap)
        t0 = time.perf_counter()
        j = self.step_judge.judge_step(ctx)
        tm["judge"] += time.perf_counter() - t0
        st.verdict, st.judge_reason = j.verdict.value, (st.judge_reason + "; " if st.judge_reason else "") + j.reason
        notes.judge_reason = j.reason
        st.reward = self.rewards.step(j.verdict)
        left = j.steps_left
        if left is not None and j.verdict is StepVerdict.FAIL:
            st.reward += self.rewards.regress(left[1] - left[0])
        ep.history.append(PastStep(plan.step, st.action, shash, st.verdict, left))
        ep.obs = after
        if action is not None and world_ended(task, after):
            ep.screens = (ep.screens + [after])[-3:]   # the terminal judge reads the screen that ended it
            self.finish(ep, EndReason.DONE)      # the world's own end (a MiniWoB++ page's done)
            return notes
        self._maybe_budget(ep, budget)
        return notes

    def _maybe_budget(self, ep: Episode, budget: int) -> None:
        if len(ep.traj.steps) >= budget and not ep.done:
            self.finish(ep, EndReason.BUDGET)

    def finish(self, ep: Episode, end: EndReason) -> None:
        """End ``ep`` with the terminal judgement and its reward."""
        ep.traj.end = end.value
        if self.record_frames and ep.obs is not None:
            ep.traj.frames.append(ep.obs.png)
        ctx = TerminalContext(ep.task, end, ep.traj.answer, ep.screens, list(ep.history), ep.snap)
        t0 = time.perf_counter()
        j = self.terminal_judge.judge_terminal(ctx)
        self.timings["judge"] += time.perf_counter() - t0
        ep.traj.terminal_verdict, ep.traj.terminal_reason = j.verdict.value, j.reason
        ep.traj.terminal_reward = self.rewards.terminal(j.verdict, end)
        ep.traj.success = j.verdict is TerminalVerdict.SUCCESS
        if self.hindsight and end is EndReason.COMPLETE and not ep.traj.success:
            # the goal this declared completion did reach, if its task names one (timed as judging)
            t0 = time.perf_counter()
            other = hindsight_of(ep.task, ep.snap, ep.traj.answer)
            self.timings["judge"] += time.perf_counter() - t0
            if other is not None:
                ep.traj.info["hindsight"] = {"goal": other.goal, "task": other.to_dict()}
        ep.done = True


def resume(step: Generator, result: tuple | BaseException) -> object:
    """Hand a step its device result: ``(observation, snapshot)``, or the exception the device
    raised (thrown in, so it surfaces where the step waited for its action)."""
    if isinstance(result, BaseException):
        return step.throw(result)
    return step.send(result)


def play(step: Generator, device: Device, want_snapshot: bool) -> StepNotes:
    """Run one step to its end on ``device`` at once (no batching); its :class:`StepNotes`."""
    try:
        action = next(step)
        (result,) = step_devices([device], [action], want_snapshot)
        resume(step, result)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("a step yields at most one device action")
