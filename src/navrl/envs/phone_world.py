"""``navrl/PhoneWorld-v0``: the phone world as a Gymnasium environment.

Actions are text in the planner's Step form (``Tap "Search"``, ``Type "shoes"``,
``Swipe up``, ``Go home``, ``Ask user: ...``, ``Complete: 42``), grounded by the
accessibility grounder. Rewards come from the oracle judges and the reward table of
DESIGN.md §4, so an episode here scores exactly like one in the trainer.
"""
from __future__ import annotations

import string

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from navrl.actions import ActionError, ActionKind
from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.grounders.base import GroundingError
from navrl.agent.plan import Plan
from navrl.device.base import DeviceError
from navrl.device.phone import PerturbConfig
from navrl.device.phone.skin import get_skin
from navrl.judge.base import PastStep, StepContext, TerminalContext
from navrl.judge.oracle import OracleJudge
from navrl.judge.rewards import DEFAULT_REWARDS, RewardConfig
from navrl.judge.verdicts import EndReason, TerminalVerdict
from navrl.planning import Memory
from navrl.rollout.runner import ui_hash
from navrl.tasks.spec import TaskSpec
from navrl.tasks.suites import SUITES, suite_tasks
from navrl.tasks.user import ProfileUser

CHARSET = string.printable + "°•éèüöäñ€£–—’“”…"
MAX_TEXT = 8192


class PhoneWorldEnv(gym.Env):
    """Observation: {"screenshot": HxWx3 uint8, "ui": UI tree text, "goal": task goal}."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, suite: str = "train", task: TaskSpec | None = None, n_tasks: int = 200,
                 perturb: PerturbConfig | None = None, rewards: RewardConfig = DEFAULT_REWARDS,
                 render_mode: str | None = None):
        if suite not in SUITES:
            raise ValueError(f"unknown suite {suite!r}")
        self.suite, self.fixed_task, self.n_tasks = suite, task, n_tasks
        self.perturb, self.rewards, self.render_mode = perturb, rewards, render_mode
        skin = get_skin(task.skin if task else SUITES[suite].skin)
        self.observation_space = spaces.Dict({
            "screenshot": spaces.Box(0, 255, (skin.height, skin.width, 3), np.uint8),
            "ui": spaces.Text(MAX_TEXT, min_length=0, charset=CHARSET),
            "goal": spaces.Text(MAX_TEXT, min_length=0, charset=CHARSET),
        })
        self.action_space = spaces.Text(512, min_length=1, charset=CHARSET)
        self.grounder = AccessibilityGrounder()
        self.judge = OracleJudge()
        self.user = ProfileUser()
        self._tasks: list[TaskSpec] | None = None
        self.task: TaskSpec | None = None

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if self.fixed_task is not None:
            self.task = self.fixed_task
        else:
            if self._tasks is None:
                self._tasks = suite_tasks(self.suite, self.n_tasks, perturb=self.perturb)
            self.task = self._tasks[int(self.np_random.integers(len(self._tasks)))]
        self.device = self.task.make_device()
        self.memory = Memory()
        self.history: list[PastStep] = []
        self.t = 0
        self.obs = self.device.observe()
        self.snap = self.device.snapshot()
        self.screens = [self.obs]
        return self._obs(), {"task_id": self.task.id, "goal": self.task.goal}

    def step(self, action: str):
        assert self.task is not None, "call reset() first"
        task, obs = self.task, self.obs
        shash = ui_hash(obs)
        plan = Plan("", str(action).strip(), "")
        info: dict = {"task_id": task.id}
        self.t += 1
        try:
            act = self.grounder.ground(plan.step, obs)
            act.validate(obs.screen_size)
        except (GroundingError, ActionError) as e:
            act, info["grounding_error"] = None, str(e)
        reward, terminated = 0.0, False
        try:
            if act is not None and act.kind is ActionKind.COMPLETE:
                return self._end(EndReason.COMPLETE, act.text, info)
            if act is not None and act.kind is ActionKind.ASK_USER:
                ans = self.user.answer(task, act.text)
                ctx = StepContext(task, obs, obs, plan, act, list(self.history), self.memory, shash, self.snap, self.snap)
                j = self.judge.judge_ask(ctx)
                reward = self.rewards.ask(j.verdict)
                self.memory.qa.append((act.text, ans))
                info.update(verdict=j.verdict.value, user_answer=ans)
                self.history.append(PastStep(plan.step, act.to_text(), shash, j.verdict.value))
            else:
                before = self.snap
                if act is not None:
                    self.device.act(act)
                    self.obs = self.device.observe()
                    self.snap = self.device.snapshot()
                    self.screens = (self.screens + [self.obs])[-3:]
                ctx = StepContext(task, obs, self.obs, plan, act, list(self.history), self.memory, shash, before,
                                  self.snap)
                j = self.judge.judge_step(ctx)
                reward = self.rewards.step(j.verdict)
                info.update(verdict=j.verdict.value, reason=j.reason)
                self.history.append(PastStep(plan.step, act.to_text() if act else None, shash, j.verdict.value))
        except DeviceError as e:
            # infrastructure failure: not the agent's fault; truncate with no reward
            info.update(invalid=True, invalid_reason=e.reason)
            return self._obs(), 0.0, False, True, info
        if self.t >= task.max_steps:
            _, r_term, _, trunc, info2 = self._end(EndReason.BUDGET, None, info)
            return self._obs(), reward + r_term, False, True, info2
        return self._obs(), reward, terminated, False, info

    def render(self):
        if self.render_mode == "rgb_array":
            return np.asarray(self.obs.screenshot)
        return None

    # ------------------------------------------------------------------ helpers
    def _end(self, end: EndReason, answer: str | None, info: dict):
        ctx = TerminalContext(self.task, end, answer, self.screens, list(self.history), self.snap)
        j = self.judge.judge_terminal(ctx)
        r = self.rewards.terminal(j.verdict, end)
        info.update(terminal_verdict=j.verdict.value, success=j.verdict is TerminalVerdict.SUCCESS, end=end.value)
        return self._obs(), r, end is EndReason.COMPLETE, end is EndReason.BUDGET, info

    def _obs(self) -> dict:
        ui = self.obs.ui_text()[:MAX_TEXT]
        ui = "".join(c if c in CHARSET else "?" for c in ui)
        goal = "".join(c if c in CHARSET else "?" for c in self.task.goal)[:MAX_TEXT]
        return {"screenshot": np.asarray(self.obs.screenshot, dtype=np.uint8), "ui": ui, "goal": goal}
