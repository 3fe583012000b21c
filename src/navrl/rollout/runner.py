"""The batched episode runner (DESIGN.md §1): plan, ground, act, judge, for many episodes at once.

Planner calls are batched across all live episodes, and so are the device actions of a
step; what a step does and earns is :mod:`navrl.rollout.step` (the Gymnasium env plays by
the same rules). Infrastructure failures (DeviceError, JudgeUnavailable) end an episode as
``valid=False`` with its reason; no reward touches it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Generator

from navrl.agent.grounders.base import Grounder
from navrl.api.client import APIRequestError, APIUnavailable
from navrl.agent.planner import Planner, PlannerContext
from navrl.device.base import Device, DeviceError
from navrl.device.pool import step_devices
from navrl.imaging import phash64
from navrl.judge.base import AskJudge, JudgeUnavailable, StepJudge, TerminalJudge
from navrl.judge.rewards import DEFAULT_REWARDS, RewardConfig
from navrl.judge.verdicts import EndReason
from navrl.lru import BoundedCache
from navrl.observation import Observation
from navrl.rollout.episode import Episode
from navrl.rollout.records import Trajectory
# ui_hash's home is navrl.rollout.step; imported here too for callers that import it from the runner
from navrl.rollout.step import Stepper, resume, ui_hash  # noqa: F401
from navrl.tasks.spec import TaskSpec
from navrl.tasks.user import ProfileUser

if TYPE_CHECKING:  # pragma: no cover
    from navrl.device.pool import DeviceFarm


@dataclass
class RunnerConfig:
    record_frames: bool = False
    """Keep a PNG of every screen (for filmstrips and replay)."""
    phash: bool = False
    """Compute the 64-bit perceptual hash of every before-screen (GiGPPO needs it)."""
    max_steps: int | None = None
    """Cap on every task's step budget (a task's own smaller budget still applies)."""


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
        self._phash: BoundedCache[tuple[str, str], int] = BoundedCache(20_000)

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
        step = self._stepper()
        eps: list[Episode] = []
        for i, task in enumerate(tasks):
            t0 = time.perf_counter()
            dev = devices[i] if devices is not None else task.make_device()
            ep = Episode(task, dev, groups[i] if groups is not None else i)
            try:
                ep.obs = dev.observe()
                ep.snap = step.snapshot(dev)
            except DeviceError as e:
                self._invalidate(ep, e.reason)
            tm["device"] += time.perf_counter() - t0
            eps.append(ep)
        try:
            self._loop(eps, step, on_step)
        except APIRequestError as e:
            # a rejected request (wrong key, bad request) ends the batch: hand the episodes that
            # did finish to the caller on the exception, so none of them is lost
            e.completed = [ep.traj for ep in eps if ep.done]  # type: ignore[attr-defined]
            raise
        return [ep.traj for ep in eps]

    def _loop(self, eps: list[Episode], step: Stepper, on_step: Callable[[int], None] | None) -> None:
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
            acting: list[tuple[Episode, Generator, object]] = []
            for ep, out in zip(live, outs):
                gen = step.advance(ep, out)
                action = self._guard(ep, lambda g=gen: next(g))
                if action is not None:
                    acting.append((ep, gen, action))
                elif on_step is not None:
                    on_step(1)
            if acting:
                t0 = time.perf_counter()
                results = step_devices([ep.device for ep, _, _ in acting], [a for _, _, a in acting],
                                       step.wants_snapshots())
                tm["device"] += time.perf_counter() - t0
                for (ep, gen, _), res in zip(acting, results):
                    self._guard(ep, lambda g=gen, r=res: resume(g, r))
                    if on_step is not None:
                        on_step(1)

    def _guard(self, ep: Episode, stage: Callable[[], object]) -> object | None:
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
    def _stepper(self) -> Stepper:
        """The step rules with this runner's parts and counters (built per run, so parts
        swapped between runs take effect)."""
        return Stepper(self.grounder, self.step_judge, self.ask_judge, self.terminal_judge, self.user, self.rewards,
                       max_steps=self.cfg.max_steps, record_frames=self.cfg.record_frames,
                       phash=self._screen_phash if self.cfg.phash else None, timings=self.timings)

    def _screen_phash(self, obs: Observation, shash: str) -> int:
        """The screen's perceptual hash, once per distinct screen (sibling rollouts revisit the
        same screens; rendering and hashing one costs ~2 ms)."""
        key = (obs.platform or "", shash)
        h = self._phash.get(key)
        if h is None:
            h = self._phash.put(key, phash64(obs.screenshot))
        return h

    def _invalidate(self, ep: Episode, reason: str) -> None:
        tr = ep.traj
        tr.valid, tr.invalid_reason, tr.end = False, reason, EndReason.INVALID.value
        tr.terminal_reward, tr.success = 0.0, False
        for s in tr.steps:
            s.reward = 0.0
        ep.done = True
