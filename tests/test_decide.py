"""What the gate decides from: no verdict from nothing, cost gates under the rule `interval`, a
percentile's own minimum number of queries and its expected bias, and one family of quality
comparisons and cost gates."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from conftest import ROOT, gate

from retrieval_gate.decide.cost import (
    PERCENTILE_MIN_QUERIES,
    compare_costs,
    expected_bias,
    min_queries,
)
from retrieval_gate.decide.paired import bootstrap_ci, holm
from retrieval_gate.decide.policy import (
    CostGate,
    GatedMeasure,
    GatePolicy,
    PairPolicy,
    compare,
    decide_pairs,
    paired,
    verdict,
)
from retrieval_gate.decide.signals import PairedSignal
from retrieval_gate.formats.schema import schema
from retrieval_gate.gating.gate import run_gate
from retrieval_gate.report.cells import labels

PYDOC = ROOT / "examples" / "pydoc"
POLICIES = ROOT / "examples" / "policies"


def _config(folder: Path, text: str, *, snapshot: Path = PYDOC / "snapshot.json",
            baseline: Path = ROOT / "baselines" / "pydoc",
            candidate: Path = PYDOC / "runs" / "bm25-truncated.trec") -> Path:
    config = folder / "gate.toml"
    config.write_text(f"snapshot = {json.dumps(str(snapshot))}\n"
                      f"baseline = {json.dumps(str(baseline))}\n"
                      f"candidate = {json.dumps(str(candidate))}\n" + text, encoding="utf-8")
    return config


def _checked(config: Path, folder: Path, *extra: str) -> tuple[int, str, dict]:
    code, out, err = gate("check", "--config", config, "--json", folder / "report.json", *extra)
    assert code in (0, 1, 4), err
    document = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    from jsonschema import Draft202012Validator
    Draft202012Validator(schema("report")).validate(document)
    return code, out.splitlines()[0], document


# -- no verdict from nothing -----------------------------------------------------------------

SMALL = """slices = ["paraphrase"]
[[gate]]
measure = "Recall@10"
margin = 0.02
min-queries = 15
[[gate]]
measure = "nDCG@10"
margin = 0.02
min-queries = 15
"""


def test_nothing_gated_is_inconclusive_not_a_pass(tmp_path: Path) -> None:
    # 13 paraphrase queries, every gate asks for 15: nothing can decide
    config = _config(tmp_path, SMALL)
    code, headline, document = _checked(config, tmp_path)
    assert code == 0
    assert headline == (
        "INCONCLUSIVE: nothing was gated — every gated comparison has fewer queries than its "
        "min-queries (Recall@10 on 'paraphrase': 13 < 15, nDCG@10 on 'paraphrase': 13 < 15) "
        "(exit 0)")
    assert (document["verdict"], document["exit_code"]) == ("inconclusive", 0)
    assert document["settings"]["family"] == 0
    assert all(c["too_small"] and c["min_queries"] == 15 and not c["in_family"]
               for c in document["comparisons"])
    code, headline, document = _checked(config, tmp_path, "--fail-on", "inconclusive")
    assert code == 4 and headline.endswith("(exit 4)")
    assert (document["verdict"], document["exit_code"]) == ("inconclusive", 4)
    out = gate("check", "--config", config)[1]
    assert ("95% intervals, 95% one-sided bound, regression p from the paired t-test and the "
            "studentized bootstrap, no comparison in the family (no Holm)\n") in out
    assert out.splitlines()[1] == ("Next: add queries to slice paraphrase: its gate of Recall@10 "
                                   "needs at least 15 (it has 13), or lower that gate's "
                                   "min-queries")


def test_every_gate_report_only_is_inconclusive(tmp_path: Path) -> None:
    config = _config(tmp_path, '[[gate]]\nmeasure = "Recall@10"\nmargin = 0.08\n'
                     'report-only = true\n')
    code, headline, document = _checked(config, tmp_path, "--fail-on", "inconclusive")
    assert code == 4
    assert headline == "INCONCLUSIVE: nothing was gated — every gate is report-only (exit 4)"
    assert document["verdict"] == "inconclusive" and document["settings"]["family"] == 0
    assert gate("check", "--config", config)[1].splitlines()[1] == (
        "Next: gate a measure: every gate is report-only (drop report-only from one)")


def test_a_pass_of_the_cost_gates_alone_says_no_measure_was_gated(tmp_path: Path) -> None:
    """The pipeline example's packing bug loses 0.205 of Recall [context]; a gate too small to
    decide leaves only the context budget, which it keeps: a pass, and it says of what."""
    pydoc = ROOT / "examples" / "pydoc"
    config = tmp_path / "gate.toml"
    config.write_text(f'snapshot = "{pydoc / "pipeline-snapshot.json"}"\n'
                      f'baseline = "{ROOT / "baselines" / "pydoc-pipeline"}"\n'
                      f'candidate = "{pydoc / "pipeline" / "packing-bug" / "context.jsonl"}"\n'
                      '[[gate]]\nmeasure = "Recall [context]"\nmargin = 0.08\n'
                      'min-queries = 500\n[[cost]]\nmetric = "context_tokens"\nstat = "mean"\n'
                      'max = 1000\n')
    code, out, err = gate("check", "--config", config)
    assert code == 0, err
    assert out.splitlines()[:2] == [
        ("PASS: the cost gates pass (context_tokens mean); no measure was gated — every gated "
        "comparison has fewer queries than its min-queries (Recall [context] on 'all': 89 < "
        "500) (exit 0)"),
        ("Next: add queries: its gate of Recall [context] needs at least 500 (it has 89), or "
        "lower that gate's min-queries")]


def test_leaks_fail_when_nothing_is_gated(tmp_path: Path) -> None:
    config = _config(tmp_path, '[[gate]]\nmeasure = "Recall@10"\nmargin = 0.05\n'
                     'report-only = true\n', snapshot=POLICIES / "snapshot.json",
                     baseline=ROOT / "baselines" / "policies",
                     candidate=POLICIES / "runs" / "leaky-filter.jsonl")
    code, headline, document = _checked(config, tmp_path)
    assert code == 1 and headline.startswith("REGRESSION: leak: ")
    assert document["verdict"] == "regression" and document["reasons"] == ["leak"]


def test_verdict_of_no_decision() -> None:
    assert verdict([]) == "inconclusive"
    assert verdict(["pass"]) == "pass"


# -- costs: the rule `interval`, a percentile's minimum, its bias ------------------------------

def _gated(baseline: np.ndarray, candidate: np.ndarray, gate_: CostGate, policy: GatePolicy,
           family: int | None = None):
    rows = compare_costs([PairedSignal.cost(gate_.metric, baseline, candidate)], (gate_,), policy,
                         family)
    (row,) = [r for r in rows if r.gate == gate_]
    return row


def _binomial_quantile(n: int, p: float) -> int:
    """The smallest k with P(K ≤ k) ≥ p, K ~ Binomial(n, ½)."""
    total = 0
    for k in range(n + 1):
        total += math.comb(n, k)
        if total / 2 ** n >= p:
            return k
    return n


def test_the_interval_rule_for_costs_wants_the_low_end_beyond_the_margin() -> None:
    # Every query of the baseline takes 10 ms; half of the candidate's 10, half 14: its mean is
    # 12, the ratio 1.2. A resample of n queries draws K ~ Binomial(n, ½) of the 14s, so its
    # ratio is 1 + 0.4·K/n, and the low end of the ratio's interval (a family of one: the
    # α/2 = 0.025 quantile) is that at K's 0.025 quantile: about 1.144 for n = 50.
    n = 50
    baseline, candidate = np.full(n, 10.0), np.array([10.0, 14.0] * (n // 2))
    k = _binomial_quantile(n, 0.025)
    gate_ = CostGate("latency_ms", "mean", max_increase=0.18)
    rows = {rule: _gated(baseline, candidate, gate_, GatePolicy(regression_rule=rule))
            for rule in ("estimate", "interval")}
    low = rows["estimate"].ratio_low_adjusted
    assert 1 + 0.4 * (k - 1) / n <= low <= 1 + 0.4 * (k + 1) / n
    assert rows["estimate"].ratio == pytest.approx(1.2)
    # the estimate reaches +18 % and the interval is above 1: a regression by rule estimate;
    # the interval's low end is below 1.18: rule interval cannot tell
    assert rows["estimate"].decision == "regression"
    assert rows["interval"].decision == "inconclusive"
    # a margin the whole interval exceeds: both rules
    tighter = CostGate("latency_ms", "mean", max_increase=0.1)
    assert {_gated(baseline, candidate, tighter, GatePolicy(regression_rule=rule)).decision
            for rule in ("estimate", "interval")} == {"regression"}


def test_a_percentile_has_its_own_minimum_number_of_queries() -> None:
    policy = GatePolicy()
    p95, p50, mean = (CostGate("latency_ms", stat, 0.2) for stat in ("p95", "p50", "mean"))
    assert min_queries(p95, policy) == PERCENTILE_MIN_QUERIES["p95"] == 50
    assert min_queries(p50, policy) == max(policy.min_queries, PERCENTILE_MIN_QUERIES["p50"])
    assert min_queries(mean, policy) == policy.min_queries == 25
    # a gate's own min-queries does not lower the estimator's floor: it marks a gate too small
    assert min_queries(CostGate("latency_ms", "p95", 0.2, min_queries=10), policy) == 50
    assert min_queries(p95, GatePolicy(min_queries=200)) == 200


def test_a_cost_gate_takes_its_own_min_queries_from_the_config(tmp_path: Path) -> None:
    from retrieval_gate.inputs.config import config_from_mapping

    config = config_from_mapping({"cost": [{"metric": "latency_ms", "stat": "p95",
                                            "max-increase": 0.2, "min-queries": 30}]},
                                 "gate.toml", tmp_path)
    assert config.policy.costs == (CostGate("latency_ms", "p95", 0.2, None, 30),)


@pytest.mark.parametrize("n", [29, 40])
def test_a_cost_gate_below_its_own_min_queries_is_too_small_as_a_quality_gate_is(n: int) -> None:
    """A gate's own min-queries means one thing for every gate: fewer queries are too small to
    decide — shown, not counted in the verdict, outside the family. Above it, the statistic's
    own floor (50 for a p95) still makes the gate inconclusive."""
    baseline = np.arange(10.0, 10.0 + n)
    row = _gated(baseline, 2 * baseline, CostGate("latency_ms", "p95", 0.2, None, 30),
                 GatePolicy())
    assert not row.in_family and not row.improvement
    if n < 30:
        assert row.too_small and row.decision is None
        assert row.note is not None and row.note.startswith(
            "too small to decide: 29 queries, fewer than this gate's min-queries (30)")
    else:
        assert not row.too_small and row.decision == "inconclusive"
        assert row.note is not None and row.note.startswith("p95 of 40 queries lies between")


@pytest.mark.parametrize("n", [49, 50])
def test_below_its_minimum_a_p95_gate_certifies_nothing(n: int) -> None:
    baseline = np.arange(10.0, 10.0 + n)
    gate_ = CostGate("latency_ms", "p95", 0.2)
    row = _gated(baseline, 2 * baseline, gate_, GatePolicy())
    assert row.ratio == pytest.approx(2.0) and row.min_queries == 50
    if n < 50:
        # numpy's p95 of 49 values sits between the 46th and 47th smallest (0-based position
        # 0.95·48 = 45.6): three queries lie above it
        assert row.decision == "inconclusive" and not row.in_family and not row.improvement
        assert row.note is not None and row.note.startswith(
            "p95 of 49 queries lies between its 4th-slowest and its 3rd-slowest: at least 50 "
            "queries are needed to certify it; expected bias of the p95 of 49 queries (log-normal model): baseline −")
    else:
        assert row.decision == "regression" and row.in_family
        assert row.note is not None and row.note.startswith("expected bias of the p95 of 50 ")


def test_an_absolute_budget_on_few_queries_decides_and_says_so() -> None:
    tokens = np.full(20, 500.0)
    row = _gated(tokens, tokens, CostGate("context_tokens", "p95", max=1000), GatePolicy())
    assert row.decision == "pass" and not row.in_family and row.min_queries is None
    assert row.note == ("p95 of 20 queries lies between its 2nd-largest and its largest: the "
                        "budget holds for these queries; an estimate of the p95 needs at least "
                        "50")


def test_expected_bias_of_a_percentile_by_hand() -> None:
    # two queries whose log latencies have standard deviation σ (ddof = 1)
    sigma = 0.8
    values = np.array([1.0, math.exp(sigma * math.sqrt(2))])
    half = math.exp(sigma ** 2 / 2)  # E[X] of a log-normal with median 1
    # the p50 of two values is their mean: E = e^(σ²/2), against a true median of 1
    assert expected_bias(values, "p50") == pytest.approx(half - 1, rel=1e-6)
    # the p95 of two is 0.05·min + 0.95·max; E[max] = 2·e^(σ²/2)·Φ(σ/√2)
    largest = 2 * half * NormalDist().cdf(sigma / math.sqrt(2))
    smallest = 2 * half - largest
    true_p95 = math.exp(sigma * NormalDist().inv_cdf(0.95))
    assert expected_bias(values, "p95") == pytest.approx(
        (0.05 * smallest + 0.95 * largest) / true_p95 - 1, rel=1e-6)
    assert expected_bias(values, "mean") == 0.0
    assert expected_bias(np.array([0.0, 1.0]), "p95") is None  # no log-normal fits a 0
    assert expected_bias(np.array([3.0]), "p95") is None
    # 25 queries of a log-normal with σ = 0.5: the p95 is about 6.5 % low
    z = np.array([NormalDist().inv_cdf((i + 0.5) / 25) for i in range(25)])
    z = z / z.std(ddof=1)
    assert expected_bias(np.exp(0.5 * z), "p95") == pytest.approx(-0.065, abs=0.003)


# -- one family ------------------------------------------------------------------------------

def test_the_family_counts_the_comparisons_and_cost_gates_that_can_decide() -> None:
    rng = np.random.default_rng(3)
    d = rng.normal(-0.01, 0.2, (60, 2))
    slices = {"all": np.arange(60), "small": np.arange(10)}
    policy = GatePolicy(gates=(GatedMeasure("a"), GatedMeasure("b")), resamples=2000,
                        regression_test="bonferroni")  # the bound at the family's level
    pairs = {("a", "all"): PairPolicy(0.02), ("b", "all"): PairPolicy(0.02),
             ("a", "small"): PairPolicy(0.02, min_queries=20)}  # too small: 10 < 20

    def bound(upper_alpha: float) -> float:
        return bootstrap_ci(d[:, 0:1].T, rng=np.random.default_rng(policy.seed),
                            resamples=policy.resamples, upper_alpha=upper_alpha)[0].upper

    alone = compare(np.zeros_like(d), d, ("a", "b"), slices, policy, pairs=pairs)
    assert [c.in_family for c in alone] == [True, True, False]
    assert alone[0].ci_high_adjusted == bound(0.05 / 2)  # the too-small one is not counted
    # one relative cost gate that can decide joins the family: the level is α/3
    joined = compare(np.zeros_like(d), d, ("a", "b"), slices, policy, pairs=pairs, family=3)
    assert joined[0].ci_high_adjusted == bound(0.05 / 3)
    assert joined[0].sign_p_holm == alone[0].sign_p_holm  # Holm: the quality comparisons
    assert joined[2].sign_p_holm == joined[2].sign_p  # outside the family: its own p
    with pytest.raises(ValueError, match="at least the 2 comparisons"):
        compare(np.zeros_like(d), d, ("a", "b"), slices, policy, pairs=pairs, family=1)
    # test holm: one Holm procedure over the family of 3; the cost gate's p-value, when not
    # given, counts as never rejected (p = 1)
    holm_policy = dataclasses.replace(policy, regression_test="holm")
    two, three = (compare(np.zeros_like(d), d, ("a", "b"), slices, holm_policy, pairs=pairs,
                          family=family) for family in (None, 3))
    p = [c.p_regression for c in two[:2]]
    assert [c.p_regression_holm for c in two[:2]] == pytest.approx(holm(p).tolist(), rel=1e-12)
    assert [c.p_regression_holm for c in three[:2]] == pytest.approx(
        holm([*p, 1.0])[:2].tolist(), rel=1e-12)
    # given, it takes its place in the one step-down procedure
    rows = paired(np.zeros_like(d), d, ("a", "b"), slices, holm_policy,
                  [False, False], pairs, 0.05 / 3)
    for cost_p in (1e-6, 0.5):
        joined = decide_pairs(rows, holm_policy, 3, [cost_p])
        assert [c.p_regression_holm for c in joined[:2]] == pytest.approx(
            holm([*p, cost_p])[:2].tolist(), rel=1e-12)
    # outside the family: as the family's strictest member would be decided, m times its p
    assert three[2].p_regression_holm == min(1.0, 3 * three[2].p_regression)
    # below the policy's min-queries: inconclusive and counted in the verdict, not a member
    strict = compare(np.zeros_like(d), d, ("a", "b"), slices,
                     GatePolicy(gates=policy.gates, resamples=2000, min_queries=61), pairs=pairs)
    assert not any(c.in_family for c in strict) and all(c.decision == "inconclusive"
                                                       for c in strict)


def test_a_cost_gate_bound_is_at_the_family_level() -> None:
    rng = np.random.default_rng(4)
    baseline = rng.lognormal(2, 0.3, 80)
    candidate = baseline * rng.lognormal(0.1, 0.2, 80)
    gate_ = CostGate("latency_ms", "mean", 0.2)
    policy = GatePolicy(costs=(gate_,))
    alone, joined = (_gated(baseline, candidate, gate_, policy, family)
                     for family in (None, 3))
    assert alone.in_family and alone.ratio_low == joined.ratio_low
    # one-sided at α/m: a family of one's bound is above the shown 1 − α interval's low end
    # (one-sided α/2), a family of three's below it (α/3 < α/2); test bonferroni's is that
    # low end (two-sided 1 − α/m)
    assert joined.ratio_low_adjusted < alone.ratio_low < alone.ratio_low_adjusted
    rule_before = dataclasses.replace(policy, regression_test="bonferroni")
    assert _gated(baseline, candidate, gate_, rule_before).ratio_low_adjusted == pytest.approx(
        alone.ratio_low, rel=1e-9)


def test_quality_and_cost_are_one_family_in_the_report(tmp_path: Path) -> None:
    # the pipeline example: three quality comparisons on 89 queries, a relative latency p95
    # gate (89 ≥ 50 queries) and an absolute context budget (never a member)
    code, out, err = gate("check", "--config", PYDOC / "pipeline.toml", "--json",
                          tmp_path / "report.json")
    assert code == 1, err
    document = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert document["settings"]["family"] == 4
    assert all(c["in_family"] for c in document["comparisons"])
    costs = {(r["metric"], r["stat"]): r for r in document["costs"]}
    assert costs[("latency_ms", "p95")]["in_family"]
    assert not costs[("context_tokens", "mean")]["in_family"]
    assert costs[("latency_ms", "p95")]["baseline_bias"] < 0  # a p95 is biased low
    assert ("95% intervals, 98.75% one-sided bound, regression p from the paired t-test and "
            "the studentized bootstrap, Holm across 4 members (3 comparisons, 1 cost gate)"
            ) in out
    assert "expected bias of the p95 of 89 queries (log-normal model)" in out
    assert labels(GatePolicy(), 4, 1).intervals in out


def test_too_small_comparisons_leave_the_family() -> None:
    snapshot, baseline = PYDOC / "snapshot.json", ROOT / "baselines" / "pydoc"
    candidate = PYDOC / "runs" / "bm25-truncated.trec"
    alone = run_gate(snapshot, baseline, candidate, GatePolicy(gates=(GatedMeasure("Recall@10",
                                                                                0.08),)))
    for other in (GatedMeasure("Recall@10", 0.0, slice="exceptions", min_queries=500),
                  GatedMeasure("nDCG@10", 0.08, slice="exceptions")):  # 12 < 25 queries
        report = run_gate(snapshot, baseline, candidate,
                       GatePolicy(gates=(GatedMeasure("Recall@10", 0.08), other)))
        assert report.family == alone.family == 1
        ours = next(c for c in report.comparisons if c.slice == "all")
        assert ours.ci_high_adjusted == alone.comparisons[0].ci_high_adjusted
        assert ours.sign_p_holm == alone.comparisons[0].sign_p_holm
        assert report.verdict == alone.verdict == "regression"


def test_one_comparison_and_one_cost_gate_say_how_the_family_spends_alpha(tmp_path: Path
                                                                          ) -> None:
    folder = PYDOC
    (tmp_path / "gate.toml").write_text(
        f'snapshot = "{folder / "pipeline-snapshot.json"}"\n'
        f'baseline = "{ROOT / "baselines" / "pydoc-pipeline"}"\n'
        f'candidate = "{folder / "pipeline" / "packing-bug" / "context.jsonl"}"\n'
        '[[gate]]\nmeasure = "Recall [context]"\nmargin = 0.08\n'
        '[[cost]]\nmetric = "latency_ms"\nstat = "p95"\nmax-increase = 0.5\n',
        encoding="utf-8")
    code, out, err = gate("check", "--config", tmp_path / "gate.toml", "--json",
                          tmp_path / "r.json")
    assert code == 1, err
    document = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert document["settings"]["family"] == 2
    (c,) = document["comparisons"]
    (cost,) = [r for r in document["costs"] if r["in_family"]]
    # one Holm procedure over the comparison's and the cost gate's regression p-values
    joint = holm([c["p_regression"], cost["p_regression"]]).tolist()
    assert [c["p_regression_holm"], cost["p_regression_holm"]] == pytest.approx(joint)
    assert ("regression p from the paired t-test and the studentized bootstrap, Holm across "
            "2 members (1 comparison, 1 cost gate)") in out
