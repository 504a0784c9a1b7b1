"""The decision rule (policy.decide, policy.compare): the family's simultaneous intervals, the two
regression rules, the minimum number of queries, and the labels every renderer prints."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import BASELINE, RUNS, SNAPSHOT
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

from retrieval_gate.core.errors import EXIT_INVALID, GateError
from retrieval_gate.decide.paired import bootstrap_ci, holm, minimum_detectable_drop, sign_test
from retrieval_gate.decide.policy import (
    DEFAULT_MIN_QUERIES,
    GatedMeasure,
    GatePolicy,
    compare,
    decide,
    decision_note,
    resolution_warning,
)
from retrieval_gate.decide.student_t import paired_t_p, paired_t_upper
from retrieval_gate.gating.gate import run_gate
from retrieval_gate.inputs.config import config_from_mapping
from retrieval_gate.report.cells import (
    deciding_bound,
    decision_cell,
    decision_reason,
    labels,
    percent,
)
from retrieval_gate.report.github import workflow_annotations
from retrieval_gate.report.junit import report_junit
from retrieval_gate.report.markdown import report_markdown
from retrieval_gate.report.text import report_text

ONE = GatePolicy(gates=(GatedMeasure("m", 0.02),), resamples=2000)
BEFORE = dataclasses.replace(ONE, regression_test="bonferroni")  # the rule before holm

# 30 per-query differences: the candidate loses a little on 25 queries and wins a lot on 3;
# mean −0.036. The 95% BCa interval ends at −0.0013, but a sample that has only three of the
# rare large wins is less certain than its spread says: the studentized (bootstrap-t) bound at
# one-sided 2.5% ends at +0.0048, so under the rule before (bonferroni: one-sided α/2) even
# alone this is not a regression. Under holm (one-sided α) alone it is: the bootstrap-t p is
# 0.037 (the t-test alone would say 0.0033); in a family of two, Holm makes it 0.074.
SKEWED = np.array([-0.09, -0.09, -0.07, -0.09, -0.05, 0.03, -0.02, -0.05, -0.08, -0.05, -0.07,
                   -0.02, -0.1, -0.05, -0.08, -0.08, -0.08, -0.04, -0.02, -0.05, -0.04, -0.05,
                   -0.1, 0.2, 0.15, -0.02, 0.05, -0.04, -0.03, -0.05])
# The same shifted down by 0.01 (mean −0.046): alone the bound ends at −0.0052 (regression); in
# a family of four (one-sided 0.625%) at +0.0139 (inconclusive), though the sign test stays
# significant.
WORSE = np.round(SKEWED - 0.01, 3)


def run(d: np.ndarray, policy: GatePolicy = ONE, slices: int = 1):
    """compare() on one measure whose per-query differences are ``d``, gated on ``slices``
    slices that all hold every query (a family of ``slices`` comparisons)."""
    base = np.zeros((d.size, 1))  # candidate − baseline is exactly d
    members = np.arange(d.size)
    return compare(base, base + d[:, None], ["m"], {f"s{i}": members for i in range(slices)},
                   policy)


# -- decide, by hand -----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, expected", [
    # the family's bound decides, not the shown interval's high end
    ({"ci_high_adjusted": -0.001}, "regression"),
    ({"ci_high_adjusted": 0.001}, "inconclusive"),
    # rule interval: the bound must pass −margin
    ({"ci_high_adjusted": -0.019, "rule": "interval"}, "inconclusive"),
    ({"ci_high_adjusted": -0.021, "rule": "interval"}, "regression"),
    # too few queries: nothing is certified
    ({"ci_high_adjusted": -0.5, "min_queries": 51}, "inconclusive"),
    ({"ci_high_adjusted": -0.5, "min_queries": 50}, "regression"),
])
def test_decide_regression_by_hand(kwargs, expected):
    # n = 50, Δ = −0.03, shown interval [−0.05, −0.01], Holm p 0.01, margin 0.02, α 0.05
    assert decide(50, -0.03, -0.05, -0.01, 0.01, 0.02, 0.05, **kwargs) == expected


def test_decide_defaults_are_a_family_of_one_and_the_policy_defaults():
    assert decide(50, -0.03, -0.05, -0.01, 0.01, 0.02, 0.05) == "regression"  # bound = ci_high
    assert decide(DEFAULT_MIN_QUERIES - 1, 0.0, -0.001, 0.001, 1.0, 0.02, 0.05) == "inconclusive"
    assert decide(DEFAULT_MIN_QUERIES, 0.0, -0.001, 0.001, 1.0, 0.02, 0.05) == "pass"


def test_the_interval_rule_needs_more_than_the_estimate_rule():
    # Δ −0.03, interval [−0.05, −0.01]: a significant drop whose estimate passes the margin,
    # but a drop of only 0.01 (not material) is still inside the interval
    args = (50, -0.03, -0.05, -0.01, 0.001, 0.02, 0.05)
    assert decide(*args, rule="estimate") == "regression"
    assert decide(*args, rule="interval") == "inconclusive"


def test_decision_note_texts():
    assert decision_note(0, 25) == "no query in this slice: nothing is certified"
    assert decision_note(1, 25) == ("only 1 query, fewer than min-queries = 25: neither pass "
                                    "nor regression is certified")
    assert decision_note(24, 25).startswith("only 24 queries, fewer than min-queries = 25")
    assert decision_note(25, 25) is None


def test_policy_values_from_the_configuration():
    policy = config_from_mapping({"regression-rule": "interval", "min-queries": 10}, "gate.toml",
                                 Path(".")).policy
    assert (policy.regression_rule, policy.min_queries) == ("interval", 10)
    defaults = config_from_mapping({}, "gate.toml", Path(".")).policy
    assert (defaults.regression_rule, defaults.min_queries) == ("estimate", DEFAULT_MIN_QUERIES)
    assert policy.as_dict()["regression_rule"] == "interval"
    for bad in ({"regression-rule": "strict"}, {"min-queries": 0}, {"min-queries": 2.5}):
        with pytest.raises(GateError) as raised:  # the schema's error, exit 2
            config_from_mapping(bad, "gate.toml", Path("."))
        assert raised.value.exit_code == EXIT_INVALID
    with pytest.raises(ValueError):
        GatePolicy(min_queries=0)


# -- compare: families, rules, minimum n ---------------------------------------------------------

def test_one_query_or_two_equal_ones_certify_nothing():
    for d in (np.array([0.5]), np.array([0.5, 0.5])):
        (c,) = run(d)
        assert (c.ci_low, c.ci_high, c.ci_method) == (0.5, 0.5, "constant")  # zero width …
        assert c.decision == "inconclusive" and not c.improvement  # … but no certainty
        assert c.decision_note is not None and "fewer than min-queries = 25" in c.decision_note
    # what the minimum protects against: with min-queries 1 one query would pass, improved
    (c,) = run(np.array([0.5]), dataclasses.replace(ONE, min_queries=1))
    assert c.decision == "pass" and c.improvement and c.decision_note is None


def test_many_identical_losses_are_a_regression_under_both_rules():
    for rule in ("estimate", "interval"):
        (c,) = run(np.full(30, -0.5), dataclasses.replace(ONE, regression_rule=rule))
        assert c.ci_high_adjusted == c.ci_high == -0.5
        assert c.sign_p_holm == 2.0**-30 and c.decision == "regression"


def test_a_skewed_sample_is_not_flagged_on_its_bca_end_alone():
    (alone,) = run(SKEWED, BEFORE)
    assert alone.ci_high == pytest.approx(-0.0013, abs=1e-4)  # below 0 …
    assert alone.ci_high_adjusted == pytest.approx(0.0048, abs=1e-4)  # … the bound is not
    assert alone.sign_p_holm < 0.05 and alone.mean_diff <= -0.02
    assert alone.decision == "inconclusive"


def test_holm_reads_the_larger_of_the_t_test_and_the_studentized_bootstrap():
    (alone,) = run(SKEWED)
    t_test = stats.ttest_1samp(SKEWED, 0.0, alternative="less")
    assert paired_t_p(SKEWED) == pytest.approx(t_test.pvalue, rel=1e-12)  # 0.0033
    assert alone.p_regression == pytest.approx(0.037, abs=1e-3)  # the bootstrap-t's, larger
    assert alone.p_regression == alone.p_regression_holm and alone.decision == "regression"
    (pair,) = run(SKEWED, slices=2)[:1]
    assert pair.p_regression_holm == 2 * alone.p_regression and pair.decision == "inconclusive"
    # the deciding bound is the larger of the two one-sided 1 − α/m bounds
    for m in (1, 2, 8):
        c = run(SKEWED, slices=m)[0]
        (boot,) = bootstrap_ci(SKEWED[None], rng=np.random.default_rng(ONE.seed),
                               resamples=ONE.resamples, alpha=ONE.alpha,
                               bound_tail=ONE.alpha / m, nulls=[0.0])
        high = t_test.confidence_interval(1 - ONE.alpha / m).high
        assert paired_t_upper(SKEWED, ONE.alpha / m) == pytest.approx(high, rel=1e-12)
        assert c.ci_high_adjusted == max(boot.upper, paired_t_upper(SKEWED, ONE.alpha / m))
        assert c.p_regression == max(boot.p_lower, paired_t_p(SKEWED))
    # rule interval: the same tests against −margin, whose p-values are larger
    (strict,) = run(SKEWED, dataclasses.replace(ONE, regression_rule="interval"))
    assert strict.p_regression >= stats.ttest_1samp(SKEWED, -0.02, alternative="less").pvalue
    assert strict.p_regression > alone.p_regression and strict.decision == "inconclusive"


def test_a_zero_one_outcome_to_the_last_bit_needs_the_exact_sign_test_too():
    """Three one-level Recall drops: 2/3 → 1/3 twice and 1 → 2/3 once differ by one ulp; they
    are the same change, and McNemar's test joins as for identical floats."""
    d = np.zeros(50)
    d[:3] = [1 / 3 - 2 / 3, 1 / 3 - 2 / 3, 2 / 3 - 1]
    assert len(set(d[:3].tolist())) == 2
    (c,) = run(d)
    assert c.p_regression == c.sign_p == 0.125 and c.decision == "inconclusive"


