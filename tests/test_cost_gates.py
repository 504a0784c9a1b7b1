"""Cost gates through the command line: each side of a one-sided question decided on its own
end. A regression needs only the interval's low end, a pass only its high end: a ratio whose
resampled baseline statistic is 0 is infinite — a large increase, not an unknown — so an
unbounded high end never hides a low end that clears the bar."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import gate

from retrieval_gate.commands.validate import record_run
from retrieval_gate.decide.cost import compare_costs
from retrieval_gate.decide.policy import CostGate, GatePolicy
from retrieval_gate.decide.signals import PairedSignal
from retrieval_gate.formats.schema import schema
from retrieval_gate.inputs.snapshot import freeze

N, ZEROS = 60, 24


def _latencies() -> tuple[np.ndarray, np.ndarray]:
    """60 queries, 24 of them with a baseline latency of 0 (answered from a cache, say);
    every query costlier in the candidate, the p50 ×2.39: the baseline's p50 is 0 in the
    resamples that draw 31 or more of the 24 (about 8 % of them)."""
    base = np.array([0.0] * ZEROS + [20.0 + 1.5 * i for i in range(N - ZEROS)])
    wiggle = np.array([((i * 37) % 7 - 3) / 3 for i in range(N)])
    cand = np.where(base > 0, base * 2.39 * (1 + 0.01 * wiggle), 3.0 + np.arange(N) % 5)
    assert bool(np.all(cand > base))
    return base, cand


def _runs(folder: Path) -> tuple[Path, Path]:
    """A snapshot of N queries and two JSON Lines runs of one item each, the same rankings,
    with those latencies; both timed in one place."""
    ids = [f"q{i:02d}" for i in range(N)]
    (folder / "queries.jsonl").write_text("".join(json.dumps({"id": q}) + "\n" for q in ids))
    (folder / "qrels.jsonl").write_text(
        "".join(json.dumps({"query_id": q, "doc_id": "d", "grade": 1}) + "\n" for q in ids))
    freeze(folder / "snapshot.json", queries=folder / "queries.jsonl",
           qrels=folder / "qrels.jsonl", corpus_version="c", permissions_version="p",
           measures=["Recall@1"])
    runs = []
    for name, latencies in zip(("base", "cand"), _latencies()):
        run = folder / f"{name}.jsonl"
        run.write_text("".join(
            json.dumps({"query_id": q, "items": [{"id": "d", "score": 1.0}],
                        "latency_ms": float(t)}) + "\n" for q, t in zip(ids, latencies)))
        record_run(folder / "snapshot.json", run, {}, "abc", "2026-12-01T00:00:00Z",
                   timed_on="ci-runner")
        runs.append(run)
    return runs[0], runs[1]


def _config(folder: Path, rule: str) -> Path:
    baseline, candidate = _runs(folder)
    config = folder / "gate.toml"
    config.write_text(f'snapshot = "{folder / "snapshot.json"}"\nbaseline = "{baseline}"\n'
                      f'candidate = "{candidate}"\nregression-rule = "{rule}"\n'
                      '[[gate]]\nmeasure = "Recall@1"\nmargin = 0.02\n'
                      '[[cost]]\nmetric = "latency_ms"\nstat = "p50"\nmax-increase = 0.2\n',
                      encoding="utf-8")
    return config


def _strict_json(text: str) -> dict:
    """The report, refusing Infinity and NaN (not JSON)."""
    def refuse(constant: str) -> None:
        raise AssertionError(f"the report holds {constant}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("rule", ["estimate", "interval"])
def test_an_unbounded_high_end_does_not_hide_a_regression(tmp_path: Path, rule: str) -> None:
    config = _config(tmp_path, rule)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy RuntimeWarning (∞ − ∞) fails the test
        code, out, err = gate("check", "--config", config, "--json", tmp_path / "report.json")
    assert (code, err) == (1, ""), out
    assert out.startswith("REGRESSION: ")
    document = _strict_json((tmp_path / "report.json").read_text(encoding="utf-8"))
    from jsonschema import Draft202012Validator
    Draft202012Validator(schema("report")).validate(document)
    (row,) = [r for r in document["costs"] if r["gate"] is not None]
    assert row["stat"] == "p50" and row["n"] == N and row["in_family"]
    assert row["ratio"] == pytest.approx(2.39, abs=0.005)
    assert row["ratio_low"] == pytest.approx(2.37, abs=0.01)
    assert row["ratio_high"] is None  # unbounded: the baseline's p50 is 0 in some resamples
    assert row["decision"] == "regression" and row["p_regression_holm"] < 0.05
    assert document["verdict"] == "regression" and document["reasons"] == ["cost"]
    assert "[×2.366, ∞]" in out


def test_the_regression_through_a_process_has_a_clean_stderr(tmp_path: Path) -> None:
    """The same case as a real process with every warning an error: exit 1, nothing on
    stderr."""
    config = _config(tmp_path, "estimate")
    result = subprocess.run([sys.executable, "-W", "error", "-m", "retrieval_gate", "check",
                             "--config", str(config)], capture_output=True, text=True,
                            check=False)
    assert (result.returncode, result.stderr) == (1, ""), result.stdout


@pytest.mark.filterwarnings("error")
def test_each_side_is_decided_on_its_own_end() -> None:
    base, cand = _latencies()
    gate_ = CostGate("latency_ms", "p50", 0.2)
    # the same queries the other way round: every query cheaper, the ratio ×0.42 — a pass
    # needs only the high end, which is bounded; the low end (the candidate's p50 is 0 in
    # some resamples, the baseline's not) is 0
    (row,) = [r for r in compare_costs([PairedSignal.cost("latency_ms", cand, base)], (gate_,),
                                       GatePolicy(costs=(gate_,))) if r.gate is not None]
    assert row.decision == "pass" and row.improvement
    assert row.ratio_high is not None and row.ratio_high < 1
    assert row.p_regression == 1.0
    # both statistics 0 in every resample: no ratio, nothing decided, nothing infinite
    zeros = np.zeros(N)
    (row,) = [r for r in compare_costs([PairedSignal.cost("latency_ms", zeros, zeros)],
                                       (gate_,), GatePolicy(costs=(gate_,)))
              if r.gate is not None]
    assert row.decision == "inconclusive" and row.ratio is None and row.p_regression is None
    assert row.note is not None and row.note.startswith("the baseline's p50 is 0: no ratio")


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("stat", ["p50", "p95", "mean"])
def test_an_increase_from_nothing_is_an_increase(stat: str) -> None:
    """A baseline statistic of 0 and a candidate's above it: the ratio is unbounded (null in
    the report), the gate says regression — not 'unknown'."""
    base = np.zeros(N)
    cand = 5.0 + np.arange(N) % 7
    gate_ = CostGate("latency_ms", stat, 0.2)
    for rule in ("estimate", "interval"):
        policy = GatePolicy(costs=(gate_,), regression_rule=rule)  # type: ignore[arg-type]
        (row,) = [r for r in compare_costs([PairedSignal.cost(gate_.metric, base, cand)],
                                           (gate_,), policy) if r.gate is not None]
        assert row.decision == "regression" and row.ratio is None
        assert row.ratio_high is None
        assert all(v is None or math.isfinite(v) for v in (row.ratio_low, row.ratio_high,
                                                           row.ratio_low_adjusted))


# -- the tests behind the decision, against an independent computation ----------------------

def _row(base: np.ndarray, cand: np.ndarray, stat: str, policy: GatePolicy):
    (gate_,) = policy.costs
    return _row_of(compare_costs([PairedSignal.cost(gate_.metric, base, cand)], policy.costs,
                                 policy), gate_)


def _row_of(rows, gate_: CostGate):
    """The one row of ``rows`` that ``gate_`` decides."""
    (row,) = [r for r in rows if r.gate == gate_]
    return row


def _skewed(n: int, seed: int, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    shared = rng.standard_normal(n)
    return (np.exp(shared + 0.6 * rng.standard_normal(n)),
            ratio * np.exp(shared + 0.6 * rng.standard_normal(n)))


@pytest.mark.parametrize("rule", ["estimate", "interval"])
def test_a_mean_gate_tests_candidate_minus_ratio_times_baseline(rule: str) -> None:
    """The ratio of means exceeds r exactly when the mean of c − r·b exceeds 0: the p-value is
    at least the one-sided paired t-test's on those differences (SciPy's), and the larger of
    it and the studentized bootstrap's."""
    from scipy import stats

    base, cand = _skewed(40, 1, 1.3)
    gate_ = CostGate("latency_ms", "mean", 0.2)
    policy = GatePolicy(costs=(gate_,), regression_rule=rule)  # type: ignore[arg-type]
    row = _row(base, cand, "mean", policy)
    null = 1.2 if rule == "interval" else 1.0
    t_p = stats.ttest_1samp(cand - null * base, 0.0, alternative="greater").pvalue
    assert row.p_regression >= t_p - 1e-12
    # the studentized bootstrap by hand, the same resampled queries (seed 0, blocks of 250)
    rng = np.random.default_rng(policy.seed)
    d = cand - null * base
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    extreme = 0
    for start in range(0, policy.resamples, 250):
        picks = rng.integers(0, len(d), size=(min(250, policy.resamples - start), len(d)))
        star = d[picks]
        t_star = (star.mean(axis=1) - d.mean()) / (star.std(axis=1, ddof=1) / math.sqrt(len(d)))
        extreme += int(np.count_nonzero(t_star >= t))
    boot_p = (1 + extreme) / (policy.resamples + 1)
    assert row.p_regression == pytest.approx(max(t_p, boot_p) if extreme else t_p, rel=1e-6)


