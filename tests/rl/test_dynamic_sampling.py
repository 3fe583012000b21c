"""Dynamic sampling (navrl.rl.sampling): the loss never sees a group whose valid outcomes are all
equal; extra rounds stop once enough informative groups are in or at the limit."""
from __future__ import annotations

from dataclasses import dataclass, field

from navrl.rl.sampling import DynamicSampling, informative_groups, outcome_groups


@dataclass
class Tr:
    group: int
    success: bool
    valid: bool = True
    info: dict = field(default_factory=dict)


def _round(patterns, offset):
    """Trajectories of groups with the given outcome patterns, group ids from offset."""
    return [Tr(offset + g, ok) for g, pat in enumerate(patterns) for ok in pat]


def test_informative_groups_are_those_whose_valid_outcomes_differ():
    trajs = _round([(1, 1), (0, 0), (1, 0), (0,)], 0) + [Tr(4, True), Tr(4, False, valid=False)]
    assert outcome_groups(trajs)[4] == [True]
    assert informative_groups(trajs) == [2]


def test_never_passes_a_zero_variance_group_and_stops_when_enough():
    rounds = [[(1, 1), (0, 0), (1, 0), (0, 0)], [(0, 1), (0, 0), (1, 1), (1, 0)], [(0, 1)] * 4]
    calls = []

    def round_fn(r, off):
        calls.append((r, off))
        return _round(rounds[r], off)
    ds = DynamicSampling(want=3, max_extra=5)
    kept = ds.collect(round_fn)
    assert calls == [(0, 0), (1, 4)]                # the second round had enough: no third
    groups = outcome_groups(kept)
    assert sorted(groups) == [2, 4, 7]              # distinct ids across rounds, the first 3 informative
    assert all(len(set(o)) > 1 for o in groups.values())
    assert ds.stats["rounds"] == 2 and ds.stats["groups_rolled"] == 8 and ds.stats["groups_kept"] == 3
    assert ds.stats["zero_variance_share"] == 1 - 3 / 8


def test_stops_at_its_limit_of_extra_rounds():
    calls = []

    def round_fn(r, off):
        calls.append(r)
        return _round([(0, 0), (1, 1)], off)       # never informative
    ds = DynamicSampling(want=2, max_extra=3)
    assert ds.collect(round_fn) == []
    assert calls == [0, 1, 2, 3]                    # 1 + max_extra rounds, no more
    assert ds.stats["zero_variance_share"] == 1.0 and ds.stats["success_all"] == 0.5