def test_a_zero_one_outcome_needs_the_exact_sign_test_too():
    """25 queries, 3 lose a 0/1 outcome (Hit@k, an abstention, a pass/fail judge): Δ −0.12.
    The t-test says 0.041, below α, but 3 losses out of 3 changed queries happen 1 time in 8
    when both runs are alike; McNemar's exact test joins the max and the drop is not
    significant. Differences of varying size are not a 0/1 outcome: no sign test there."""
    d = np.zeros(25)
    d[:3] = -1.0
    assert paired_t_p(d) == pytest.approx(stats.ttest_1samp(d, 0, alternative="less").pvalue)
    assert paired_t_p(d) < 0.05
    (c,) = run(d)
    assert c.p_regression == c.sign_p == 0.125 and c.decision == "inconclusive"
    varied = d.copy()
    varied[0] = -0.9  # no longer one change repeated: the exact sign-flip test still bounds it
    (v,) = run(varied)
    assert v.p_regression == 0.125 and v.decision == "inconclusive"


@pytest.mark.parametrize("losses, p", [
    ([1.0, 1.0, 1.0, 1.0], 1 / 16),
    ([1.0, 1.0, 1.0, 0.999999], 1 / 16),
    ([1.0, 1.0, 0.5], 1 / 8),
])
def test_few_changed_queries_are_bounded_by_the_exact_sign_flip_test(losses, p):
    """25 queries, a few losses: the decision must not jump when one loss moves by 1e-6. The
    exact sign-flip test (the share of the 2^k sign patterns whose sum is as low) joins the
    max, whatever the losses' sizes; the t-test alone says 0.021–0.048 here."""
    d = np.zeros(25)
    d[:len(losses)] = -np.array(losses)
    assert paired_t_p(d) < 0.05
    (c,) = run(d)
    assert c.p_regression == p
    assert c.decision == ("regression" if p < 0.05 else "inconclusive")


