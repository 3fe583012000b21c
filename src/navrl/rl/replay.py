"""Prioritised replay of a fixed task pool (Prioritized Level Replay, Jiang, Grefenstette and
Rocktäschel, ICML 2021): revisit the tasks with the most left to learn.

A task's *score* is the mean absolute advantage of its last group of sibling rollouts: 0 when
every sibling did equally well at every shared state (nothing to learn from it now: solved,
or hopeless in the same way), large where siblings disagree. Tasks are drawn without
replacement from

    P = (1 - staleness_share) * P_rank(score) + staleness_share * P_stale,

with ``P_rank`` proportional to ``rank^(-1/temperature)`` (rank 1 = highest score) and
``P_stale`` proportional to the updates since a task was last drawn, so that no task's score
goes stale. Unvisited tasks come first (their score is unknown)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class PoolReplay:
    size: int
    temperature: float = 0.3
    staleness_share: float = 0.3
    scores: list[float | None] = field(default_factory=list)
    last_drawn: list[int] = field(default_factory=list)

    def __post_init__(self):
        if not self.scores:
            self.scores = [None] * self.size
            self.last_drawn = [-1] * self.size

    def probabilities(self, now: int) -> list[float]:
        """Draw probability of every pool task at update ``now`` (sums to 1)."""
        seen = [i for i, s in enumerate(self.scores) if s is not None]
        order = sorted(seen, key=lambda i: (-self.scores[i], i))
        rank_w = [0.0] * self.size
        for r, i in enumerate(order, start=1):
            rank_w[i] = r ** (-1.0 / self.temperature)
        stale_w = [float(now - d) if d >= 0 else 0.0 for d in self.last_drawn]
        p = [0.0] * self.size
        for w, share in ((rank_w, 1.0 - self.staleness_share), (stale_w, self.staleness_share)):
            tot = sum(w)
            if tot > 0:
                for i in range(self.size):
                    p[i] += share * w[i] / tot
        tot = sum(p)
        return [x / tot for x in p] if tot > 0 else [1.0 / self.size] * self.size

    def draw(self, k: int, now: int, rng: random.Random) -> list[int]:
        """``k`` distinct pool indices: unvisited tasks first (in pool order), then by P."""
        unseen = [i for i, s in enumerate(self.scores) if s is None]
        out = unseen[:k]
        if len(out) < k:
            p = self.probabilities(now)
            left = [i for i in range(self.size) if i not in out]
            while len(out) < k and left:
                w = [p[i] for i in left]
                tot = sum(w)
                j = rng.choices(range(len(left)), weights=w if tot > 0 else None)[0]
                out.append(left.pop(j))
        for i in out:
            self.last_drawn[i] = now
        return out

    def update(self, index: int, score: float) -> None:
        self.scores[index] = float(score)

    def state(self) -> dict:
        return {"scores": list(self.scores), "last_drawn": list(self.last_drawn)}

    def load(self, state: dict) -> None:
        self.scores, self.last_drawn = list(state["scores"]), list(state["last_drawn"])
