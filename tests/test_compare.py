"""Tests for retrieval_gate.decide.paired: oracles are scipy.stats.binomtest and scipy.stats.bootstrap."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy
from conftest import imported_by
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

from retrieval_gate.decide.paired import (
    EXACT_BINOMIAL_MAX,
    BootstrapInterval,
    SignTest,
    binomial_upper_tail,
    bootstrap_ci,
    holm,
    minimum_detectable_drop,
    sign_test,
)

Z_975 = 1.959963984540054  # Φ⁻¹(0.975)
Z_80 = 0.8416212335729143  # Φ⁻¹(0.8)


def _counts(wins: int, losses: int, ties: int) -> np.ndarray:
    """Per-query differences with the given win/loss/tie counts, interleaved."""
    d = np.r_[np.full(wins, 0.25), np.full(losses, -0.5), np.zeros(ties)]
    return np.random.default_rng(0).permutation(d)


def _exact_tail_ge(k: int, n: int) -> Fraction:
    """P(X ≥ k) for X ~ Bin(n, ½) as an exact fraction, from ``math.comb`` over the fewest
    terms: the j ≥ k, the j < k (complement), or the j between k and the middle, using the
    symmetry Σ_{j > n/2} C(n, j) = (2**n − [n even]·C(n, n/2)) / 2. Points near the middle, where
    p-values are moderate and decisions are made, cost a handful of terms even at n = 20,000."""
    k = max(k, 0)
    half = n // 2  # j > n/2 ⇔ j ≥ half + 1, for both parities
    above_middle = (2**n - (math.comb(n, half) if n % 2 == 0 else 0)) // 2
    routes = {
        n - k + 1: lambda: sum(math.comb(n, j) for j in range(k, n + 1)),
        k: lambda: 2**n - sum(math.comb(n, j) for j in range(k)),
        abs(k - half - 1) + 1: lambda: (
            above_middle + sum(math.comb(n, j) for j in range(k, half + 1)) if k <= half
            else above_middle - sum(math.comb(n, j) for j in range(half + 1, k))),
    }
    return Fraction(routes[min(routes)](), 2**n)


def test_exact_tail_oracle_routes_agree():
    for n in (1, 2, 7, 10, 31, 40):
        for k in range(n + 2):
            direct = Fraction(sum(math.comb(n, j) for j in range(k, n + 1)), 2**n)
            assert _exact_tail_ge(k, n) == direct


# ------------------------------------------------------------------------------------------
# module hygiene


def test_module_does_not_import_scipy_stats():
    code = (
        "import numpy as np\n"
        "import retrieval_gate.decide.paired as c\n"
        "c.sign_test(np.array([1.0, -1.0, 0.5]))\n"
        "c.bootstrap_ci(np.array([[1.0, -1.0, 0.5]]), rng=np.random.default_rng(0),"
        " resamples=50)\n"
        "c.minimum_detectable_drop(np.array([1.0, -1.0, 0.5]), 0.05)"
    )
    assert imported_by(code, ("scipy.stats",)) == []


# ------------------------------------------------------------------------------------------
# sign test


def test_sign_test_seed_002_counts():
    # Seed 002: hybrid better on 15, worse on 8, same on 17 → "sign test p = 0.21".
    s = sign_test(_counts(15, 8, 17))
    assert (s.wins, s.losses, s.ties, s.n) == (15, 8, 17, 40)
    exact_two_sided = 2 * (1 - _exact_tail_ge(9, 23))  # 2·P(X ≤ 8) = 440485/2097152
    assert exact_two_sided == Fraction(440485, 2097152)
    assert s.p_two_sided == pytest.approx(float(exact_two_sided), rel=1e-15)
    assert s.p_two_sided == pytest.approx(0.21003961563110352, rel=1e-15)
    assert round(s.p_two_sided, 2) == 0.21
    # toward regression: P(X ≥ 8 | 23) — the candidate is not worse, so this is large
    assert s.p_regression == pytest.approx(float(_exact_tail_ge(8, 23)), rel=1e-15)
    assert s.p_regression == pytest.approx(0.95343017578125, rel=1e-15)
    assert s.p_regression == pytest.approx(
        stats.binomtest(8, 23, 0.5, alternative="greater").pvalue, rel=1e-14)
    assert s.p_two_sided == pytest.approx(stats.binomtest(8, 23, 0.5).pvalue, rel=1e-14)


def test_sign_test_mirrored_seed_is_a_regression_signal():
    s = sign_test(-_counts(15, 8, 17))  # candidate worse on 15
    assert (s.wins, s.losses) == (8, 15)
    assert s.p_regression == pytest.approx(float(_exact_tail_ge(15, 23)), rel=1e-14)
    assert s.p_regression < 0.11  # one-sided is half the two-sided here
    assert s.p_two_sided == pytest.approx(2 * s.p_regression, rel=1e-14)


def test_sign_test_with_a_margin_counts_only_the_losses_beyond_it():
    """Margin 0.02: a loss is d < −0.02 (beyond the tie band); a query that lost less is
    neither a loss nor a win; a win is still any d > tie band."""
    d = [-0.019] * 18 + [-1.0, -1.0, -0.5, -1.0, -0.5, -1.0, 0.5, 0.0, -0.02]
    s = sign_test(d, margin=0.02)
    assert (s.wins, s.losses, s.ties) == (1, 6, 20)  # −0.02 itself is not beyond the margin
    assert s.p_regression == pytest.approx(float(_exact_tail_ge(6, 7)), rel=1e-15)  # 8/128
    assert s.p_regression == pytest.approx(
        stats.binomtest(6, 7, 0.5, alternative="greater").pvalue, rel=1e-14)
    plain = sign_test(d)
    assert (plain.wins, plain.losses, plain.ties) == (1, 25, 1)
    # the tie band widens both sides: a loss is below −margin − band
    banded = sign_test(d, tie_band=0.6, margin=0.02)
    assert (banded.wins, banded.losses) == (0, 4)  # the four −1s
    assert sign_test(d, margin=0.0) == plain
    with pytest.raises(ValueError, match="margin must be a finite number"):
        sign_test(d, margin=-0.01)


def _grid():
    for n in range(1, 31):
        for k in range(n + 1):
            yield k, n
    for n in (99, 100, 101, 500, 1000, 2001, 3000, 4999):
        for k in sorted({0, 1, 2, n // 10, n // 4, n // 2 - 1, n // 2, n // 2 + 1,
                         3 * n // 4, n - 2, n - 1, n}):
            yield k, n


def test_sign_test_matches_binomtest_on_grid():
    checked = 0
    for losses, trials in _grid():
        s = sign_test(_counts(trials - losses, losses, 3))
        assert (s.wins, s.losses, s.ties) == (trials - losses, losses, 3)
        greater = stats.binomtest(losses, trials, 0.5, alternative="greater").pvalue
        two = stats.binomtest(losses, trials, 0.5).pvalue
        # exact tail vs Boost (binomtest): Boost's own rounding, ≈1e-11 relative at n ≈ 5000
        assert s.p_regression == pytest.approx(greater, rel=1e-10, abs=1e-300)
        assert s.p_two_sided == pytest.approx(two, rel=1e-10, abs=1e-300)
        assert 0.0 <= s.p_regression <= 1.0 and 0.0 <= s.p_two_sided <= 1.0
        checked += 1
    assert checked > 500


def test_sign_test_small_cases_exact():
    for n in range(1, 16):
        for k in range(n + 1):
            s = sign_test(_counts(n - k, k, 0))
            assert s.p_regression == pytest.approx(float(_exact_tail_ge(k, n)), rel=1e-13)
            two = min(1, 2 * (1 - _exact_tail_ge(min(k, n - k) + 1, n)))
            assert s.p_two_sided == pytest.approx(float(two), rel=1e-13)


@pytest.mark.parametrize("k, n", [(0, 10), (1, 1), (11, 10), (3, 7), (4, 7), (2480, 5000),
                                  (2521, 5000), (9990, 20_000), (10_000, 20_000),
                                  (10_141, 20_000), (19_990, 20_000), (1501, 2999)])
def test_binomial_upper_tail_is_correctly_rounded(k, n):
    exact = _exact_tail_ge(k, n) if k > 0 else Fraction(1)
    assert binomial_upper_tail(k, n) == float(exact)  # Fraction → float rounds correctly


def test_binomial_upper_tail_beyond_the_exact_limit_uses_scipy():
    n = EXACT_BINOMIAL_MAX + 1001
    for k in (n // 2 - 300, n // 2, n // 2 + 150):
        assert binomial_upper_tail(k, n) == pytest.approx(
            stats.binomtest(k, n, 0.5, alternative="greater").pvalue, rel=1e-9)


def test_sign_test_tie_band_is_inclusive():
    d = np.array([0.005, -0.005, 0.02, -0.03, 0.0, 0.01, -0.01])
    s = sign_test(d, tie_band=0.01)
    assert (s.wins, s.losses, s.ties) == (1, 1, 5)
    s0 = sign_test(d)
    assert (s0.wins, s0.losses, s0.ties) == (3, 3, 1)


@pytest.mark.parametrize("d", [np.array([]), np.zeros(7), np.array([0.001, -0.002])])
def test_sign_test_no_changed_query_gives_p_one(d):
    s = sign_test(d, tie_band=0.01)
    assert s.wins == s.losses == 0
    assert s == SignTest(0, 0, d.size, 1.0, 1.0)


def test_sign_test_all_wins_and_all_losses():
    up = sign_test(np.ones(10))
    assert up.p_regression == 1.0
    assert up.p_two_sided == pytest.approx(2 / 1024, rel=1e-15)
    down = sign_test(-np.ones(10))
    assert down.p_regression == pytest.approx(1 / 1024, rel=1e-15)


@pytest.mark.parametrize("bad", [[np.nan, 1.0], [np.inf], [[1.0, 2.0]]])
def test_sign_test_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        sign_test(np.array(bad))


@pytest.mark.parametrize("band", [-0.1, math.nan, math.inf])
def test_sign_test_rejects_bad_band(band):
    with pytest.raises(ValueError):
        sign_test(np.array([1.0]), tie_band=band)


# ------------------------------------------------------------------------------------------
# bootstrap: agreement with scipy.stats.bootstrap


def _samples() -> dict[str, np.ndarray]:
    g = np.random.default_rng(20240607)
    n225 = np.where(g.random(225) < 0.75, 0.0, g.exponential(0.3, 225))
    n225 *= np.where(g.random(225) < 0.35, -1.0, 1.0)
    return {
        "n5": np.array([0.1, -0.2, 0.0, 0.3, 0.3]),
        "n40_ties": np.round(g.normal(0.02, 0.1, 40), 1),
        "n40_hits": g.choice([-1.0, 0.0, 0.0, 0.0, 0.0, 1.0], 40),
        "n225_skew": n225,
        "n225_rr": np.round(1 / g.integers(1, 11, 225) - 1 / g.integers(1, 11, 225), 6),
    }


SAMPLES = _samples()


# SciPy ≥ 1.17 computes quantiles with the arithmetic bootstrap_ci copies, so percentile
# intervals agree bit for bit; older SciPy (the newest on Python 3.10 is 1.15) uses
# numpy.percentile, which differs in the last bit.
SAME_QUANTILES = tuple(int(p) for p in scipy.__version__.split(".")[:2]) >= (1, 17)


def assert_same_percentile_end(got: float, ref: float) -> None:
    if SAME_QUANTILES:
        assert got == float(ref)
    else:
        assert got == pytest.approx(float(ref), rel=0, abs=1e-15)


def assert_same_percentile_interval(low: float, high: float, ref) -> None:
    assert_same_percentile_end(low, ref.low)
    assert_same_percentile_end(high, ref.high)


def _scipy_ci(d, *, resamples, seed, alpha, method, **kw):
    res = stats.bootstrap((d,), np.mean, n_resamples=resamples, method=method,
                          confidence_level=1 - alpha, rng=np.random.default_rng(seed),
                          vectorized=True, axis=-1, **kw)
    return res.confidence_interval


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01])
def test_percentile_interval_matches_scipy(name, alpha):
    d = SAMPLES[name]
    for seed in (0, 1, 2):
        ref = _scipy_ci(d, resamples=3000, seed=seed, alpha=alpha, method="percentile")
        (got,) = bootstrap_ci(d[None], resamples=3000, rng=np.random.default_rng(seed),
                              alpha=alpha, method="percentile", chunk=128)
        assert got.method == "percentile" and got.fallback is None
        assert_same_percentile_interval(got.low, got.high, ref)


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01])
def test_bca_interval_matches_scipy(name, alpha):
    d = SAMPLES[name]
    for seed in (0, 1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # scipy must not find these degenerate
            ref = _scipy_ci(d, resamples=3000, seed=seed, alpha=alpha, method="BCa")
        (got,) = bootstrap_ci(d[None], resamples=3000, rng=np.random.default_rng(seed),
                              alpha=alpha, method="bca", chunk=128)
        assert got.method == "bca" and got.fallback is None
        # acceleration computed in closed form: equal up to rounding (measured ≤ 6e-17)
        assert got.low == pytest.approx(float(ref.low), rel=0, abs=1e-12)
        assert got.high == pytest.approx(float(ref.high), rel=0, abs=1e-12)


def test_default_resamples_match_scipy_and_bca_differs_from_percentile():
    d = SAMPLES["n225_skew"]
    (bca,) = bootstrap_ci(d[None], rng=np.random.default_rng(42))
    (pct,) = bootstrap_ci(d[None], rng=np.random.default_rng(42), method="percentile")
    ref_bca = _scipy_ci(d, resamples=10_000, seed=42, alpha=0.05, method="BCa")
    ref_pct = _scipy_ci(d, resamples=10_000, seed=42, alpha=0.05, method="percentile")
    assert_same_percentile_interval(pct.low, pct.high, ref_pct)
    assert bca.low == pytest.approx(float(ref_bca.low), rel=0, abs=1e-12)
    assert bca.high == pytest.approx(float(ref_bca.high), rel=0, abs=1e-12)
    assert (bca.low, bca.high) != (pct.low, pct.high)  # skewed data: BCa moves the interval


def test_each_row_of_a_multi_row_call_matches_scipy_on_that_row():
    # One index set for all rows: row r of the joint call equals scipy's one-sample call on
    # row r with the same seed. n = 2000 with values on a 0.001 grid, so many bootstrap means
    # tie the observed mean up to rounding (the case where summation order matters for z0).
    g = np.random.default_rng(31)
    rows = np.stack([np.round(g.normal(0, 0.1, 2000), 3),
                     np.where(g.random(2000) < 0.9, 0.0, g.normal(0, 0.3, 2000)),
                     g.choice([-1.0, 0.0, 0.0, 0.0, 1.0], 2000)])
    for method in ("percentile", "BCa"):
        got = bootstrap_ci(rows, resamples=2000, rng=np.random.default_rng(7),
                           method=method.lower())
        for r in range(rows.shape[0]):
            ref = _scipy_ci(rows[r], resamples=2000, seed=7, alpha=0.05, method=method,
                            batch=500)
            assert got[r].method == method.lower()
            assert got[r].low == pytest.approx(float(ref.low), rel=0, abs=1e-12)
            assert got[r].high == pytest.approx(float(ref.high), rel=0, abs=1e-12)
            if method == "percentile":
                assert_same_percentile_interval(got[r].low, got[r].high, ref)


def _bootstrap_t(d: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """An independent bootstrap-t distribution: one draw of every resample's indices (as the
    gate and SciPy draw them), each resample's mean and standard deviation, the t statistics
    (±1e300 for a resample without spread, on the side of its mean)."""
    n = d.size
    idx = np.random.default_rng(seed).integers(0, n, (resamples, n))
    sample = d[idx]
    means, sds = sample.mean(axis=1), sample.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (means - d.mean()) / (sds / np.sqrt(n))
    return np.where(sds > 0, t, np.sign(means - d.mean()) * 1e300)


def _bootstrap_t_upper(d: np.ndarray, resamples: int, seed: int, tail: float) -> float:
    """The bootstrap-t upper bound from :func:`_bootstrap_t` and numpy's own linear quantile."""
    t = _bootstrap_t(d, resamples, seed)
    return float(d.mean() - np.quantile(t, tail) * d.std(ddof=1) / np.sqrt(d.size))