def test_a_large_family_still_flags_a_clear_drop():
    """The bootstrap-t p-value is never below 1/(B + 1): with B = 1000 and 60 comparisons
    (α/m ≈ 0.00083) no comparison could reach Holm's first step if the larger p-value always
    decided. Where no resample is as extreme as the data, the t-test decides alone, and the
    report warns that the bootstrap does not check it there."""
    policy = dataclasses.replace(ONE, resamples=1000)
    family = run(np.round(SKEWED - 0.3, 3), policy, slices=60)
    assert all(c.decision == "regression" for c in family)
    assert family[0].p_regression == pytest.approx(
        stats.ttest_1samp(SKEWED - 0.3, 0, alternative="less").pvalue, rel=1e-9)
    assert resolution_warning(policy, 60) == (
        "1,000 bootstrap resamples resolve p-values down to 0.001, not below the family's "
        "strictest level 0.00083 (α/60): below it the t-test decides without the studentized "
        "bootstrap's check; set resamples ≥ 24,000")
    assert resolution_warning(policy, 50) is None  # 0.001 ≤ α/50
    assert resolution_warning(BEFORE, 60) is None


def test_the_same_loss_on_every_query_up_to_rounding_is_a_regression():
    """100 queries that each lost 0.3, computed as differences of scores (0.6 − 0.9, 0.3 − 0.6,
    …): equal up to one unit in the last place. That is no spread — the interval is the value,
    the p-value the sign test's of 100 losses — not rounding divided by rounding."""
    baseline = np.resize(np.array([0.9, 0.6, 0.7, 1.0]), 100)
    d = (baseline - 0.3) - baseline
    assert len(set(d.tolist())) > 1
    for policy in (ONE, BEFORE):
        (c,) = run(d, policy)
        assert c.ci_method == "constant" and c.decision == "regression"
        assert c.p_regression == 0.5 ** 100
        assert c.ci_high_adjusted == c.mean_diff == pytest.approx(-0.3, abs=1e-15)


