"""What does a `regression` or a `pass` from the gate guarantee, and what does it cost? A
Monte-Carlo calibration of the decision rule on REAL per-query scores.

Run by hand from the project root, with the venv's Python::

    python benchmarks/calibration.py            # --help for the options; --quick for a smoke run

Data. The Cranfield example shipped in the repository (225 queries, graded judgments), scored
per query with the library (``read_qrels`` / ``read_run`` / ``score_run``) on eight measures:
nDCG@10, Recall@10, P@10, RR@10, AP@10, nDCG@5, Recall@20, P@5. Four real pairs of runs give the
"populations" of paired per-query differences ``d = candidate − baseline`` that test sets are
drawn from:

* two different systems: dense vs bm25, and hybrid vs dense (the shipped runs);
* two near-equal ones, the kind of change a pull request makes: reciprocal rank fusion of the
  shipped bm25 and dense runs with k = 20 instead of 60, and with the dense run weighted 1.3,
  each against the shipped hybrid run (RRF with k = 60, rebuilt here byte for byte — checked).
  Most queries are unchanged (exact ties).

Test sets. n ∈ {25, 50, 100, 225} queries drawn **with replacement** from the 225 (the
population is the empirical distribution of the real queries). Every measure of a drawn query
travels with it.

Families. The gate decides every gated (measure, slice) at once; the m comparisons form one
family. A family of m here gates the first m measures above on the test set: m = 1 (nDCG@10),
2 (nDCG@10 and Recall@10: the default gate's measures), 4, 8.

Scenarios (the candidate is truly no worse unless said otherwise):

* **sign-flip** — each drawn query's difference gets a random sign, the same for all its
  measures: the runs are swapped on that query with probability ½. Exchangeable runs; ties stay
  ties.
* **centred** — ``d − mean(d)`` per measure over the 225: the mean difference is exactly 0, but
  unchanged queries become small losses, so the candidate is slightly worse on most queries and
  much better on a few. The harsh, skewed null.
* **boundary** — ``d − mean(d) − (margin − ε)`` with ε = 0.001: every gated measure truly drops by
  0.019, just less than the margin 0.02. The rule ``interval`` promises to flag this at most α
  of the time; the rule ``estimate`` does not (a drop this close to the margin is
  indistinguishable from a material one with few queries).
* **drop** of δ = 1× and 2× the margin (power): each changed query is oriented so that the
  candidate is the worse of the two real runs with probability ``½ + δ / (2·mean|d|)`` (one
  uniform draw per query, compared with each measure's probability): the expected mean
  difference is exactly −δ, every score is a real score of a real run, unchanged queries stay
  unchanged.

Decision. Every simulated test set goes through the library's own ``policy.compare()`` with the
default policy (α = 0.05, BCa, seed 0, ``min-queries``) except for the gated measures (margin
0.02 each), ``--resamples``, the regression test and the rule, as one slice: the family is
adjusted by compare() itself. Three tests, each under rule ``estimate`` and rule ``interval``:

* ``holm`` — the gate's test: Holm over the family's regression p-values (the larger of the
  one-sided paired t-test's and the studentized bootstrap's), one compare() per rule (the
  p-values of rule interval are against −margin);
* ``bonferroni`` — the rule before: the studentized bound at two-sided 1 − α/m and the Holm
  sign test; rule ``interval`` is ``policy.decide(..., rule="interval")`` on the statistics
  compare() returned under rule estimate (the first test set of every cell checks that
  compare() under that rule agrees);
* ``t-holm`` — the reference: a Holm paired t-test (``student_t.paired_t_p``, ``paired.holm``)
  with the same other conditions (the estimated drop reaches the margin; n ≥ min-queries).

A family says ``regression`` if any comparison does, ``pass`` if all do.

Resamples: the gate uses 10,000; here ``--resamples`` (default 1,000) keeps a run to minutes. B
only sets the Monte-Carlo noise of the interval's ends, not their expected position.

Costs (``--costs``, instead of the tables above). The relative cost gate (``max-increase`` 0.2:
at most +20 %) on per-query latencies, through the library's own ``cost.compare_costs()``,
for p50, p95 and the mean. Populations of paired latencies (baseline, candidate) per query:

* **pydoc, resampled** — the real per-query latencies of the pydoc pipeline example
  (``examples/pydoc/pipeline/*/``: each query's ``latency_ms`` summed over its three stages,
  99 queries, three systems), drawn with replacement as (baseline, candidate) pairs of the
  same query, for each of the three pairs of systems (a table's pydoc row: the worst pair);
* **log-normal** — log latency = σ·(√ρ·u + √(1 − ρ)·e) per run, u shared by the query's two
  runs, e each run's own: σ = 0.27, the spread of the pydoc baseline's log latencies (the
  widest of the three), and ρ = 0.6, the correlation of its log latencies with the
  packing-bug run's (the highest of the three pairs); and heavier tails, σ = 0.85 and 1 (p95
  4.1 and 5.2 times the median), same ρ;
* **Pareto** — tail index 2 (P(X > x) = x⁻², x ≥ 1; infinite variance), the same Gaussian
  copula: X = Φ(−z)^(−1/2) for each run's normal z.

No change (**null**): each query's two latencies are swapped with probability ½
(interchangeable runs: every statistic's true ratio is 1). **Boundary**: the candidate's
latencies of the null times 1.19, a true ratio just under the margin; **power**: times 1.3 and
1.5; **margin**: times 1.2, where a ``pass`` is false. Every population × stat × n; p50 and
p95 also at n = 10 … 50 under the null and at the margin. Rule ``estimate`` is
compare_costs()'s own decision; rule ``interval`` is, for a percentile, its
``ratio_low_adjusted`` (the one-sided 1 − α bound) > 1.2 — exactly where its p-value against
1.2 is below α; the first test set of every cell checks that compare_costs() under that rule
agrees — and for the mean compare_costs() under that rule. Each cost gate is a family of one
here (its own ``min-queries`` 1, so every n decides). **The test alone**: under the null, the
share of test sets whose regression p-value (``p_regression``, against 1) is below α/m for
m = 1, 2, 4 — the level Holm's procedure needs of each member — and beside it, for the mean,
the rule before's: the paired percentile bootstrap of the ratio of means, resampled as the gate
resamples. Small test sets (n = 10 … 50): the estimator's bias (the mean estimate over the test
sets against the population's statistic — the model's exact one, or the resampled
population's: numpy's ``inverted_cdf`` percentile of the pair's 198 latencies), the bias the
report states (:func:`retrieval_gate.decide.cost.expected_bias`, mean over test sets), the null
ratio's spread, and the false-alarm and false-pass rates; the summary adds each log-normal's
exact bias (``expected_bias`` at the true σ). **Combined family**: the default quality gate
(nDCG@10 and Recall@10, the centred null of each pair of systems) with a latency mean and p95
gate (+20 %, log-normal σ = 1 null; quality and cost test sets drawn independently): the share
of test sets where anything says ``regression``, with the quality comparisons and the cost
gates as two families (Holm within each, every cost gate deciding from the policy's 25
queries) and as one family (the gate's rule: one Holm procedure over every member's
regression p-value — ``policy.paired``, ``decide_pairs`` and ``cost.measure_costs``,
``decide_costs``, as ``gate check`` runs them — p95 a member from its own minimum on).

Per-query scores with repeated samples (``--samples``, instead of the tables above): the
gate's ``score:NAME`` signals, whose per-query value is the mean of a judge's k samples (k ∈
{1, 3, 5}). A query's **truth** is a real per-query score: the shipped hybrid run's nDCG@10
(225 queries, drawn with replacement). Each of its three scores (``score:a``, ``b``, ``c``: one
truth, independent noise — three judgements of the same answers) gets k independent samples
per run from the truth, by one of two judges:

* **clipped normal** — truth + N(0, σ²) clipped to [0, 1], σ = ``--noise`` (default 0.2);
* **Bernoulli** — 1 with probability truth, else 0 (a binary judge: with k = 1 the signal is a
  0/1 decision, and its sign test is McNemar's).

No change (**null**): both runs' samples come from the same truth (interchangeable runs).
**Drop** of δ = 1× and 2× the margin (power): the candidate's truths are all lowered by the
shift s for which the expected score (the judge's expected sample, clipping included; exact
for the normal, bisection over s) falls by exactly δ on average over the 225 queries. Samples
are averaged per query (the first test set of every cell checks that the gate's reader,
``load_query_scores`` on the samples written as a JSON Lines score file, gives the same means),
then decided as the gate decides scores: one ``PairedSignal`` per score, ``compare_signals``
with the family ``family_of`` counts, the default policy but ``--resamples`` and margin 0.02,
rule ``estimate``; families of 1 (``score:a``) and 3. The tables: the family-wise false-alarm
rate under the null, with the SD of the per-query difference, and the power, per judge, k, m
and n.

Output: Markdown tables; a rate is the share of ``--sims`` test sets, with ± 2 standard errors
where it is a false-alarm rate (or "< 3/sims", the 95% upper bound, when none occurred); † marks
a rate more than 2 standard errors above α. Seeded: every cell has its own
``numpy.random.default_rng([seed, pair, scenario, n])``, and the same test sets serve
every family and both rules, so the output is deterministic and the rules are compared on
identical data.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any
from unittest import mock

import numpy as np

from retrieval_gate.decide.cost import (
    PERCENTILE_MIN_QUERIES,
    compare_costs,
    decide_costs,
    expected_bias,
    measure_costs,
    member_p_values,
)
from retrieval_gate.decide.cost import family_members as cost_members
from retrieval_gate.decide.paired import (
    EXACT_FLIP_MAX,
    bootstrap_ci,
    holm,
    sample_skewness,
    sign_test,
)
from retrieval_gate.decide.policy import (  # the cost gates' one family
    DEFAULT_MARGIN,
    REGRESSION_RULES,
    SCORE_PREFIX,
    CostGate,
    GatedMeasure,
    GatePolicy,
    PairPolicy,
    compare,
    decide,
    decide_pairs,
    equal_changes,
    paired,
)
from retrieval_gate.decide.signals import PairedSignal, compare_signals, family_of
from retrieval_gate.decide.student_t import paired_t_p
from retrieval_gate.formats import read_qrels, read_run
from retrieval_gate.formats.source import Blob
from retrieval_gate.inputs.answer_scores import load_query_scores
from retrieval_gate.scoring.measures import parse_measures
from retrieval_gate.scoring.scores import score_run

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))  # the example's own fusion script
import make_hybrid_run

QRELS = ROOT / "examples" / "cranfield" / "qrels.tsv"
BM25 = ROOT / "baselines" / "cranfield" / "bm25.trec"
DENSE = ROOT / "examples" / "cranfield" / "runs" / "dense.trec"
HYBRID = ROOT / "examples" / "cranfield" / "runs" / "hybrid.trec"
MEASURES = ("nDCG@10", "Recall@10", "P@10", "RR@10", "AP@10", "nDCG@5", "Recall@20", "P@5")
FAMILIES = (1, 2, 4, 8)
SIZES = (25, 50, 100, 225)
MARGIN = DEFAULT_MARGIN
ALPHA = GatePolicy().alpha
EPSILON = 0.001
DROPS = (MARGIN, 2 * MARGIN)
POWER_FAMILIES = (1, 2)
# The rules every test set goes through: the gate's test (holm) and the rule before
# (bonferroni) through compare(), each under rule estimate and rule interval; and the
# reference, a Holm paired t-test with the same conditions (t-holm).
TESTS = ("holm", "t-holm", "bonferroni")
BOUNDS = tuple(f"{test} {rule}" for rule in REGRESSION_RULES for test in TESTS)


# --------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class Pair:
    """Real per-query differences ``d`` (queries × measures) of a candidate and a baseline run;
    ``near_equal`` for a small change of one system."""

    name: str
    d: np.ndarray
    near_equal: bool


def rrf_run(k: int, dense_weight: float = 1.0) -> str:
    """Reciprocal rank fusion of the shipped bm25 and dense runs by
    ``examples/make_hybrid_run.py`` (which builds the shipped hybrid run with k = 60, weights
    1): score ``Σ w / (k + rank)`` written with 8 decimals, ranked by the written score, ties
    by doc id descending, top 100."""
    runs = [make_hybrid_run.read_ranks(BM25), make_hybrid_run.read_ranks(DENSE)]
    return "".join(make_hybrid_run.fuse(runs, k, (1.0, dense_weight), "rrf"))


def load_pairs() -> list[Pair]:
    """The four pairs of the module docstring, scored per query on :data:`MEASURES`."""
    qrels = read_qrels(QRELS)
    measures = parse_measures(MEASURES)

    def scores(path: Path) -> np.ndarray:
        return score_run(qrels, read_run(path), measures).values

    shipped = HYBRID.read_text(encoding="utf-8").splitlines()
    rebuilt = [line.rsplit(" ", 1)[0] for line in rrf_run(60).splitlines()]
    if rebuilt != [line.rsplit(" ", 1)[0] for line in shipped]:
        raise SystemExit("RRF with k = 60 does not rebuild the shipped hybrid run")
    bm25, dense, hybrid = scores(BM25), scores(DENSE), scores(HYBRID)
    with tempfile.TemporaryDirectory() as folder:
        tweaks = {}
        for name, k, weight in (("rrf k=20", 20, 1.0), ("rrf dense×1.3", 60, 1.3)):
            path = Path(folder) / "run.trec"
            path.write_text(rrf_run(k, weight), encoding="utf-8")
            tweaks[name] = scores(path)
    return [Pair("dense vs bm25", dense - bm25, False),
            Pair("hybrid vs dense", hybrid - dense, False),
            *(Pair(f"{name} vs hybrid", values - hybrid, True) for name, values in tweaks.items())]


# --------------------------------------------------------------------------------------------
# Scenarios: each returns simulated differences of shape (sims, n, measures)

Scenario = Callable[[np.ndarray, int, int, np.random.Generator], np.ndarray]


def _draw(d: np.ndarray, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
    return d[rng.integers(0, d.shape[0], (sims, n))]


def sign_flip(d: np.ndarray, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
    drawn = _draw(d, n, sims, rng)
    return drawn * rng.choice(np.array([-1.0, 1.0]), size=(sims, n, 1))


def centred(d: np.ndarray, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
    return _draw(d - d.mean(axis=0), n, sims, rng)


def boundary(d: np.ndarray, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
    return _draw(d - d.mean(axis=0) - (MARGIN - EPSILON), n, sims, rng)


def drop(delta: float) -> Scenario:
    def simulate(d: np.ndarray, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
        magnitude = np.abs(_draw(d, n, sims, rng))
        worse_p = np.minimum(1.0, 0.5 + delta / (2 * np.abs(d).mean(axis=0)))
        worse = rng.random((sims, n, 1)) < worse_p
        return np.where(worse, -magnitude, magnitude)

    return simulate


# --------------------------------------------------------------------------------------------
# Shapes: differences of known form (eight independent measures), beside the real pairs

SD = 0.15  # the spread of a shape's differences, about that of the real pairs' nDCG@10


@dataclass(frozen=True)
class Shape:
    """A distribution of per-query differences: ``draw(rng, size)`` gives values with mean 0
    (a null), ``skewness`` is its population skewness."""

    name: str
    draw: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]
    skewness: float


def _zero_one(rng: np.random.Generator, size: tuple[int, ...], shift: float = 0.0
              ) -> np.ndarray:
    """A 0/1 outcome's difference: −1 or +1 with probability 0.15 each (0.15 ∓ shift/2)."""
    u = rng.random(size)
    return np.where(u < 0.15 + shift / 2, -1.0, np.where(u < 0.3, 1.0, 0.0))