@pytest.mark.parametrize("method", ["percentile", "BCa"])
@pytest.mark.parametrize("name", ["n5", "n40_ties", "n225_skew", "n225_rr"])
def test_the_family_bound_is_the_bootstrap_t_upper_bound(name, method):
    d = SAMPLES[name]
    for upper_alpha in (0.05, 0.025, 0.05 / 8):
        (got,) = bootstrap_ci(d[None], resamples=3000, rng=np.random.default_rng(1),
                              alpha=0.05, method=method.lower(), upper_alpha=upper_alpha)
        shown = _scipy_ci(d, resamples=3000, seed=1, alpha=0.05, method=method)
        if method == "percentile":
            assert_same_percentile_interval(got.low, got.high, shown)
        else:
            assert got.low == pytest.approx(float(shown.low), rel=0, abs=1e-12)
        oracle = _bootstrap_t_upper(d, 3000, 1, upper_alpha / 2)
        assert got.upper == pytest.approx(max(oracle, got.high), rel=0, abs=1e-12)
        assert got.upper >= got.high


def _bootstrap_t_p(d: np.ndarray, resamples: int, seed: int, null: float) -> float:
    """An independent bootstrap-t p-value that the mean lies below ``null``: the t statistics
    of :func:`_bootstrap_t` counted at or below the observed one, with the Monte-Carlo
    correction (1 + count)/(B + 1)."""
    t = _bootstrap_t(d, resamples, seed)
    observed = (d.mean() - null) / (d.std(ddof=1) / np.sqrt(d.size))
    return float((1 + np.sum(t <= observed)) / (resamples + 1))