def test_a_bound_beyond_the_floats_stays_finite():
    """One query lost 2e12 (a score on a huge scale), the others nothing: resamples without
    spread make the studentized bound ±1e300 × a spread, beyond the floats; it is kept finite
    (shown as unbounded), never infinity in a JSON report."""
    d = np.zeros(30)
    d[0] = -2e12
    for rule in ("estimate", "interval"):
        (c,) = run(d, dataclasses.replace(ONE, regression_rule=rule), slices=1)
        assert math.isfinite(c.ci_high_adjusted) and abs(c.ci_high_adjusted) <= 1e300
    assert minimum_detectable_drop(SKEWED, 1e-17, one_sided=True) > 0  # no Φ⁻¹(1)


def test_a_family_widens_the_regression_bound():
    (alone,) = run(WORSE, BEFORE)
    family = run(WORSE, BEFORE, slices=4)
    assert alone.ci_high_adjusted == pytest.approx(-0.0052, abs=1e-4)
    assert alone.decision == "regression"
    for c in family:
        # the shown interval does not change with the family; the bound does
        assert (c.ci_low, c.ci_high) == (alone.ci_low, alone.ci_high)
        assert c.ci_high_adjusted == pytest.approx(0.0139, abs=1e-4)
        assert c.sign_p_holm == pytest.approx(4 * alone.sign_p_holm, rel=1e-12)
        assert c.sign_p_holm < 0.05
        assert c.decision == "inconclusive"


def test_holm_adjusts_the_regression_p_values_of_a_family():
    for m, decision in ((1, "regression"), (2, "regression"), (4, "inconclusive")):
        family = run(WORSE, slices=m)
        alone = family[0].p_regression
        for c in family:
            assert c.p_regression == alone
            assert c.p_regression_holm == pytest.approx(min(1.0, m * alone), rel=1e-12)
            assert c.decision == decision


def test_the_bound_is_the_bootstrap_upper_end_at_alpha_over_m():
    for m in (1, 2, 3, 8):
        c = run(SKEWED, BEFORE, slices=m)[0]
        (expected,) = bootstrap_ci(SKEWED[None], rng=np.random.default_rng(ONE.seed),
                                   resamples=ONE.resamples, alpha=ONE.alpha,
                                   upper_alpha=ONE.alpha / m)
        assert c.ci_high_adjusted == expected.upper
        assert c.mde > run(SKEWED, BEFORE, slices=1)[0].mde or m == 1  # detectable at α/m too