@pytest.mark.parametrize("stat", ["p50", "p95", "mean"])
def test_the_bound_is_where_the_p_value_crosses_the_level(stat: str) -> None:
    """``ratio_low_adjusted`` (the one-sided 1 − α/m bound) inverts the gate's own test: a
    null just below it is rejected at α/m, one just above it is not."""
    from retrieval_gate.decide.cost import _ratio_test

    base, cand = _skewed(200, 2, 1.6)
    gate_ = CostGate("latency_ms", stat, 0.2)
    policy = GatePolicy(costs=(gate_,), resamples=2000)
    row = _row(base, cand, stat, policy)
    test = _ratio_test(base, cand, stat, policy)
    bound = row.ratio_low_adjusted
    assert bound is not None and 1 < bound < row.ratio
    assert test.p(bound * (1 - 1e-9)) < policy.alpha <= test.p(bound * (1 + 1e-9))
    assert row.p_regression == test.p(1.0)
    # the shown interval's ends: each a one-sided α/2 bound
    low, high = test.interval(policy.alpha)
    assert (row.ratio_low, row.ratio_high) == (low, high) and low < row.ratio < high
    if stat != "mean":  # the percentile bootstrap's quantiles, as numpy computes them
        assert low == pytest.approx(float(np.quantile(test.low, 0.025)), rel=1e-12)
        assert high == pytest.approx(float(np.quantile(test.high, 0.975)), rel=1e-12)