@pytest.mark.parametrize("name", ["n5", "n40_ties", "n225_skew", "n225_rr"])
def test_the_one_sided_bound_and_p_value_are_the_bootstrap_t_ones(name):
    d = SAMPLES[name]
    for tail in (0.05, 0.025, 0.05 / 8):
        for null in (0.0, -0.02, float(d.mean())):
            (got,) = bootstrap_ci(d[None], resamples=3000, rng=np.random.default_rng(1),
                                  alpha=0.05, bound_tail=tail, nulls=[null])
            # as it is: not raised to the shown interval's end
            assert got.upper == pytest.approx(_bootstrap_t_upper(d, 3000, 1, tail), rel=0,
                                              abs=1e-12)
            assert got.p_lower == _bootstrap_t_p(d, 3000, 1, null)
            assert 1 / 3001 <= got.p_lower <= 1.0
    # the same resamples as without them: the interval shown does not move
    (plain,) = bootstrap_ci(d[None], resamples=3000, rng=np.random.default_rng(1))
    (both,) = bootstrap_ci(d[None], resamples=3000, rng=np.random.default_rng(1),
                           bound_tail=0.05, nulls=[0.0])
    assert (plain.low, plain.high) == (both.low, both.high)


def test_p_values_of_degenerate_rows_and_bad_nulls():
    rng = np.random.default_rng(0)
    assert bootstrap_ci(np.empty((1, 0)), rng=rng, bound_tail=0.05, nulls=[0.0]) == (
        BootstrapInterval(0.0, 0.0, "empty", upper=0.0, p_lower=1.0),)
    assert bootstrap_ci(np.full((2, 4), -0.25), rng=rng, resamples=10, nulls=[0.0, -0.3]) == (
        BootstrapInterval(-0.25, -0.25, "constant", p_lower=0.0),
        BootstrapInterval(-0.25, -0.25, "constant", p_lower=1.0))
    for bad in ([0.0, 0.0], [math.nan], [math.inf]):
        with pytest.raises(ValueError, match="nulls"):
            bootstrap_ci(np.zeros((1, 5)), rng=rng, resamples=10, nulls=bad)
    for tail in (0.0, 0.5, -1.0):
        with pytest.raises(ValueError, match="bound_tail"):
            bootstrap_ci(np.zeros((1, 5)), rng=rng, resamples=10, bound_tail=tail)


