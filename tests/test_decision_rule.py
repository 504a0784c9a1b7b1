"""The decision rule where it used to be wrong, reproduced from the command line as a user
would meet it (per-query scores of the Cranfield example's 225 queries, written here):

- a drop every query shows beyond the margin is a regression, however the scores round;
- a few changed queries are decided by the exact sign-flip test whatever their sizes, so the
  decision does not jump when one loss moves by 1e-6;
- the family's strictest level at the bootstrap's resolution is warned about.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import SNAPSHOT
from test_answer_scores import QUERIES, check, runs_with

from retrieval_gate.decide.paired import differences
from retrieval_gate.decide.policy import GatePolicy, resolution_warning

N = len(QUERIES)


def test_a_constant_loss_is_a_regression_however_the_scores_round(tmp_path):
    """Every query 0.05 worse: c − b of scores like 0.35 and 0.8 differ from each other by
    rounding of the scores' size (about 1e-16), many ulps of 0.05. Read as a spread, that
    noise made the bootstrap-t p-value 0.22 and the verdict inconclusive, exit 0."""
    base = np.resize(np.array([0.35, 0.8, 0.45, 0.95, 0.6, 0.15]), N)
    cand = base - 0.05
    assert len(set((cand - base).tolist())) > 1  # the rounding is there
    b, c = runs_with(tmp_path, {"x": base.tolist()}, {"x": cand.tolist()})
    code, out, err, report = check(b, c, "score:x=0.02")
    assert code == 1, out
    (row,) = report["comparisons"]
    assert row["decision"] == "regression" and row["p_regression"] == 0.5 ** N
    assert row["ci_method"] == "constant" and row["mean_diff"] == pytest.approx(-0.05, abs=1e-15)
    assert err == ""


@pytest.mark.parametrize("rule", ["estimate", "interval"])
def test_a_loss_every_query_shows_beyond_the_margin_is_always_a_regression(tmp_path, rule):
    """Every query loses at least the margin, by varying amounts: whatever the approximations
    make of the spread, n losses out of n is a regression."""
    rng = np.random.default_rng(3)
    base = rng.uniform(0.5, 1.0, N)
    cand = base - 0.05 - rng.exponential(0.2, N)
    b, c = runs_with(tmp_path, {"x": base.tolist()}, {"x": cand.tolist()})
    config = tmp_path / "gate.toml"
    config.write_text(f'snapshot = "{SNAPSHOT.as_posix()}"\nregression-rule = "{rule}"\n')
    code, out, err, report = check(b, c, "score:x=0.02", config=config)
    assert (code, err) == (1, ""), out
    assert report["settings"]["regression_rule"] == rule
    assert report["comparisons"][0]["p_regression"] <= 0.5 ** N


def _few_losses(tmp_path, losses: list[float]) -> tuple[int, dict]:
    base = np.ones(N)
    cand = base.copy()
    cand[:len(losses)] -= losses
    b, c = runs_with(tmp_path, {"x": base.tolist()}, {"x": cand.tolist()})
    code, _, err, report = check(b, c, "score:x=0.01")
    assert err == ""
    return code, report["comparisons"][0]


def test_few_changed_queries_decide_continuously(tmp_path):
    """4 losses of exactly 1 among 225 queries, then one of them 0.999999, then losses 1, 1
    and ½: the exact sign-flip test gives 1/16, 1/16 and 1/8 — inconclusive all three (the
    t-test alone said 0.023 and 0.049: a regression that a change of 1e-6 switched on)."""
    decisions = []
    for losses, p in (([1.0] * 4, 1 / 16), ([1.0, 1.0, 1.0, 0.999999], 1 / 16),
                      ([1.0, 1.0, 0.5], 1 / 8)):
        code, row = _few_losses(tmp_path, losses)
        assert row["p_regression"] == p
        decisions.append((code, row["decision"]))
    assert decisions == [(0, "inconclusive")] * 3
    # enough losses: the exact test agrees it is a regression
    code, row = _few_losses(tmp_path, [1.0] * 6 + [0.999999] * 2)
    assert (code, row["decision"], row["p_regression"]) == (1, "regression", 1 / 256)


def test_differences_drop_the_rounding_of_the_scores():
    base = np.array([[0.35, 0.8, 0.45, 0.95]])
    d = differences(base, base - 0.05)
    assert len(set(d[0].tolist())) == 1 and d[0, 0] == pytest.approx(-0.05, abs=1e-16)
    spread = differences(base, base + np.array([[0.0, 0.0, 0.0, 1e-12]]))
    assert len(set(spread[0].tolist())) == 2  # a real spread, however small, stays


def test_the_resolution_warning_at_its_edge():
    """B = 19 and a family of one: α/m = 1/(B + 1) exactly, so no bootstrap-t p-value can be
    below it and the t-test always decides alone: warned."""
    policy = dataclasses.replace(GatePolicy(), resamples=19)
    assert resolution_warning(policy, 1) is not None
    assert resolution_warning(dataclasses.replace(policy, resamples=20), 1) is None


def test_a_regression_the_rule_before_showed_says_so():
    """Seven of 50 queries lose a lot (rule interval, three comparisons): the regression
    p-value misses it, the rule before's bound and sign test show it — the report says which
    showed it."""
    from retrieval_gate.decide.policy import GatedMeasure, compare
    from retrieval_gate.report.cells import decision_reason

    d = np.zeros(50)
    d[:7] = [-0.7, -0.93, -0.61, -0.58, -0.51, -0.46, -0.76]
    policy = GatePolicy(gates=(GatedMeasure("m", 0.02),), resamples=2000,
                        regression_rule="interval")
    base = np.zeros((50, 1))
    c = compare(base, base + d[:, None], ["m"], {f"s{i}": np.arange(50) for i in range(3)},
                policy)[0]
    assert c.decision == "regression" and c.p_regression_holm >= policy.alpha
    assert decision_reason(c, policy) == "by the studentized bound and sign test"


def test_skewed_differences_outside_the_calibration_are_warned(tmp_path):
    """Most queries slightly worse, a few much better: a tail of rare large gains, where no
    test holds α at small n. The report carries the sample skewness and, beyond the
    calibrated range, the queries that would restore α, and warns."""
    from scipy import stats

    from retrieval_gate.decide import skew

    rng = np.random.default_rng(11)
    base = rng.uniform(0.4, 0.6, N)
    gains = np.where(np.arange(N) % 45 == 0, 0.35, -0.01)
    b, c = runs_with(tmp_path, {"x": base.tolist()}, {"x": (base + gains).tolist()})
    _, out, err, report = check(b, c, "score:x=0.02")
    (row,) = report["comparisons"]
    expected = float(stats.skew(differences(base[None], (base + gains)[None])[0]))
    assert row["skewness"] == pytest.approx(expected, rel=1e-9)
    assert row["skew_queries"] == skew.queries_for(row["skewness"]) > N
    assert any("α of a regression is not guaranteed here" in w for w in report["warnings"])
    assert "not guaranteed" in out and err == ""
    # left skew (a few queries much worse) is never warned about
    b, c = runs_with(tmp_path, {"x": base.tolist()}, {"x": (base - gains).tolist()})
    _, _, _, report = check(b, c, "score:x=0.02")
    assert report["comparisons"][0]["skew_queries"] is None


def test_the_calibrated_range_by_hand():
    from retrieval_gate.decide import skew

    (n0, g0), (n1, g1) = skew.CALIBRATED[0], skew.CALIBRATED[1]
    assert skew.calibrated_skewness(10) == g0 and skew.calibrated_skewness(n1) == g1
    assert skew.outside(g0, n0) is None and skew.outside(None, n0) is None
    assert skew.outside(g1, n0) == (n1 if g1 > g0 else None)
    last_n, last_g = skew.CALIBRATED[-1]
    assert skew.queries_for(2 * last_g) == 4 * last_n  # beyond: skewness/√n held constant
