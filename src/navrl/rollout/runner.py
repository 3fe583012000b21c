"""The batched episode runner (DESIGN.md §1): plan, ground, act, judge, for many episodes at once.

Planner calls are batched across all live episodes. Infrastructure failures
(DeviceError, JudgeUnavailable) end an episode as ``valid=False`` with its reason; no
reward touches it.
"""
from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Generator

from navrl.actions import ActionError, ActionKind
from navrl.agent.grounders.base import Grounder, GroundingError
from navrl.api.client import APIRequestError, APIUnavailable
from navrl.agent.plan import UNPARSEABLE, parse_plan
from navrl.agent.planner import Planner, PlannerContext
from navrl.device.base import Device, DeviceError
from navrl.device.pool import step_devices
from navrl.imaging import phash64
from navrl.judge.base import (AskJudge, JudgeUnavailable, PastStep, StepContext, StepJudge, TerminalContext,
                              TerminalJudge)
from navrl.judge.rewards import DEFAULT_REWARDS, RewardConfig
from navrl.judge.verdicts import AskVerdict, EndReason, StepVerdict, TerminalVerdict
from navrl.observation import Observation
from navrl.planning import Memory
from navrl.rollout.records import Step, Trajectory
from navrl.tasks.spec import TaskSpec
from navrl.tasks.user import ProfileUser

if TYPE_CHECKING:  # pragma: no cover
    from navrl.device.pool import DeviceFarm


def ui_hash(obs: Observation) -> str:
    h = hashlib.blake2b(digest_size=8)
    h.update((obs.app or "").encode())
    for n in obs.nodes:
        h.update(f"{n.role}|{n.label}|{n.value}|{n.focused}|{n.bounds}".encode())
    return h.hexdigest()


@dataclass
class RunnerConfig:
    record_frames: bool = False
    """Keep a PNG of every screen (for filmstrips and replay)."""
    phash: bool = False
    """Compute the 64-bit perceptual hash of every before-screen (GiGPPO needs it)."""
    max_steps: int | None = None
    """Cap on every task's step budget (a task's own smaller budget still applies)."""


class _Episode:
    def __init__(self, task: TaskSpec, device: Device, group: int):
        self.task, self.device = task, device
        self.traj = Trajectory(task=task.to_dict(), group=group)
        self.memory = Memory()
        self.history: list[PastStep] = []
        self.plans: list[tuple[str, str]] = []
        self.remaining = ""
        self.screens: list[Observation] = []
        self.seen: set[tuple[str, str]] = set()
        self.last_screen: dict[str, Observation] = {}   # app -> the last screen seen in it
        self.apps: list[str] = []                       # apps in order of last use
        self.done = False
        self.obs: Observation | None = None
        self.snap: object | None = None

    def look(self) -> None:
        """Note the current screen as the last one seen in its app."""
        app = self.obs.app if self.obs is not None else None
        if app:
            self.last_screen[app] = self.obs
            if app in self.apps:
                self.apps.remove(app)
            self.apps.append(app)

    def seen_texts(self, max_texts: int = 24) -> tuple[str, ...]:
        """Episode memory: the texts of the last screen of the app used before the current one
        (what a multi-app task carries over: a code, an amount, an address, a day)."""
        current = self.obs.app if self.obs is not None else None
        prev = next((a for a in reversed(self.apps) if a != current), None)
        if prev is None:
            return ()
        texts: list[str] = []
        for n in self.last_screen[prev].nodes:
            for t in (n.label, n.value):
                if t and t[:80] not in texts:
                    texts.append(t[:80])
        return tuple(texts[:max_texts])


