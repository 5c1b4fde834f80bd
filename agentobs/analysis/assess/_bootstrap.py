"""Confidence intervals of observed percentiles: the exact bootstrap, no resampling.

A percentile here is an order statistic (numpy's ``inverted_cdf``): the value of rank r = ceil(q n) among n
sorted values. Resampling the n values with replacement, the resampled order statistic is at most the j-th
smallest distinct value v_j exactly when at least r of the n draws are at most v_j, and the number of such
draws is Binomial(n, F_j), F_j being the share of values at most v_j. So the bootstrap distribution is known in
closed form,

    P(Q* <= v_j) = P(Binomial(n, F_j) >= r) = I_{F_j}(r, n - r + 1)      (regularized incomplete beta),

and its 2.5% and 97.5% points are found by binary search over j. This is what a seeded resampling estimates
with infinitely many resamples: deterministic, exact, and O(log n x sqrt n) whatever the number of runs.
"""
from __future__ import annotations

import math

import numpy as np

_FPMIN = 1e-300
_EPS = 1e-13


def exact_ci(sorted_values: np.ndarray, qs: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds of the bootstrap interval of each inverted_cdf quantile in ``qs``."""
    xs = np.asarray(sorted_values, dtype=float)
    n = len(xs)
    vals = np.unique(xs)
    share = (np.searchsorted(xs, vals, side="right") / n).tolist()   # share of values at most each one
    tails = ((1 - level) / 2, 1 - (1 - level) / 2)
    lower, upper = [], []
    for q in qs:
        r = min(max(math.ceil(q * n), 1), n)
        found = []
        for tail in tails:                       # the first distinct value where P(Q* <= v) reaches the tail
            lo, hi = 0, len(vals) - 1
            while lo < hi:
                mid = (lo + hi) // 2
                if _at_least(r, n, share[mid]) >= tail:
                    hi = mid
                else:
                    lo = mid + 1
            found.append(vals[lo])
        lower.append(found[0])
        upper.append(found[1])
    return np.array(lower), np.array(upper)


def _at_least(r: int, n: int, p: float) -> float:
    """P(Binomial(n, p) >= r) = I_p(r, n - r + 1)."""
    if p >= 1.0:
        return 1.0
    if p <= 0.0:
        return 0.0
    return _betainc(float(r), float(n - r + 1), p)


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for 0 < x < 1 (continued fraction, modified Lentz)."""
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return min(max(front * _cf(a, b, x) / a, 0.0), 1.0)
    return min(max(1.0 - front * _cf(b, a, 1.0 - x) / b, 0.0), 1.0)


def _cf(a: float, b: float, x: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _FPMIN else _FPMIN)
    h = d
    for m in range(1, int(50 + 10 * math.sqrt(max(a, b))) + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _FPMIN else _FPMIN)
        c = 1.0 + aa / c
        c = c if abs(c) > _FPMIN else _FPMIN
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _FPMIN else _FPMIN)
        c = 1.0 + aa / c
        c = c if abs(c) > _FPMIN else _FPMIN
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            break
    return h
