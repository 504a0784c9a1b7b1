"""Paired statistics on per-query differences.

Everything here works on plain numpy arrays of per-query differences ``d_q = candidate_q −
baseline_q`` over one slice's answerable queries; the module knows no files, measures or
policies. The policy layer combines these pieces into a verdict.

- :func:`sign_test` — wins / losses / ties and exact binomial p-values (one-sided toward
  regression, and two-sided), equal to ``scipy.stats.binomtest`` on ``wins + losses`` trials.
- :func:`bootstrap_ci` — two-sided ``1 − alpha`` bootstrap interval (BCa or percentile) of the
  mean difference, resampling *queries*, and optionally a studentized (bootstrap-t) upper
  bound at a stricter level and bootstrap-t p-values from the same resamples; one resample
  index set is shared by every measure.
  With the same generator it reproduces ``scipy.stats.bootstrap(..., vectorized=True)``.
- :func:`holm` — Holm step-down adjusted p-values.
- :func:`minimum_detectable_drop` — the smallest true mean drop the test set detects with a
  given power (normal approximation).

Only numpy and the standard library are used on the gate's path: binomial tails are exact
integer sums (``scipy.special.bdtrc`` only beyond :data:`EXACT_BINOMIAL_MAX` trials), normal
quantiles come from :class:`statistics.NormalDist`. Importing ``scipy.special`` costs more than
numpy itself, and ``scipy.stats`` about a second; both are the tests' oracles. No function
returns NaN or ±inf for finite input: degenerate cases are defined in each docstring.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

__all__ = [
    "EXACT_BINOMIAL_MAX",
    "EXACT_FLIP_MAX",
    "BootstrapInterval",
    "SignTest",
    "binomial_upper_tail",
    "bootstrap_ci",
    "differences",
    "holm",
    "minimum_detectable_drop",
    "sample_skewness",
    "sign_flip_p",
    "sign_test",
    "smallest_p",
]

BootstrapMethod = Literal["bca", "percentile"]
IntervalMethod = Literal["bca", "percentile", "constant", "empty"]

# Index-array elements per resample batch when ``chunk`` is not given: 2**19 int64 indices
# (4 MiB) plus the same number of gathered float64 values (4 MiB). Batches of this size stay in
# cache, which measured faster on the reference machine than batches of tens of MB.
_AUTO_CHUNK_ELEMENTS = 1 << 19
# From this many drawn indices on (about 15 ms of drawing), the next batch is drawn on a second
# thread while the current one is gathered; below it the thread costs more than it saves.
_PREFETCH_ELEMENTS = 1 << 22


def _as_differences(d: np.ndarray | Sequence[float] | Sequence[Sequence[float]], ndim: int
                     ) -> np.ndarray:
    """Return ``d`` as a C-contiguous float64 array of ``ndim`` dimensions, all finite."""
    arr = np.ascontiguousarray(d, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"expected a {ndim}-D array of per-query differences, got shape "
                         f"{arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("per-query differences must be finite (no NaN or inf)")
    return arr


def no_spread(rows: np.ndarray) -> np.ndarray:
    """Per row (the last axis), whether its values are equal up to rounding: they differ by
    at most 4 units in the last place of the largest magnitude. Differences of scores carry
    such noise (0.6 − 0.3 and 0.9 − 0.6 differ by one ulp): a row of 100 queries that each
    lost 0.3 has no spread to studentize, and its bootstrap-t would divide rounding by
    rounding."""
    spread = rows.max(axis=-1) - rows.min(axis=-1)
    return spread <= 4 * np.finfo(np.float64).eps * np.abs(rows).max(axis=-1)


def differences(baseline: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """``candidate − baseline`` for rows of paired per-query values (measures × queries), with
    the rounding noise of the values removed: a row whose differences spread by no more than
    4 units in the last place of the row's largest value (baseline or candidate) is one
    difference repeated, their exact mean.

    Scores carry rounding of their own size, not of their difference's: 100 queries that each
    lost 0.05 (0.35 − 0.4, 0.75 − 0.8, …) differ from each other by about 1e-16, which is
    4 ulp of 0.05 many times over. Left in, that noise would be a spread the t-test and the
    bootstrap-t divide by, and a certain drop would look uncertain. Rows with a real spread
    are returned as they are."""
    d = np.asarray(candidate, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] == 0:
        return d
    largest = np.maximum(np.abs(baseline).max(axis=1), np.abs(candidate).max(axis=1))
    spread = d.max(axis=1) - d.min(axis=1)
    for r in np.flatnonzero((spread > 0) & (spread <= 4 * np.finfo(np.float64).eps * largest)):
        d[r] = math.fsum(d[r].tolist()) / d.shape[1]
    return d


def sample_skewness(d: np.ndarray | Sequence[float]) -> float | None:
    """The sample skewness g₁ = m₃ / m₂^{3/2} of ``d`` (m_k the k-th central moment, divided by
    n: the Fisher–Pearson coefficient, ``scipy.stats.skew(d)``), computed on ``d / max|d|`` so
    neither tiny nor huge values under- or overflow. None for fewer than 3 values or no
    spread (:func:`no_spread`): undefined."""
    arr = _as_differences(d, 1)
    if arr.size < 3 or bool(no_spread(arr)):
        return None
    scaled = arr / np.max(np.abs(arr))
    centred = scaled - scaled.mean()
    m2 = float(np.mean(centred ** 2))
    return float(np.mean(centred ** 3)) / m2 ** 1.5 if m2 > 0 else None


def smallest_p(resamples: int) -> float:
    """The smallest bootstrap-t p-value (:attr:`BootstrapInterval.p_lower`) that ``resamples``
    resamples give: 1/(B + 1)."""
    return 1.0 / (resamples + 1)


def _check_probability(name: str, value: float) -> float:
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value!r}")
    return value


# --------------------------------------------------------------------------------------------
# Sign test


@dataclass(frozen=True)
class SignTest:
    """Result of :func:`sign_test`.

    - ``wins``: queries with ``d > tie_band`` (candidate better).
    - ``losses``: queries with ``d < −tie_band`` (candidate worse).
    - ``ties``: queries with ``|d| ≤ tie_band``; discarded by the test (Dixon & Mood).
    - ``p_regression``: one-sided exact binomial p-value toward regression,
      ``P(X ≥ losses)`` for ``X ~ Binomial(wins + losses, 1/2)``.
    - ``p_two_sided``: two-sided exact p-value, ``min(1, 2·P(X ≤ min(wins, losses)))``.

    Both p-values are 1.0 when ``wins + losses == 0`` (no changed query: no evidence).
    """

    wins: int
    losses: int
    ties: int
    p_regression: float
    p_two_sided: float

    @property
    def n(self) -> int:
        """Number of queries, ``wins + losses + ties``."""
        return self.wins + self.losses + self.ties


def sign_test(d: np.ndarray | Sequence[float], tie_band: float = 0.0, margin: float = 0.0
              ) -> SignTest:
    """Exact sign test on per-query differences ``d`` (candidate − baseline).

    A query is a win if ``d > tie_band``, a loss if ``d < −margin − tie_band`` and a tie
    otherwise (with the default band and margin 0 only exact zeros tie; with a ``margin``,
    losses are only those beyond it: a query that lost less is neither, and only
    ``p_regression`` is meant — wins and losses are then not mirror images). Ties are
    discarded and the test is the exact binomial test of ``losses`` among ``N = wins +
    losses`` trials at p = 1/2:

    - ``p_regression = P(X ≥ losses)`` — equal to
      ``scipy.stats.binomtest(losses, N, 0.5, alternative='greater').pvalue``;
    - ``p_two_sided = min(1, 2·P(X ≤ min(wins, losses)))`` — equal to
      ``binomtest(losses, N, 0.5).pvalue``. (SciPy sums the probabilities of outcomes no more
      likely than the observed one, with a relative tolerance of 1e-7; at p = 1/2 that is the
      doubled smaller tail for every N below 10**7.)

    Probabilities are exact: :func:`binomial_upper_tail` sums binomial coefficients as integers
    and divides by ``2**N`` once (correctly rounded), so they agree with ``binomtest`` to its
    own rounding. Beyond :data:`EXACT_BINOMIAL_MAX` trials they come from
    ``scipy.special.bdtrc`` (relative error about 1e-11).

    Edge cases: empty ``d`` or ``N = 0`` (all ties) → both p-values 1.0; ``losses = 0`` →
    ``p_regression = 1.0``. ``tie_band`` and ``margin`` must be finite and ≥ 0; ``d`` must be
    finite and 1-D.
    """
    arr = _as_differences(d, 1)
    band = float(tie_band)
    for name, value in (("tie_band", tie_band), ("margin", margin)):
        if not (math.isfinite(float(value)) and float(value) >= 0.0):
            raise ValueError(f"{name} must be a finite number ≥ 0, got {value!r}")
    wins = int(np.count_nonzero(arr > band))
    losses = int(np.count_nonzero(arr < -float(margin) - band))
    ties = int(arr.size) - wins - losses
    trials = wins + losses
    if trials == 0:
        return SignTest(wins, losses, ties, 1.0, 1.0)
    p_regression = binomial_upper_tail(losses, trials)
    # P(X ≤ m) = P(X ≥ N − m) at p = 1/2
    p_two_sided = min(1.0, 2.0 * binomial_upper_tail(trials - min(wins, losses), trials))
    return SignTest(wins, losses, ties, p_regression, p_two_sided)


EXACT_BINOMIAL_MAX = 20_000


def binomial_upper_tail(k: int, n: int) -> float:
    """``P(X ≥ k)`` for ``X ~ Binomial(n, 1/2)``.

    Up to :data:`EXACT_BINOMIAL_MAX` trials: the exact integer ``Σ C(n, j)`` over the shorter
    side of the distribution, divided once by ``2**n`` (Python's int division is correctly
    rounded), so the result is the correctly rounded probability; O(n²) bit operations, about
    0.1 s at the limit. Beyond it: ``scipy.special.bdtrc(k − 1, n, 1/2)``. ``k ≤ 0`` → 1.0,
    ``k > n`` → 0.0.
    """
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if n > EXACT_BINOMIAL_MAX:
        from scipy.special import bdtrc

        return min(1.0, float(bdtrc(k - 1, n, 0.5)))
    upper = 2 * k > n  # the terms j ≥ k are the shorter side
    first, last = (k, n) if upper else (0, k - 1)
    term, total = math.comb(n, first), 0
    for j in range(first, last + 1):
        total += term
        term = term * (n - j) // (j + 1)
    return total / (1 << n) if upper else ((1 << n) - total) / (1 << n)


# --------------------------------------------------------------------------------------------
# Exact sign-flip test

# The most changed queries for which the exact sign-flip test joins the regression p-value:
# chosen on the real pairs of benchmarks/calibration.py (with 12 or 20 it lost up to 0.05 of power against
# the t-test on the real pairs' lattice-valued differences at 25 queries, with 8 at most 0.02).
EXACT_FLIP_MAX = 8
_FLIP_RTOL = 1e-9  # rounding: values within this share of the largest are zero, sums equal


def sign_flip_p(d: np.ndarray | Sequence[float], null: float = 0.0, tie_band: float = 0.0
                ) -> float | None:
    """Exact one-sided sign-flip (Fisher–Pitman) permutation p-value that the mean of ``d``
    lies below ``null``, when ``d − null`` has at most :data:`EXACT_FLIP_MAX` non-zero values;
    else None.

    With ``y = d − null`` and its k non-zero values: ``p = #{s ∈ {−1, +1}^k : Σ s_i·|y_i| ≤
    Σ y_i} / 2^k`` — the share of the 2^k equally likely sign patterns, under a null
    symmetric about ``null`` (the runs interchangeable on each query), whose sum is as low as
    the observed one. Exact for every pattern of values, so it is continuous where a test on
    identical changes alone would not be: four losses of 1 and four losses of 1, 1, 1 and
    0.999999 both give 1/16; losses 1, 1 and ½ give 1/8 (the exact sign test's value too).
    The smallest p-value is ``2^−k``.

    Zero: ``|y| ≤ tie_band`` when ``null`` is 0 (the sign test's ties), and in any case ``|y| ≤
    1e-9·max|y|`` (rounding); sums within ``1e-9·Σ|y|`` of the observed one count as equal.
    All zero → 1.0 (no evidence). Counted exactly by meeting in the middle: the 2^⌊k/2⌋ sums of
    one half against the sorted 2^⌈k/2⌉ of the other.
    """
    arr = _as_differences(d, 1)
    y = arr - float(null)
    band = float(tie_band) if null == 0 else 0.0
    if y.size:
        band = max(band, _FLIP_RTOL * float(np.max(np.abs(y))))
    y = y[np.abs(y) > band]
    if y.size == 0:
        return 1.0
    if y.size > EXACT_FLIP_MAX:
        return None
    magnitudes = np.abs(y)
    limit = math.fsum(y.tolist()) + _FLIP_RTOL * math.fsum(magnitudes.tolist())
    half = y.size // 2
    first = _signed_sums(magnitudes[:half])
    second = np.sort(_signed_sums(magnitudes[half:]))
    count = int(np.searchsorted(second, limit - first, side="right").sum())
    return count / float(1 << y.size)


def _signed_sums(values: np.ndarray) -> np.ndarray:
    """The 2^k sums ``Σ ±values_i``, every sign pattern once."""
    sums = np.zeros(1)
    for value in values.tolist():
        sums = np.concatenate([sums + value, sums - value])
    return sums


# --------------------------------------------------------------------------------------------
# Bootstrap confidence interval

_FAR = 1e300  # a bound beyond this bounds nothing; finite so that every report can hold it


@dataclass(frozen=True)
class BootstrapInterval:
    """One row's two-sided bootstrap interval for the mean difference.

    - ``low``, ``high``: interval ends (finite floats, ``low ≤ high``).
    - ``method``: how the interval was obtained —
      ``"bca"`` or ``"percentile"`` (from the bootstrap distribution);
      ``"constant"`` (n ≥ 1 and every difference equal, or n = 1: the interval is that value,
      no resampling uncertainty); ``"empty"`` (n = 0: ``(0.0, 0.0)``, no evidence at all).
    - ``fallback``: ``None``, or why BCa was requested but the percentile interval is reported
      (the BCa correction is undefined for this bootstrap distribution). Reports should state it.
    - ``upper``: when :func:`bootstrap_ci` is given ``upper_alpha``, the studentized
      (bootstrap-t) upper bound at one-sided ``upper_alpha / 2`` — the upper end of a two-sided
      ``1 − upper_alpha`` interval — from the same resamples, raised to ``high`` where it falls
      below it (so ``≥ high``); with ``bound_tail``, the studentized upper bound at one-sided
      ``bound_tail``, as it is (when both are given, ``upper`` is the ``bound_tail`` one);
      else ``None``.
    - ``family_upper``: when :func:`bootstrap_ci` is given ``upper_alpha``, the raised bound at
      ``upper_alpha / 2`` above (the rule before's bound, :mod:`retrieval_gate.decide.policy`),
      whether or not ``bound_tail`` is given too; else ``None``.
    - ``p_lower``: when :func:`bootstrap_ci` is given ``nulls``, the studentized (bootstrap-t)
      p-value that the mean lies below the row's null value h₀; else ``None``.
    """

    low: float
    high: float
    method: IntervalMethod
    fallback: str | None = None
    upper: float | None = None
    p_lower: float | None = None
    family_upper: float | None = None


_FALLBACK_ONE_SIDED = (
    "BCa undefined: every bootstrap mean lies on one side of the observed mean (infinite bias "
    "correction z0); percentile interval reported"
)
_FALLBACK_NONFINITE = (
    "BCa undefined: the bias/acceleration correction is not finite; percentile interval reported"
)


_NORMAL = NormalDist()


def _ndtri(p: np.ndarray) -> np.ndarray:
    """Standard normal quantile per element (``scipy.special.ndtri``): −inf at 0, +inf at 1,
    NaN outside [0, 1]. Wichura's AS241 via :class:`statistics.NormalDist` (about 1e-16)."""
    def one(q: float) -> float:
        if 0.0 < q < 1.0:
            return _NORMAL.inv_cdf(q)
        return -math.inf if q == 0.0 else math.inf if q == 1.0 else math.nan
    return np.array([one(q) for q in np.asarray(p, dtype=np.float64).tolist()])


def _ndtr(x: np.ndarray) -> np.ndarray:
    """Standard normal distribution function per element (``scipy.special.ndtr``); NaN stays
    NaN."""
    return np.array([_NORMAL.cdf(v) if not math.isnan(v) else math.nan
                     for v in np.asarray(x, dtype=np.float64).tolist()])


def _linear_quantile(y_sorted: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``scipy.stats.quantile(y, p, method='linear', axis=-1)`` for pre-sorted rows.

    Same arithmetic as SciPy 1.17's ``_quantile_hf`` (Hyndman & Fan type 7, written as
    ``jg = p·B + (1 − p)``), so the result is bit-identical to SciPy 1.17's. ``y_sorted`` has shape
    ``(m, B)`` and ``p`` shape ``(m, k)`` with entries in [0, 1].
    """
    b = float(y_sorted.shape[-1])
    jg = p * b + (1 - p)
    jp1 = jg // 1
    j = jp1 - 1
    g = jg % 1
    g = np.where(j < 0, 0.0, g)
    j = np.clip(j, 0.0, b - 1)
    jp1 = np.clip(jp1, 0.0, b - 1)
    lo = np.take_along_axis(y_sorted, j.astype(np.int64), axis=-1)
    hi = np.take_along_axis(y_sorted, jp1.astype(np.int64), axis=-1)
    return (1 - g) * lo + g * hi


def _index_batches(
    rng: np.random.Generator, n: int, resamples: int, chunk: int
) -> Iterator[np.ndarray]:
    """``rng.integers(0, n, (size, n))`` for consecutive batches of at most ``chunk`` resamples.

    The batches concatenate to exactly the single draw ``rng.integers(0, n, (resamples, n))``
    that SciPy makes: the generator's bounded-integer stream does not depend on how the request
    is split. From :data:`_PREFETCH_ELEMENTS` indices on, the next batch is drawn on a second
    thread while the caller works on the current one (numpy releases the GIL while it draws);
    the draws stay one after another in the same order, so the stream is the same.
    """
    sizes = [min(chunk, resamples - start) for start in range(0, resamples, chunk)]
    if resamples * n < _PREFETCH_ELEMENTS:
        for size in sizes:
            yield rng.integers(0, n, (size, n))
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bootstrap-draws") as pool:
        pending = pool.submit(rng.integers, 0, n, (sizes[0], n))
        for following in [*sizes[1:], None]:
            batch = pending.result()
            if following is not None:
                pending = pool.submit(rng.integers, 0, n, (following, n))
            yield batch


def _bootstrap_means(
    rows: np.ndarray, resamples: int, rng: np.random.Generator, chunk: int,
    squares: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """Bootstrap distribution of the row means, shape ``(m, resamples)``: the batches of
    :func:`_index_batches`, every row gathered with the same indices. Each mean is ``np.mean``
    over a contiguous resampled row, as in SciPy. With ``squares``, also each resampled row's
    mean squared deviation from its row's observed mean θ̂ (for its standard deviation), else
    None. Deviations from θ̂ rather than raw squares: ``mean(x²) − mean(x)²`` cancels
    catastrophically when |θ̂| is large against the spread (−1e12 + N(0, 1)), the centred form
    does not."""
    m, n = rows.shape
    means = np.empty((m, resamples), dtype=np.float64)
    second = np.empty((m, resamples), dtype=np.float64) if squares else None
    theta = rows.mean(axis=-1)
    buf = np.empty((min(chunk, resamples), n), dtype=np.float64)
    start = 0
    for idx in _index_batches(rng, n, resamples, chunk):
        size = idx.shape[0]
        gathered = buf[:size]
        for r in range(m):
            np.take(rows[r], idx, out=gathered, mode="clip")  # indices are in range
            np.mean(gathered, axis=-1, out=means[r, start:start + size])
            if second is not None:
                np.subtract(gathered, theta[r], out=gathered)
                np.square(gathered, out=gathered)
                np.mean(gathered, axis=-1, out=second[r, start:start + size])
        start += size
    return means, second


@dataclass(frozen=True)
class _Studentized:
    """The bootstrap-t distribution of each row's mean (Efron & Tibshirani 1993, ch. 12):
    ``t*_b = (θ*_b − θ̂) / (s*_b/√n)`` over the resamples, sorted per row (``t``), with θ̂
    (``theta``), ŝ (``sd``; ŝ and s*_b standard deviations, ddof = 1) and n. Studentizing each
    resample by its own spread lets a bound see that a sample without the rare large values of
    a skewed distribution is less certain than its spread says, which the percentile and BCa
    ends do not. A resample without spread has t* = ±∞ on the side of its mean (0 at θ̂),
    taken as ±1e300, which keeps every bound finite (and far from any decision)."""

    t: np.ndarray
    theta: np.ndarray
    sd: np.ndarray
    n: int

    @classmethod
    def of(cls, rows: np.ndarray, means: np.ndarray, second: np.ndarray) -> _Studentized:
        """From the resamples' means and their mean squared deviations from θ̂
        (:func:`_bootstrap_means`): s*² = (second − (θ* − θ̂)²)·n/(n − 1)."""
        n = rows.shape[1]
        theta = rows.mean(axis=-1)
        offset = means - theta[:, None]
        spread = np.sqrt(np.maximum(second - offset * offset, 0.0) * (n / (n - 1)))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = offset / (spread / math.sqrt(n))
        t = np.where(spread > 0, t, np.sign(offset) * 1e300)
        t.sort(axis=-1)
        return cls(t, theta, rows.std(axis=-1, ddof=1), n)

    def upper(self, tail: float) -> np.ndarray:
        """Each row's upper bound at one-sided level ``tail``: ``θ̂ − q · ŝ/√n`` with ``q`` the
        ``tail`` quantile of its t*."""
        q = _linear_quantile(self.t, np.full((self.t.shape[0], 1), tail))[:, 0]
        with np.errstate(over="ignore"):  # ±1e300 times a spread: kept finite, "unbounded"
            bound = self.theta - q * self.sd / math.sqrt(self.n)
        return np.clip(bound, -_FAR, _FAR)

    def p_lower(self, nulls: np.ndarray) -> np.ndarray:
        """Each row's p-value that its mean lies below its null value h₀:
        ``(1 + #{t*_b ≤ t}) / (B + 1)`` with ``t = (θ̂ − h₀)/(ŝ/√n)`` — the Monte-Carlo p-value
        (Davison & Hinkley 1997, §4.4), never 0: the smallest is ``1/(B + 1)``."""
        with np.errstate(divide="ignore", invalid="ignore"):  # a spread lost to underflow
            observed = (self.theta - nulls) / (self.sd / math.sqrt(self.n))
        observed = np.nan_to_num(observed, nan=0.0, posinf=np.inf, neginf=-np.inf)
        below = np.array([np.searchsorted(row, value, side="right")
                          for row, value in zip(self.t, observed.tolist())])
        return (1.0 + below) / (self.t.shape[1] + 1.0)


def _bca_levels(
    rows: np.ndarray, theta_hat: np.ndarray, means_sorted: np.ndarray, z: Sequence[float]
) -> np.ndarray:
    """BCa quantile levels per row (Efron 1987; Efron & Tibshirani §14.3), shape
    ``(rows, len(z))``, one column per standard normal quantile in ``z``.

    - ``z0 = Φ⁻¹(p)`` with ``p = (#{θ*_b < θ̂} + #{θ*_b ≤ θ̂}) / (2B)`` — SciPy's
      ``_percentile_of_score`` (the "mean" kind of ``percentileofscore``);
    - acceleration from the jackknife of the mean. The leave-one-out means are
      ``θ_(i) = (n·θ̂ − d_i)/(n − 1)``, so SciPy's ``U_i = (n − 1)(θ_(·) − θ_(i)) = d_i − d̄``
      and ``a = Σ U³ / (6 (Σ U²)^{3/2})``; ``a`` is scale-free, so ``U`` is divided by
      ``max |U|`` first (no overflow/underflow). O(n) instead of SciPy's O(n²) jackknife; it
      differs from SciPy's value only by rounding;
    - the level for ``z`` is ``Φ(z0 + (z0 + z)/(1 − a (z0 + z)))``, with SciPy's order of
      operations (SciPy's two-sided interval uses ``z = Φ⁻¹(tail)`` and ``−Φ⁻¹(tail)``).
    """
    b = means_sorted.shape[-1]
    below = np.sum(means_sorted < theta_hat[:, None], axis=-1)
    at_or_below = np.sum(means_sorted <= theta_hat[:, None], axis=-1)
    percentile = (below + at_or_below).astype(np.float64) / (2 * b)
    z0 = _ndtri(percentile)

    u = rows - rows.mean(axis=-1, keepdims=True)
    scale = np.max(np.abs(u), axis=-1, keepdims=True)
    scale[scale == 0] = 1.0
    v = u / scale
    levels = np.empty((rows.shape[0], len(z)), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        a_hat = (1 / 6) * np.sum(v**3, axis=-1) / np.sum(v**2, axis=-1) ** (3 / 2)
        for j, z_level in enumerate(z):
            num = z0 + z_level
            levels[:, j] = _ndtr(z0 + num / (1 - a_hat * num))
    return levels


def bootstrap_ci(
    diffs: np.ndarray | Sequence[Sequence[float]],
    *,
    rng: np.random.Generator,
    resamples: int = 10_000,
    alpha: float = 0.05,
    method: BootstrapMethod = "bca",
    chunk: int | None = None,
    upper_alpha: float | None = None,
    bound_tail: float | None = None,
    nulls: Sequence[float] | np.ndarray | None = None,
) -> tuple[BootstrapInterval, ...]:
    """Two-sided ``1 − alpha`` bootstrap intervals for the mean of each row of ``diffs``, and
    optionally an upper bound at one-sided ``upper_alpha / 2`` (``0 < upper_alpha ≤ alpha``;
    :attr:`BootstrapInterval.upper`) from the same resamples — the bound a family of
    comparisons uses, e.g. ``upper_alpha = alpha / m`` for m simultaneous intervals
    (Bonferroni). That bound is studentized (bootstrap-t, :func:`_studentized_upper`): with
    few queries and a skewed distribution (most queries slightly worse, a few much better) the
    percentile and BCa ends are too low, and a test set that happens to miss the rare large
    values would be flagged too often.

    ``diffs`` has shape ``(m, n)``: m measures × n queries, each row the per-query differences
    of one measure over the same queries. The bootstrap resamples *queries* with replacement:
    resample b picks n query indices uniformly, and the **same** index set is applied to every
    row (so the rows' intervals describe the same hypothetical query sets). Statistic: the mean
    of the resampled row. Returns one :class:`BootstrapInterval` per row, in row order.

    Methods:

    - ``"percentile"``: the ``tail`` and ``1 − tail`` quantiles of the bootstrap means, where
      ``tail = (1 − (1 − alpha))/2`` (SciPy's arithmetic on ``confidence_level = 1 − alpha``);
    - ``"bca"``: bias-corrected and accelerated (Efron 1987), see :func:`_bca_levels`.

    ``upper`` is the bootstrap-t bound at one-sided ``tail'`` (``tail'`` computed from
    ``upper_alpha`` as ``tail`` from ``alpha``), raised to ``high`` when below it: a bound for a
    family is never tighter than the interval reports show. ``bound_tail`` (0 < ``bound_tail``
    < ½) asks for the bootstrap-t bound at one-sided ``bound_tail`` as it is (``upper``; with
    ``upper_alpha`` too, the raised bound is ``family_upper``). ``nulls`` (one finite value h₀ per row) asks for each row's
    bootstrap-t p-value that its mean lies below h₀ (:attr:`BootstrapInterval.p_lower`).
    Degenerate rows: no query → bound 0.0, p-value 1.0; no spread → bound d, p-value 0.0 if
    d < h₀ else 1.0 (the constant interval's answers).

    Quantiles use SciPy's ``stats.quantile(method='linear')`` arithmetic. Equivalence with SciPy:
    for a row ``d`` with spread and a generator in the same state,
    ``scipy.stats.bootstrap((d,), np.mean, n_resamples=resamples, method=..., confidence_level=
    1 - alpha, rng=rng, vectorized=True)`` draws the same indices (one ``(B, n)`` draw of
    ``rng.integers``; drawing it in consecutive row batches yields the identical stream) and
    computes the same means; the percentile interval is bit-identical and the BCa interval
    agrees to rounding (the acceleration is computed in closed form; measured differences
    ≤ 6e-17, mostly exactly equal). Each row is compared with SciPy's *one-sample* call: SciPy's
    own call on an ``(m, n)`` array (``axis=-1``) sums the resampled rows in another order, and
    since BCa's ``z0`` counts bootstrap means below / equal to the observed mean, means that tie
    it up to rounding (common for metric differences on a grid) can then be classified
    differently — that moved a BCa end by ~1e-7 at n = 6,980. Ties are classified by the
    floating-point values, exactly as SciPy does.

    Degenerate data never yields NaN:

    - ``n = 0`` → ``(0.0, 0.0)`` with ``method="empty"``: there is no evidence of any change;
      callers must report n = 0 rather than read this as a measured zero;
    - ``n = 1``, or every difference in the row equal → ``(d, d)`` with ``method="constant"``
      (every resample has that mean; SciPy's BCa returns NaN here);
    - BCa when every bootstrap mean lies strictly on one side of the observed mean (``z0 =
      ±inf``), or the correction is otherwise not finite → the percentile interval of the same
      bootstrap distribution, ``method="percentile"`` and ``fallback`` says why.

    Randomness: the generator is advanced by exactly ``rng.integers(0, n, (resamples, n))``
    when ``m ≥ 1`` and ``n ≥ 2`` — whatever the values (constant rows are still drawn for, just
    not gathered), so later draws from ``rng`` do not depend on the data; it is not touched when
    ``n ≤ 1`` or ``m = 0``. Same generator state and inputs → identical output.

    Memory and time: resamples are drawn in batches of ``chunk`` resamples (default: about
    2**19 indices per batch); peak extra memory ≈ ``24·chunk·n + 16·m·resamples`` bytes, and
    ``16·m·resamples`` more with ``upper_alpha`` (the resamples' second moments).
    Time is dominated by drawing ``resamples·n`` indices plus one gather per row; for large
    draws the next batch is drawn on a second thread while the current one is gathered
    (:func:`_index_batches`), which hides the gathers behind the draws when a second core is
    free.

    Raises ``ValueError`` for a non-2-D or non-finite ``diffs``, ``resamples < 1``,
    ``alpha ∉ (0, 1)``, ``upper_alpha ∉ (0, alpha]``, ``bound_tail ∉ (0, ½)``, ``nulls`` not one finite value per row, an unknown ``method`` or
    ``chunk < 1``;
    ``TypeError`` if ``rng`` is not a ``numpy.random.Generator``.
    """
    rows = _as_differences(diffs, 2)
    request = _Request.of(rows, rng, resamples, alpha, method, chunk, upper_alpha, bound_tail,
                          nulls)
    m, n = rows.shape
    if m == 0:
        return ()
    if n == 0:
        return tuple(BootstrapInterval(0.0, 0.0, "empty",
                                       upper=0.0 if request.bound_at is not None else None,
                                       p_lower=None if request.nulls is None else 1.0,
                                       family_upper=0.0 if request.family_at is not None
                                       else None)
                     for _ in range(m))
    constant = no_spread(rows)  # n == 1 is constant too
    out: list[BootstrapInterval | None] = [
        _constant_interval(float(rows[r, 0]), request, r) if constant[r] else None
        for r in range(m)]
    varying = np.flatnonzero(~constant)
    if n > 1 and varying.size == 0:
        # Keep the generator's advance independent of the data: draw and discard.
        for _ in _index_batches(rng, n, request.resamples, request.chunk):
            pass
    elif varying.size:
        for r, interval in zip(varying, _resampled_intervals(rows[varying], varying, rng,
                                                             request)):
            out[r] = interval
    return tuple(out)  # type: ignore[arg-type]  # every row is filled


@dataclass(frozen=True)
class _Request:
    """The checked arguments of :func:`bootstrap_ci`: ``bound_at`` is the one-sided level of
    the studentized bound ``upper`` (``bound_tail``, else from ``upper_alpha``; None: no
    bound), ``family_at`` that of the raised ``family_upper`` (from ``upper_alpha``), ``nulls``
    one h₀ per row (None: no p-values)."""

    resamples: int
    alpha: float
    method: BootstrapMethod
    chunk: int
    bound_at: float | None
    family_at: float | None
    nulls: np.ndarray | None

    @classmethod
    def of(cls, rows: np.ndarray, rng: object, resamples: int, alpha: float, method: str,
           chunk: int | None, upper_alpha: float | None, bound_tail: float | None,
           nulls: Sequence[float] | np.ndarray | None) -> _Request:
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator (e.g. "
                            "np.random.default_rng(seed))")
        if isinstance(resamples, bool) or int(resamples) != resamples or resamples < 1:
            raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
        alpha = _check_probability("alpha", alpha)
        if upper_alpha is not None and not 0.0 < float(upper_alpha) <= alpha:
            raise ValueError(f"upper_alpha must lie in (0, alpha], got {upper_alpha!r}")
        if bound_tail is not None and not 0.0 < bound_tail < 0.5:
            raise ValueError(f"bound_tail must lie in (0, 0.5), got {bound_tail!r}")
        if method not in ("bca", "percentile"):
            raise ValueError(f"method must be 'bca' or 'percentile', got {method!r}")
        m, n = rows.shape
        if chunk is None:
            chunk = max(1, _AUTO_CHUNK_ELEMENTS // max(n, 1))
        elif isinstance(chunk, bool) or int(chunk) != chunk or chunk < 1:
            raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
        family_at = None if upper_alpha is None else _tail(upper_alpha)
        return cls(int(resamples), alpha, method, int(chunk),  # type: ignore[arg-type]
                   family_at if bound_tail is None else bound_tail, family_at,
                   _checked_nulls(nulls, m))


def _checked_nulls(nulls: Sequence[float] | np.ndarray | None, rows: int) -> np.ndarray | None:
    """``nulls`` as one finite float per row, or None; ValueError otherwise."""
    h0 = None if nulls is None else np.asarray(nulls, dtype=np.float64).reshape(-1)
    if h0 is not None and (h0.size != rows or not np.all(np.isfinite(h0))):
        raise ValueError(f"nulls must hold one finite value per row ({rows}), got {nulls!r}")
    return h0


def _constant_interval(value: float, request: _Request, row: int) -> BootstrapInterval:
    """A row without spread: the interval, the bound and the p-value of the value itself."""
    return BootstrapInterval(
        value, value, "constant", upper=value if request.bound_at is not None else None,
        p_lower=None if request.nulls is None else float(value >= request.nulls[row]),
        family_upper=value if request.family_at is not None else None)


def _resampled_intervals(work: np.ndarray, positions: np.ndarray, rng: np.random.Generator,
                         request: _Request) -> list[BootstrapInterval]:
    """The intervals of the rows with spread (``work``, at ``positions`` among the caller's
    rows): one bootstrap of their means, then each row's ends, bound and p-value."""
    work = np.ascontiguousarray(work)
    studentize = request.bound_at is not None or request.nulls is not None
    means, second = _bootstrap_means(work, request.resamples, rng, request.chunk,
                                     squares=studentize)
    studentized = None if second is None else _Studentized.of(work, means, second)
    bound = (None if studentized is None or request.bound_at is None
             else studentized.upper(request.bound_at))
    family = (None if studentized is None or request.family_at is None
              else bound if request.family_at == request.bound_at
              else studentized.upper(request.family_at))
    p_lower = (None if studentized is None or request.nulls is None
               else studentized.p_lower(request.nulls[positions]))
    means.sort(axis=-1)
    levels, used, reasons = _interval_levels(work, means, request)
    # Interpolating between equal neighbours can round the ends one ulp across each other.
    ci = np.sort(_linear_quantile(means, levels), axis=-1)
    if family is not None:
        family = np.maximum(family, ci[:, 1])
        if request.family_at == request.bound_at:
            bound = family
    return [BootstrapInterval(float(ci[i, 0]), float(ci[i, 1]), used[i], reasons[i],
                              None if bound is None else float(bound[i]),
                              None if p_lower is None else float(p_lower[i]),
                              None if family is None else float(family[i]))
            for i in range(work.shape[0])]


def _interval_levels(work: np.ndarray, means_sorted: np.ndarray, request: _Request
                     ) -> tuple[np.ndarray, list[IntervalMethod], list[str | None]]:
    """Per row, the quantile levels of its two ends (percentile: ``tail`` and ``1 − tail``;
    BCa: :func:`_bca_levels` where defined), the method used and why BCa fell back."""
    tail = _tail(request.alpha)
    k = work.shape[0]
    levels = np.tile(np.array([tail, 1 - np.float64(tail)]), (k, 1))
    reasons: list[str | None] = [None] * k
    used: list[IntervalMethod] = ["percentile"] * k
    if request.method != "bca":
        return levels, used, reasons
    theta_hat = work.mean(axis=-1)
    z_tail = float(_ndtri(np.array([tail]))[0])
    bca_levels = _bca_levels(work, theta_hat, means_sorted, [z_tail, -z_tail])
    ok = np.all(np.isfinite(bca_levels), axis=-1)
    one_sided = (means_sorted[:, 0] > theta_hat) | (means_sorted[:, -1] < theta_hat)
    for i in range(k):
        if ok[i] and not one_sided[i]:
            levels[i] = bca_levels[i]
            used[i] = "bca"
        else:
            reasons[i] = _FALLBACK_ONE_SIDED if one_sided[i] else _FALLBACK_NONFINITE
    return levels, used, reasons


def _tail(alpha: float) -> float:
    """One tail of the two-sided ``1 − alpha`` interval, with SciPy's arithmetic
    (``(1 − confidence_level)/2``)."""
    return (1 - (1 - alpha)) / 2


# --------------------------------------------------------------------------------------------
# Multiplicity


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values, returned in input order.

    With the m p-values sorted ascending, ``p_(1) ≤ … ≤ p_(m)``:
    ``adj_(i) = max_{j ≤ i} min(1, (m − j + 1) · p_(j))``. Rejecting every hypothesis with
    ``adj < α`` is Holm's procedure at family-wise level α (valid under any dependence).
    Tied p-values receive the same adjusted value whatever their order. Empty input → empty
    float64 array. Values must lie in [0, 1] (ValueError otherwise, including NaN).
    """
    p = np.asarray(pvalues, dtype=np.float64).reshape(-1)
    if p.size == 0:
        return np.empty(0, dtype=np.float64)
    if not np.all((p >= 0.0) & (p <= 1.0)):
        raise ValueError("p-values must lie in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


# --------------------------------------------------------------------------------------------
# Sensitivity


def minimum_detectable_drop(
    d: np.ndarray | Sequence[float], alpha: float, power: float = 0.8, *,
    one_sided: bool = False
) -> float | None:
    """Smallest true mean drop this query set detects with probability ``power``.

    ``MDD = (z_{1−α/2} + z_{power}) · s_d / √n`` with ``s_d`` the sample standard deviation of
    ``d`` (ddof = 1) and ``z_q = Φ⁻¹(q)``: the two-sided level-α test, matching a decision on
    the two-sided ``1 − α`` interval; with ``one_sided``, ``z_{1−α}``: the one-sided level-α
    test (the gate passes its family's level, ``α/m``). This is the normal (known-variance) approximation; the
    exact paired-t answer (from the noncentral t distribution) is slightly larger for small n
    (about 4% at n = 25, under 0.5% at n = 1000 — e.g. σ_d = 0.10, α = 0.05, power 0.8:
    0.0560 vs 0.058 at n = 25). It is a property of n and the observed spread, not a
    statement about the observed mean.

    Edge cases: ``n < 2`` → ``None`` (undefined: no spread estimate; JSON ``null`` — a report
    should say "undefined for n < 2" rather than carry infinity); every difference equal →
    ``0.0`` (the observed spread is zero, so any drop would be visible: the estimate, not a
    guarantee). ``alpha`` and ``power`` must lie strictly between 0 and 1.
    """
    arr = _as_differences(d, 1)
    alpha = _check_probability("alpha", alpha)
    power = _check_probability("power", power)
    n = arr.size
    if n < 2:
        return None
    if bool(no_spread(arr)):
        return 0.0
    sd = float(np.std(arr, ddof=1))
    return detection_z(alpha if one_sided else alpha / 2, power) * sd / math.sqrt(n)


def detection_z(tail: float, power: float) -> float:
    """``z_{1−tail} + z_{power}``: how many standard errors a true drop must span to be found
    by a one-sided test at level ``tail`` with probability ``power`` (Φ⁻¹(1 − tail) computed
    as −Φ⁻¹(tail) where 1 − tail rounds to 1)."""
    return ((_NORMAL.inv_cdf(1 - tail) if 1 - tail < 1 else -_NORMAL.inv_cdf(tail))
            + _NORMAL.inv_cdf(power))
