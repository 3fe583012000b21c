"""The state of one live episode: its device and screen, what it has planned, asked and seen.

The batched runner keeps one per task it runs and the Gymnasium env one per reset; the
shared step logic (:mod:`navrl.rollout.step`) reads and updates it.
"""
from __future__ import annotations

from navrl.device.base import Device
from navrl.judge.base import PastStep
from navrl.observation import Observation
from navrl.planning import Memory
from navrl.rollout.records import Trajectory
from navrl.tasks.task import Task, TaskError


class Episode:
    """One episode in progress; ``traj`` is its record, ``done`` once it has ended."""

    def __init__(self, task: Task, device: Device, group: int):
        self.task, self.device = task, device
        # the full record once the device shows the task (:meth:`record_task`): a page may state
        # its goal, which its own device then reads at the start, not a second page before it
        self.traj = Trajectory(task={"id": task.id}, group=group)
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

    def record_task(self) -> None:
        """Fill the trajectory's task record (once). A goal that cannot be read because the
        device failed first is left out: the episode is masked anyway."""
        if len(self.traj.task) > 1:
            return
        try:
            self.traj.task = self.task.to_dict()
        except TaskError as e:
            self.traj.task = {"id": self.task.id, "goal_error": str(e)}

    def look(self) -> None:
        """Note the current screen as the last one seen in its app."""
        app = self.obs.app if self.obs is not None else None
        if app:
            self.last_screen[app] = self.obs
            if app in self.apps:
                self.apps.remove(app)
            self.apps.append(app)

    def seen_texts(self, max_texts: int = 32) -> tuple[str, ...]:
        """Episode memory: the texts of the last screen of each app used before the current one,
        the most recent app first (what a multi-app task carries over: a code, an amount, an
        address, a day; a third app's task may need what the first one showed)."""
        texts: list[str] = []
        for prev in reversed(self.used_apps()):
            for n in self.last_screen[prev].nodes:
                for t in (n.label, n.value):
                    if t and t[:80] not in texts:
                        texts.append(t[:80])
        return tuple(texts[:max_texts])

    def used_apps(self) -> tuple[str, ...]:
        """Apps used earlier in this episode, not the one on screen, in order of last use."""
        current = self.obs.app if self.obs is not None else None
        return tuple(a for a in self.apps if a != current)
