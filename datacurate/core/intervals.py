"""Confidence intervals over training seeds, for ``datacurate ablate``.

An arm's score on an eval set is measured once per seed; its interval is Student's t
interval of the mean over seeds: ``mean ± t_{1-a/2, n-1} · s / sqrt(n)``, with ``s`` the
sample standard deviation (n - 1 in the denominator). With 3 seeds and 95 %,
``t_{0.975, 2} = 4.303``: an interval is wide unless the seeds agree closely.

A difference to the baseline is **paired over seeds**: seed ``k`` of an arm and seed
``k`` of the baseline share the model initialisation and the data order's seed, so the
interval is the t interval of the per-seed differences ``d_k = arm_k - baseline_k``, not
a two-sample interval (which would leave the shared part of the noise in). An interval
that excludes 0 is what the console calls distinguishable from seed noise.

The t quantile is computed here (no scipy): the t CDF through the regularized incomplete
beta function (continued fraction, Numerical Recipes 6.4), inverted by bisection.
"""

from __future__ import annotations

import math


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (p in (0.5, 1))."""
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2.0


def t_interval(values: list[float], level: float = 0.95) -> dict:
    """``{"mean", "ci": [lo, hi], "n", "sd"}`` of ``values`` (one per seed); with one value
    the interval is unknown (``ci`` = [null, null])."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return {"mean": mean, "ci": [None, None], "n": n, "sd": None}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "ci": [mean - half, mean + half], "n": n, "sd": sd}


def paired_difference(arm: list[float], baseline: list[float], level: float = 0.95) -> dict:
    """The t interval of ``arm[k] - baseline[k]`` over seeds k (both lists in seed order)."""
    if len(arm) != len(baseline):
        raise ValueError(f"paired difference: {len(arm)} seeds against {len(baseline)}")
    return t_interval([a - b for a, b in zip(arm, baseline)], level)


def excludes_zero(ci: list) -> bool:
    """Whether an interval lies wholly on one side of 0 (distinguishable from seed noise)."""
    lo, hi = ci
    return lo is not None and (lo > 0 or hi < 0)
