"""Task families drawn by learnability: spend rollouts where sibling rollouts can disagree.

A group-relative estimator learns nothing from a task group whose rollouts all succeed (a family
BC already solved) or all fail (a family the policy cannot reach yet); over a suite of many
families drawn uniformly — MiniWoB++'s 113 pages, of which BC solves most — most groups of an
update are like that. Following the learnability criterion of Foster and Foerster ("Learning to
Reason at the Frontier of Learnability", 2025; Tzannetos et al.'s ProCuRL, 2023, in the
curriculum setting), a task *family* (``Task.template``: a MiniWoB++ page, a phone-world
template) is weighted by ``p (1 - p)``, ``p`` its recent success rate: largest where half its
rollouts succeed, near 0 where it is solved or hopeless. Unlike prioritised level replay
(``navrl.rl.replay``) it needs no fixed pool: every draw is a fresh instance of a family.

Each update draws ``oversample x k`` fresh tasks from the source and keeps ``k`` of them without
replacement (Efraimidis and Spirakis' keys ``u^(1/w)``), each with weight

    w(family) = p (1 - p) + floor,      p = (s + 1/2) / (n + 1),

``s`` and ``n`` the family's successes and valid rollouts, each visit's counts added to the
earlier ones decayed by ``decay`` (so the rate follows the moving policy). An unvisited family
has p = 1/2, the largest weight: the first updates visit every family. The floor keeps solved
and hopeless families drawn now and then — the shared policy can unlearn the one and start to
reach the other. Pure bookkeeping over (family, success) pairs; the trainer draws and observes.

A family no rollout has solved yet looks hopeless after a few visits (p -> 0), and p (1 - p)
starves exactly the families RL has to discover on its own (measured: a MiniWoB++ page uniform
draws taught 0 -> 80% stayed at 0, docs/results/exploration.md §21). ``unsolved_visits`` N keeps
such a family at the largest weight, 1/4 + floor, for its first N visits (optimism in the face of
uncertainty, as a bandit's exploration bonus; prioritised level replay keeps a staleness share for
the same reason): after N visits without one success it falls to p (1 - p) + floor.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

__all__ = ["FamilyLearnability", "task_family"]


def task_family(task) -> str:
    """A task's family: its template (a task record or its dict form), else its id."""
    if isinstance(task, dict):
        return str(task.get("template") or task.get("id"))
    return str(getattr(task, "template", None) or getattr(task, "id", task))


@dataclass
class FamilyLearnability:
    """Decayed success counts per task family and the learnability-weighted draw over them."""

    decay: float = 0.5
    """Each visit multiplies a family's earlier counts by this before adding the new ones."""
    floor: float = 0.02
    """Added to every family's weight p (1 - p) (at most 0.25)."""
    unsolved_visits: int = 0
    """A family never solved keeps the largest weight (1/4 + floor) for this many visits; 0: off."""
    counts: dict[str, list[float]] = field(default_factory=dict)
    """family -> [successes, valid rollouts], decayed."""
    visits: dict[str, int] = field(default_factory=dict)
    """family -> collections it was observed in."""
    solved: set[str] = field(default_factory=set)
    """Families with at least one successful rollout so far."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.decay <= 1.0:
            raise ValueError(f"decay must be in [0, 1], got {self.decay}")
        if self.floor < 0.0:
            raise ValueError(f"floor must be >= 0, got {self.floor}")
        if self.unsolved_visits < 0:
            raise ValueError(f"unsolved_visits must be >= 0, got {self.unsolved_visits}")

    def rate(self, family: str) -> float:
        """The family's success rate estimate, (s + 1/2) / (n + 1): 1/2 before any visit."""
        s, n = self.counts.get(family, (0.0, 0.0))
        return (s + 0.5) / (n + 1.0)

    def weight(self, family: str) -> float:
        """p (1 - p) + floor; 1/4 + floor for a family never solved in its first
        ``unsolved_visits`` visits."""
        if family not in self.solved and self.visits.get(family, 0) < self.unsolved_visits:
            return 0.25 + self.floor
        p = self.rate(family)
        return p * (1.0 - p) + self.floor

    def observe(self, outcomes: Iterable[tuple[str, bool]]) -> None:
        """One collection's (family, success) pairs of valid rollouts: each family seen decays
        its counts once, then adds this collection's."""
        new: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for fam, ok in outcomes:
            new[fam][0] += int(bool(ok))
            new[fam][1] += 1
        for fam, (s, n) in new.items():
            old = self.counts.get(fam, [0.0, 0.0])
            self.counts[fam] = [self.decay * old[0] + s, self.decay * old[1] + n]
            self.visits[fam] = self.visits.get(fam, 0) + 1
            if s:
                self.solved.add(fam)

    def select(self, candidates: Sequence, k: int, rng,
               family: Callable[[object], str] = task_family) -> list:
        """``k`` of ``candidates`` without replacement, each kept with its family's weight
        (Efraimidis-Spirakis: the k largest keys u^(1/w)); in the candidates' order."""
        if k >= len(candidates):
            return list(candidates)
        keys = [rng.random() ** (1.0 / self.weight(family(t))) for t in candidates]
        keep = sorted(sorted(range(len(candidates)), key=lambda i: -keys[i])[:k])
        return [candidates[i] for i in keep]

    def summary(self, top: int = 5) -> dict:
        """What metrics.jsonl logs (TensorBoard the numbers): families seen, their mean weight,
        the ``top`` most weighted with their rates."""
        fams = sorted(self.counts, key=lambda f: (-self.weight(f), f))
        return {"learnability/families": len(fams),
                "learnability/mean_weight": round(sum(map(self.weight, fams)) / len(fams), 4) if fams else 0.0,
                "learnability/top": {f: round(self.rate(f), 3) for f in fams[:top]}}

    def state(self) -> dict:
        return {"decay": self.decay, "floor": self.floor, "unsolved_visits": self.unsolved_visits,
                "counts": {f: list(c) for f, c in self.counts.items()}, "visits": dict(self.visits),
                "solved": sorted(self.solved)}

    def load(self, st: dict) -> None:
        self.counts = {f: [float(c[0]), float(c[1])] for f, c in st["counts"].items()}
        # (a checkpoint from before the budget: every family counts as visited once, solved if it
        # has a success in its decayed counts)
        self.visits = {f: int(v) for f, v in st.get("visits", {f: 1 for f in self.counts}).items()}
        self.solved = set(st.get("solved", [f for f, c in self.counts.items() if c[0] > 0]))
