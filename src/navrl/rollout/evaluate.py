"""Evaluate a planner on a suite: success rate with a 95% interval, verdict counts, cost."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.grounders.base import Grounder
from navrl.agent.planner import Planner
from navrl.api.client import APIRequestError
from navrl.errors import Outage
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


def paired_difference_interval(a: int, b: int, c: int, d: int, z: float = 1.96) -> tuple[float, float]:
    """95% interval of p1 - p2 for two proportions measured on the SAME n items (paired).

    Newcombe (1998, "Improved confidence intervals for the difference between binomial
    proportions based on paired data", Stat Med 17:2635-2650), method 10: the square-and-add
    combination of the two Wilson score intervals, corrected for the correlation phi of the
    paired outcomes (no continuity correction). The 2x2 table of the n = a + b + c + d pairs:

        a = both succeed          b = only the first succeeds
        c = only the second       d = both fail

    p1 = (a + b)/n, p2 = (a + c)/n, difference (b - c)/n. For the same tasks evaluated
    before and after training this is the interval to use; :func:`difference_interval`
    assumes independent samples and is too wide when the outcomes are correlated.
    """
    if min(a, b, c, d) < 0:
        raise ValueError(f"paired counts must be >= 0: a={a} b={b} c={c} d={d}")
    n = a + b + c + d
    if n == 0:
        return -1.0, 1.0
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, z)
    l2, u2 = wilson_interval(a + c, n, z)
    den = (a + b) * (c + d) * (a + c) * (b + d)
    phi = (a * d - b * c) / math.sqrt(den) if den > 0 else 0.0
    theta = (b - c) / n
    dl = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    du = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, theta - dl), min(1.0, theta + du)


def paired_counts(first: dict[str, bool], second: dict[str, bool]) -> tuple[int, int, int, int]:
    """(a, b, c, d) of two success vectors keyed by task id, over the ids in both."""
    ids = sorted(set(first) & set(second))
    a = sum(1 for i in ids if first[i] and second[i])
    b = sum(1 for i in ids if first[i] and not second[i])
    c = sum(1 for i in ids if not first[i] and second[i])
    return a, b, c, len(ids) - a - b - c


def paired_gain_interval(after: "EvalResult", before: "EvalResult", z: float = 1.96) -> tuple[float, float, int]:
    """Paired 95% interval of success(after) - success(before) over the tasks both evaluated
    validly, matched by task id; returns (low, high, number of matched tasks)."""
    a, b, c, d = paired_counts(after.successes_by_task(), before.successes_by_task())
    lo, hi = paired_difference_interval(a, b, c, d, z=z)
    return lo, hi, a + b + c + d


class EvalAborted(RuntimeError):
    """An evaluation stopped early (the endpoint rejected a request); ``result`` holds the
    episodes that finished before it, ``cause`` the error."""

    def __init__(self, message: str, result: "EvalResult", cause: BaseException):
        super().__init__(message)
        self.result, self.cause = result, cause


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
        """Successes / valid episodes (0.0 when there are none: check :attr:`measured`)."""
        return self.successes / self.n if self.n else 0.0

    @property
    def measured(self) -> bool:
        """False when every episode was masked: there is no success rate to report."""
        return self.n > 0

    def successes_by_task(self) -> dict[str, bool]:
        """Task id -> success, over the valid episodes (for paired comparisons)."""
        return {t.task.get("id"): bool(t.success) for t in self.trajectories if t.valid}

    def require_measured(self) -> "EvalResult":
        """Raise :class:`~navrl.errors.Outage` when every episode was masked."""
        if not self.measured:
            raise Outage(f"{self.suite}: no valid episodes, all {self.masked} masked "
                         f"({self.masked_reasons_text()}): nothing was measured")
        return self

    def masked_reasons_text(self) -> str:
        c = Counter(t.invalid_reason or "unknown" for t in self.trajectories if not t.valid)
        return ", ".join(f"{k} {v}" for k, v in sorted(c.items())) or "none"

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.n)

    def summary(self) -> str:
        if not self.measured:
            return (f"success: not measured: no valid episodes, all {self.masked} masked "
                    f"({self.masked_reasons_text()})\ncost ${self.cost:.4f}")
        lo, hi = self.interval
        v = ", ".join(f"{k} {c}" for k, c in sorted(self.verdicts.items()))
        t = ", ".join(f"{k} {c}" for k, c in sorted(self.terminal.items()))
        return (f"success: {100 * self.success_rate:.1f}% ({self.successes}/{self.n}) "
                f"[95% CI {100 * lo:.1f}-{100 * hi:.1f}]  masked: {self.masked}\n"
                f"step verdicts: {v}\nterminal verdicts: {t}\n"
                f"mean length {self.mean_length:.1f} steps, mean return {self.mean_return:+.2f}, cost ${self.cost:.4f}")

    def to_dict(self) -> dict:
        """Plain dict; with no valid episode the success, its interval and the means are None."""
        lo, hi = self.interval if self.measured else (None, None)
        return {"suite": self.suite, "n": self.n, "successes": self.successes,
                "success": self.success_rate if self.measured else None, "ci_low": lo, "ci_high": hi, "masked": self.masked, "verdicts": dict(self.verdicts),
                "terminal": dict(self.terminal), "mean_length": self.mean_length if self.measured else None,
                "mean_return": self.mean_return if self.measured else None,
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
        try:
            trajs += runner.run(chunk, devices=devices, on_step=progress)
        except APIRequestError as e:
            done = trajs + list(getattr(e, "completed", []))
            raise EvalAborted(f"{e} (evaluation stopped after {len(done)} of {len(tasks)} episodes)",
                              summarize(suite, done), e) from e
    return summarize(suite, trajs)
