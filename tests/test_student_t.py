"""Student's t distribution and the paired t-test without SciPy (decide.student_t): closed
forms by hand, SciPy's ``stdtr``/``stdtrit``/``ttest_1samp`` as the oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from retrieval_gate.decide.student_t import paired_t_p, paired_t_upper, t_cdf, t_quantile

DEGREES = [1, 2, 3, 4, 5, 7, 10, 24, 49, 99, 224, 1000, 6979, 10_000, 100_000, 1_000_000]


def test_closed_forms_by_hand():
    # 1 degree of freedom is Cauchy: ½ + atan(t)/π
    assert t_cdf(-1.0, 1) == pytest.approx(0.25, rel=1e-15)
    assert t_cdf(-1e-6, 1) == pytest.approx(0.5 - math.atan(1e-6) / math.pi, rel=1e-15)
    # 2 degrees: ½ + t / (2·√(2 + t²))
    assert t_cdf(-1.0, 2) == pytest.approx(0.5 - 1 / (2 * math.sqrt(3)), rel=1e-15)
    assert t_cdf(3.0, 2) == pytest.approx(0.5 + 3 / (2 * math.sqrt(11)), rel=1e-15)
    # 4 degrees: ½ + (3/8)·x·(1 − x²/3)·… with x = t/√(4 + t²): P(T ≤ 1) = ½ + ¾·x·(1 − x²/3)
    x = 1 / math.sqrt(5)
    assert t_cdf(1.0, 4) == pytest.approx(0.5 + 0.75 * x * (1 - x * x / 3), rel=1e-15)
    assert (t_cdf(0.0, 7), t_cdf(-math.inf, 3), t_cdf(math.inf, 3)) == (0.5, 0.0, 1.0)
    # table values: t(0.975; 10) = 2.228138851986, and the Cauchy quantile −cot(πp)
    assert t_quantile(0.975, 10) == pytest.approx(2.228138851986, rel=1e-12)
    assert t_quantile(1e-12, 1) == pytest.approx(-1 / math.tan(math.pi * 1e-12), rel=1e-14)
    assert t_quantile(0.5, 9) == 0.0


@pytest.mark.parametrize("df", DEGREES)
def test_the_distribution_function_agrees_with_scipy(df):
    values = np.concatenate([-np.logspace(-3, 3, 40), np.logspace(-3, 3, 40)])
    # both tails, to the accuracy the module states (SciPy's own stdtr loses digits near 0
    # for df = 1)
    tolerance = 1e-8 if df >= 100_000 else 3e-10 if df >= 1000 else 1e-12
    for t in values.tolist():
        expected = float(special.stdtr(df, t))
        if expected > 1e-300:
            assert t_cdf(t, df) == pytest.approx(expected, rel=tolerance), t


@pytest.mark.parametrize("df", DEGREES)
def test_the_quantile_agrees_with_scipy(df):
    tolerance = 1e-8 if df >= 1_000_000 else 1e-9 if df >= 10_000 else 1e-11
    for p in (1e-12, 1e-6, 0.05 / 8 / 2, 0.05 / 8, 0.0125, 0.025, 0.05, 0.3, 0.7, 0.975, 0.999):
        assert t_quantile(p, df) == pytest.approx(float(special.stdtrit(df, p)),
                                                  rel=tolerance), p
        assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, rel=1e-10)


def test_bad_arguments():
    for bad in ((0.0, 5), (1.0, 5), (0.5, 0)):
        with pytest.raises(ValueError):
            t_quantile(*bad)
    with pytest.raises(ValueError):
        t_cdf(math.nan, 3)
    with pytest.raises(ValueError):
        t_cdf(1.0, -1)


@settings(max_examples=80, deadline=None)
@given(d=st.lists(st.floats(-1, 1), min_size=2, max_size=80),
       null=st.sampled_from([0.0, -0.02, 0.05]),
       tail=st.sampled_from([0.05, 0.025, 0.05 / 8]))
def test_the_paired_t_test_agrees_with_scipy(d, null, tail):
    arr = np.array(d)
    if arr.max() == arr.min():  # no spread: the exact sign test's p-value
        assert paired_t_p(arr, null) == (0.5 ** arr.size if arr[0] < null else 1.0)
        assert paired_t_upper(arr, tail) == arr[0]
        return
    if arr.std(ddof=1) < 1e-150:  # SciPy's squares underflow there
        return
    test = stats.ttest_1samp(arr, null, alternative="less")
    assert paired_t_p(arr, null) == pytest.approx(test.pvalue, rel=1e-9, abs=1e-300)
    high = stats.ttest_1samp(arr, 0.0, alternative="less").confidence_interval(1 - tail).high
    assert paired_t_upper(arr, tail) == pytest.approx(high, rel=1e-9, abs=1e-12)


def test_degenerate_samples():
    assert paired_t_p([]) == 1.0 and paired_t_upper([], 0.05) == 0.0
    assert paired_t_p([-0.3]) == 0.5 and paired_t_p([0.3]) == 1.0
    assert paired_t_p([-0.3] * 30) == 2.0 ** -30
    assert paired_t_p([-0.3] * 30, null=-0.5) == 1.0
    # values so small their squares underflow: t is scale-free and still defined
    tiny = np.zeros(26)
    tiny[-1] = 3.5e-242
    assert paired_t_p(tiny) == pytest.approx(paired_t_p(np.where(tiny > 0, 1.0, 0.0)), rel=1e-12)
