"""What an evaluation measured: :class:`EvalResult` (success with its interval, verdict
counts, masked episodes, cost) built from trajectories by :func:`summarize`."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from navrl.errors import Outage
from navrl.eval.intervals import paired_counts, paired_difference_interval, wilson_interval
from navrl.rollout.records import Trajectory


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


def paired_gain_interval(after: "EvalResult", before: "EvalResult", z: float = 1.96) -> tuple[float, float, int]:
    """Paired 95% interval of success(after) - success(before) over the tasks both evaluated
    validly, matched by task id; returns (low, high, number of matched tasks)."""
    a, b, c, d = paired_counts(after.successes_by_task(), before.successes_by_task())
    lo, hi = paired_difference_interval(a, b, c, d, z=z)
    return lo, hi, a + b + c + d


def failures_fixed(before: float | None, after: float | None) -> float | None:
    """The share of the earlier planner's failures the later one fixes, ``(after - before) / (1 -
    before)``: a gain normalised by what was left to fix, as issue 26 compares RL with SFT here and
    in the transcript (negative where it got worse; None where either is unmeasured or nothing was
    left to fix)."""
    if before is None or after is None or before >= 1.0:
        return None
    return (after - before) / (1.0 - before)