def test_too_few_queries_in_a_real_report_give_a_note_and_a_warning():
    report = run_gate(SNAPSHOT, BASELINE, RUNS / "hybrid.trec",
                   GatePolicy(resamples=1000, min_queries=226))
    assert report.verdict == "inconclusive"
    for c in report.comparisons:
        assert c.decision == "inconclusive" and not c.improvement
        assert c.decision_note == ("only 225 queries, fewer than min-queries = 226: neither "
                                   "pass nor regression is certified")
        assert f"{c.measure} on slice 'all': {c.decision_note}" in report.warnings


# -- properties ----------------------------------------------------------------------------------

_values = st.lists(st.sampled_from([-1.0, -0.5, -0.2, -0.05, 0.0, 0.0, 0.1, 0.3, 1.0]),
                   min_size=0, max_size=40)


def _significant(c, *, null: float, test: str) -> bool:
    """A drop's significance as the decision rule states it, from the comparison's fields:
    under test ``bonferroni`` the family's bound below the null and the Holm sign test below
    α; under ``holm`` the Holm p-value below α, or the rule before's conditions (its bound
    ``ci_high_before`` below the null and the Holm sign test) — never weaker than it."""
    before = c.ci_high_before if test == "holm" else c.ci_high_adjusted
    signs = c.sign_p_holm if c.sign_p_margin_holm is None else c.sign_p_margin_holm
    by_rule_before = before < null and signs < 0.05
    return by_rule_before or (test == "holm" and c.p_regression_holm < 0.05)


@settings(max_examples=60, deadline=None)
@example(d=[-1.0] * 4 + [-0.2] + [-0.05] * 4 + [0.3], margin=0.0, slices=3, min_queries=1,
         test="holm")  # a regression by the rule before's conditions, not by the Holm p-value
@example(d=[-1.0] * 4 + [-0.2] * 2 + [-0.05] * 3 + [0.3], margin=0.02, slices=3, min_queries=1,
         test="holm")
@given(d=_values, margin=st.sampled_from([0.0, 0.02, 0.1]), slices=st.integers(1, 3),
       min_queries=st.sampled_from([1, 5, 25]), test=st.sampled_from(["holm", "bonferroni"]))
def test_decisions_keep_their_guarantees(d, margin, slices, min_queries, test):
    d = np.array(d, dtype=float)
    base = dataclasses.replace(ONE, gates=(GatedMeasure("m", margin),), resamples=200,
                               min_queries=min_queries, regression_test=test)
    estimate = run(d, base, slices)
    strict = run(d, dataclasses.replace(base, regression_rule="interval"), slices)
    for e, s in zip(estimate, strict):
        if test == "bonferroni":
            assert e.ci_high_adjusted >= e.ci_high  # the family's interval is never narrower
        if e.n < min_queries:
            assert e.decision == s.decision == "inconclusive" and not e.improvement
            assert e.decision_note is not None
        if e.decision == "regression":
            assert e.mean_diff <= -margin
            assert _significant(e, null=0.0, test=test)
        if s.decision == "regression":
            assert s.mean_diff <= -margin
            assert _significant(s, null=-margin, test=test)
            assert e.decision == "regression"  # the strict rule flags a subset
        if e.decision == "pass":
            assert e.ci_low > -margin and e.n >= min_queries
        # Holm over the family's members; below min-queries a comparison is none of them
        # and keeps its own p-value
        members = slices if e.n >= min_queries else 1
        assert e.in_family == (e.n >= min_queries)
        assert e.sign_p_holm == pytest.approx(
            float(holm([sign_test(d).p_regression] * members)[0]), rel=1e-12)
        assert e.p_regression_holm == pytest.approx(
            float(holm([e.p_regression] * members)[0]), rel=1e-12)
        if e.n and (d == d[0]).all():  # no spread: the exact sign test's p-value
            assert e.p_regression == (0.5 ** e.n if d[0] < 0 else 1.0)


@settings(max_examples=40, deadline=None)
@given(d=st.lists(st.floats(-1, 1), min_size=25, max_size=60))
def test_a_larger_family_never_adds_a_regression(d):
    d = np.array(d, dtype=float)
    smaller = run(d, slices=1)[0]
    for m in (2, 5):
        larger = run(d, slices=m)[0]
        assert larger.ci_high_adjusted >= smaller.ci_high_adjusted
        assert larger.sign_p_holm >= smaller.sign_p_holm
        assert larger.p_regression_holm >= smaller.p_regression_holm
        if larger.decision == "regression":
            assert smaller.decision == "regression"


