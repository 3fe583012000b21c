"""Dynamic sampling (DAPO, Yu et al. 2025): keep every task group of an update informative.

A group of sibling rollouts whose outcomes are all equal (all succeed or all fail) gives a
group-relative estimator no advantage to share out, and after SFT most groups are like that
(the policy is confident; issue 26). Dynamic sampling drops such groups and rolls out fresh
tasks in their place, a bounded number of extra rounds per update, so the loss sees only
groups whose siblings disagree. Pure bookkeeping over trajectories (``.group``, ``.valid``,
``.success``): the trainer supplies the rounds.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Sequence

__all__ = ["DynamicSampling", "draw_with_share", "informative_groups", "is_multi_app", "outcome_groups"]


def outcome_groups(trajs: Sequence) -> dict[int, list[bool]]:
    """Group id -> the outcomes (success) of its valid trajectories, groups in first-seen order."""
    out: dict[int, list[bool]] = defaultdict(list)
    for t in trajs:
        out.setdefault(t.group, [])
        if t.valid:
            out[t.group].append(bool(t.success))
    return dict(out)


def informative_groups(trajs: Sequence) -> list[int]:
    """Groups whose valid outcomes are not all equal (at least one success and one failure)."""
    return [g for g, o in outcome_groups(trajs).items() if len(set(o)) > 1]


@dataclass
class DynamicSampling:
    """Collect until ``want`` informative groups or ``max_extra`` extra rounds.

    ``round_fn(r, group_offset)`` rolls out one round (the trainer's tasks_per_update groups)
    with group ids starting at ``group_offset`` and returns its trajectories."""

    want: int
    max_extra: int
    stats: dict = field(default_factory=dict)

    def collect(self, round_fn: Callable[[int, int], list]) -> list:
        kept: list = []
        n_kept = n_groups = n_inf = rounds = 0
        outcomes: list[bool] = []
        offset = 0
        for r in range(1 + self.max_extra):
            trajs = round_fn(r, offset)
            rounds += 1
            groups = outcome_groups(trajs)
            outcomes += [o for os_ in groups.values() for o in os_]
            n_groups += len(groups)
            offset = max([offset - 1, *groups]) + 1
            inf = informative_groups(trajs)
            n_inf += len(inf)
            good = inf[:max(0, self.want - n_kept)]
            keep = set(good)
            kept += [t for t in trajs if t.group in keep]
            n_kept += len(good)
            if n_kept >= self.want:
                break
        self.stats = {"rounds": rounds, "groups_rolled": n_groups, "groups_kept": n_kept,
                      "zero_variance_share": 1 - n_inf / n_groups if n_groups else None,
                      "success_all": sum(outcomes) / len(outcomes) if outcomes else None}
        return kept



def is_multi_app(task) -> bool:
    """A task that uses more than one app (the phone world's multi-app templates): the tasks
    guided starts and ``data.multi_app_share`` act on."""
    return len(getattr(task, "apps", ()) or ()) > 1


def draw_with_share(sample: Callable[[int, object], list], k: int, rng, share: float,
                    pred: Callable[[object], bool] = is_multi_app, max_rounds: int = 64) -> list:
    """``k`` tasks from ``sample(n, rng)`` of which ``round(share * k)`` satisfy ``pred``
    (stratified rejection sampling: the source's own distribution within each stratum).

    A source that yields too few of a stratum within ``max_rounds`` draws of ``k`` fills the
    rest from the other stratum (a source without multi-app tasks is drawn as it is);
    ``share`` 0 is ``sample(k, rng)`` itself.
    """
    if share <= 0.0:
        return sample(k, rng)
    want_yes = min(k, round(share * k))
    yes: list = []
    no: list = []
    for _ in range(max_rounds):
        if len(yes) >= want_yes and len(no) >= k - want_yes:
            break
        for t in sample(k, rng):
            (yes if pred(t) else no).append(t)
    out = yes[:want_yes] + no[:k - want_yes]
    rest = yes[want_yes:] + no[k - want_yes:]
    out += rest[:k - len(out)]
    rng.shuffle(out)
    return out