def test_both_bounds_come_from_one_bootstrap():
    """``bound_tail`` and ``upper_alpha`` together: ``upper`` is the bound at ``bound_tail``
    as it is, ``family_upper`` the raised bound at ``upper_alpha / 2`` — each the value a call
    with that argument alone gives, from the same resamples."""
    d = np.random.default_rng(5).gamma(0.5, 0.2, (2, 40)) - 0.15
    both = bootstrap_ci(d, rng=np.random.default_rng(0), resamples=2000, bound_tail=0.025,
                        upper_alpha=0.025, nulls=[0.0, 0.0])
    tail = bootstrap_ci(d, rng=np.random.default_rng(0), resamples=2000, bound_tail=0.025,
                        nulls=[0.0, 0.0])
    family = bootstrap_ci(d, rng=np.random.default_rng(0), resamples=2000, upper_alpha=0.025)
    for b, t, f in zip(both, tail, family):
        assert (b.upper, b.p_lower) == (t.upper, t.p_lower) and t.family_upper is None
        assert b.family_upper == f.upper == f.family_upper >= f.high


def test_the_bootstrap_t_bound_is_wider_where_the_sample_is_skewed():
    """Many small losses and a few large wins: the studentized bound sits well above the
    percentile end at the same level; for a symmetric sample the two nearly agree."""
    skewed = np.array([-0.05] * 22 + [0.4, 0.35, 0.3])
    symmetric = np.linspace(-0.3, 0.3, 25)
    for d, wider in ((skewed, True), (symmetric, False)):
        (b,) = bootstrap_ci(d[None], resamples=4000, rng=np.random.default_rng(3), alpha=0.05,
                            method="percentile", upper_alpha=0.05)
        assert (b.upper - b.high > 0.02) == wider, (b.upper, b.high)