# -- labels ----------------------------------------------------------------------------------------

def test_percent_and_labels():
    assert [percent(p) for p in (0.95, 0.975, 0.9, 1 - 0.05 / 8, 0.8)] == [
        "95", "97.5", "90", "99.38", "80"]
    one = labels(BEFORE, 1)
    assert (one.ci, one.intervals, one.power) == ("95% CI", "95% intervals", "80% power")
    assert one.bound == "95% bound" and labels(BEFORE, 2).bound == "97.5% bound"
    two = labels(GatePolicy(alpha=0.1, regression_rule="interval", min_queries=30,
                            regression_test="bonferroni"), 2)
    assert two.ci == "90% CI" and two.bound == "95% bound" and two.p == "sign p (Holm)"
    assert two.intervals == "90% intervals (95% for regression: Bonferroni over 2 comparisons)"
    assert two.rule == ("regression when the whole 95% interval lies below −margin and the "
                        "Holm-adjusted sign test p < 0.1; pass when the 90% interval's low end > "
                        "−margin; neither with fewer than 30 queries; else inconclusive")
    holm_two = labels(GatePolicy(alpha=0.1, regression_rule="interval", min_queries=30), 2)
    assert holm_two.intervals == "90% intervals, 95% one-sided bound"
    assert holm_two.p == "regression p (Holm)" and holm_two.bound == "95% bound"
    assert holm_two.rule == ("regression when Δ ≤ −margin and the Holm-adjusted regression p "
                             "(Δ below −margin) < 0.1; pass when the 90% interval's low end > "
                             "−margin; neither with fewer than 30 queries; else inconclusive")
    assert labels(GatePolicy(), 1).intervals == "95% intervals, 95% one-sided bound"


def test_the_reason_of_a_decision_the_interval_does_not_show():
    """WORSE in a family of four: Δ −0.046 and a 95% interval wholly below 0, yet inconclusive
    — under the rule before, the deciding bound (the family's studentized 97.5% one) ends
    above 0; under holm, the Holm-adjusted regression p is 0.076. The row shows that bound, and
    the decision says which condition of the rule failed."""
    c = run(WORSE, BEFORE, slices=4)[0]
    assert c.decision == "inconclusive" and c.ci_high < 0 <= c.ci_high_adjusted
    assert deciding_bound(c) == "≤ +0.0139"
    holm_c = run(WORSE, slices=4)[0]  # under holm: the Holm-adjusted regression p
    assert decision_reason(holm_c, ONE) == "regression p 0.076"
    assert decision_cell(holm_c, ONE) == "inconclusive (regression p 0.076)"
    assert decision_reason(c, BEFORE) == "bound ≥ 0"
    assert decision_cell(c, BEFORE) == "inconclusive (bound ≥ 0)"
    lower = dataclasses.replace(c, lower_is_better=True, mean_diff=-c.mean_diff,
                                ci_low=-c.ci_high, ci_high=-c.ci_low)  # the same, as a rise
    assert deciding_bound(lower) == "≥ −0.0139" and decision_reason(lower, BEFORE) == "bound ≤ 0"
    assert decision_reason(dataclasses.replace(c, mean_diff=-0.015), BEFORE) == "Δ above −margin"
    assert decision_reason(dataclasses.replace(lower, mean_diff=0.015), BEFORE) == \
        "Δ below +margin"
    signs = dataclasses.replace(c, ci_high_adjusted=-0.001, sign_p_holm=0.2)
    assert decision_reason(signs, BEFORE) == "sign test p 0.2"
    interval = dataclasses.replace(BEFORE, regression_rule="interval")
    assert decision_reason(dataclasses.replace(c, ci_high_adjusted=-0.01), interval) == \
        "bound ≥ −margin"
    assert decision_reason(dataclasses.replace(c, n=10), BEFORE) == "n < 25"
    # the interval reaching 0 says why itself; other decisions need no reason
    assert decision_reason(dataclasses.replace(c, ci_high=0.001), BEFORE) is None
    assert decision_reason(run(WORSE)[0], BEFORE) is None  # alone: a regression
    assert decision_cell(dataclasses.replace(c, report_only=True), BEFORE) == \
        "report-only: inconclusive (bound ≥ 0)"


