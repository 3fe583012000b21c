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