def _sparse(rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
    """80 % unchanged; else −1, −½, +½ or +1 alike."""
    return np.where(rng.random(size) < 0.2, rng.choice([-1.0, -0.5, 0.5, 1.0], size), 0.0)


def _gamma(shape: float) -> Shape:
    def draw(rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
        return (rng.gamma(shape, 1.0, size) - shape) / math.sqrt(shape) * SD
    return Shape(f"gamma({shape:g})", draw, 2 / math.sqrt(shape))


def _log_normal(rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
    mean, var = math.exp(0.5), (math.e - 1) * math.e
    return (np.exp(rng.standard_normal(size)) - mean) / math.sqrt(var) * SD


def _two_point(rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
    """A bounded discrete right-skewed null: −0.05 on 90 % of queries, +0.45 on 10 %."""
    return np.where(rng.random(size) < 0.1, 0.45, -0.05)


SYMMETRIC = (
    Shape("normal", lambda rng, size: rng.normal(0.0, SD, size), 0.0),
    Shape("t3", lambda rng, size: SD / math.sqrt(3) * rng.standard_t(3, size), 0.0),
    Shape("0/1", _zero_one, 0.0),
    Shape("sparse 0/±½/±1", _sparse, 0.0),
)
SKEWED = (
    _gamma(4), _gamma(2), _gamma(1), _gamma(0.5),
    Shape("log-normal σ = 1", _log_normal, (math.e + 2) * math.sqrt(math.e - 1)),
    Shape("two-point 0.9 / 0.1", _two_point, 0.8 / math.sqrt(0.09)),
)


def _loss_heavy(delta: float) -> Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]:
    """A few queries lose a lot: 20 % changed; a change is a loss of U(0.3, 1) with
    probability p, else a gain of U(0, 0.25), p set so the mean drop is ``delta``."""
    p = (0.125 + delta / 0.2) / (0.125 + 0.65)

    def draw(rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
        size_of = np.where(rng.random(size) < p, -rng.uniform(0.3, 1.0, size),
                           rng.uniform(0.0, 0.25, size))
        return np.where(rng.random(size) < 0.2, size_of, 0.0)
    return draw


def drop_shapes(delta: float) -> tuple[Shape, ...]:
    """Shapes whose mean difference is −``delta`` (power): normal and t3 shifted, a 0/1
    outcome lost more often than won, sparse loss-heavy, and left-skewed (the log-normal
    turned round: most queries slightly better, a few much worse) shifted."""
    return (
        Shape("normal", lambda rng, size: rng.normal(-delta, SD, size), 0.0),
        Shape("t3", lambda rng, size: SD / math.sqrt(3) * rng.standard_t(3, size) - delta,
              0.0),
        Shape("0/1", lambda rng, size: _zero_one(rng, size, delta), 0.0),
        Shape("sparse loss-heavy", _loss_heavy(delta), float("nan")),
        Shape("left-skewed log-normal", lambda rng, size: -_log_normal(rng, size) - delta,
              -(math.e + 2) * math.sqrt(math.e - 1)),
    )


def of_shape(shape: Shape, shift: float = 0.0) -> Scenario:
    """Test sets of a shape (8 independent measures), shifted by ``shift``."""
    def simulate(_: np.ndarray, n: int, sims: int, rng: np.random.Generator) -> np.ndarray:
        return shape.draw(rng, (sims, n, len(MEASURES))) + shift
    return simulate


# --------------------------------------------------------------------------------------------
# The rule, through the library


@dataclass
class Cell:
    """Counts over the ``sims`` test sets of one (source, scenario, n): per family, how many
    were called ``regression`` under each test and rule (and which: ``flags``, for the paired
    standard error of a difference of two tests' rates), and how many passed (test holm)."""

    sims: int
    regression: dict[tuple[int, str], int] = dataclasses.field(default_factory=dict)
    passed: dict[int, int] = dataclasses.field(default_factory=dict)
    flags: dict[tuple[int, str], list[bool]] = dataclasses.field(default_factory=dict)
    skewness: float = 0.0  # the median over the test sets of the first measure's skewness
    # per rule: how many test sets' first measure an exact test decides (see exact_decides)
    exact: dict[str, int] = dataclasses.field(default_factory=dict)

    def rate(self, family: int, rule: str) -> float:
        return self.regression[family, rule] / self.sims

    def exact_share(self, rule: str) -> float:
        """The share of test sets whose first measure's regression p-value an exact test
        bounds under ``rule`` (:func:`exact_decides`)."""
        return self.exact.get(rule, 0) / self.sims

    def add(self, family: int, rule: str, flagged: bool) -> None:
        self.regression[family, rule] += flagged
        self.flags[family, rule].append(flagged)

    def shortfall(self, family: int, rule: str) -> tuple[float, float, str]:
        """The gate's (test holm) power shortfall against the stronger of the rule before and
        the Holm paired t-test under ``rule``: rate difference, its 2 standard errors (paired:
        the same test sets), and which reference."""
        gate = np.array(self.flags[family, f"holm {rule}"], dtype=float)
        best = max(("bonferroni", "t-holm"), key=lambda t: self.rate(family, f"{t} {rule}"))
        other = np.array(self.flags[family, f"{best} {rule}"], dtype=float)
        diff = other - gate
        se = float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else 0.0
        return float(diff.mean()), 2 * se, best


def policy_for(family: int, resamples: int, min_queries: int, test: str = "holm",
               rule: str = "estimate") -> GatePolicy:
    return GatePolicy(gates=tuple(GatedMeasure(m, MARGIN) for m in MEASURES[:family]),
                      resamples=resamples, min_queries=min_queries,
                      regression_test=test, regression_rule=rule)  # type: ignore[arg-type]


def t_holm(d: np.ndarray, policy: GatePolicy) -> bool:
    """The reference rule: a Holm paired t-test (one-sided, toward regression; against −margin
    under rule interval) over the family's columns of ``d`` (queries × m), with the gate's
    other conditions (estimated drop ≥ margin, at least min-queries queries)."""
    n, m = d.shape
    if n < policy.min_queries:
        return False
    null = -MARGIN if policy.regression_rule == "interval" else 0.0
    p = holm([paired_t_p(d[:, j], null) for j in range(m)])
    return bool(np.any((d.mean(axis=0) <= -MARGIN) & (p < policy.alpha)))


def before_of(comparisons: Sequence[Any], policy: GatePolicy, rule: str) -> bool:
    """The rule before's decision (test ``bonferroni``) under ``rule``, from a test-``holm``
    compare(): its bound is ``ci_high_before`` (the same bootstrap), its sign test the same
    Holm-adjusted one."""
    return any(decide(c.n, c.mean_diff, c.ci_low, c.ci_high, c.sign_p_holm, c.margin,
                      policy.alpha, ci_high_adjusted=c.ci_high_before, rule=rule,  # type: ignore[arg-type]
                      min_queries=policy.min_queries) == "regression" for c in comparisons)


def run_cell(samples: np.ndarray, families: Sequence[int], resamples: int,
             min_queries: int) -> Cell:
    """Every family and rule on every simulated test set (sims × n × measures): one compare()
    per rule under test holm; the rule before read from the first (the first test set checks
    that compare() under test bonferroni agrees, under both rules)."""
    cell = Cell(samples.shape[0], skewness=float(np.median(
        [sample_skewness(d[:, 0]) or 0.0 for d in samples])))
    for m in families:
        for rule in BOUNDS:
            cell.regression[m, rule] = 0
            cell.flags[m, rule] = []
        cell.passed[m] = 0
    for index, d in enumerate(samples):
        n = d.shape[0]
        every = {"all": np.arange(n)}
        for rule in REGRESSION_RULES:
            cell.exact[rule] = cell.exact.get(rule, 0) + exact_decides(
                d[:, 0], -MARGIN if rule == "interval" else 0.0)
        for m in families:
            for rule in REGRESSION_RULES:
                holm_policy = policy_for(m, resamples, min_queries, "holm", rule)
                comparisons = compare(np.zeros((n, m)), d[:, :m], MEASURES[:m], every,
                                      holm_policy)
                cell.add(m, f"holm {rule}", any(c.decision == "regression" for c in comparisons))
                cell.add(m, f"t-holm {rule}", t_holm(d[:, :m], holm_policy))
                if rule != "estimate":
                    continue
                cell.passed[m] += all(c.decision == "pass" for c in comparisons)
                for before_rule in REGRESSION_RULES:
                    flagged = before_of(comparisons, holm_policy, before_rule)
                    if index == 0:
                        again = compare(np.zeros((n, m)), d[:, :m], MEASURES[:m], every,
                                        policy_for(m, resamples, min_queries, "bonferroni",
                                                   before_rule))
                        assert any(c.decision == "regression" for c in again) == flagged
                    cell.add(m, f"bonferroni {before_rule}", flagged)
    return cell


def exact_decides(d: np.ndarray, null: float) -> bool:
    """Whether an exact test joins the gate's regression p-value of differences ``d`` against
    ``null`` (:func:`retrieval_gate.decide.policy.regression_p`): at most
    :data:`~retrieval_gate.decide.paired.EXACT_FLIP_MAX` queries away from the null (the
    exact sign-flip test), or every change the same (a 0/1 outcome: McNemar's, under either
    rule). There the gate is exact given the changed queries, and a test that is not — the
    t-test calls three losses among 25 queries significant (p 0.041) where their exact
    probability is 1/8 — has power the gate gives up by design."""
    return bool(np.count_nonzero(d - null) <= EXACT_FLIP_MAX or equal_changes(d))


# --------------------------------------------------------------------------------------------
# Formatting


def rate_se(count: int, sims: int) -> str:
    """Share ± 2 standard errors, † when more than 2 SE above α; with no event, the 95% upper
    bound 3/sims."""
    if count == 0:
        return f"0 (< {3 / sims:.3f})"
    p = count / sims
    se = math.sqrt(p * (1 - p) / sims)
    return f"{p:.3f} ± {2 * se:.3f}" + (" †" if p - 2 * se > ALPHA else "")


def worst(cells: dict[str, Cell], family: int, rule: str) -> tuple[str, Cell]:
    """The pair whose rate is highest."""
    return max(cells.items(), key=lambda item: item[1].rate(family, rule))


def alarm_table(results: dict[str, dict[int, dict[str, Cell]]], scenario: str, rule: str,
                sizes: Sequence[int], families: Sequence[int]) -> str:
    """n × family: the highest family-wise `regression` rate over the pairs, and its pair."""
    head = ("| n | " + " | ".join(f"m = {m}" for m in families) + " |\n|---:|"
            + "---|" * len(families))
    rows = []
    for n in sizes:
        parts = []
        for m in families:
            name, cell = worst(results[scenario][n], m, rule)
            parts.append(f"{rate_se(cell.regression[m, rule], cell.sims)} ({name})")
        rows.append(f"| {n} | " + " | ".join(parts) + " |")
    return "\n".join([head, *rows])


def pair_table(results: dict[str, dict[int, dict[str, Cell]]], scenarios: Sequence[str],
               rule: str, sizes: Sequence[int], family: int) -> str:
    """n × (scenario, pair): the family-wise `regression` rate of one family, every pair."""
    columns = [(scenario, name) for scenario in scenarios for name in results[scenario][sizes[0]]]
    head = ("| n | " + " | ".join(f"{scenario}: {name}" for scenario, name in columns)
            + " |\n|---:|" + "---|" * len(columns))
    rows = []
    for n in sizes:
        cells = [results[scenario][n][name] for scenario, name in columns]
        rows.append(f"| {n} | " + " | ".join(rate_se(c.regression[family, rule], c.sims)
                                             for c in cells) + " |")
    return "\n".join([head, *rows])


def power_table(results: dict[str, dict[int, dict[str, Cell]]], sizes: Sequence[int],
                family: int, rule: str) -> str:
    """(drop, pair) × n: share called `regression` under ``rule`` by the gate's test, the
    Holm paired t-test and the rule before (holm / t-holm / bonferroni)."""
    head = ("| true drop | pair | " + " | ".join(f"n = {n}" for n in sizes) + " |\n|---|---|"
            + "---:|" * len(sizes))
    rows = []
    for delta in DROPS:
        scenario = f"drop {delta:g}"
        for name in results[scenario][sizes[0]]:
            parts = [" / ".join(f"{results[scenario][n][name].rate(family, f'{test} {rule}'):.2f}"
                                for test in TESTS) if name in results[scenario][n] else "-"
                     for n in sizes]
            rows.append(f"| {delta:g} ({delta / MARGIN:g}× margin) | {name} | "
                        + " | ".join(parts) + " |")
    return "\n".join([head, *rows])


def worst_alarm(results: dict[str, dict[int, dict[str, Cell]]], sizes: Sequence[int],
                rule: str, scenarios: Sequence[str]) -> tuple[float, float, str]:
    """The highest family-wise `regression` rate under no change (the boundary for rule
    interval) over every pair, family and n ≥ the gate's min-queries: rate, 2 SE, where."""
    worst = max((cell.rate(m, rule), scenario, n, name, m, cell.sims)
                for scenario in scenarios for n in sizes if n >= GatePolicy().min_queries
                for name, cell in results[scenario].get(n, {}).items() for m in FAMILIES)
    rate, scenario, n, name, m, sims = worst
    return rate, 2 * math.sqrt(rate * (1 - rate) / sims), f"{scenario}, {name}, m = {m}, n = {n}"


SHORTFALL = 0.02  # the goal: power ≥ max(the rule before, the Holm t-test) − 0.02


def shape_table(results: dict[str, dict[int, dict[str, Cell]]], scenario: str, rule: str,
                sizes: Sequence[int]) -> str:
    """(shape, m) × n: the family-wise `regression` rate of every shape of ``scenario``."""
    names = list(results[scenario][sizes[0]])
    head = ("| shape | m | " + " | ".join(f"n = {n}" for n in sizes) + " |\n|---|---:|"
            + "---|" * len(sizes))
    rows = [f"| {name} | {m} | " + " | ".join(
        rate_se(results[scenario][n][name].regression[m, rule], results[scenario][n][name].sims)
        for n in sizes) + " |" for name in names for m in FAMILIES]
    return "\n".join([head, *rows])


def held(cell: Cell, rule: str) -> bool:
    """Whether every family's `regression` rate is within 2 SE of α."""
    return all(_above(cell.regression[m, rule], cell.sims) is False for m in FAMILIES)


def skew_held(results: dict[str, dict[int, dict[str, Cell]]], n: int) -> float:
    """The largest population skewness of the skewed nulls up to which α held at ``n``
    (every lower one held too; 0 when the mildest failed)."""
    largest = 0.0
    for shape in sorted(SKEWED, key=lambda s: s.skewness):
        if not held(results["skewed"][n][shape.name], "holm estimate"):
            break
        largest = shape.skewness
    return largest


def skew_table(results: dict[str, dict[int, dict[str, Cell]]], sizes: Sequence[int]) -> str:
    """n × skewed null: the worst family's false alarm († above α by 2 SE) and the test
    sets' median sample skewness; the largest population skewness held, and the median
    sample skewness of its test sets (the gate's warning threshold at n)."""
    head = ("| n | " + " | ".join(f"{s.name} (γ = {s.skewness:.2f})" for s in SKEWED)
            + " | held up to γ (median sample skewness) |\n|---:|"
            + "---|" * (len(SKEWED) + 1))
    rows = []
    for n in sizes:
        worst_rates = [max(results["skewed"][n][s.name].rate(m, "holm estimate")
                           for m in FAMILIES) for s in SKEWED]
        marks = [f"{rate:.3f}" + ("" if held(results["skewed"][n][s.name], "holm estimate")
                                  else " †") + f" ({results['skewed'][n][s.name].skewness:.2f})"
                 for rate, s in zip(worst_rates, SKEWED)]
        largest = skew_held(results, n)
        sample = max((results["skewed"][n][s.name].skewness for s in SKEWED
                      if s.skewness == largest), default=0.0)
        rows.append(f"| {n} | " + " | ".join(marks) + f" | {largest:.2f} ({sample:.2f}) |")
    return "\n".join([head, *rows])


def _drop_cells(results: dict[str, dict[int, dict[str, Cell]]], sizes: Sequence[int]
                ) -> Iterator[tuple[str, int, str, Cell]]:
    for delta in DROPS:
        for n in sizes:
            if n < GatePolicy().min_queries:
                continue
            for name, cell in results[f"drop {delta:g}"][n].items():
                yield f"{delta / MARGIN:g}× margin", n, name, cell


def largest_shortfall(results: dict[str, dict[int, dict[str, Cell]]], sizes: Sequence[int],
                      rule: str, exact: bool) -> tuple[float, float, str] | None:
    """The largest shortfall of test holm against the stronger of the rule before and the
    Holm t-test over every drop cell and family where an exact test decides most test sets
    (``exact``; :func:`exact_decides`) or not: difference, 2 SE, where; None without such a
    cell."""
    rows = [cell.shortfall(m, rule) + (f"{drop}, {name}, m = {m}, n = {n}",)
            for drop, n, name, cell in _drop_cells(results, sizes)
            if (cell.exact_share(rule) > 0.5) == exact for m in cell.passed]
    if not rows:
        return None
    worst = max(rows, key=lambda row: row[0])
    return worst[0], worst[1], f"{worst[3]}, against {worst[2]}"


def print_shortfall(results: dict[str, dict[int, dict[str, Cell]]], sizes: Sequence[int],
                    rule: str) -> None:
    """The power target's lines: where an approximation decides most test sets, the target;
    where an exact test does, the price of exactness, stated beside it."""
    for exact in (False, True):
        found = largest_shortfall(results, sizes, rule, exact)
        if found is None:
            continue
        gap, se, where = found
        shown = f"{gap:+.3f} ± {se:.3f} ({where})"
        print(f"- rule {rule}: where an exact test decides most test sets (at most "
              f"{EXACT_FLIP_MAX} changed queries, or equal changes) the shortfall is up to "
              f"{shown}: the price of a p-value exact given the changed queries, which the Holm "
              f"t-test is not" if exact else
              f"- rule {rule}: largest power shortfall against the stronger of the rule before "
              f"and the Holm paired t-test where the t-test and bootstrap-t decide {shown}: "
              f"{'MET' if gap - se <= SHORTFALL else 'MISSED'} (≤ {SHORTFALL} within 2 SE)")


def shortfall_table(results: dict[str, dict[int, dict[str, Cell]]],
                    sizes: Sequence[int]) -> str:
    """Per drop cell (drop, source, n) and rule: the worst family's shortfall ± 2 SE, the
    family and the stronger reference, and the three rates there."""
    head = ("| drop | source | n | rule | shortfall (m, against) | holm / t-holm / bonferroni "
            "| exact |\n|---|---|---:|---|---|---|---:|")
    rows = []
    for drop, n, name, cell in _drop_cells(results, sizes):
        for rule in REGRESSION_RULES:
            m = max(cell.passed, key=lambda f: cell.shortfall(f, rule)[0])
            gap, se, best = cell.shortfall(m, rule)
            rates = " / ".join(f"{cell.rate(m, f'{t} {rule}'):.3f}" for t in TESTS)
            mark = " †" if gap - se > SHORTFALL else ""
            rows.append(f"| {drop} | {name} | {n} | {rule} | {gap:+.3f} ± {se:.3f}{mark} "
                        f"(m = {m}, {best}) | {rates} | {cell.exact_share(rule):.2f} |")
    return "\n".join([head, *rows])


def pass_table(results: dict[str, dict[int, dict[str, Cell]]], sizes: Sequence[int],
               families: Sequence[int]) -> str:
    """Pass rates: under no change (sign-flip; what certifying non-inferiority takes), and at a
    true drop of the margin (a false pass; the guarantee is ≤ α/2)."""
    head = ("| n | pair | " + " | ".join(f"no change, m = {m}" for m in families) + " | "
            + " | ".join(f"drop = margin, m = {m}" for m in POWER_FAMILIES) + " |\n|---:|---|"
            + "---:|" * (len(families) + len(POWER_FAMILIES)))
    rows = []
    for n in sizes:
        for name, cell in results["sign-flip"][n].items():
            at_margin = results.get(f"drop {MARGIN:g}", {}).get(n, {}).get(name)
            parts = [f"{cell.passed[m] / cell.sims:.2f}" for m in families]
            parts += [f"{at_margin.passed[m] / at_margin.sims:.3f}" if at_margin else "-"
                      for m in POWER_FAMILIES]
            rows.append(f"| {n} | {name} | " + " | ".join(parts) + " |")
    return "\n".join([head, *rows])


def describe(pair: Pair) -> str:
    """One line per measure: mean difference, SD, share of ties."""
    return "\n".join(
        f"  - {name}: mean d = {pair.d[:, j].mean():+.4f}, SD {pair.d[:, j].std(ddof=1):.3f}, "
        f"ties {np.mean(pair.d[:, j] == 0):.0%}" for j, name in enumerate(MEASURES))


# --------------------------------------------------------------------------------------------
# Main


# --------------------------------------------------------------------------------------------
# Costs


PIPELINE = ROOT / "examples" / "pydoc" / "pipeline"
SYSTEMS = ("baseline", "packing-bug", "more-candidates")
STAGES = ("candidates", "reranked", "context")
COST_STATS = ("p95", "p50", "mean")
INCREASE = 0.2
LIMIT = 1 + INCREASE
COST_SCENARIOS = {"null": 1.0, "boundary": 1.19, "power 1.3×": 1.3, "power 1.5×": 1.5,
                  "margin": 1.2}
SMALL_SIZES = (10, 15, 20, 25, 50)
RHO = 0.6
PARETO = 2.0  # the Pareto's shape: tail index 2, infinite variance
HEAVY_SIGMAS = (0.85, 1.0)
COST_RULES = ("estimate", "interval")
BOUND_FAMILIES = (1, 2, 4)  # the bound's one-sided level α/m
PYDOC = "pydoc"


def load_latencies() -> dict[str, np.ndarray]:
    """Each pydoc pipeline system's per-query latency: ``latency_ms`` summed over its stages,
    queries in file order (the same in every file)."""
    latencies = {}
    for system in SYSTEMS:
        total: dict[str, float] = {}
        for stage in STAGES:
            with open(PIPELINE / system / f"{stage}.jsonl", encoding="utf-8") as handle:
                for line in handle:
                    row = json.loads(line)
                    total[row["query_id"]] = total.get(row["query_id"], 0.0) + row["latency_ms"]
        latencies[system] = np.array(list(total.values()))
    return latencies


@dataclass(frozen=True)
class Population:
    """Paired latencies to draw test sets from: ``draw(n, sims, rng)`` gives (baseline,
    candidate) of shape (sims, n), interchangeable (every true ratio 1); ``truth`` the
    population's statistic (for the estimator's bias); ``group`` the name its tables use
    (the three pydoc pairs are one group, shown by their worst); ``sigma`` a log-normal's
    spread."""

    name: str
    draw: Callable[[int, int, np.random.Generator], tuple[np.ndarray, np.ndarray]]
    truth: Callable[[str], float]
    group: str
    sigma: float | None = None  # a log-normal's


def resampled(name: str, b: np.ndarray, c: np.ndarray) -> Population:
    """Real pairs drawn with replacement, each swapped with probability ½."""
    def draw(n: int, sims: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        picks = rng.integers(0, len(b), (sims, n))
        swap = rng.random((sims, n)) < 0.5
        return np.where(swap, c[picks], b[picks]), np.where(swap, b[picks], c[picks])

    both = np.concatenate([b, c])  # the population of either run, after the swap

    def truth(stat: str) -> float:
        if stat == "mean":
            return float(both.mean())
        return float(np.percentile(both, 50 if stat == "p50" else 95, method="inverted_cdf"))

    return Population(name, draw, truth, PYDOC)


def _copula(n: int, sims: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Standard normals √ρ·u + √(1 − ρ)·e per run, u shared by the query's two runs."""
    shared = math.sqrt(RHO) * rng.standard_normal((sims, n))
    own = math.sqrt(1 - RHO)
    return (shared + own * rng.standard_normal((sims, n)),
            shared + own * rng.standard_normal((sims, n)))


def log_normal(sigma: float) -> Population:
    """Log latency σ·(√ρ·u + √(1 − ρ)·e), median 1."""
    def draw(n: int, sims: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        b, c = _copula(n, sims, rng)
        return np.exp(sigma * b), np.exp(sigma * c)

    def truth(stat: str) -> float:
        if stat == "mean":
            return math.exp(sigma * sigma / 2)
        return math.exp(sigma * NORMAL.inv_cdf(0.5 if stat == "p50" else 95 / 100))

    name = f"log-normal σ = {sigma:g}"
    return Population(name, draw, truth, name, sigma)


def pareto(shape: float) -> Population:
    """Pareto latencies (x_m = 1, P(X > x) = x^−shape) of the same Gaussian copula: X =
    Φ(−z)^(−1/shape) for each run's normal z."""
    from scipy.special import ndtr

    def draw(n: int, sims: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        b, c = _copula(n, sims, rng)
        return ndtr(-b) ** (-1 / shape), ndtr(-c) ** (-1 / shape)

    def truth(stat: str) -> float:
        if stat == "mean":
            return shape / (shape - 1) if shape > 1 else math.inf
        return (0.5 if stat == "p50" else 0.05) ** (-1 / shape)

    name = f"Pareto α = {shape:g}"
    return Population(name, draw, truth, name)


NORMAL = NormalDist()


def cost_populations() -> list[Population]:
    runs = load_latencies()
    pairs = [(a, b) for i, a in enumerate(SYSTEMS) for b in SYSTEMS[i + 1:]]
    return [*(resampled(f"pydoc {a} / {b}", runs[a], runs[b]) for a, b in pairs),
            log_normal(round(float(np.std(np.log(runs["baseline"]), ddof=1)), 2)),
            *(log_normal(sigma) for sigma in HEAVY_SIGMAS), pareto(PARETO)]


@dataclass
class CostCell:
    """Over the test sets of one (population, stat, scenario, n): how many each rule called
    `regression`, how many passed, and per test set the baseline's estimate, the report's
    expected bias (baseline), the ratio, the gate's regression p-value against a ratio of 1
    (``p_values``) and the percentile bootstrap's (``percentile_p``: the rule before, for the
    mean)."""

    sims: int
    regression: dict[str, int]
    passed: int
    estimates: np.ndarray
    stated_bias: np.ndarray
    ratios: np.ndarray
    p_values: np.ndarray
    percentile_p: np.ndarray

    def rate(self, rule: str) -> float:
        return self.regression[rule] / self.sims


@contextlib.contextmanager
def floors_lifted() -> Iterator[None]:
    """Relative percentile gates decide from the policy's min-queries alone, their measured
    floors (PERCENTILE_MIN_QUERIES) lifted: how the calibration sees the rule below them."""
    with mock.patch.dict(PERCENTILE_MIN_QUERIES, clear=True):
        yield


def cost_policy(stat: str, resamples: int, rule: str = "estimate") -> GatePolicy:
    """One relative gate on ``stat``, deciding from one query (with :func:`floors_lifted`)."""
    return GatePolicy(costs=(CostGate("latency_ms", stat, INCREASE),),
                      resamples=resamples, min_queries=1, regression_rule=rule)  # type: ignore[arg-type]


def gated_row(baseline: np.ndarray, candidate: np.ndarray, policy: GatePolicy,
              family: int | None = None) -> Any:
    (gate,) = policy.costs
    rows = compare_costs([PairedSignal.cost("latency_ms", baseline, candidate)], policy.costs,
                         policy, family)
    return next(r for r in rows if r.gate == gate)


def interval_regression(baseline: np.ndarray, candidate: np.ndarray, stat: str,
                        resamples: int, row: Any, check: bool) -> bool:
    """Rule ``interval`` for a family of one: for a percentile, the bound the gate decided
    under rule estimate (``ratio_low_adjusted``, one-sided 1 − α) above 1.2 — exactly where its
    p-value against 1.2 is below α; for the mean (whose bound is bisected) and with ``check``
    (the first test set of a cell), compare_costs() under rule interval itself, which must
    agree with a percentile's bound."""
    bound = row.ratio_low_adjusted
    if stat != "mean" and bound is not None and not check:
        return bool(bound > LIMIT)
    again = gated_row(baseline, candidate, cost_policy(stat, resamples, "interval"))
    strict = again.decision == "regression"
    assert stat == "mean" or bound is None or strict == (bound > LIMIT)
    return bool(strict)


def percentile_bootstrap_p(baseline: np.ndarray, candidate: np.ndarray, resamples: int,
                           seed: int) -> float:
    """The rule before for the mean: the paired percentile bootstrap of the ratio of means,
    ``(1 + #{resampled ratio ≤ 1}) / (B + 1)``, resampled as the gate resamples (its seed,
    blocks of 250)."""
    rng = np.random.default_rng(seed)
    n, below = len(baseline), 0
    for start in range(0, resamples, 250):
        picks = rng.integers(0, n, size=(min(250, resamples - start), n))
        below += int(np.count_nonzero(candidate[picks].mean(axis=1)
                                      <= baseline[picks].mean(axis=1)))
    return (1 + below) / (resamples + 1)


def run_cost_cell(baseline: np.ndarray, candidate: np.ndarray, stat: str,
                  resamples: int) -> CostCell:
    sims = baseline.shape[0]
    cell = CostCell(sims, dict.fromkeys(COST_RULES, 0), 0,
                    *(np.full(sims, np.nan) for _ in range(5)))
    with floors_lifted():
        _fill_cost_cell(cell, baseline, candidate, stat, resamples)
    return cell


def _fill_cost_cell(cell: CostCell, baseline: np.ndarray, candidate: np.ndarray, stat: str,
                    resamples: int) -> None:
    policy = cost_policy(stat, resamples)
    for i in range(cell.sims):
        row = gated_row(baseline[i], candidate[i], policy)
        cell.regression["estimate"] += row.decision == "regression"
        cell.regression["interval"] += interval_regression(baseline[i], candidate[i], stat,
                                                           resamples, row, i == 0)
        cell.passed += row.decision == "pass"
        cell.estimates[i] = row.baseline
        if row.baseline_bias is not None:
            cell.stated_bias[i] = row.baseline_bias
        if row.ratio is not None:
            cell.ratios[i] = row.ratio
        if row.p_regression is not None:
            cell.p_values[i] = row.p_regression
        if stat == "mean":
            cell.percentile_p[i] = percentile_bootstrap_p(baseline[i], candidate[i], resamples,
                                                          policy.seed)


CostResults = dict[tuple[str, str, str, int], CostCell]  # (population, stat, scenario, n)


def run_costs(populations: Sequence[Population], sizes: Sequence[int], sims: int,
              resamples: int, seed: int) -> CostResults:
    """Every population × stat × n under each scenario; the small sizes (p50 and p95) under
    the null and at the margin (×1.2, for the false pass)."""
    results: CostResults = {}
    for p_id, population in enumerate(populations):
        for s_id, (scenario, ratio) in enumerate(COST_SCENARIOS.items()):
            small = set(SMALL_SIZES) if scenario in ("null", "margin") else set()
            for n in sorted(set(sizes) | small):
                rng = np.random.default_rng([seed, 100 + p_id, s_id, n])
                b, c = population.draw(n, sims, rng)
                for stat in COST_STATS:
                    if n not in sizes and stat == "mean":
                        continue
                    results[population.name, stat, scenario, n] = run_cost_cell(
                        b, c * ratio, stat, resamples)
        print(f"costs: {population.name} done", file=sys.stderr, flush=True)
    return results


# --------------------------------------------------------------------------------------------
# Cost tables


def groups(populations: Sequence[Population]) -> dict[str, list[Population]]:
    """The tables' rows: the pydoc pairs as one group, each model alone."""
    grouped: dict[str, list[Population]] = {}
    for population in populations:
        grouped.setdefault(population.group, []).append(population)
    return grouped


def _worst_of(cells: Sequence[CostCell], rate: Callable[[CostCell], float]) -> CostCell:
    return max(cells, key=rate)


def cost_rate_table(results: CostResults, populations: Sequence[Population], scenario: str,
                    sizes: Sequence[int], what: Callable[[Sequence[CostCell]], str],
                    stats: Sequence[str] = COST_STATS) -> str:
    """A row per stat and population group, a column per n; ``what`` condenses a group's
    cells (the pydoc pairs' three) into the shown text."""
    head = ("| stat | population | " + " | ".join(f"n = {n}" for n in sizes) + " |\n|---|---|"
            + "---:|" * len(sizes))
    rows = []
    for stat in stats:
        for name, members in groups(populations).items():
            cells = [[results[key] for p in members
                      if (key := (p.name, stat, scenario, n)) in results] for n in sizes]
            if not any(cells):
                continue
            rows.append(f"| {stat} | {name} | "
                        + " | ".join(what(group) if group else "-" for group in cells) + " |")
    return "\n".join([head, *rows])


def alarm(cells: Sequence[CostCell], marked: Sequence[str] = COST_RULES) -> str:
    """`estimate` / `interval` rates, each the highest of the group's (± 2 SE at most
    2·√(0.25/sims)), † above α by 2 SE for the rules ``marked`` (those that promise α)."""
    return " / ".join(_share(max(c.regression[rule] for c in cells), cells[0].sims,
                             ALPHA if rule in marked else math.inf)
                      for rule in COST_RULES)


def boundary_alarm(cells: Sequence[CostCell]) -> str:
    """:func:`alarm`, † for rule interval only: rule estimate promises nothing at ×1.19."""
    return alarm(cells, ("interval",))


def _share(count: int, sims: int, level: float = ALPHA) -> str:
    return f"{count / sims:.3f}".replace("0.000", "0") + (" †" if _above(count, sims, level)
                                                          else "")


def _above(count: int, sims: int, level: float = ALPHA) -> bool:
    p = count / sims
    return p - 2 * math.sqrt(p * (1 - p) / sims) > level


def power(cells: Sequence[CostCell]) -> str:
    """`estimate` / `interval` rates, each the lowest of the group's."""
    return " / ".join(f"{min(c.rate(rule) for c in cells):.2f}" for rule in COST_RULES)


def false_pass(cells: Sequence[CostCell]) -> str:
    """The highest share of the group's test sets passed, † above α/2 by 2 SE."""
    return _share(max(c.passed for c in cells), cells[0].sims, ALPHA / 2)


def bound_levels(attribute: str) -> Callable[[Sequence[CostCell]], str]:
    """The share of test sets whose regression p-value (``attribute``: the gate's, or the
    percentile bootstrap's) is below α/m, for m in :data:`BOUND_FAMILIES`, each the highest of
    the group's; † above α/m by 2 SE."""
    def shown(cells: Sequence[CostCell]) -> str:
        parts = []
        for m in BOUND_FAMILIES:
            level = ALPHA / m
            count = max(int(np.count_nonzero(getattr(c, attribute) < level)) for c in cells)
            parts.append(_share(count, cells[0].sims, level))
        return " / ".join(parts)
    return shown


def bound_ratio(results: CostResults, attribute: str, stats: Sequence[str],
                sizes: Sequence[int], scenario: str = "null"
                ) -> tuple[float, float, str, int]:
    """Over every population, n from the statistic's minimum on (the policy's min-queries and
    :data:`PERCENTILE_MIN_QUERIES`) and m: the highest share of test sets below α/m as a
    multiple of α/m, its 2 SE (as a multiple), where, and how many cells lie above α/m by
    more than 2 SE."""
    worst_at = (0.0, 0.0, "")
    above = 0
    for (name, stat, kind, n), cell in results.items():
        least = max(GatePolicy().min_queries, PERCENTILE_MIN_QUERIES.get(stat, 0))
        if kind != scenario or stat not in stats or n not in sizes or n < least:
            continue
        for m in BOUND_FAMILIES:
            level = ALPHA / m
            count = int(np.count_nonzero(getattr(cell, attribute) < level))
            rate = count / cell.sims
            se = 2 * math.sqrt(rate * (1 - rate) / cell.sims) / level
            above += _above(count, cell.sims, level)
            if rate / level > worst_at[0]:
                worst_at = (rate / level, se, f"{stat}, {name}, n = {n}, α/{m}")
    return (*worst_at, above)


def model_bias(sigma: float, stat: str, n: int) -> float:
    """The exact expected bias of ``stat`` over n queries of a log-normal σ: the report's own
    :func:`~retrieval_gate.decide.cost.expected_bias` at the true σ (n values whose log has
    standard deviation σ exactly)."""
    z = np.array([NORMAL.inv_cdf((i + 0.5) / n) for i in range(n)])
    bias = expected_bias(np.exp(sigma * z / z.std(ddof=1)), stat)
    assert bias is not None
    return bias


def small_table(results: CostResults, populations: Sequence[Population]) -> str:
    """n = 10 … 50, p95 and p50: per population group the estimator's bias (the report's
    stated bias in brackets; the pydoc pairs' farthest from 0), the null ratio's central 95 %
    (the widest), the false alarm under both rules and the false pass at a true ratio of 1.2
    (the margin), the highest over every population."""
    grouped = groups(populations)
    head = ("| stat | n | bias, stated in brackets: " + " / ".join(grouped) + " | null ratio, "
            "95 % range: " + " / ".join(grouped) + " | false alarm, estimate / interval | "
            "false pass at ×1.2 |\n|---|---:|---|---|---:|---:|")
    rows = []
    for stat in ("p95", "p50"):
        for n in SMALL_SIZES:
            biases, ranges = [], []
            for members in grouped.values():
                shown = [_bias(results[p.name, stat, "null", n], p.truth(stat))
                         for p in members]
                biases.append(max(shown, key=lambda b: abs(b[0]))[1])
                spans = [np.nanquantile(results[p.name, stat, "null", n].ratios, [0.025, 0.975])
                         for p in members]
                low, high = max(spans, key=lambda s: s[1] - s[0])
                ranges.append(f"×{low:.2f} – ×{high:.2f}")
            nulls = [results[p.name, stat, "null", n] for p in populations]
            edges = [results[p.name, stat, "margin", n] for p in populations]
            rows.append(f"| {stat} | {n} | {' / '.join(biases)} % | {' / '.join(ranges)} | "
                        f"{alarm(nulls)} | {false_pass(edges)} |")
    return "\n".join([head, *rows])


def _bias(cell: CostCell, truth: float) -> tuple[float, str]:
    bias = cell.estimates.mean() / truth - 1
    stated = float(np.nanmean(cell.stated_bias))
    return bias, f"{_percent(bias)} ({_percent(stated)})"


def _percent(share: float) -> str:
    return f"{100 * share:+.1f}".replace("-", "−")


# --------------------------------------------------------------------------------------------
# Quality and cost as one family


COMBINED_STATS = ("mean", "p95")


def combined(pairs: Sequence[Pair], sizes: Sequence[int], sims: int, resamples: int,
             seed: int) -> dict[tuple[str, int], dict[str, int]]:
    """The default quality gate (2 measures, centred null) with a latency mean and p95 gate
    (+20 %, log-normal σ = 1 null): test sets where anything says `regression`, per rule, as
    two families (quality by Holm; costs by Holm among themselves, every gate deciding from
    the policy's 25 queries) and as one family (the gate's: one Holm procedure over every
    member, the p95 a member from its own minimum on)."""
    heavy = log_normal(1.0)
    counts: dict[tuple[str, int], dict[str, int]] = {}
    for pair_id, pair in enumerate(pairs):
        if pair.near_equal:
            continue
        for n in sizes:
            rng = np.random.default_rng([seed, 200 + pair_id, n])
            quality = centred(pair.d, n, sims, rng)
            b, c = heavy.draw(n, sims, rng)
            tally = dict.fromkeys([f"{way} {rule}" for way in ("two", "one")
                                   for rule in COST_RULES], 0)
            for i in range(sims):
                for rule in COST_RULES:
                    for way in ("two", "one"):
                        tally[f"{way} {rule}"] += _any_regression(
                            quality[i][:, :2], b[i], c[i], resamples, rule, way == "one")
            counts[pair.name, n] = tally
    return counts


def _any_regression(d: np.ndarray, baseline: np.ndarray, candidate: np.ndarray,
                    resamples: int, rule: str, one: bool) -> bool:
    """Whether the quality comparisons (differences ``d``, queries × 2) or the cost gates
    (latencies) say `regression`: decided as the gate decides — the quality comparisons'
    and the cost gates' regression p-values Holm-adjusted together (``one``) — or as two
    families, each Holm-adjusted alone, every cost gate deciding from the policy's
    min-queries."""
    n = len(d)
    policy = policy_for(2, resamples, GatePolicy().min_queries, rule=rule)
    policy = dataclasses.replace(policy, costs=tuple(CostGate("latency_ms", s, INCREASE)
                                                     for s in COMBINED_STATS))
    signals = [PairedSignal.cost("latency_ms", baseline, candidate)]
    with contextlib.nullcontext() if one else floors_lifted():
        costs_in = cost_members(signals, policy.costs, policy)
        family = 2 + costs_in if one else None
        measured = measure_costs(signals, policy.costs, policy, family)
    slices = {"all": np.arange(n)}
    pairs = {(m, "all"): PairPolicy(MARGIN) for m in MEASURES[:2]}
    rows = paired(np.zeros_like(d), d, MEASURES[:2], slices, policy, [False, False], pairs,
                  ALPHA / (family or 2))
    if one:
        comparisons = decide_pairs(rows, policy, family, member_p_values(measured))
        costs = decide_costs(measured, policy, family,
                             [r.fields["p_regression"] for r in rows if r.fields["in_family"]])
    else:
        comparisons = decide_pairs(rows, policy)
        costs = decide_costs(measured, policy)
    return (any(q.decision == "regression" for q in comparisons)
            or any(r.decision == "regression" for r in costs))


def combined_table(counts: dict[tuple[str, int], dict[str, int]], sizes: Sequence[int],
                   sims: int) -> str:
    head = ("| n | pair (centred null) | two families, estimate | one family, estimate | "
            "two families, interval | one family, interval |\n|---:|---|---:|---:|---:|---:|")
    rows = []
    for n in sizes:
        for (name, size), tally in counts.items():
            if size != n:
                continue
            rows.append(f"| {n} | {name} | " + " | ".join(
                rate_se(tally[key], sims) for key in ("two estimate", "one estimate",
                                                      "two interval", "one interval")) + " |")
    return "\n".join([head, *rows])


def main_costs(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    populations = cost_populations()
    results = run_costs(populations, args.sizes, args.sims, args.resamples, args.seed)
    counts = combined(load_pairs(), args.sizes, args.sims, args.resamples, args.seed)
    elapsed = time.perf_counter() - start
    sizes = args.sizes
    print(f"# Calibration of the relative cost gate on per-query latencies\n\n"
          f"max-increase {INCREASE} (+20 %), α = {ALPHA}, {args.resamples:,} bootstrap "
          f"resamples (gate seed {GatePolicy().seed}), {args.sims} simulated test sets "
          f"per cell (largest ± 2·SE of a rate: {2 * math.sqrt(0.25 / args.sims):.3f}), seed "
          f"{args.seed}; each cost gate a family of one, deciding from 1 query. Percentile "
          f"minimums in force: {PERCENTILE_MIN_QUERIES}. Where a row names the pydoc pairs, "
          f"each cell shows the worst of the three.\n")
    print("Populations: " + "; ".join(p.name for p in populations) + ".\n")
    print(f"## Null (interchangeable runs): share called `regression`, rule estimate / "
          f"interval\n\n{cost_rate_table(results, populations, 'null', sizes, alarm)}")
    print(f"\n## The test alone, null: share of test sets whose regression p-value is below "
          f"α/m, m = {' / '.join(map(str, BOUND_FAMILIES))}\n\n"
          f"{cost_rate_table(results, populations, 'null', sizes, bound_levels('p_values'))}")
    print("\n## The rule before for the mean (the percentile bootstrap of the ratio of "
          "means), null: the same shares\n\n"
          + cost_rate_table(results, populations, "null", sizes, bound_levels("percentile_p"),
                            ("mean",)))
    print(f"\n## Boundary (true ratio ×1.19, just under the margin): share called `regression`, "
          f"rule estimate / interval\n\n"
          f"{cost_rate_table(results, populations, 'boundary', sizes, boundary_alarm)}")
    for scenario in ("power 1.3×", "power 1.5×"):
        print(f"\n## {scenario.capitalize()}: share called `regression`, rule estimate / "
              f"interval (the lowest of the pydoc pairs)\n\n"
              + cost_rate_table(results, populations, scenario, sizes, power))
    print(f"\n## False pass at the margin (true ratio ×1.2): share called `pass`\n\n"
          f"{cost_rate_table(results, populations, 'margin', sizes, false_pass)}")
    print(f"\n## Small test sets (null; false pass at ×1.2)\n\n"
          f"{small_table(results, populations)}")
    print(f"\n## One family: quality and cost (share where anything says `regression`)\n\n"
          f"{combined_table(counts, sizes, args.sims)}")
    print("\n## Summary\n")
    for what, attribute, stats in (("the gate's test, p50 and p95", "p_values", ("p50", "p95")),
                                   ("the gate's test, mean", "p_values", ("mean",)),
                                   ("the rule before, mean", "percentile_p", ("mean",))):
        ratio, se, where, above = bound_ratio(results, attribute, stats, sizes)
        print(f"- {what}: the highest share below α/m from the statistic's minimum on: "
              f"{ratio:.2f} ± {se:.2f} × α/m ({where}); cells above α/m by more than 2 SE: "
              f"{above}")
    for stat, bias_sizes in (("p95", (25, 50)), ("p50", (10, 15, 20, 25))):
        print(f"- the exact bias of a {stat} (log-normal): " + "; ".join(
            f"σ = {sigma:g}: " + ", ".join(f"{_percent(model_bias(sigma, stat, n))} % at {n}"
                                          for n in bias_sizes)
            for sigma in (p.sigma for p in populations if p.sigma is not None)))
    shown = " ".join(["python", "benchmarks/calibration.py", *sys.argv[1:]])
    print(f"\n_Simulation time {elapsed:.0f} s; `{shown}`._")
    return 0


# --------------------------------------------------------------------------------------------
# Per-query scores with repeated samples


SAMPLE_COUNTS = (1, 3, 5)
SCORE_FAMILIES = (1, 3)
SCORE_NAMES = ("a", "b", "c")
NOISE = 0.2
SCORE_SCENARIOS = {"null": 0.0, **{f"drop {delta / MARGIN:g}×": delta for delta in DROPS}}


@dataclass(frozen=True)
class Judge:
    """How a run's samples of a query's score come from the query's truth ``t``:
    ``draw(t, k, rng)`` gives k independent samples of each value of ``t`` (a new last axis),
    ``expected(t)`` the expected sample."""

    name: str
    draw: Callable[[np.ndarray, int, np.random.Generator], np.ndarray]
    expected: Callable[[np.ndarray], np.ndarray]


def noisy(sigma: float) -> Judge:
    """A sample is ``t + σ·z`` (z standard normal) clipped to [0, 1]. Expected:
    E[max(X, 0)] − E[max(X − 1, 0)] for X ~ N(t, σ²), where E[max(X − a, 0)] =
    (t − a)·Φ(u) + σ·φ(u), u = (t − a)/σ."""
    from scipy.special import ndtr

    def draw(t: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        return np.clip(t[..., None] + sigma * rng.standard_normal((*t.shape, k)), 0.0, 1.0)

    def above(t: np.ndarray, a: float) -> np.ndarray:
        u = (t - a) / sigma
        return (t - a) * ndtr(u) + sigma * np.exp(-u * u / 2) / math.sqrt(2 * math.pi)

    return Judge(f"truth + N(0, {sigma:g}²), clipped", draw,
                 lambda t: above(t, 0.0) - above(t, 1.0))


def bernoulli() -> Judge:
    """A sample is 1 with probability ``t`` (clipped to [0, 1]), else 0: a binary judge."""
    def draw(t: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        return (rng.random((*t.shape, k)) < t[..., None]).astype(float)

    return Judge("Bernoulli(truth)", draw, lambda t: np.clip(t, 0.0, 1.0))


def load_truths() -> np.ndarray:
    """The shipped hybrid run's per-query nDCG@10 on Cranfield (225 queries)."""
    measures = parse_measures(["nDCG@10"])
    return score_run(read_qrels(QRELS), read_run(HYBRID), measures).values[:, 0]


def shift_for(judge: Judge, truths: np.ndarray, delta: float) -> float:
    """The shift s of every truth (``t − s``) that lowers the expected score by exactly
    ``delta`` on average over ``truths`` (bisection to 1e-12; 0 for no drop)."""
    if delta == 0:
        return 0.0
    target = judge.expected(truths).mean() - delta
    low, high = 0.0, 1.0
    while high - low > 1e-12:
        mid = (low + high) / 2
        low, high = (mid, high) if judge.expected(truths - mid).mean() > target else (low, mid)
    return (low + high) / 2


def read_back(samples: np.ndarray) -> np.ndarray:
    """The per-query means the gate's reader gives for one run's samples (queries × scores ×
    k): written as a native JSON Lines score file, one line per (query, sample), and read by
    :func:`~retrieval_gate.inputs.answer_scores.load_query_scores`."""
    n, _, k = samples.shape
    ids = tuple(f"q{i}" for i in range(n))
    lines = [json.dumps({"query_id": ids[i], "sample": s,
                         "scores": dict(zip(SCORE_NAMES, samples[i, :, s].tolist()))})
             for i in range(n) for s in range(k)]
    blob = Blob("simulated.scores.jsonl", "\n".join(lines).encode("utf-8"))
    return load_query_scores(blob, None, (), ids).values


def run_score_cell(baseline: np.ndarray, candidate: np.ndarray, resamples: int,
                   min_queries: int) -> Cell:
    """Families of 1 and 3 scores (``score:a``, ``b``, ``c``) on every simulated test set
    (sims × n × 3 per-query means of each run), decided as the gate decides ``score:NAME``:
    one :class:`PairedSignal` per score, :func:`compare_signals` with the family the gate
    counts (:func:`family_of`), rule ``estimate``."""
    cell = Cell(baseline.shape[0])
    names = [f"{SCORE_PREFIX}{name}" for name in SCORE_NAMES]
    rows = {"all": np.arange(baseline.shape[1])}
    setups = {}
    for m in SCORE_FAMILIES:
        policy = GatePolicy(gates=tuple(GatedMeasure(name, MARGIN) for name in names[:m]),
                            resamples=resamples, min_queries=min_queries)
        setups[m] = policy, {(name, "all"): PairPolicy(MARGIN) for name in names[:m]}
        cell.regression[m, "estimate"] = 0
        cell.passed[m] = 0
    for b, c in zip(baseline, candidate):
        for m, (policy, pairs) in setups.items():
            signals = [PairedSignal.of(name, b[:, j], c[:, j]) for j, name in
                       enumerate(names[:m])]
            comparisons = compare_signals(signals, rows, pairs, policy,
                                          family_of(signals, rows, pairs, policy))
            cell.regression[m, "estimate"] += any(x.decision == "regression"
                                                  for x in comparisons)
            cell.passed[m] += all(x.decision == "pass" for x in comparisons)
    return cell


ScoreResults = dict[tuple[str, int, str, int], Cell]  # (judge, k, scenario, n)


def run_samples(judges: Sequence[Judge], truths: np.ndarray, sizes: Sequence[int], sims: int,
                resamples: int, min_queries: int, seed: int
                ) -> tuple[ScoreResults, dict[tuple[str, int], float]]:
    """Every judge × k × scenario × n; and per (judge, k) the SD of the per-query difference
    under the null (largest n). A test set draws n truths with replacement; each of its 3
    scores gets k samples per run from the query's truth (the candidate's lowered by the
    scenario's shift), averaged per query. The first test set of every cell checks that the
    gate's reader averages the samples to the same means."""
    results: ScoreResults = {}
    spread: dict[tuple[str, int], float] = {}
    for j_id, judge in enumerate(judges):
        for s_id, (scenario, delta) in enumerate(SCORE_SCENARIOS.items()):
            shift = shift_for(judge, truths, delta)
            for k in SAMPLE_COUNTS:
                for n in sizes:
                    rng = np.random.default_rng([seed, 300 + j_id, s_id, k, n])
                    t = np.repeat(truths[rng.integers(0, len(truths), (sims, n))][..., None],
                                  len(SCORE_NAMES), axis=-1)
                    b_samples, c_samples = judge.draw(t, k, rng), judge.draw(t - shift, k, rng)
                    b, c = b_samples.mean(axis=-1), c_samples.mean(axis=-1)
                    for run, means in ((b_samples, b), (c_samples, c)):
                        assert np.allclose(read_back(run[0]), means[0], rtol=0, atol=1e-12)
                    results[judge.name, k, scenario, n] = run_score_cell(b, c, resamples,
                                                                         min_queries)
                    if delta == 0:
                        spread[judge.name, k] = float((c - b)[..., 0].std(ddof=1))
            print(f"samples: {judge.name}, {scenario} done", file=sys.stderr, flush=True)
    return results, spread


def samples_alarm_table(results: ScoreResults, judges: Sequence[Judge],
                        spread: dict[tuple[str, int], float], sizes: Sequence[int]) -> str:
    """(judge, k, m) × n: the family-wise share called `regression` under no change."""
    head = ("| judge | k | m | SD of d | " + " | ".join(f"n = {n}" for n in sizes)
            + " |\n|---|---:|---:|---:|" + "---:|" * len(sizes))
    rows = []
    for judge in judges:
        for k in SAMPLE_COUNTS:
            for m in SCORE_FAMILIES:
                cells = [results[judge.name, k, "null", n] for n in sizes]
                rows.append(f"| {judge.name} | {k} | {m} | {spread[judge.name, k]:.3f} | "
                            + " | ".join(rate_se(c.regression[m, "estimate"], c.sims)
                                         for c in cells) + " |")
    return "\n".join([head, *rows])


def samples_power_table(results: ScoreResults, judges: Sequence[Judge],
                        sizes: Sequence[int]) -> str:
    """(judge, k, m) × n: share called `regression` at a true drop of 1× / 2× the margin
    (every score of the family drops)."""
    head = ("| judge | k | m | " + " | ".join(f"n = {n}" for n in sizes) + " |\n|---|---:|---:|"
            + "---:|" * len(sizes))
    drops = [name for name, delta in SCORE_SCENARIOS.items() if delta]
    rows = []
    for judge in judges:
        for k in SAMPLE_COUNTS:
            for m in SCORE_FAMILIES:
                rows.append(f"| {judge.name} | {k} | {m} | " + " | ".join(
                    " / ".join(f"{results[judge.name, k, d, n].rate(m, 'estimate'):.2f}"
                               for d in drops) for n in sizes) + " |")
    return "\n".join([head, *rows])


def main_samples(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    truths = load_truths()
    judges = (noisy(args.noise), bernoulli())
    results, spread = run_samples(judges, truths, args.sizes, args.sims, args.resamples,
                                  args.min_queries, args.seed)
    elapsed = time.perf_counter() - start
    print(f"# Calibration of per-query scores with repeated samples\n\n"
          f"Margin {MARGIN}, α = {ALPHA}, BCa with {args.resamples:,} resamples (gate seed "
          f"{GatePolicy().seed}), min-queries {args.min_queries}, {args.sims} simulated test sets "
          f"per cell (largest ± 2·SE of a rate: {2 * math.sqrt(0.25 / args.sims):.3f}), seed "
          f"{args.seed}. Truths: the hybrid run's per-query nDCG@10 (mean "
          f"{truths.mean():.3f}, {np.mean(truths == 0):.0%} zero), drawn with replacement; "
          f"each of a query's three scores gets k samples per run from its truth (independent "
          f"noise), averaged per query; a family of m gates the first m of score:a, score:b, "
          f"score:c; SD of d: the per-query difference's SD under no change (n = "
          f"{args.sizes[-1]}).\n")
    print(f"## No change: family-wise share called `regression` (rule estimate)\n\n"
          f"{samples_alarm_table(results, judges, spread, args.sizes)}")
    print(f"\n## Power: share called `regression` at a true drop of 1× / 2× the margin "
          f"(every score of the family; rule estimate)\n\n"
          f"{samples_power_table(results, judges, args.sizes)}")
    shown = " ".join(["python", "benchmarks/calibration.py", *sys.argv[1:]])
    print(f"\n_Simulation time {elapsed:.0f} s; `{shown}`._")
    return 0


# --------------------------------------------------------------------------------------------
# The candidate rules (--candidates): how the gate's test was chosen

# name -> (what it is, how the family's p-values decide) for rule estimate; every candidate
# also needs the estimated drop to reach the margin and n ≥ min-queries.
CANDIDATES = {
    "bonferroni": "the rule before: studentized bound at one-sided α/(2m) and the Holm sign test",
    "bt α/m + sign": "studentized bound at one-sided α/m (Bonferroni) and the Holm sign test",
    "bt Holm + sign": "Holm over the bootstrap-t p-values and the Holm sign test",
    "bt Holm": "Holm over the bootstrap-t p-values",
    "perm Holm": "Holm over sign-flip permutation p-values",
    "t Holm + sign": "Holm paired t-test and the Holm sign test",
    "max(t, bt) Holm": "Holm over the larger of the t-test's and the bootstrap-t's p-values "
                       "(the gate's test holm, without its 0/1 guard)",
    "t Holm": "Holm paired t-test (the reference)",
}


def candidate_p_values(d: np.ndarray, resamples: int, rng: np.random.Generator
                       ) -> dict[str, np.ndarray]:
    """Per measure (columns of ``d``, queries × measures): the one-sided p-values toward
    regression of the t-test, the bootstrap-t (the library's, seed 0 as the gate), the sign
    test and a sign-flip permutation test (``resamples`` random sign vectors from ``rng``)."""
    n, m = d.shape
    boot = bootstrap_ci(d.T, rng=np.random.default_rng(0), resamples=resamples,
                        method="percentile", nulls=np.zeros(m))
    flips = rng.choice(np.array([-1.0, 1.0]), size=(resamples, n))
    permuted = flips @ d / n
    return {"t": np.array([paired_t_p(d[:, j]) for j in range(m)]),
            "bt": np.array([b.p_lower for b in boot]),
            "sign": np.array([sign_test(d[:, j]).p_regression for j in range(m)]),
            "perm": (1 + np.sum(permuted <= d.mean(axis=0) + 1e-12, axis=0)) / (resamples + 1)}


def candidate_decisions(p: dict[str, np.ndarray], big: np.ndarray, alpha: float
                        ) -> dict[str, bool]:
    """Whether each candidate says `regression` for the family whose p-values are ``p``
    (``big``: the estimated drop reaches the margin, per member)."""
    m = big.size
    sign = holm(p["sign"]) < alpha
    holm_of = {name: holm(p[name]) < alpha for name in ("t", "bt", "perm")}
    both = holm(np.maximum(p["t"], p["bt"])) < alpha
    rules = {
        "bonferroni": (p["bt"] < alpha / (2 * m)) & sign,
        "bt α/m + sign": (p["bt"] < alpha / m) & sign,
        "bt Holm + sign": holm_of["bt"] & sign,
        "bt Holm": holm_of["bt"],
        "perm Holm": holm_of["perm"],
        "t Holm + sign": holm_of["t"] & sign,
        "max(t, bt) Holm": both,
        "t Holm": holm_of["t"],
    }
    return {name: bool(np.any(big & rule)) for name, rule in rules.items()}


def main_candidates(args: argparse.Namespace) -> int:
    """Every candidate on the quality rule's scenarios (rule estimate; nulls: sign-flip and
    centred, every pair, families 1/2/4/8; power: drops of 1× and 2× the margin, families 1
    and 2): the worst false alarm from min-queries on and the largest power shortfall against
    the Holm paired t-test. Bootstrap-t p-values here are (1 + #{t* ≤ t})/(B + 1), the bound
    form of the rule before is the same test at one-sided α/(2m) (the library interpolates
    its quantile; the difference is within the Monte-Carlo noise of B)."""
    start = time.perf_counter()
    pairs = load_pairs()
    alarms: dict[str, list[tuple[float, str]]] = {name: [] for name in CANDIDATES}
    power: dict[tuple[str, str], float] = {}
    for scenario_id, (scenario, (simulate, near_equal, families)) in enumerate(
            SCENARIOS.items()):
        if scenario == "boundary":
            continue
        for n in args.sizes:
            for pair_id, pair in enumerate(pairs):
                if pair.near_equal and not near_equal:
                    continue
                rng = np.random.default_rng([args.seed, pair_id, scenario_id, n])
                samples = simulate(pair.d, n, args.sims, rng)
                counts = {(name, m): 0 for name in CANDIDATES for m in families}
                for d in samples:
                    p = candidate_p_values(d, args.resamples, rng)
                    for m in families:
                        big = d[:, :m].mean(axis=0) <= -MARGIN
                        if n < args.min_queries:
                            continue
                        decided = candidate_decisions({k: v[:m] for k, v in p.items()}, big,
                                                      ALPHA)
                        for name, flagged in decided.items():
                            counts[name, m] += flagged
                where = f"{pair.name}, n = {n}"
                for (name, m), count in counts.items():
                    if scenario.startswith("drop"):
                        power[name, f"{scenario}, {where}, m = {m}"] = count / args.sims
                    elif n >= GatePolicy().min_queries:
                        alarms[name].append((count / args.sims, f"{scenario}, {where}, m = {m}"))
        print(f"candidates: {scenario} done", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - start
    print(f"# Candidate regression tests, rule estimate\n\n{args.sims} simulated test sets per "
          f"cell, {args.resamples:,} resamples, seed {args.seed}, margin {MARGIN}, α = {ALPHA}; "
          f"the scenarios of the quality calibration (nulls: sign-flip and centred, every "
          f"pair, families 1/2/4/8; power: drops of 1× and 2× the margin, families 1 and 2; "
          f"n = {', '.join(map(str, args.sizes))}).\n")
    print("| candidate | what it is | worst false alarm (where) | largest power shortfall "
          "against t Holm (where) | mean power |\n|---|---|---|---|---:|")
    cells = sorted({key for _, key in power})
    for name, what in CANDIDATES.items():
        rate, where = max(alarms[name])
        gap, at = max((power["t Holm", key] - power[name, key], key) for key in cells)
        se = 2 * math.sqrt(rate * (1 - rate) / args.sims)
        mean = sum(power[name, key] for key in cells) / len(cells)
        print(f"| {name} | {what} | {rate:.3f} ± {se:.3f}{' †' if rate - se > ALPHA else ''} "
              f"({where}) | {gap:+.3f} ({at}) | {mean:.3f} |")
    print(f"\n_Simulation time {elapsed:.0f} s; `python benchmarks/calibration.py "
          f"{' '.join(sys.argv[1:])}`._")
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=1000,
                        help="simulated test sets per cell (default 1000)")
    parser.add_argument("--resamples", type=int, default=1000,
                        help="bootstrap resamples per interval (default 1000; the gate uses "
                        "10000)")
    parser.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES),
                        help="test-set sizes (default 25 50 100 225)")
    parser.add_argument("--min-queries", type=int, default=GatePolicy().min_queries,
                        help="the policy's min-queries (default: the gate's default); lower it "
                        "to simulate smaller test sets")
    parser.add_argument("--shape-sizes", type=int, nargs="+", default=None,
                        help="test-set sizes of the shapes' cells (default: --sizes)")
    parser.add_argument("--shapes", nargs="+", default=None, metavar="SHAPE",
                        help="only these shapes' cells (e.g. normal 0/1), no real pair's, and "
                        "only the power shortfall: to re-measure a few cells at the gate's "
                        "10000 resamples")
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes for the quality tables (default 1)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 100 sims, 500 resamples, n = 25 and 100")
    parser.add_argument("--costs", action="store_true",
                        help="the relative cost gate's tables (latency p50, p95, mean; small "
                        "test sets; quality and cost as one family) instead of the quality "
                        "rule's")
    parser.add_argument("--samples", action="store_true",
                        help="per-query scores with k = 1, 3, 5 noisy samples per query and run "
                        "(a clipped-normal and a Bernoulli judge): false alarms and power of "
                        "families of 1 and 3 scores, instead of the quality rule's tables")
    parser.add_argument("--candidates", action="store_true",
                        help="the candidate regression tests (how the gate's was chosen): worst "
                        "false alarm and largest power shortfall against the Holm paired "
                        "t-test, instead of the quality rule's tables")
    parser.add_argument("--noise", type=float, default=NOISE,
                        help=f"with --samples: the clipped-normal judge's noise SD (default "
                        f"{NOISE:g})")
    args = parser.parse_args(argv)
    if args.quick:
        args.sims, args.resamples, args.sizes = 100, 500, [25, 100]
    return args


SCENARIOS: dict[str, tuple[Scenario, bool, Sequence[int]]] = {
    # name: (simulation, near-equal pairs too, families)
    "sign-flip": (sign_flip, True, FAMILIES),
    "centred": (centred, True, FAMILIES),
    "boundary": (boundary, False, FAMILIES),
    **{f"drop {delta:g}": (drop(delta), False, FAMILIES) for delta in DROPS},
}
# scenario: (shapes, shift); every family. A shape's boundary is the rule interval's null.
SHAPE_SCENARIOS: dict[str, tuple[Sequence[Shape], float]] = {
    "symmetric": (SYMMETRIC, 0.0),
    "symmetric boundary": (SYMMETRIC, -(MARGIN - EPSILON)),
    "skewed": (SKEWED, 0.0),
    **{f"drop {delta:g}": (drop_shapes(delta), 0.0) for delta in DROPS},
}


def _one_cell(job: tuple[str, int, int, int, int, int, int, int]) -> Cell:
    """One cell (run in a worker): the scenario (by kind and index), the source's index, n,
    sims, resamples, min-queries and the seed."""
    kind, scenario_id, source_id, n, sims, resamples, min_queries, seed = job
    rng = np.random.default_rng([seed, source_id if kind == "pair" else 400 + source_id,
                                 scenario_id, n])
    if kind == "pair":
        simulate, _, families = list(SCENARIOS.values())[scenario_id]
        samples = simulate(_PAIRS[source_id].d, n, sims, rng)
    else:
        shapes, shift = list(SHAPE_SCENARIOS.values())[scenario_id]
        samples, families = of_shape(shapes[source_id], shift)(np.empty(0), n, sims, rng), \
            FAMILIES
    return run_cell(samples, families, resamples, min_queries)


_PAIRS: list[Pair] = []


def _share_pairs(pairs: list[Pair]) -> None:
    _PAIRS[:] = pairs


def simulate_all(args: argparse.Namespace, pairs: Sequence[Pair]
                 ) -> dict[str, dict[int, dict[str, Cell]]]:
    """Every scenario's cells: the real pairs' (SCENARIOS) and the shapes'
    (SHAPE_SCENARIOS), by scenario, n and source; ``--jobs`` worker processes (each cell is
    seeded on its own, so the result does not depend on how many)."""
    jobs, where = [], []
    for scenario_id, (scenario, (_, near_equal, _)) in enumerate(SCENARIOS.items()):
        for n in args.sizes if args.shapes is None else ():
            for pair_id, pair in enumerate(pairs):
                if near_equal or not pair.near_equal:
                    jobs.append(("pair", scenario_id, pair_id, n))
                    where.append((scenario, n, pair.name))
    for scenario_id, (scenario, (shapes, _)) in enumerate(SHAPE_SCENARIOS.items()):
        for n in args.shape_sizes or args.sizes:
            for shape_id, shape in enumerate(shapes):
                if args.shapes is None or shape.name in args.shapes:
                    jobs.append(("shape", scenario_id, shape_id, n))
                    where.append((scenario, n, shape.name))
    full = [(*job, args.sims, args.resamples, args.min_queries, args.seed) for job in jobs]
    with multiprocessing.get_context("fork").Pool(args.jobs, _share_pairs, (list(pairs),)
                                                  ) as pool:
        cells = []
        for i, cell in enumerate(pool.imap(_one_cell, full)):
            cells.append(cell)
            print(f"quality: {i + 1}/{len(full)} cells", file=sys.stderr, flush=True)
    results: dict[str, dict[int, dict[str, Cell]]] = {}
    for (scenario, n, name), cell in zip(where, cells):
        results.setdefault(scenario, {}).setdefault(n, {})[name] = cell
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.costs:
        return main_costs(args)
    if args.samples:
        return main_samples(args)
    if args.candidates:
        return main_candidates(args)
    start = time.perf_counter()
    pairs = load_pairs()
    results = simulate_all(args, pairs)
    shown = sys.argv[1:] if argv is None else argv
    if args.shapes is not None:
        print_shapes(results, args, time.perf_counter() - start, shown)
    else:
        print_quality(results, pairs, args, time.perf_counter() - start, shown)
    return 0


def print_shapes(results: dict[str, dict[int, dict[str, Cell]]], args: argparse.Namespace,
                 elapsed: float, argv: Sequence[str]) -> None:
    """``--shapes``: the power shortfall of the chosen shapes' drop cells, and its target."""
    sizes = args.shape_sizes or args.sizes
    print(f"# Power of the chosen shapes: {', '.join(args.shapes)}\n\n"
          f"Margin {MARGIN}, α = {ALPHA}, BCa with {args.resamples:,} resamples, min-queries "
          f"{args.min_queries}, {args.sims} simulated test sets per cell, seed {args.seed}.\n\n"
          f"{shortfall_table(results, sizes)}\n")
    for rule in REGRESSION_RULES:
        print_shortfall(results, sizes, rule)
    shown = " ".join(["python", "benchmarks/calibration.py", *argv])
    print(f"\n_Simulation time {elapsed:.0f} s; `{shown}`._")


def print_quality(results: dict[str, dict[int, dict[str, Cell]]], pairs: Sequence[Pair],
                  args: argparse.Namespace, elapsed: float, argv: Sequence[str]) -> None:
    """The quality rule's tables and targets, in Markdown."""

    sizes = args.sizes
    print(f"# Calibration of the decision rule on real Cranfield differences\n\n"
          f"Margin {MARGIN}, α = {ALPHA}, BCa with {args.resamples:,} resamples (gate seed "
          f"{GatePolicy().seed}), min-queries {args.min_queries}, {args.sims} simulated test sets "
          f"per cell (largest ± 2·SE of a rate: {2 * math.sqrt(0.25 / args.sims):.3f}), seed "
          f"{args.seed}; test sets drawn with replacement from 225 queries; a family of m gates "
          f"the first m of {', '.join(MEASURES)}.\n")
    print("Pairs (mean, SD and ties of the real per-query differences):\n")
    for pair in pairs:
        print(f"- {pair.name}{' (near-equal)' if pair.near_equal else ''}:\n{describe(pair)}")
    for test in ("holm", "bonferroni"):
        print(f"\n## The default gate (m = 2), test {test}, rule estimate, no change: share "
              f"called `regression`, every pair\n\n"
              f"{pair_table(results, ('sign-flip', 'centred'), f'{test} estimate', sizes, 2)}")
    for rule in BOUNDS:
        for scenario in ("sign-flip", "centred", "boundary"):
            print(f"\n## `{rule}`, {scenario}: share of test sets called `regression` "
                  f"(highest over the pairs)\n\n"
                  f"{alarm_table(results, scenario, rule, sizes, FAMILIES)}")
    for rule in REGRESSION_RULES:
        for m in POWER_FAMILIES:
            print(f"\n## Power, rule {rule}, family of {m}: share called `regression`, "
                  f"holm / t-holm / bonferroni\n\n{power_table(results, sizes, m, rule)}")
    print(f"\n## `pass`: share of test sets certified non-inferior\n\n"
          f"{pass_table(results, sizes, FAMILIES)}")
    for scenario in ("symmetric", "symmetric boundary", "skewed"):
        rule = "holm interval" if scenario.endswith("boundary") else "holm estimate"
        print(f"\n## Shapes, `{rule}`, {scenario}: share called `regression`, every shape\n\n"
              f"{shape_table(results, scenario, rule, args.shape_sizes or sizes)}")
    print(f"\n## Skew: the largest population skewness at which every family held α (test "
          f"holm, rule estimate, within 2 SE)\n\n"
          f"{skew_table(results, args.shape_sizes or sizes)}")
    print(f"\n## Power against the stronger of the rule before and the Holm paired t-test: "
          f"the shortfall of test holm, every drop cell (worst family; ± 2 paired SE; exact: "
          f"the share of test sets an exact test decides)\n\n"
          f"{shortfall_table(results, sizes)}")
    print("\n## Targets\n")
    if max(sizes) < GatePolicy().min_queries:
        print(f"- none below min-queries {GatePolicy().min_queries}: the guarantee is stated "
              f"from there on")
    for rule, scenarios in (("estimate", ("sign-flip", "centred", "symmetric")),
                            ("interval", ("boundary", "symmetric boundary"))):
        if max(sizes) < GatePolicy().min_queries:
            break
        rate, se, where = worst_alarm(results, sizes, f"holm {rule}", scenarios)
        held = rate - se <= ALPHA
        print(f"- rule {rule}: highest family-wise false alarm on real-pair and symmetric "
              f"nulls {rate:.3f} ± {se:.3f} ({where}): {'held' if held else 'NOT held'} "
              f"(≤ α = {ALPHA} within 2 SE)")
        print_shortfall(results, sizes, rule)
    shown = " ".join(["python", "benchmarks/calibration.py", *argv])
    print(f"\n_Simulation time {elapsed:.0f} s; `{shown}`._")


if __name__ == "__main__":
    sys.exit(main())