def test_every_renderer_labels_the_levels_the_policy_uses():
    report = run_gate(SNAPSHOT, BASELINE, RUNS / "bm25-titles.trec",
                   GatePolicy(alpha=0.1, resamples=1000, regression_test="bonferroni"))
    assert {c.decision for c in report.comparisons} == {"regression", "inconclusive"}
    outputs = {"text": report_text(report), "markdown": report_markdown(report),
               "github": "\n".join(workflow_annotations(report)).replace("%25", "%"),  # unescaped
               "junit": report_junit(report)}
    for name, text in outputs.items():
        assert "90% CI" in text, name
        assert "95% CI" not in text and "97.5%" not in text, name
    assert "90% intervals (95% for regression: Bonferroni over 2 comparisons)" in outputs["text"]
    assert "95% bound" in outputs["text"] and "| 95% bound |" in outputs["markdown"]
    assert "Detectable drop (80% power)" in outputs["text"]
    assert "detectable drop at 80% power" in outputs["markdown"]
    assert labels(report.policy, 2).rule in outputs["markdown"]


def test_the_gate_is_never_weaker_than_the_rule_before():
    """Seven of 50 queries lose a lot, rule interval, a family of three: the t-test's lower
    tail is conservative for such left-skewed differences, and the larger of its p-value and
    the bootstrap-t's (Holm 0.056) misses the drop; the rule before — the studentized bound
    at two-sided 1 − α/m below −margin and the Holm sign test — catches it, and so does the
    gate: either way of showing the drop significant decides."""
    d = np.zeros(50)
    d[:7] = [-0.7, -0.93, -0.61, -0.58, -0.51, -0.46, -0.76]
    policy = dataclasses.replace(ONE, regression_rule="interval")
    gate, *_ = run(d, policy, slices=3)
    before, *_ = run(d, dataclasses.replace(policy, regression_test="bonferroni"), slices=3)
    assert gate.p_regression_holm > 0.05 and gate.sign_p_holm < 0.05
    assert gate.ci_high_before == before.ci_high_adjusted < -0.02
    # the queries that did not change are neither wins nor losses either way
    assert gate.sign_p_margin_holm == gate.sign_p_holm
    assert before.decision == gate.decision == "regression"
    assert before.ci_high_before is None and before.sign_p_margin_holm is None


def test_under_rule_interval_only_losses_beyond_the_margin_count_in_the_rule_before():
    """18 of 25 queries lose 0.019 — less than the margin 0.02 — six lose a lot, one gains:
    the rule before's sign test counts 24 losses to 1 win (Holm 2.3e-6 over a family of
    three) and its bound lies below −margin, so it flags the change. Those 18 say nothing of
    a drop beyond the margin: counting them, the rule before flagged changes that every query
    made by just under the margin up to twice as often as α allows. The gate counts the
    losses beyond the margin, 6 to 1: P(X ≥ 6 | 7) = 8/128, times 3 by Holm = 0.1875 — and
    with the regression p-value above α too, the change is inconclusive."""
    d = np.array([-0.019] * 18 + [-1.0, -1.0, -0.5, 0.5, -1.0, -0.5, -1.0])
    policy = dataclasses.replace(ONE, regression_rule="interval")
    gate, *_ = run(d, policy, slices=3)
    before, *_ = run(d, dataclasses.replace(policy, regression_test="bonferroni"), slices=3)
    assert before.decision == "regression" and before.ci_high_adjusted < -0.02
    assert gate.ci_high_before == before.ci_high_adjusted
    assert gate.sign_p_holm == before.sign_p_holm < 1e-5
    assert gate.sign_p_margin_holm == pytest.approx(3 * 8 / 128, rel=1e-15)
    assert gate.p_regression_holm > 0.05
    assert gate.decision == "inconclusive"
    # under rule estimate the rule before's sign test counts every loss, as it always did
    estimate, *_ = run(d, ONE, slices=3)
    assert estimate.sign_p_margin_holm is None and estimate.decision == "regression"
