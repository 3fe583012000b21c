"""Where guided rollouts start: the guide hands over k steps before the end of its own episode,
and a reverse curriculum moves that point earlier as the learner masters it.

Salimans & Chen (2018), "Learning Montezuma's Revenge from a single demonstration": start the
learner near the end of a demonstration, and move the start back once the learner succeeds
from there often enough. Unlike a uniform hand-over step (``TrainConfig.guided_start``) every
update's rollouts practise the hardest stretch the learner does not master yet, and the
stretches it masters become the end of longer ones.

Each task *key* (its template where the task has one: one template's instances share a
structure) keeps its own hand-over point k, counted in the guide's steps before the end of its
episode (k 1: the learner takes only the last decision). k moves one step earlier when the
success rate of the last ``window`` episodes started at the current k reaches ``threshold``;
once k reaches the guide's episode length the tasks of that key start from the beginning
(no guided prefix). Two ways to move faster where episodes are few (the whole train suite
holds ~2 multi-app groups an update): ``step`` moves the point by that fraction of the key's
longest guide episode (at least one step) instead of one step, and :func:`shared_key` makes
every task one key, so all templates share one "steps before the end" and every multi-app
episode counts toward its moves. Pure bookkeeping, no torch: the trainer asks :meth:`starts` before each
update's rollouts and reports their outcomes with :meth:`observe`.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Iterable

__all__ = ["HandoverSchedule", "shared_key", "task_key"]


def task_key(task) -> str:
    """The curriculum's key of a task: its template where it has one, else one shared key."""
    return str(getattr(task, "template", None) or "all")


def shared_key(task) -> str:
    """One key for every task: the hand-over point is "steps before the end", shared by all templates."""
    return "all"


