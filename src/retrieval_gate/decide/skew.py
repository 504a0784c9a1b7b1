"""Skewed differences and the false-alarm guarantee.

No test holds its level for every distribution of per-query differences with mean 0: a
right-skewed one — most queries slightly worse, a few much better — makes a test set that
misses the rare large wins look like a drop, and the paired t-test and the studentized
bootstrap both flag it more often than α at small n (``benchmarks/calibration.py``: gamma and
log-normal nulls). The guarantee of a ``regression`` therefore holds where the calibration
measured it: up to a skewness that grows with the number of queries.

:data:`CALIBRATED` holds, per calibrated test-set size n, the sample skewness (the median over
the calibration's test sets, :func:`~retrieval_gate.decide.paired.sample_skewness`) of the
most skewed null at which every family of 1–8 comparisons kept its false alarms within
two standard errors of α. A comparison whose differences (turned so that positive is better)
are more right-skewed than that at its n is outside the calibrated range: the report says α
is not guaranteed there, and how many queries would bring it inside (:func:`queries_for`).
Left skew (a few queries much worse) makes the tests conservative, never eager: no warning.
Nor for a 0/1 outcome (every changed query changed by the same amount): its exact sign test
is valid whatever the skew.
"""

from __future__ import annotations

import math

# (n, sample skewness held) from `python benchmarks/calibration.py --sims 1000`
CALIBRATED: tuple[tuple[int, float], ...] = ((25, 1.0), (50, 1.1), (100, 1.2), (225, 1.3))


def calibrated_skewness(n: int) -> float:
    """The largest sample skewness the calibration covers at ``n`` queries: that of the
    largest calibrated size ≤ n (the smallest's below it)."""
    covered = CALIBRATED[0][1]
    for size, skew in CALIBRATED:
        if size <= n:
            covered = skew
    return covered


def queries_for(skewness: float) -> int:
    """The fewest queries at which the calibration covers ``skewness``: the smallest
    calibrated size whose limit reaches it, else beyond the largest size N by the rate at
    which a one-sided level's error shrinks (skewness/√n, Edgeworth):
    ``⌈N·(skewness/limit_N)²⌉``."""
    for size, skew in CALIBRATED:
        if skewness <= skew:
            return size
    size, skew = CALIBRATED[-1]
    return math.ceil(size * (skewness / skew) ** 2)


def outside(skewness: float | None, n: int) -> int | None:
    """None when differences of this sample skewness at ``n`` queries are within the
    calibrated range (or the skewness is undefined), else the queries that would bring them
    inside (:func:`queries_for`)."""
    if skewness is None or skewness <= calibrated_skewness(n):
        return None
    return queries_for(skewness)


def warning(measure: str, slice_name: str, skewness: float, n: int, needed: int) -> str:
    """The report's sentence for a comparison outside the calibrated range."""
    return (f"{measure} on slice '{slice_name}': the differences are skewed toward rare large "
            f"gains (sample skewness {skewness:.2f}, beyond the {calibrated_skewness(n):.2f} "
            f"the calibration covers at {n} queries) — the false-alarm rate α of a "
            f"regression is not guaranteed here; about {needed:,} queries would restore it")