class EpisodeRunner:
    def __init__(self, planner: Planner, grounder: Grounder, step_judge: StepJudge, ask_judge: AskJudge,
                 terminal_judge: TerminalJudge, user: ProfileUser | None = None,
                 rewards: RewardConfig = DEFAULT_REWARDS, config: RunnerConfig | None = None):
        self.planner, self.grounder = planner, grounder
        self.step_judge, self.ask_judge, self.terminal_judge = step_judge, ask_judge, terminal_judge
        self.user = user or ProfileUser()
        self.rewards = rewards
        self.cfg = config or RunnerConfig()
        self.timings = {"device": 0.0, "planner": 0.0, "grounder": 0.0, "judge": 0.0, "total": 0.0}
        self._phash: OrderedDict[tuple[str, str], int] = OrderedDict()

    def run(self, tasks: list[TaskSpec], devices: "list[Device] | DeviceFarm | None" = None,
            groups: list[int] | None = None, on_step: Callable[[int], None] | None = None) -> list[Trajectory]:
        """Run one episode per task side by side.

        ``devices``: one device per task, or a farm (anything with ``lease_batch`` and
        ``release_batch``: :class:`navrl.device.pool.DevicePool`, the Ray farm) that leases
        them for this batch and gets them back at the end; default: ``task.make_device()``.
        """
        t_start = time.perf_counter()
        tm = self.timings
        farm = devices if hasattr(devices, "lease_batch") else None
        if farm is not None:
            t0 = time.perf_counter()
            devices = farm.lease_batch(tasks)
            tm["device"] += time.perf_counter() - t0
        try:
            trajs = self._run(tasks, devices, groups, on_step)  # type: ignore[arg-type]
        finally:
            if farm is not None:
                farm.release_batch(devices)
        tm["total"] += time.perf_counter() - t_start
        return trajs

    def _run(self, tasks: list[TaskSpec], devices: list[Device] | None, groups: list[int] | None,
             on_step: Callable[[int], None] | None) -> list[Trajectory]:
        tm = self.timings
        eps: list[_Episode] = []
        for i, task in enumerate(tasks):
            t0 = time.perf_counter()
            dev = devices[i] if devices is not None else task.make_device()
            ep = _Episode(task, dev, groups[i] if groups is not None else i)
            try:
                ep.obs = dev.observe()
                ep.snap = self._snap(dev)
            except DeviceError as e:
                self._invalidate(ep, e.reason)
            tm["device"] += time.perf_counter() - t0
            eps.append(ep)
        try:
            self._loop(eps, on_step)
        except APIRequestError as e:
            # a rejected request (wrong key, bad request) ends the batch: hand the episodes that
            # did finish to the caller on the exception, so none of them is lost
            e.completed = [ep.traj for ep in eps if ep.done]  # type: ignore[attr-defined]
            raise
        return [ep.traj for ep in eps]

    def _loop(self, eps: list[_Episode], on_step: Callable[[int], None] | None) -> None:
        tm = self.timings
        while True:
            live = [ep for ep in eps if not ep.done]
            if not live:
                break
            for ep in live:
                ep.look()
            ctxs = [PlannerContext(ep.task, ep.obs, list(ep.plans), ep.remaining, list(ep.memory.qa), ep.device,
                                   ep.seen_texts()) for ep in live]
            t0 = time.perf_counter()
            try:
                outs = self.planner.plan(ctxs)
            except APIUnavailable:   # an API planner that stays unreachable: infrastructure, masked
                for ep in live:
                    self._invalidate(ep, "planner_unavailable")
                continue
            tm["planner"] += time.perf_counter() - t0
            # each episode's step runs up to its device action; then all device actions run
            # together (remote hosts and real devices in parallel); then each step is judged
            acting: list[tuple[_Episode, Generator, object]] = []
            for ep, out in zip(live, outs):
                gen = self._advance(ep, out)
                action = self._guard(ep, lambda g=gen: next(g))
                if action is not None:
                    acting.append((ep, gen, action))
                elif on_step is not None:
                    on_step(1)
            if acting:
                t0 = time.perf_counter()
                results = step_devices([ep.device for ep, _, _ in acting], [a for _, _, a in acting],
                                       self._wants_snapshots())
                tm["device"] += time.perf_counter() - t0
                for (ep, gen, _), res in zip(acting, results):
                    if isinstance(res, BaseException):
                        self._guard(ep, lambda g=gen, r=res: g.throw(r))
                    else:
                        self._guard(ep, lambda g=gen, r=res: g.send(r))
                    if on_step is not None:
                        on_step(1)

    def _guard(self, ep: _Episode, stage: Callable[[], object]) -> object | None:
        """Run one stage of an episode's step; infrastructure failures mask the episode."""
        try:
            return stage()
        except StopIteration:
            return None
        except DeviceError as e:
            self._invalidate(ep, e.reason)
        except JudgeUnavailable:
            self._invalidate(ep, JudgeUnavailable.reason)
        return None

    # ------------------------------------------------------------------ one step
    def _screen_phash(self, obs: Observation, shash: str) -> int:
        """The screen's perceptual hash, once per distinct screen (sibling rollouts revisit the
        same screens; rendering and hashing one costs ~2 ms)."""
        key = (obs.platform or "", shash)
        h = self._phash.get(key)
        if h is None:
            h = self._phash[key] = phash64(obs.screenshot)
            if len(self._phash) > 20_000:
                self._phash.popitem(last=False)
        return h

    def _snap(self, dev: Device) -> object | None:
        return dev.snapshot() if self._wants_snapshots() else None

    def _wants_snapshots(self) -> bool:
        from navrl.judge.oracle import OracleJudge
        return any(isinstance(j, OracleJudge) for j in (self.step_judge, self.terminal_judge))

    def _advance(self, ep: _Episode, out) -> Generator:
        """One step of one episode, as a generator: it yields the device action (if any),
        receives ``(observation after, snapshot)`` and finishes the step with the judge."""
        tm = self.timings
        task, obs = ep.task, ep.obs
        assert obs is not None
        t = len(ep.traj.steps)
        shash = ui_hash(obs)
        st = Step(t=t, output=out.text, parsed=False, screen_hash=shash, ui_text=obs.ui_text(), prompt=out.prompt,
                  token_ids=out.token_ids, logprobs=out.logprobs, value=out.value, usage=dict(out.usage))
        if self.cfg.record_frames:
            ep.traj.frames.append(obs.png)
        if self.cfg.phash:
            st.phash = self._screen_phash(obs, shash)
        ep.traj.steps.append(st)
        ep.traj.cost += float(st.usage.get("cost", 0.0) or 0.0)
        ep.screens = (ep.screens + [obs])[-3:]
        plan = parse_plan(out.text)
        budget = min(task.max_steps, self.cfg.max_steps) if self.cfg.max_steps else task.max_steps
        if plan is UNPARSEABLE:
            st.kind, st.reward, st.verdict = "unparseable", self.rewards.unparseable, StepVerdict.FAIL.value
            st.judge_reason = "empty or unparseable planner output"
            ep.history.append(PastStep("", None, shash, st.verdict))
            return self._maybe_budget(ep, budget)
        st.parsed, st.reasoning, st.step, st.remaining = True, plan.reasoning, plan.step, plan.remaining
        ep.plans.append((plan.reasoning, plan.step))
        ep.remaining = plan.remaining
        t0 = time.perf_counter()
        try:
            action = self.grounder.ground(plan.step, obs)
            action.validate(obs.screen_size)
        except (GroundingError, ActionError) as e:
            action = None
            st.judge_reason = f"grounding failed: {e}"
        tm["grounder"] += time.perf_counter() - t0
        before_snap = ep.snap
        if action is not None and action.kind is ActionKind.COMPLETE:
            st.kind, st.action = "complete", action.to_text()
            ep.traj.answer = action.text
            return self._finish(ep, EndReason.COMPLETE)
        if action is not None and action.kind is ActionKind.ASK_USER:
            st.kind, st.action = "ask_user", action.to_text()
            ans = self.user.answer(task, action.text)
            st.user_answer = ans
            ctx = StepContext(task, obs, obs, plan, action, list(ep.history), ep.memory, shash, before_snap, before_snap)
            t0 = time.perf_counter()
            j = self.ask_judge.judge_ask(ctx)
            tm["judge"] += time.perf_counter() - t0
            st.verdict, st.reward, st.judge_reason = j.verdict.value, self.rewards.ask(j.verdict), j.reason
            ep.memory.qa.append((action.text, ans))
            ep.history.append(PastStep(plan.step, st.action, shash, st.verdict))
            return self._maybe_budget(ep, budget)
        after = obs
        if action is None:
            st.kind = "ungrounded"
        else:
            st.action = action.to_text()
            key = (shash, st.action)
            if key in ep.seen:
                ep.traj.loops += 1
            ep.seen.add(key)
            after, ep.snap = yield action   # run() executes the device actions of all episodes together
        ctx = StepContext(task, obs, after, plan, action, list(ep.history), ep.memory, shash, before_snap, ep.snap)
        t0 = time.perf_counter()
        j = self.step_judge.judge_step(ctx)
        tm["judge"] += time.perf_counter() - t0
        st.verdict, st.judge_reason = j.verdict.value, (st.judge_reason + "; " if st.judge_reason else "") + j.reason
        st.reward = self.rewards.step(j.verdict)
        ep.history.append(PastStep(plan.step, st.action, shash, st.verdict))
        ep.obs = after
        self._maybe_budget(ep, budget)

    def _maybe_budget(self, ep: _Episode, budget: int) -> None:
        if len(ep.traj.steps) >= budget and not ep.done:
            self._finish(ep, EndReason.BUDGET)

    def _finish(self, ep: _Episode, end: EndReason) -> None:
        ep.traj.end = end.value
        if self.cfg.record_frames and ep.obs is not None:
            ep.traj.frames.append(ep.obs.png)
        ctx = TerminalContext(ep.task, end, ep.traj.answer, ep.screens, list(ep.history), ep.snap)
        t0 = time.perf_counter()
        j = self.terminal_judge.judge_terminal(ctx)
        self.timings["judge"] += time.perf_counter() - t0
        ep.traj.terminal_verdict, ep.traj.terminal_reason = j.verdict.value, j.reason
        ep.traj.terminal_reward = self.rewards.terminal(j.verdict, end)
        ep.traj.success = j.verdict is TerminalVerdict.SUCCESS
        ep.done = True

    def _invalidate(self, ep: _Episode, reason: str) -> None:
        tr = ep.traj
        tr.valid, tr.invalid_reason, tr.end = False, reason, EndReason.INVALID.value
        tr.terminal_reward, tr.success = 0.0, False
        for s in tr.steps:
            s.reward = 0.0
        ep.done = True
