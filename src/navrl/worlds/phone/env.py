"""``navrl/PhoneWorld-v0``: the phone world as a Gymnasium environment.

Actions are text in the planner's Step form (``Tap "Search"``, ``Type "shoes"``,
``Swipe up``, ``Go home``, ``Ask user: ...``, ``Complete: 42``), grounded by the
accessibility grounder. Rewards come from the oracle judges and the reward table of
docs/design.md §4b, so an episode here scores exactly like one in the trainer.
"""
from __future__ import annotations

import string

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.device.base import DeviceError
from navrl.worlds.phone.sim import PerturbConfig
from navrl.worlds.phone.sim.skin import get_skin
from navrl.worlds.phone.judges import OracleJudge
from navrl.judge.rewards import DEFAULT_REWARDS, RewardConfig
from navrl.judge.verdicts import EndReason
from navrl.planning import Plan, PlannerOutput
from navrl.rollout.episode import Episode
from navrl.rollout.step import Stepper, play
from navrl.worlds.phone.task import TaskSpec
from navrl.worlds.phone.suites import SUITES, suite_tasks
from navrl.tasks.user import ProfileUser

CHARSET = string.printable + "°•éèüöäñ€£–—’“”…"
MAX_TEXT = 8192


class PhoneWorldEnv(gym.Env):
    """Observation: {"screenshot": HxWx3 uint8, "ui": UI tree text, "goal": task goal}.

    ``gymnasium.make("navrl/PhoneWorld-v0", **kwargs)`` passes these constructor arguments:

    - ``suite``: whose tasks (``train``, ``test-ios``, ``test-android``, ``test-unseen``;
      default ``train``); each ``reset`` draws one of its first ``n_tasks`` instances (default 200);
    - ``task``: one fixed task instead, every episode: ``"TEMPLATE[:SEED]"`` of ``suite``
      (``"shop_checkout:3"``; `navrl tasks --suite train` lists the templates) or a ``TaskSpec``;
    - ``perturb``: the perturbations (pop-ups, shuffles, loading screens): ``None`` the suite's
      own, ``False`` none (a clean world), or a ``PerturbConfig``;
    - ``rewards``: the reward table (``navrl.judge.rewards``; default docs/design.md §4b's);
    - ``render_mode``: ``"rgb_array"`` for ``env.render()`` frames.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, suite: str = "train", task: TaskSpec | str | None = None, n_tasks: int = 200,
                 perturb: PerturbConfig | bool | None = None, rewards: RewardConfig = DEFAULT_REWARDS,
                 render_mode: str | None = None):
        if suite not in SUITES:
            raise ValueError(f"unknown suite {suite!r}; choose from {', '.join(SUITES)}")
        if perturb is True:
            perturb = None
        elif perturb is False:
            perturb = PerturbConfig.off()
        if isinstance(task, str):
            task = _task_from_name(task, suite, perturb)
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
        # the runner's step rules with the env's parts: an episode here scores as in the trainer
        self.stepper = Stepper(self.grounder, self.judge, self.judge, self.judge, self.user, self.rewards)
        self.episode = ep = Episode(self.task, self.task.make_device(), 0)
        self.device, self.memory, self.history = ep.device, ep.memory, ep.history
        ep.obs = self.device.observe()
        ep.record_task()
        ep.snap = self.stepper.snapshot(self.device)
        return self._obs(), {"task_id": self.task.id, "goal": self.task.goal}

    def step(self, action: str):
        assert self.task is not None, "call reset() first"
        ep = self.episode
        info: dict = {"task_id": self.task.id}
        # a text action is the Step line itself: there is no Reasoning / Remaining block to parse
        plan = Plan("", str(action).strip(), "")
        was_done = ep.done
        try:
            notes = play(self.stepper.advance(ep, PlannerOutput(str(action)), plan), self.device,
                         self.stepper.wants_snapshots())
        except DeviceError as e:
            # infrastructure failure: not the agent's fault; truncate with no reward
            info.update(invalid=True, invalid_reason=e.reason)
            return self._obs(), 0.0, False, True, info
        st = ep.traj.steps[-1]
        if notes.grounding_error is not None:
            info["grounding_error"] = notes.grounding_error
        if st.kind == "ask_user":
            info.update(verdict=st.verdict, user_answer=st.user_answer)
        elif st.kind != "complete":
            info.update(verdict=st.verdict, reason=notes.judge_reason)
        # the terminal reward is paid on the step that ends the episode, once (Gymnasium leaves
        # steps after the end undefined; they get their step reward only)
        if not ep.done or was_done:
            return self._obs(), st.reward, False, False, info
        tr = ep.traj
        info.update(terminal_verdict=tr.terminal_verdict, success=tr.success, end=tr.end)
        return (self._obs(), st.reward + tr.terminal_reward, EndReason(tr.end).finished,
                tr.end == EndReason.BUDGET.value, info)

    @property
    def obs(self):
        """The current screen (an :class:`~navrl.observation.Observation`)."""
        return self.episode.obs

    @property
    def t(self) -> int:
        """Steps taken since the last reset."""
        return len(self.episode.traj.steps)

    def render(self):
        if self.render_mode == "rgb_array":
            return np.asarray(self.obs.screenshot)
        return None

    # ------------------------------------------------------------------ helpers
    def _obs(self) -> dict:
        ui = self.obs.ui_text()[:MAX_TEXT]
        ui = "".join(c if c in CHARSET else "?" for c in ui)
        goal = "".join(c if c in CHARSET else "?" for c in self.task.goal)[:MAX_TEXT]
        return {"screenshot": np.asarray(self.obs.screenshot, dtype=np.uint8), "ui": ui, "goal": goal}


def _task_from_name(spec: str, suite: str, perturb: PerturbConfig | None) -> TaskSpec:
    """``"TEMPLATE[:SEED]"`` -> that instance of ``suite`` (its skin and layout)."""
    from navrl.worlds.phone.task import make_task
    name, _, seed = spec.partition(":")
    try:
        seed_i = int(seed) if seed else 0
    except ValueError:
        raise ValueError(f"bad task {spec!r}: use TEMPLATE[:SEED], e.g. shop_checkout:3") from None
    d = SUITES[suite]
    return make_task(name, seed_i, suite=suite, skin=d.skin, layout=d.layout, perturb=perturb)