def test_upper_end_of_degenerate_rows_and_bad_levels():
    rng = np.random.default_rng(0)
    assert bootstrap_ci(np.empty((1, 0)), rng=rng, upper_alpha=0.01) == (
        BootstrapInterval(0.0, 0.0, "empty", upper=0.0, family_upper=0.0),)
    assert bootstrap_ci(np.full((1, 4), -0.25), rng=rng, resamples=10, upper_alpha=0.01) == (
        BootstrapInterval(-0.25, -0.25, "constant", upper=-0.25, family_upper=-0.25),)
    (plain,) = bootstrap_ci(SAMPLES["n5"][None], rng=rng, resamples=10)
    assert plain.upper is None
    for bad in (0.0, 0.051, -0.01):
        with pytest.raises(ValueError):
            bootstrap_ci(np.zeros((1, 5)), rng=rng, resamples=10, alpha=0.05, upper_alpha=bad)


def test_prefetched_draws_give_scipys_interval_and_advance():
    # 1,000 resamples × 6,980 queries: the next batch is drawn on a second thread
    d = np.round(np.random.default_rng(4).normal(0, 0.1, 6980), 3)
    rng = np.random.default_rng(21)
    (got,) = bootstrap_ci(d[None], resamples=1000, rng=rng, method="percentile")
    ref = _scipy_ci(d, resamples=1000, seed=21, alpha=0.05, method="percentile")
    assert_same_percentile_interval(got.low, got.high, ref)
    reference = np.random.default_rng(21)
    reference.integers(0, 6980, (1000, 6980))
    assert rng.bit_generator.state == reference.bit_generator.state


def test_chunked_draws_equal_one_draw():
    # the property the chunking relies on: the bounded-integer stream does not depend on how
    # the request is split into consecutive row batches
    for n in (5, 40, 6980):
        whole = np.random.default_rng(3).integers(0, n, (101, n))
        rng = np.random.default_rng(3)
        parts = [rng.integers(0, n, (k, n)) for k in (1, 7, 50, 43)]
        np.testing.assert_array_equal(np.concatenate(parts), whole)


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_chunk_size_does_not_change_the_result(method):
    rows = np.stack([SAMPLES["n40_ties"], SAMPLES["n40_hits"]])
    results = {bootstrap_ci(rows, resamples=1000, rng=np.random.default_rng(5), method=method,
                            chunk=chunk)
               for chunk in (1, 3, 64, 1000, 5000, None)}
    assert len(results) == 1


class _RecordingGenerator(np.random.Generator):
    def __init__(self, seed):
        super().__init__(np.random.PCG64(seed))
        self.sizes = []

    def integers(self, low, high=None, size=None, **kw):
        self.sizes.append(size)
        return super().integers(low, high, size, **kw)


def test_draws_are_bounded_by_chunk():
    d = np.random.default_rng(0).normal(size=(2, 6980))
    rng = _RecordingGenerator(1)
    bootstrap_ci(d, resamples=1000, rng=rng, method="percentile")
    assert sum(s[0] for s in rng.sizes) == 1000
    assert max(s[0] * s[1] for s in rng.sizes) <= 1 << 19  # auto chunk: ≤ 4 MiB of indices
    rng = _RecordingGenerator(1)
    bootstrap_ci(d, resamples=1000, rng=rng, chunk=300)
    assert [s[0] for s in rng.sizes] == [300, 300, 300, 100]


# ------------------------------------------------------------------------------------------
# bootstrap: determinism and the shared index set


def test_same_seed_same_output_and_different_seed_differs():
    rows = np.stack([SAMPLES["n225_skew"], SAMPLES["n225_rr"]])
    a = bootstrap_ci(rows, resamples=2000, rng=np.random.default_rng(11))
    b = bootstrap_ci(rows, resamples=2000, rng=np.random.default_rng(11))
    c = bootstrap_ci(rows, resamples=2000, rng=np.random.default_rng(12))
    assert a == b
    assert a != c


def test_identical_rows_give_identical_intervals():
    d = SAMPLES["n40_ties"]
    for method in ("bca", "percentile"):
        a, b = bootstrap_ci(np.stack([d, d]), resamples=2000, rng=np.random.default_rng(1),
                            method=method)
        assert a == b


