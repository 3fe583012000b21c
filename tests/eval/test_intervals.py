"""Intervals printed next to every success rate and every SFT-vs-RL gain."""
from __future__ import annotations

import pytest

from navrl.eval import difference_interval, wilson_interval


def test_wilson_interval_known_values() -> None:
    # Newcombe (1998), Table I: 81/263 -> 0.2553 to 0.3662
    lo, hi = wilson_interval(81, 263)
    assert lo == pytest.approx(0.2553, abs=1e-4) and hi == pytest.approx(0.3662, abs=1e-4)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0


@pytest.mark.parametrize("k1,n1,k2,n2,lo,hi", [
    (56, 70, 48, 80, 0.0524, 0.3339),    # Newcombe (1998), Table II, example (a), method 10
    (9, 10, 3, 10, 0.1705, 0.8090),      # example (b)
])
def test_difference_interval_matches_newcombe(k1, n1, k2, n2, lo, hi) -> None:
    a, b = difference_interval(k1, n1, k2, n2)
    assert a == pytest.approx(lo, abs=1e-4) and b == pytest.approx(hi, abs=1e-4)


def test_difference_interval_is_antisymmetric_and_contains_the_difference() -> None:
    a, b = difference_interval(33, 192, 22, 192)
    c, d = difference_interval(22, 192, 33, 192)
    assert a == pytest.approx(-d) and b == pytest.approx(-c)
    assert a < 11 / 192 < b
    assert a < 0 < b          # 17.2% vs 11.5% on 192 episodes each is not yet significant
    assert difference_interval(60, 192, 22, 192)[0] > 0


# ------------------------------------------------------------------ paired (same tasks)
def test_paired_interval_by_hand() -> None:
    """Newcombe (1998) method 10 worked by hand for a = 2, b = 3, c = 1, d = 4 (n = 10):
    p1 = 5/10, p2 = 3/10; Wilson(5, 10) = 0.23659 to 0.76341, Wilson(3, 10) = 0.10779 to 0.60322;
    phi = (2*4 - 3*1) / sqrt(5 * 7 * 3 * 5) = 5 / sqrt(525) = 0.218218;
    delta = sqrt(0.26341^2 - 2 phi 0.26341 0.30323 + 0.30323^2) = sqrt(0.126470) = 0.35563,
    eps   = sqrt(0.26341^2 - 2 phi 0.26341 0.19221 + 0.19221^2) = sqrt(0.084233) = 0.29023;
    interval = 0.2 - 0.35563 to 0.2 + 0.29023 = -0.15563 to 0.49023 (the independent-samples
    interval of 5/10 vs 3/10 is wider: -0.2017 to 0.5261)."""
    from navrl.eval import paired_difference_interval
    l1, u1 = wilson_interval(5, 10)
    l2, u2 = wilson_interval(3, 10)
    assert (l1, u1) == (pytest.approx(0.23659, abs=1e-5), pytest.approx(0.76341, abs=1e-5))
    assert (l2, u2) == (pytest.approx(0.10779, abs=1e-5), pytest.approx(0.60322, abs=1e-5))
    lo, hi = paired_difference_interval(2, 3, 1, 4)
    assert lo == pytest.approx(-0.15563, abs=1e-4) and hi == pytest.approx(0.49023, abs=1e-4)


def test_paired_interval_published_figure() -> None:
    """A published application of the method (n11 = 89, n10 = 82, n01 = 21, n00 = 8, n = 200:
    difference 0.3050, Newcombe paired 95% CI 0.2118 to 0.3911)."""
    from navrl.eval import paired_difference_interval
    lo, hi = paired_difference_interval(89, 82, 21, 8)
    assert lo == pytest.approx(0.2118, abs=1e-4) and hi == pytest.approx(0.3911, abs=1e-4)


def test_paired_interval_is_narrower_for_correlated_outcomes_and_antisymmetric() -> None:
    """Before/after on the same 192 tasks, mostly the same tasks solved: the paired interval
    is much narrower than the independent one and is significant where that one is not."""
    from navrl.eval import paired_difference_interval
    a, b, c, d = 25, 11, 3, 153            # 36/192 after vs 28/192 before
    lo, hi = paired_difference_interval(a, b, c, d)
    ilo, ihi = difference_interval(a + b, 192, a + c, 192)
    assert lo < 8 / 192 < hi
    assert hi - lo < 0.75 * (ihi - ilo)
    assert lo > 0 and ilo < 0
    rlo, rhi = paired_difference_interval(a, c, b, d)
    assert rlo == pytest.approx(-hi) and rhi == pytest.approx(-lo)
    assert paired_difference_interval(0, 0, 0, 0) == (-1.0, 1.0)
    with pytest.raises(ValueError):
        paired_difference_interval(1, -1, 0, 0)


def test_paired_gain_matches_tasks_by_id() -> None:
    from navrl.eval import EvalResult, paired_gain_interval
    from navrl.rollout.records import Trajectory

    def res(outcomes: dict[str, bool], masked: tuple[str, ...] = ()) -> EvalResult:
        ts = []
        for tid, ok in outcomes.items():
            t = Trajectory(task={"id": tid}, group=0)
            t.success, t.valid = ok, tid not in masked
            ts.append(t)
        return EvalResult("s", sum(t.valid for t in ts), sum(t.success and t.valid for t in ts),
                          sum(not t.valid for t in ts), trajectories=ts)
    before = res({"t1": True, "t2": False, "t3": False, "t4": True, "t5": False})
    after = res({"t5": True, "t4": True, "t3": True, "t2": False, "t1": True, "t9": True}, masked=("t3",))
    lo, hi, n = paired_gain_interval(after, before)
    assert n == 4                                        # t3 masked after, t9 not evaluated before
    from navrl.eval import paired_difference_interval
    assert (lo, hi) == paired_difference_interval(2, 1, 0, 1)   # a: t1 t4, b: t5, c: -, d: t2