class HandoverSchedule:
    """Per-key hand-over points (steps before the end of the guide's episode).

    Args:
        start_k: the first hand-over point of every key (>= 1).
        threshold: success rate of the last ``window`` episodes at the current point that moves
            it one step earlier; 0 (or None) keeps every key at ``start_k`` (a fixed hand-over).
        window: episodes at the current point the rate is measured over (the point moves
            only once that many have been seen there).
        key: the key of a task (default :func:`task_key`; :func:`shared_key`: one for all).
        step: 0 moves the point one step; > 0 moves it ``max(1, round(step * longest))`` steps,
            ``longest`` the key's longest guide episode seen (a move proportional to the length
            of the episode), never past the beginning.
    """

    def __init__(self, start_k: int, threshold: float | None = 0.0, window: int = 16,
                 key: Callable[[object], str] = task_key, step: float = 0.0):
        if start_k < 1:
            raise ValueError(f"start_k must be >= 1, got {start_k}")
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        if not 0.0 <= step <= 1.0:
            raise ValueError(f"step must be in [0, 1], got {step}")
        self.step = step
        self.start_k, self.threshold, self.window, self.key = start_k, threshold or 0.0, window, key
        self.k: dict[str, int] = {}
        """Key -> its current hand-over point (steps before the end)."""
        self.recent: dict[str, deque] = {}
        """Key -> outcomes (bool) of its last episodes at its current point."""
        self.moves: list[tuple[str, int, int]] = []
        """(key, from k, to k) of every move, in order (for logs)."""
        self.longest: dict[str, int] = {}
        """Key -> the longest guide episode seen (the point stops there: the beginning)."""
        self.reach: dict[str, deque] = {}
        """Key -> for its last ``window`` episodes started at the beginning, the index of the first
        step the judge failed (the episode's length where none): how far the learner gets alone."""
        self._issued: dict[str, tuple[str, int]] = {}   # task id -> (key, k) of the last starts()

    def current(self, task) -> int:
        """The task's key's hand-over point now."""
        return self.k.setdefault(self.key(task), self.start_k)

    def observe_forward(self, items: Iterable[tuple[object, int]]) -> None:
        """Record (task, index of its first step the judge failed) of episodes started at the beginning."""
        for task, first_fail in items:
            self.reach.setdefault(self.key(task), deque(maxlen=self.window)).append(int(first_fail))

    def frontier(self, task) -> int | None:
        """The forward frontier of the task's key: the furthest first failed step of its recent
        episodes from the beginning (None before any): the state the learner reaches alone and
        leaves the path at — where Go-Explore would return to explore from."""
        d = self.reach.get(self.key(task))
        return max(d) if d else None

    def starts(self, tasks: Iterable, length: Callable[[object], int], rng=None,
               practice: float = 0.0, frontier: float = 0.0) -> dict[str, int]:
        """Task id -> how many first steps the guide plays, for tasks whose guide episode has
        ``length(task)`` steps: ``length - k``; tasks whose point reached the beginning are left
        out (no guided prefix). Remembers which point each task was started at for :meth:`observe`.

        ``practice`` (with ``rng``): that share of the tasks starts at a point drawn uniformly
        from the ones already passed (1 .. k - 1) instead of the current one, so the end game a
        moved point no longer starts at keeps being practised; their outcomes do not count
        toward the current point's moves.

        ``frontier`` (with ``rng``): that share of the tasks (drawn first) starts at the key's
        forward :meth:`frontier` instead — the guide plays the steps the learner already plays
        alone and hands over where it leaves the path — when that is earlier than the current
        point; the two ends of the task are trained where they have not met yet. Their outcomes
        do not count toward the moves either."""
        out: dict[str, int] = {}
        self._issued = {}
        for t in tasks:
            k = self.current(t)
            n = int(length(t))
            f = self.frontier(t) if frontier > 0.0 and rng is not None else None
            if f is not None and 1 <= f and n - f > k and rng.random() < frontier:
                k = n - f
            elif practice > 0.0 and k > 1 and rng is not None and rng.random() < practice:
                k = rng.randint(1, k - 1)
            key = self.key(t)
            self._issued[t.id] = (key, k)
            self.longest[key] = max(self.longest.get(key, 0), n)
            if n - k >= 1:
                out[t.id] = n - k
        return out

    def observe(self, outcomes: Iterable[tuple[str, bool]]) -> list[tuple[str, int, int]]:
        """Record (task id, success) of episodes started by the last :meth:`starts`; returns the
        moves this made (key, from k, to k). Episodes of tasks it did not start, or started at a point their key
        has since left, are ignored."""
        for tid, ok in outcomes:
            issued = self._issued.get(tid)
            if issued is None:
                continue
            key, k = issued
            if self.k.get(key, self.start_k) != k:
                continue
            self.recent.setdefault(key, deque(maxlen=self.window)).append(bool(ok))
        return self._move()

    def probe_starts(self, tasks: Iterable, length: Callable[[object], int]) -> dict[str, int]:
        """Task id -> guide steps that start ``tasks`` at their key's *current* point (0: from the
        beginning), for greedy probes whose outcomes :meth:`observe_probes` counts."""
        out = {}
        for t in tasks:
            n, k = int(length(t)), self.current(t)
            self.longest[self.key(t)] = max(self.longest.get(self.key(t), 0), n)
            out[t.id] = max(0, n - k)
        return out

    def observe_probes(self, outcomes: Iterable[tuple[object, bool]]) -> list[tuple[str, int, int]]:
        """Record (task, success) of episodes started at the task's key's current point by
        :meth:`probe_starts` (the trainer's greedy probes); returns the moves this made."""
        for task, ok in outcomes:
            self.recent.setdefault(self.key(task), deque(maxlen=self.window)).append(bool(ok))
        return self._move()

    def _move(self) -> list[tuple[str, int, int]]:
        """Move every key whose last ``window`` outcomes at its point reach the threshold."""
        moved = []
        if self.threshold > 0:
            for key, d in self.recent.items():
                k = self.k.get(key, self.start_k)
                longest = self.longest.get(key, 0)
                if len(d) >= self.window and sum(d) / len(d) >= self.threshold and k < longest:
                    to = min(longest, k + (max(1, round(self.step * longest)) if self.step > 0 else 1))
                    self.k[key] = to
                    d.clear()
                    self.moves.append((key, k, to))
                    moved.append((key, k, to))
        return moved

    def summary(self) -> dict[str, int]:
        """Key -> current hand-over point (for metrics)."""
        return dict(sorted(self.k.items()))

    def state(self) -> dict:
        return {"k": dict(self.k), "recent": {k: list(v) for k, v in self.recent.items()}, "moves": list(self.moves),
                "longest": dict(self.longest), "reach": {k: list(v) for k, v in self.reach.items()}}

    def load(self, st: dict) -> None:
        self.k = {str(k): int(v) for k, v in st.get("k", {}).items()}
        self.recent = {str(k): deque(map(bool, v), maxlen=self.window) for k, v in st.get("recent", {}).items()}
        self.moves = [tuple(m) for m in st.get("moves", [])]
        self.longest = {str(k): int(v) for k, v in st.get("longest", {}).items()}
        self.reach = {str(k): deque(map(int, v), maxlen=self.window) for k, v in st.get("reach", {}).items()}