def test_row_and_its_negation_give_mirrored_intervals():
    d = SAMPLES["n225_skew"]
    for method in ("percentile", "bca"):
        pos, neg = bootstrap_ci(np.stack([d, -d]), resamples=4000,
                                rng=np.random.default_rng(2), method=method)
        assert neg.low == pytest.approx(-pos.high, rel=0, abs=1e-12)
        assert neg.high == pytest.approx(-pos.low, rel=0, abs=1e-12)
        assert pos.low < pos.high  # non-trivial interval
        assert neg.method == pos.method == method


def test_each_row_equals_its_solo_result():
    # the index set is drawn once for all rows, so a row's interval does not depend on which
    # other rows are evaluated with it
    rows = np.stack([SAMPLES["n225_skew"], SAMPLES["n225_rr"], np.zeros(225)])
    together = bootstrap_ci(rows, resamples=1500, rng=np.random.default_rng(9))
    for r in range(3):
        (alone,) = bootstrap_ci(rows[[r]], resamples=1500, rng=np.random.default_rng(9))
        assert together[r] == alone


def test_shifted_and_scaled_rows_follow_the_shared_resamples():
    d = SAMPLES["n40_ties"]
    base, scaled = bootstrap_ci(np.stack([d, 4 * d]), resamples=2000,
                                rng=np.random.default_rng(4), method="percentile")
    assert scaled.low == pytest.approx(4 * base.low, abs=1e-12)
    assert scaled.high == pytest.approx(4 * base.high, abs=1e-12)


# ------------------------------------------------------------------------------------------
# bootstrap: degenerate data


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_empty_rows(method):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    got = bootstrap_ci(np.empty((2, 0)), rng=rng, resamples=100, method=method)
    assert got == (BootstrapInterval(0.0, 0.0, "empty"),) * 2
    assert rng.bit_generator.state == state  # nothing drawn
    assert bootstrap_ci(np.empty((0, 5)), rng=rng, resamples=100) == ()


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_single_query(method):
    got = bootstrap_ci(np.array([[-0.25], [0.0]]), rng=np.random.default_rng(0),
                       resamples=100, method=method)
    assert got == (BootstrapInterval(-0.25, -0.25, "constant"),
                   BootstrapInterval(0.0, 0.0, "constant"))


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_all_equal_differences_give_the_point_not_nan(method):
    d = np.full(30, 0.1)
    assert np.mean(d) != 0.1  # floating-point mean is off by an ulp; the interval is not
    (got,) = bootstrap_ci(d[None], rng=np.random.default_rng(0), resamples=500, method=method)
    assert got == BootstrapInterval(0.1, 0.1, "constant")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _scipy_ci(np.zeros(30), resamples=500, seed=0, alpha=0.05, method="BCa")
    assert math.isnan(ref.low)  # what we protect against


def test_generator_advance_does_not_depend_on_the_values():
    varying = np.stack([SAMPLES["n40_ties"], SAMPLES["n40_hits"]])
    constant = np.zeros_like(varying)
    mixed = np.stack([SAMPLES["n40_ties"], np.zeros(40)])
    follow = []
    for rows in (varying, constant, mixed):
        rng = np.random.default_rng(8)
        bootstrap_ci(rows, rng=rng, resamples=777, chunk=100)
        follow.append(rng.random())
    assert follow[0] == follow[1] == follow[2]
    reference = np.random.default_rng(8)
    reference.integers(0, 40, (777, 40))
    assert reference.random() == follow[0]


def _one_sided_seed(d, resamples):
    """A seed whose bootstrap means all lie below the observed mean (found by search)."""
    theta = np.mean(d)
    for seed in range(10_000):
        idx = np.random.default_rng(seed).integers(0, d.size, (resamples, d.size))
        if np.all(d[idx].mean(axis=-1) < theta):
            return seed
    raise AssertionError("no seed found")


def test_bca_falls_back_to_percentile_when_all_means_on_one_side():
    d = np.array([0.0, 1.0])
    seed = _one_sided_seed(d, 3)
    with pytest.warns(stats.DegenerateDataWarning), np.errstate(invalid="ignore"):
        ref = _scipy_ci(d, resamples=3, seed=seed, alpha=0.05, method="BCa")
    assert math.isnan(ref.low) or math.isnan(ref.high)  # scipy gives up here
    (got,) = bootstrap_ci(d[None], resamples=3, rng=np.random.default_rng(seed), method="bca")
    (pct,) = bootstrap_ci(d[None], resamples=3, rng=np.random.default_rng(seed),
                          method="percentile")
    assert got.method == "percentile"
    assert got.fallback is not None and "one side" in got.fallback
    assert (got.low, got.high) == (pct.low, pct.high)
    assert math.isfinite(got.low) and math.isfinite(got.high)
    assert pct.fallback is None  # percentile was asked for: nothing to explain