def test_a_mean_gate_does_not_pass_when_the_largest_ratios_are_not_rejected() -> None:
    """The t statistic of r·b − c is not monotone in r: it tends to the baseline's own,
    √n·b̄/s_b, as r grows. When that is below the critical value, the test rejects only a
    band of ratios and every ratio above it stays possible (Fieller's unbounded set): the
    interval's high end is unbounded and the gate cannot pass. 25 log-normal latencies with
    σ = 1.4 (seed 34): √n·b̄/s_b = 1.93 < t₂₄'s 2.06; the high end was ×1.184 — a false
    `pass`."""
    from scipy import stats

    rng = np.random.default_rng(34)
    base = rng.lognormal(0.0, 1.4, 25)
    cand = base ** 1.1
    cand *= base.mean() / cand.mean() * rng.uniform(0.95, 1.1)
    gate_ = CostGate("latency_ms", "mean", 0.2)
    row = _row(base, cand, "mean", GatePolicy(costs=(gate_,)))
    # the baseline's own one-sided t-test does not reject a mean of 0 at α/2 (SciPy's)
    assert stats.ttest_1samp(base, 0.0, alternative="greater").pvalue > 0.025
    assert row.ratio_high is None and row.decision == "inconclusive" and not row.improvement
    assert 1.0 < row.ratio < 1.2


def test_a_candidate_of_nothing_does_not_pass_on_a_baseline_of_one_query() -> None:
    """Every candidate context empty, the baseline's 1,000 tokens on one query of 25: the
    ratio is 0, but the baseline's mean is not clearly above 0 (a t-test p 0.16), so no
    ratio is excluded from above — no pass, no improvement (the search once reached a
    ratio of 1e-300, where the spread underflowed to 0 and seemed to reject)."""
    base, cand = np.array([0.0] * 24 + [1000.0]), np.zeros(25)
    gate_ = CostGate("context_tokens", "mean", 0.2)
    row = _row(base, cand, "mean", GatePolicy(costs=(gate_,)))
    assert row.ratio == 0.0 and row.ratio_high is None
    assert row.decision == "inconclusive" and not row.improvement


def test_without_a_family_size_the_bound_and_holm_count_the_same_members() -> None:
    """``compare_costs(family=None, others=…)``: m counts these gates and the others, for the
    bound's level as for the Holm procedure — the same row as with that m given."""
    base, cand = _skewed(40, 0, 1.5)
    gate_ = CostGate("latency_ms", "mean", 0.2)
    policy = GatePolicy(costs=(gate_,), regression_test="bonferroni")
    rows = [_row_of(compare_costs([PairedSignal.cost("latency_ms", base, cand)], (gate_,),
                                  policy, family=family, others=[0.5] * 3), gate_)
            for family in (None, 4)]
    assert rows[0] == rows[1]
