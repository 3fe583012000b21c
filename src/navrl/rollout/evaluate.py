"""Evaluate a planner on a suite: success rate with a 95% interval, verdict counts, cost."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.grounders.base import Grounder
from navrl.agent.planner import Planner
from navrl.judge.oracle import OracleJudge
from navrl.rollout.records import Trajectory
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.tasks.spec import TaskSpec
from navrl.tasks.suites import suite_tasks


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a binomial proportion (sound at 0% and 100%)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, c - h), min(1.0, c + h)


def difference_interval(k1: int, n1: int, k2: int, n2: int, z: float = 1.96) -> tuple[float, float]:
    """95% interval of p1 - p2 for two independent proportions k1/n1 and k2/n2.

    Newcombe's hybrid score interval (method 10 of Newcombe 1998, built from the two
    Wilson intervals): sound near 0% and 100%, where the plain Wald interval is not.
    An interval that excludes 0 is a significant difference at the 5% level.
    """
    if n1 == 0 or n2 == 0:
        return -1.0, 1.0
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, z)
    l2, u2 = wilson_interval(k2, n2, z)
    d = p1 - p2
    return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


@dataclass
class EvalResult:
    suite: str
    n: int                      # valid episodes
    successes: int
    masked: int
    verdicts: Counter = field(default_factory=Counter)
    terminal: Counter = field(default_factory=Counter)
    mean_length: float = 0.0
    mean_return: float = 0.0
    cost: float = 0.0
    trajectories: list[Trajectory] = field(default_factory=list, repr=False)

    @property
    def success_rate(self) -> float:
        return self.successes / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.n)

    def summary(self) -> str:
        lo, hi = self.interval
        v = ", ".join(f"{k} {c}" for k, c in sorted(self.verdicts.items()))
        t = ", ".join(f"{k} {c}" for k, c in sorted(self.terminal.items()))
        return (f"success: {100 * self.success_rate:.1f}% ({self.successes}/{self.n}) "
                f"[95% CI {100 * lo:.1f}-{100 * hi:.1f}]  masked: {self.masked}\n"
                f"step verdicts: {v}\nterminal verdicts: {t}\n"
                f"mean length {self.mean_length:.1f} steps, mean return {self.mean_return:+.2f}, cost ${self.cost:.4f}")

    def to_dict(self) -> dict:
        lo, hi = self.interval
        return {"suite": self.suite, "n": self.n, "successes": self.successes, "success": self.success_rate,
                "ci_low": lo, "ci_high": hi, "masked": self.masked, "verdicts": dict(self.verdicts),
                "terminal": dict(self.terminal), "mean_length": self.mean_length, "mean_return": self.mean_return,
                "cost": self.cost}


def summarize(suite: str, trajs: list[Trajectory]) -> EvalResult:
    valid = [t for t in trajs if t.valid]
    res = EvalResult(suite, len(valid), sum(t.success for t in valid), len(trajs) - len(valid), trajectories=trajs)
    for t in valid:
        res.verdicts.update(s.verdict for s in t.steps if s.verdict)
        res.terminal[t.terminal_verdict or "none"] += 1
    if valid:
        res.mean_length = sum(t.length for t in valid) / len(valid)
        res.mean_return = sum(t.total_reward for t in valid) / len(valid)
    res.cost = sum(t.cost for t in trajs)
    return res


def evaluate(planner: Planner, suite: str, n: int | None = None, tasks: list[TaskSpec] | None = None,
             grounder: Grounder | None = None, batch_size: int = 64, seed: int = 0, record_frames: bool = False,
             progress=None, devices=None, judges=None, user=None) -> EvalResult:
    """Run ``planner`` on ``n`` instances of ``suite`` in batches; ``progress(k)`` after each step.

    ``devices``: a device farm (``navrl.device.ray_farm.make_device_factory``); default: a
    fresh phone world per episode. ``judges``: (step, ask, terminal) judges, default the
    oracle; ``user``: the simulated user, default the task's hidden profile."""
    tasks = tasks if tasks is not None else suite_tasks(suite, n, seed=seed)
    if judges is None:
        j = OracleJudge()
        judges = (j, j, j)
    step_j, ask_j, term_j = judges
    runner = EpisodeRunner(planner, grounder or AccessibilityGrounder(), step_j, ask_j, term_j, user=user,
                           config=RunnerConfig(record_frames=record_frames))
    trajs: list[Trajectory] = []
    for i in range(0, len(tasks), batch_size):
        chunk = tasks[i:i + batch_size]
        trajs += runner.run(chunk, devices=devices, on_step=progress)
    return summarize(suite, trajs)