def test_fallback_is_per_row():
    d = np.array([0.0, 1.0])
    seed = _one_sided_seed(d, 3)
    other = np.array([0.5, 0.5])  # constant row alongside
    got = bootstrap_ci(np.stack([d, other]), resamples=3, rng=np.random.default_rng(seed))
    assert got[0].method == "percentile" and got[0].fallback
    assert got[1] == BootstrapInterval(0.5, 0.5, "constant")


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.sampled_from([-1.0, -0.5, -0.1, 0.0, 0.0, 0.2, 1 / 3, 1.0]),
                    min_size=0, max_size=9),
    resamples=st.integers(1, 60),
    seed=st.integers(0, 2**32 - 1),
    method=st.sampled_from(["bca", "percentile"]),
    alpha=st.sampled_from([0.5, 0.1, 0.05, 0.001]),
)
@example(values=[-1.0, -0.5, -0.5], resamples=21, seed=4714312, method="bca", alpha=0.5)
def test_never_nan_and_within_data_range(values, resamples, seed, method, alpha):
    d = np.array(values, dtype=float)
    (got,) = bootstrap_ci(d[None], resamples=resamples, rng=np.random.default_rng(seed),
                          method=method, alpha=alpha)
    assert math.isfinite(got.low) and math.isfinite(got.high)
    assert got.low <= got.high
    if d.size:
        tol = 1e-12
        assert d.min() - tol <= got.low and got.high <= d.max() + tol
    assert got.method in ("bca", "percentile", "constant", "empty")
    assert (got.fallback is not None) == (method == "bca" and got.method == "percentile")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"diffs": np.zeros(5)}, ValueError),  # 1-D
        ({"diffs": np.array([[0.0, np.nan]])}, ValueError),
        ({"resamples": 0}, ValueError),
        ({"resamples": 2.5}, ValueError),
        ({"alpha": 0.0}, ValueError),
        ({"alpha": 1.0}, ValueError),
        ({"method": "basic"}, ValueError),
        ({"chunk": 0}, ValueError),
        ({"rng": 42}, TypeError),
    ],
)
def test_bootstrap_rejects_bad_arguments(kwargs, error):
    args = {"diffs": np.zeros((1, 5)), "rng": np.random.default_rng(0), "resamples": 10}
    args.update(kwargs)
    diffs = args.pop("diffs")
    with pytest.raises(error):
        bootstrap_ci(diffs, **args)


# ------------------------------------------------------------------------------------------
# Holm


