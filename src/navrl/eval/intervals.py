"""95% intervals of success rates: one rate (Wilson), two independent rates (Newcombe) and
two rates measured on the same tasks (Newcombe's paired method) — the numbers every
before/after comparison in navrl reports."""
from __future__ import annotations

import math


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