def test_holm_hand_computed():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, max(0.06, 0.04·1) = 0.06
    got = holm([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(got, [0.03, 0.06, 0.06, 0.02], rtol=1e-15)


def test_holm_caps_at_one_and_is_monotone():
    np.testing.assert_array_equal(holm([0.5, 0.6]), [1.0, 1.0])
    np.testing.assert_allclose(holm([0.2, 0.01, 0.9]), [0.4, 0.03, 0.9], rtol=1e-15)


def test_holm_ties_get_equal_values_whatever_their_order():
    np.testing.assert_allclose(holm([0.02, 0.02, 0.5]), [0.06, 0.06, 0.5], rtol=1e-15)
    np.testing.assert_allclose(holm([0.5, 0.02, 0.02]), [0.5, 0.06, 0.06], rtol=1e-15)


def test_holm_edge_inputs():
    empty = holm([])
    assert empty.shape == (0,) and empty.dtype == np.float64
    np.testing.assert_array_equal(holm([0.03]), [0.03])
    np.testing.assert_array_equal(holm(np.array([0.0, 1.0])), [0.0, 1.0])
    for bad in ([0.1, np.nan], [-0.01], [1.5]):
        with pytest.raises(ValueError):
            holm(bad)


def _holm_rejections(p, alpha):
    """Holm's sequential procedure, written as the textbook states it."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    rejected = set()
    for step, i in enumerate(order):
        if p[i] > alpha / (len(p) - step):
            break
        rejected.add(i)
    return rejected


@settings(max_examples=200, deadline=None)
@given(p=st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.01, 0.025, 0.05])),
                  min_size=1, max_size=12),
       alpha=st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_adjusted_values_reproduce_the_sequential_procedure(p, alpha):
    adj = holm(p)
    assert np.all(adj >= np.array(p)) and np.all(adj <= 1.0)
    for i in range(len(p)):
        for j in range(len(p)):
            if p[i] <= p[j]:
                assert adj[i] <= adj[j]
    # p_(i) ≤ α/(m − i + 1) ⇔ (m − i + 1)·p_(i) ≤ α; the exact multiplication can round, so
    # compare away from the boundary only
    near = [abs(adj[i] - alpha) < 1e-12 for i in range(len(p))]
    if not any(near):
        assert {i for i in range(len(p)) if adj[i] <= alpha} == _holm_rejections(p, alpha)


# ------------------------------------------------------------------------------------------
# minimum detectable drop


def _with_sd(sd: float, n: int) -> np.ndarray:
    z = np.random.default_rng(n).normal(size=n)
    z = (z - z.mean()) / z.std(ddof=1)
    return sd * z


def test_mdd_hand_computed():
    d = np.array([0.1, -0.1, 0.2, 0.0])  # mean 0.05, s² = (0.0025+0.0225+0.0225+0.0025)/3
    s = math.sqrt(0.05 / 3)
    expected = (Z_975 + Z_80) * s / 2
    assert minimum_detectable_drop(d, 0.05) == pytest.approx(expected, rel=1e-12)
    assert minimum_detectable_drop(d, 0.05) == pytest.approx(0.18084, abs=1e-5)
    # power 0.5: z_power = 0
    assert minimum_detectable_drop(d, 0.05, power=0.5) == pytest.approx(Z_975 * s / 2, rel=1e-12)


# Exact paired-t detectable drops (noncentral t, two-sided α = 0.05, power 0.8), σ_d = 0.10 and 0.20
TABLE = {25: (0.058, 0.117), 50: (0.040, 0.081), 100: (0.028, 0.057), 200: (0.020, 0.040),
         500: (0.013, 0.025), 1000: (0.009, 0.018)}


@pytest.mark.parametrize("n", sorted(TABLE))
def test_mdd_normal_approximation_against_notes_table(n):
    for sd, table in zip((0.10, 0.20), TABLE[n]):
        got = minimum_detectable_drop(_with_sd(sd, n), 0.05)
        assert got == pytest.approx((Z_975 + Z_80) * sd / math.sqrt(n), rel=1e-12)
        # the normal approximation is a little smaller than the noncentral-t value …
        assert got < table + 0.0005
        # … by under 5% (≈4% at n = 25; beyond that mostly the table's 3-decimal rounding)
        assert table / got < 1.05
    if n == 25:
        assert TABLE[25][0] / minimum_detectable_drop(_with_sd(0.1, 25), 0.05) > 1.03


def _t_based_mdd(sd, n, alpha=0.05, power=0.8):
    from scipy.optimize import brentq

    df = n - 1
    crit = stats.t.ppf(1 - alpha / 2, df)

    def gap(delta):
        nc = delta * math.sqrt(n) / sd
        return stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc) - power

    return brentq(gap, 1e-9, 6 * sd / math.sqrt(n))  # noncentrality ≤ 6


def test_mdd_relation_to_the_exact_t_value():
    for n in (25, 100, 1000):
        exact = _t_based_mdd(0.1, n)
        assert round(exact, 3) == TABLE[n][0]  # the notes' table is reproduced
        normal = minimum_detectable_drop(_with_sd(0.1, n), 0.05)
        assert normal < exact
        assert exact / normal - 1 < {25: 0.045, 100: 0.011, 1000: 0.0011}[n]


def test_mdd_edge_cases():
    assert minimum_detectable_drop(np.array([]), 0.05) is None
    assert minimum_detectable_drop(np.array([0.3]), 0.05) is None
    assert minimum_detectable_drop(np.full(50, 0.1), 0.05) == 0.0  # exact, not ~1e-17
    assert minimum_detectable_drop(np.zeros(50), 0.05) == 0.0
    d = _with_sd(0.1, 50)
    assert minimum_detectable_drop(d, 0.05, 0.9) > minimum_detectable_drop(d, 0.05, 0.8)
    assert minimum_detectable_drop(d, 0.01) > minimum_detectable_drop(d, 0.05)
    for kwargs in ({"alpha": 0.0}, {"alpha": 1.0}, {"alpha": 0.05, "power": 1.0}):
        with pytest.raises(ValueError):
            minimum_detectable_drop(d, **kwargs)
    with pytest.raises(ValueError):
        minimum_detectable_drop(np.array([0.1, np.nan]), 0.05)


@pytest.mark.parametrize("centre, spread", [(-1e12, 1.0), (-1e6, 1e-5), (-0.05, 1e-3)])
def test_the_studentized_spread_does_not_cancel_far_from_zero(centre, spread):
    """A resample's spread is computed from deviations about the observed mean, not as
    mean(x²) − mean(x)², which cancels when |mean| ≫ SD: 100 values of −1e12 + N(0, 1) lie
    far below 0, and no resample is as extreme (p = 1/(B + 1)), as at any other scale."""
    d = centre + np.random.default_rng(1).normal(0.0, spread, 100)
    (got,) = bootstrap_ci(d[None], rng=np.random.default_rng(0), resamples=2000, nulls=[0.0],
                          bound_tail=0.025)
    assert got.p_lower == 1 / 2001
    assert got.upper < centre + 10 * spread


@pytest.mark.parametrize("seed", range(6))
def test_the_exact_sign_flip_test_agrees_with_scipy(seed):
    """The exact one-sided sign-flip p-value against SciPy's exact one-sample permutation test
    (every sign pattern), and against counting by hand; ties of the tie band and zeros are
    not changes; more than EXACT_FLIP_MAX changes give None."""
    from retrieval_gate.decide.paired import EXACT_FLIP_MAX, sign_flip_p

    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, EXACT_FLIP_MAX + 1))
    changes = np.round(rng.normal(-0.1, 0.3, k), 3)
    changes[changes == 0] = -0.001
    d = np.concatenate([changes, np.zeros(20)])
    expected = stats.permutation_test((changes,), np.mean, permutation_type="samples",
                                      alternative="less", n_resamples=np.inf).pvalue
    assert sign_flip_p(d) == pytest.approx(expected, rel=1e-12)
    patterns = np.array(np.meshgrid(*[[-1.0, 1.0]] * k)).reshape(k, -1).T
    by_hand = np.mean(patterns @ np.abs(changes) <= changes.sum() + 1e-12)
    assert sign_flip_p(d) == by_hand
    assert sign_flip_p(np.concatenate([d, [0.0005]]), tie_band=0.0006) == sign_flip_p(d)
    assert sign_flip_p(np.full(EXACT_FLIP_MAX + 1, -0.5)) is None
    assert sign_flip_p(np.zeros(5)) == 1.0
