"""The gate's policy, its decision rule, and the paired comparison of two runs' per-query values.

Every gated (measure, slice) is one comparison. The gate decides as one **family** of m
members: the comparisons that can say ``regression`` — those that gate (not report-only), are
not too small for their gate's own ``min-queries``, and have at least the policy's
``min-queries`` — and the relative cost gates that can (see :mod:`retrieval_gate.decide.cost`).
Comparisons outside it can never say ``regression``, so they cannot raise a false alarm, and
the family need not spend any of α on them. For a comparison with margin δ (the largest mean
drop that is not material), mean per-query difference d̄ = mean(candidate − baseline) and n
queries:

- ``[ci_low, ci_high]`` — the two-sided 1 − α bootstrap interval of d̄ (the one reports show);
- ``p_regression`` — the one-sided p-value that the true mean difference is below 0 (below −δ
  under rule ``interval``): the larger of the paired t-test's and the studentized bootstrap's,
  with few changed queries or a 0/1 outcome an exact test's too, at most 2⁻ⁿ when every query
  loses beyond the margin (:func:`regression_p`);
- ``p_regression_holm`` — ``p_regression`` Holm-adjusted over the whole family: one step-down
  procedure over the regression p-values of its quality comparisons and of its relative cost
  gates (each a one-sided p-value of its own: :mod:`retrieval_gate.decide.cost`), so the
  family-wise error stays ≤ α; outside the family, m times its own p-value;
- ``ci_high_adjusted`` — the one-sided 1 − α/m upper bound of d̄ (the larger of the t and the
  bootstrap-t bounds), shown beside the p-values: below 0 (−δ) both tests reject at Holm's
  strictest level (the p-values decide: for a 0/1 outcome the sign test must agree too);
- ``sign_p_holm`` — the one-sided sign-test p-value toward regression, Holm-adjusted over the
  family's quality comparisons; a comparison outside the family keeps its own;
- ``sign_p_margin_holm`` — test ``holm``, rule ``interval``: the same test with only the losses
  beyond the margin counted (d < −δ − tie band; a query that lost less is neither a loss nor
  a win),
  the sign test of the rule before's conditions; None otherwise.

Decision, with n ≥ ``min_queries`` (fewer queries certify nothing: ``inconclusive``, and
``decision_note`` says why):

- ``regression`` — test ``holm`` (default): d̄ ≤ −δ and either ``p_regression_holm`` < α or
  the rule before's conditions below (``ci_high_before``; under rule ``interval`` with
  ``sign_p_margin_holm`` for its sign test): never weaker than the rule before where the rule
  before is valid (rule ``estimate``: a significant drop whose estimate reaches the margin;
  rule ``interval``: a drop significantly larger than the margin). The rule before's sign test
  counts every loss, however small; under rule ``interval`` it then says little of a drop
  beyond the margin — when every query moves by just under the margin, every query is a
  "loss" — and the studentized bound alone flagged such a change up to twice as often as α
  allows, so there only the losses beyond the margin count. Test ``bonferroni`` (the rule before, kept by
  name): d̄ ≤ −δ, the studentized upper end of the two-sided 1 − α/m interval below 0 (below
  −δ under rule ``interval``) and ``sign_p_holm`` < α;
- ``pass`` — ``ci_low`` > −δ: non-inferior (any drop is smaller than the margin);
- ``inconclusive`` — otherwise: this test set cannot tell.

What each verdict guarantees (up to the approximations of the tests; measured by
``benchmarks/calibration.py``):

- ``regression``, rule ``estimate``: when no member of the family is truly worse (every true
  mean difference ≥ 0, no gated cost truly higher), the gate says ``regression`` with
  probability ≤ α: Holm's procedure over valid one-sided p-values, the relative cost gates'
  included (their level measured by ``benchmarks/calibration.py --costs``). No test is valid
  for every distribution with mean 0; the calibration measures the rule within Monte-Carlo
  error of α on real-pair and symmetric nulls, and on right-skewed ones only up to a skewness
  that grows with n (:mod:`retrieval_gate.decide.skew`: beyond it the report says α is not guaranteed).
  The rule before's conditions and the all-lose rule, which also decide, add at most a few
  false alarms in a thousand there; test ``bonferroni`` alone spends about α/2.
- ``regression``, rule ``interval``: the same bound when every true drop is smaller than its
  margin (and every true cost ratio below 1 + max-increase) — a change that is not material
  is flagged at most α of the time.
- ``pass`` of the whole gate: every comparison must pass, so if any comparison truly drops by δ
  or more, the gate says ``pass`` with probability ≤ α/2 (one-sided lower end of the
  unadjusted 1 − α interval). Requiring all comparisons to pass is an intersection-union test:
  no multiplicity adjustment is needed, and one would only make ``pass`` harder to reach.

``improvement`` is a separate flag (``ci_low`` > 0, with n ≥ ``min_queries``). The overall
verdict is ``regression`` if any comparison is, else ``inconclusive`` if any is, else ``pass``
— and ``inconclusive`` when nothing was decided at all (every gate report-only or too small to
decide): no evidence is not a pass. The exit code follows ``fail_on``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from retrieval_gate.core.errors import EXIT_INCONCLUSIVE, EXIT_PASS, EXIT_REGRESSION
from retrieval_gate.core.exported import exported
from retrieval_gate.decide import skew
from retrieval_gate.decide.paired import (
    BootstrapInterval,
    SignTest,
    bootstrap_ci,
    differences,
    holm,
    minimum_detectable_drop,
    sample_skewness,
    sign_flip_p,
    sign_test,
    smallest_p,
)
from retrieval_gate.decide.student_t import paired_t_p, paired_t_upper

Decision = Literal["pass", "regression", "inconclusive"]
FailOn = Literal["regression", "inconclusive", "never"]
RegressionRule = Literal["estimate", "interval"]
RegressionTest = Literal["holm", "bonferroni"]
Missing = Literal["error", "drop-pair", "worst"]
MISSING: tuple[Missing, ...] = ("error", "drop-pair", "worst")
REGRESSION_RULES: tuple[RegressionRule, ...] = ("estimate", "interval")
REGRESSION_TESTS: tuple[RegressionTest, ...] = ("holm", "bonferroni")
DEFAULT_MARGIN = 0.02
DEFAULT_MIN_QUERIES = 25  # the smallest test set at which the calibration holds the guarantee
POWER = 0.8  # power of the minimum detectable drop
SCORE_PREFIX = "score:"  # a gated per-query score of the runs' score files: score:NAME


@exported
@dataclass(frozen=True)
class GatedMeasure:
    """A measure the gate decides on (its name, resolved against the snapshot later), its
    margin, and optionally the one slice it is gated on (else every slice of the policy),
    whether it is only reported, and its own minimum number of queries (below it the
    comparison is too small to decide and does not count in the verdict). ``lower_is_better``
    turns a per-query score (``score:NAME``) round: a harm such as ``score:hallucination``,
    whose rise is the regression (retrieval measures have their own direction)."""

    measure: str
    margin: float = DEFAULT_MARGIN
    slice: str | None = None
    report_only: bool = False
    min_queries: int | None = None
    lower_is_better: bool = False


@dataclass(frozen=True)
class CostGate:
    """A gated cost (see :mod:`retrieval_gate.decide.cost`): ``metric`` and ``stat``, and either
    ``max_increase`` (relative to the baseline's) or ``max`` (an absolute budget);
    ``min_queries``, as for a :class:`GatedMeasure`: below it the gate is too small to decide
    (it does not lower the statistic's own floor, :func:`retrieval_gate.decide.cost.min_queries`)."""

    metric: str
    stat: str
    max_increase: float | None = None
    max: float | None = None
    min_queries: int | None = None

    @property
    def name(self) -> str:
        return f"{self.metric} {self.stat}"

    def describe(self) -> str:
        if self.max is not None:
            return f"≤ {self.max:g}"
        assert self.max_increase is not None
        return f"≤ +{100 * self.max_increase:g}%"


@exported
@dataclass(frozen=True)
class GatePolicy:
    """Everything the decision depends on besides the data. Defaults: Recall@10 and nDCG@10
    with margin 0.02, the ``all`` slice, α = 0.05, 10,000 BCa resamples with seed 0, tie band 0,
    regression rule ``estimate`` and test ``holm``, at least 25 queries to certify anything, fail on regression,
    a failed per-query score an error (``missing``: see
    :func:`retrieval_gate.decide.signals.apply_missing`), span judgments cut by one run's
    chunking not trusted to decide in its favour (``accept_cut_spans``: see
    :mod:`retrieval_gate.gating.cut_spans`).
    """

    gates: tuple[GatedMeasure, ...] = (GatedMeasure("Recall@10"), GatedMeasure("nDCG@10"))
    slices: tuple[str, ...] = ("all",)
    costs: tuple[CostGate, ...] = ()
    leaks: Literal["fail", "candidate", "warn"] = "fail"
    alpha: float = 0.05
    resamples: int = 10_000
    seed: int = 0
    tie_band: float = 0.0
    bootstrap: Literal["bca", "percentile"] = "bca"
    regression_rule: RegressionRule = "estimate"
    regression_test: RegressionTest = "holm"
    min_queries: int = DEFAULT_MIN_QUERIES
    fail_on: FailOn = "regression"
    missing: Missing = "error"
    accept_cut_spans: bool = False
    power: float = field(default=POWER, init=False)

    def __post_init__(self) -> None:
        if self.regression_rule not in REGRESSION_RULES:
            raise ValueError(f"regression_rule must be one of {REGRESSION_RULES}, got "
                             f"{self.regression_rule!r}")
        if self.regression_test not in REGRESSION_TESTS:
            raise ValueError(f"regression_test must be one of {REGRESSION_TESTS}, got "
                             f"{self.regression_test!r}")
        if self.missing not in MISSING:
            raise ValueError(f"missing must be one of {MISSING}, got {self.missing!r}")
        if isinstance(self.min_queries, bool) or not isinstance(self.min_queries, int) \
                or self.min_queries < 1:
            raise ValueError(f"min_queries must be an integer ≥ 1, got {self.min_queries!r}")

    def as_dict(self) -> dict[str, object]:
        return {
            "gates": [{k: v for k, v in vars(g).items() if v is not None and v is not False}
                      for g in self.gates],
            "slices": list(self.slices),
            "costs": [{k: v for k, v in vars(g).items() if v is not None} for g in self.costs],
            "leaks": self.leaks,
            "alpha": self.alpha,
            "resamples": self.resamples,
            "seed": self.seed,
            "tie_band": self.tie_band,
            "bootstrap": self.bootstrap,
            "regression_rule": self.regression_rule,
            "regression_test": self.regression_test,
            "min_queries": self.min_queries,
            "fail_on": self.fail_on,
            "missing": self.missing,
            **({"accept_cut_spans": True} if self.accept_cut_spans else {}),
            "power": self.power,
        }


def decide(n: int, mean_diff: float, ci_low: float, ci_high: float, sign_p_holm: float,
           margin: float, alpha: float, *, ci_high_adjusted: float | None = None,
           rule: RegressionRule = "estimate", min_queries: int = DEFAULT_MIN_QUERIES,
           p_regression_holm: float | None = None, ci_high_before: float | None = None,
           sign_p_margin_holm: float | None = None) -> Decision:
    """The decision rule of the module docstring. A drop is significant by the rule before
    (test ``bonferroni``) when its bound — ``ci_high_before`` under test ``holm``, else the
    family's bound ``ci_high_adjusted`` (``None``: ``ci_high``, a family of one) — lies below
    0 (−margin under rule ``interval``) and ``sign_p_holm`` is below α; with
    ``p_regression_holm`` (test ``holm``) also when that p-value is below α. Under test
    ``holm`` the rule before's sign test is ``sign_p_margin_holm`` when given (rule
    ``interval``: only losses beyond the margin count). ``n < min_queries`` (and ``n == 0``)
    → ``inconclusive``."""
    if n == 0 or n < min_queries:
        return "inconclusive"
    null = -margin if rule == "interval" else 0.0
    if p_regression_holm is not None:
        signs = sign_p_holm if sign_p_margin_holm is None else sign_p_margin_holm
        significant = p_regression_holm < alpha or (
            ci_high_before is not None and ci_high_before < null and signs < alpha)
    else:
        bound = ci_high if ci_high_adjusted is None else ci_high_adjusted
        significant = bound < null and sign_p_holm < alpha
    if mean_diff <= -margin and significant:
        return "regression"
    if ci_low > -margin:
        return "pass"
    return "inconclusive"


def decision_note(n: int, min_queries: int) -> str | None:
    """Why a comparison certifies nothing whatever its interval, or None: no query, or fewer
    than ``min_queries`` (an interval from a few queries — one query, or two equal ones, give
    an interval of zero width — says nothing about the queries the test set lacks)."""
    if n == 0:
        return "no query in this slice: nothing is certified"
    if n < min_queries:
        return (f"only {n} {'query' if n == 1 else 'queries'}, fewer than min-queries = "
                f"{min_queries}: neither pass nor regression is certified")
    return None


def verdict(decisions: list[Decision]) -> Decision:
    """``regression`` if any, else ``inconclusive`` if any, else ``pass``; ``inconclusive`` for
    no decision at all: nothing was gated, and nothing certifies a pass."""
    if "regression" in decisions:
        return "regression"
    return "inconclusive" if "inconclusive" in decisions or not decisions else "pass"


def exit_code(overall: Decision, fail_on: FailOn) -> int:
    """0 pass; 1 regression; 4 inconclusive under ``fail_on = inconclusive`` (else 0); always 0
    under ``fail_on = never``."""
    if fail_on == "never" or overall == "pass":
        return EXIT_PASS
    if overall == "regression":
        return EXIT_REGRESSION
    return EXIT_INCONCLUSIVE if fail_on == "inconclusive" else EXIT_PASS


def family_size(family: int | None, members: int, what: str) -> int:
    """m, the size of the family: ``family``, or (None) the ``members`` counted by the caller
    alone; at least 1. ValueError when ``family`` counts fewer than those."""
    if family is not None and family < members:
        raise ValueError(f"family must count at least the {members} {what} in it, got {family}")
    return max(members if family is None else family, 1)


def family_level(alpha: float, family: int | None, members: int, what: str) -> float:
    """α/m, the level of the strictest member of a family of m = ``family`` members (None: the
    ``members`` counted by the caller alone); ValueError when ``family`` counts fewer than
    those."""
    return alpha / family_size(family, members, what)


def family_holm(p_values: Sequence[float], family: int) -> np.ndarray:
    """Holm's adjustment of the regression p-values of a family of ``family`` members, of which
    ``p_values`` are given (in order; the quality comparisons' and the relative cost gates',
    whatever their kind): the members not given count as never rejected (p = 1), which keeps
    the family-wise error ≤ α whatever their p-values are."""
    padded = [*p_values, *[1.0] * max(family - len(p_values), 0)]
    return holm(padded)[:len(p_values)]


# --------------------------------------------------------------------------------------------
# The comparison


@dataclass(frozen=True)
class Comparison:
    """One gated (measure, slice): the paired statistics and the decision. ``ci_note`` says why
    the interval is not a plain bootstrap interval (no query, no spread, BCa undefined);
    ``decision_note`` why nothing is certified (too few queries), else None; ``min_queries``
    its gate's own minimum (None: only the policy's); ``in_family`` whether it is one of the
    family's members (it can say ``regression``)."""

    measure: str
    slice: str
    n: int
    baseline_mean: float | None
    candidate_mean: float | None
    mean_diff: float
    ci_low: float
    ci_high: float
    ci_method: str
    ci_note: str | None
    ci_high_adjusted: float
    ci_high_before: float | None
    wins: int
    losses: int
    ties: int
    sign_p: float
    sign_p_two_sided: float
    sign_p_holm: float
    p_regression: float
    p_regression_holm: float
    mde: float | None
    margin: float
    decision: Decision
    decision_note: str | None
    improvement: bool
    skewness: float | None = None
    skew_queries: int | None = None
    sign_p_margin_holm: float | None = None
    lower_is_better: bool = False
    report_only: bool = False
    too_small: bool = False
    min_queries: int | None = None
    in_family: bool = False

    @property
    def gating(self) -> bool:
        """Whether this comparison counts in the verdict."""
        return not (self.report_only or self.too_small)


@dataclass(frozen=True)
class PairPolicy:
    """How one (measure, slice) comparison is decided: its margin, its own minimum number of
    queries (None: the policy's) and whether it is only reported."""

    margin: float
    min_queries: int | None = None
    report_only: bool = False

    def too_small(self, n: int) -> bool:
        """Whether ``n`` queries are fewer than this comparison's own minimum."""
        return self.min_queries is not None and n < self.min_queries


def in_family(n: int, pair: PairPolicy, policy: GatePolicy) -> bool:
    """Whether a comparison of ``n`` queries is a member of the family: it gates (not
    report-only), is not too small for its own minimum, and has at least the policy's
    ``min_queries`` — the comparisons that can say ``regression``."""
    return not pair.report_only and not pair.too_small(n) and n >= policy.min_queries


def family_members(slices: Mapping[str, int], pairs: Mapping[tuple[str, str], PairPolicy],
                   policy: GatePolicy) -> int:
    """How many of the (measure, slice) comparisons ``pairs`` are members of the family, with
    ``slices`` mapping a slice name to its number of queries."""
    return sum(in_family(slices.get(name, 0), pair, policy)
               for (_, name), pair in pairs.items())


def compare(baseline: np.ndarray, candidate: np.ndarray, measures: Sequence[str],
            slices: Mapping[str, np.ndarray], policy: GatePolicy,
            lower_is_better: Sequence[bool] = (),
            pairs: Mapping[tuple[str, str], PairPolicy] | None = None,
            family: int | None = None) -> tuple[Comparison, ...]:
    """Every gated (measure, slice) comparison, decided: a pure function of per-query values.

    ``baseline`` and ``candidate`` have shape (queries, measures): column j holds the values of
    ``measures[j]``, gated with the margin of ``policy.gates[j]``, and row i the same query in
    both. ``slices`` maps a slice name to the row positions of its queries; ``pairs``, when
    given, are the (measure, slice) comparisons to make, each with its margin, its own minimum
    number of queries and whether it is only reported (default: every measure on every slice,
    with the policy's). ``family`` is the size m of the family the gate decides as one (see the
    module docstring: these comparisons' members, :func:`in_family`, and the relative cost
    gates that can decide); None: these comparisons' members alone. Comparisons outside the
    family (report-only, too small, below the policy's ``min_queries``) get the same bound,
    and their sign-test p-values are their own. Per slice, one bootstrap with
    ``numpy.random.default_rng(policy.seed)`` resamples the slice's queries for all measures at
    once (so a slice's interval does not depend on which other slices are gated) and gives both
    the 1 − α interval and the 1 − α/m bound; the sign tests of the family's members are
    Holm-adjusted together. The minimum detectable drop is at the bound's level (two-sided
    α/m).

    A measure marked ``lower_is_better`` (Stale, FalseAbstain) is decided on its differences
    turned round, so that its rise is the regression: its margin is the largest rise that is
    not material, ``wins`` are queries where the candidate is lower, and ``ci_high_adjusted``
    bounds the turned difference; ``mean_diff`` and the shown interval stay candidate −
    baseline. Comparisons come slice by slice, measures in order."""
    wanted = dict(pairs) if pairs is not None else {
        (m, s): PairPolicy(policy.gates[j].margin) for j, m in enumerate(measures)
        for s in slices}
    counted = family_members({name: len(at) for name, at in slices.items()}, wanted, policy)
    family_alpha = family_level(policy.alpha, family, counted, "comparisons")
    return decide_pairs(paired(baseline, candidate, measures, slices, policy, lower_is_better,
                               wanted, family_alpha), policy, family)


@dataclass(frozen=True)
class Paired:
    """One (measure, slice) comparison's statistics before the family decides: the fields of
    its :class:`Comparison` but the Holm-adjusted p-value and the decision, and the turned
    (positive is better) mean difference and interval low end the decision reads."""

    fields: dict[str, Any]
    mean_turned: float
    low_turned: float


def paired(baseline: np.ndarray, candidate: np.ndarray, measures: Sequence[str],
           slices: Mapping[str, np.ndarray], policy: GatePolicy, lower_is_better: Sequence[bool],
           wanted: Mapping[tuple[str, str], PairPolicy], family_alpha: float
           ) -> list[Paired]:
    """The paired statistics of each wanted (measure, slice) of these columns, at the family's
    level ``family_alpha`` (see :func:`compare`), slice by slice, measures in order."""
    sign = np.array([-1.0 if low else 1.0 for low in
                     (lower_is_better or [False] * len(measures))])
    holm_test = policy.regression_test == "holm"
    rows: list[Paired] = []
    for name, members in slices.items():
        if not any((m, name) in wanted for m in measures):
            continue
        b = baseline[members].T
        c = candidate[members].T
        d = differences(b, c) * sign[:, None]  # turned so that positive is better
        nulls = [_null(wanted.get((m, name)), policy) for m in measures]
        intervals = bootstrap_ci(d, rng=np.random.default_rng(policy.seed),
                                 resamples=policy.resamples, alpha=policy.alpha,
                                 method=policy.bootstrap, nulls=nulls,
                                 bound_tail=family_alpha if holm_test else None,
                                 upper_alpha=family_alpha)
        for j, (measure, interval) in enumerate(zip(measures, intervals)):
            if (measure, name) in wanted:
                rows.append(_paired_row(measure, name, b[j], c[j], d[j], sign[j] < 0,
                                        interval, nulls[j], wanted[(measure, name)], policy,
                                        family_alpha))
    return rows


def _paired_row(measure: str, slice_name: str, b: np.ndarray, c: np.ndarray, d: np.ndarray,
                turned: bool, interval: BootstrapInterval, null: float, own: PairPolicy,
                policy: GatePolicy, family_alpha: float) -> Paired:
    """One comparison's statistics: the runs' values ``b`` and ``c``, their turned
    differences ``d`` (positive is better; ``turned`` when the measure's lower is better)
    and the slice's bootstrap ``interval`` of them."""
    holm_test = policy.regression_test == "holm"
    n = d.size
    skewness = sample_skewness(d)
    signs = sign_test(d, policy.tie_band)
    member = in_family(n, own, policy)
    assert interval.upper is not None and interval.p_lower is not None
    return Paired({
        "measure": measure, "slice": slice_name, "n": n,
        "baseline_mean": _mean(b), "candidate_mean": _mean(c),
        "mean_diff": (-1.0 if turned else 1.0) * (_mean(d) or 0.0) + 0.0,  # + 0.0: no −0
        "ci_low": -interval.high + 0.0 if turned else interval.low,
        "ci_high": -interval.low + 0.0 if turned else interval.high,
        "ci_method": interval.method,
        "ci_note": interval.fallback or _interval_note(interval.method),
        "ci_high_adjusted": (max(interval.upper, paired_t_upper(d, family_alpha))
                             if holm_test else interval.upper),
        "ci_high_before": interval.family_upper if holm_test else None,
        "wins": signs.wins, "losses": signs.losses, "ties": signs.ties,
        "sign_p": signs.p_regression, "sign_p_two_sided": signs.p_two_sided,
        "sign_p_margin": (sign_test(d, policy.tie_band, own.margin).p_regression
                          if holm_test and policy.regression_rule == "interval" else None),
        "p_regression": regression_p(d, null, interval.p_lower, signs, policy.resamples,
                                     policy.tie_band, own.margin),
        "mde": minimum_detectable_drop(d, family_alpha, policy.power, one_sided=holm_test),
        "margin": own.margin, "lower_is_better": bool(turned),
        "skewness": skewness,
        "skew_queries": (skew.outside(skewness, n) if member
                         and not equal_changes(d, policy.tie_band) else None),
        "report_only": own.report_only, "too_small": own.too_small(n),
        "min_queries": own.min_queries, "in_family": member,
    }, _mean(d) or 0.0, interval.low)


def regression_p(d: np.ndarray, null: float, bootstrap_p: float, signs: SignTest,
                 resamples: int, tie_band: float = 0.0, margin: float = 0.0) -> float:
    """The one-sided p-value that the mean of the turned differences ``d`` lies below ``null``
    (0, or −margin under rule ``interval``): the larger of the paired t-test's
    (:func:`~retrieval_gate.decide.student_t.paired_t_p`) and the studentized bootstrap's
    (``bootstrap_p``) — the t-test is exact for normal differences and loses its level on
    skewed ones, which the bootstrap-t sees; the bootstrap-t errs with heavy tails and few
    distinct values, which the t-test does not.

    - The bootstrap-t p-value is never below 1/(B + 1) (``resamples`` = B): when no resample
      is as extreme as the data (it sits at that floor), the bootstrap agrees the p-value is
      as small as it can tell, and the t-test's alone is used — else a family of more than
      α·(B + 1) members could never say ``regression`` (:func:`resolution_warning`).
    - With at most :data:`~retrieval_gate.decide.paired.EXACT_FLIP_MAX` changed queries
      (``d − null`` non-zero beyond the tie band), the exact sign-flip test
      (:func:`~retrieval_gate.decide.paired.sign_flip_p`) joins the max: with few changed
      queries both approximations are too eager, and the exact test bounds the p-value for
      every pattern of changes, so the decision does not jump when one change moves by
      1e-6. Beyond that, when every changed query changes by the same amount (to 1e-9) — a
      0/1 outcome: Hit@k, an abstention, a pass/fail judge — the exact sign test (McNemar's
      test, the sign-flip test of equal changes) joins.
    - A drop every query shows beyond the margin (every ``d`` below ``null`` and at most
      −``margin``) is a regression whatever the approximations say: the p-value is at most
      the exact sign test's 2⁻ⁿ, the chance that n interchangeable queries all lose."""
    t_p = paired_t_p(d, null)
    p = t_p if bootstrap_p <= smallest_p(resamples) else max(bootstrap_p, t_p)
    exact = sign_flip_p(d, null, tie_band)
    if exact is not None:
        p = max(p, exact)
    elif equal_changes(d, tie_band):
        p = max(p, signs.p_regression)
    if d.size and bool(np.all(d < null)) and bool(np.all(d <= -margin)):
        p = min(p, 0.5 ** d.size)
    return p


def equal_changes(d: np.ndarray, tie_band: float = 0.0) -> bool:
    """Whether every changed query (beyond the tie band) changes by the same amount, to 1e-9:
    a 0/1 outcome, whose exact sign test (McNemar's) is valid whatever the distribution —
    a mean of 0 is an equal chance to win and to lose."""
    changed = np.abs(d)
    changed = changed[changed > tie_band]
    return bool(changed.size) and bool(np.allclose(changed, changed[0], rtol=1e-9, atol=0.0))


def resolution_warning(policy: GatePolicy, family: int) -> str | None:
    """Under test ``holm``, when the family's strictest level α/m is at or below the smallest
    bootstrap-t p-value, 1/(B + 1) — a bootstrap-t p-value can never be below it there —:
    the t-test then decides unchecked by the bootstrap. A
    sentence saying so and how many resamples would check it (20·m/α), or None."""
    if policy.regression_test != "holm" or family < 1:
        return None
    level = policy.alpha / family
    if level > smallest_p(policy.resamples):
        return None
    needed = math.ceil(20 * family / policy.alpha)
    return (f"{policy.resamples:,} bootstrap resamples resolve p-values down to "
            f"{smallest_p(policy.resamples):.2g}, not below the family's strictest level "
            f"{level:.2g} (α/{family}): below it the t-test decides without the studentized "
            f"bootstrap's check; set resamples ≥ {needed:,}")


def _null(pair: PairPolicy | None, policy: GatePolicy) -> float:
    """The mean difference (turned, positive is better) a regression must be below: 0 under
    rule ``estimate``, −margin under rule ``interval``."""
    return -pair.margin if pair is not None and policy.regression_rule == "interval" else 0.0


def decide_pairs(rows: Sequence[Paired], policy: GatePolicy, family: int | None = None,
                 others: Sequence[float] = ()) -> tuple[Comparison, ...]:
    """The comparisons of ``rows`` decided as one family of ``family`` members (None: the
    rows' members and ``others``): the sign tests of its quality comparisons Holm-adjusted
    together, its regression p-values Holm-adjusted over the whole family
    (:func:`family_holm`) — the quality comparisons' and ``others``, the regression p-values
    of its relative cost gates (:func:`retrieval_gate.decide.cost.member_p_values`), members
    not given counting as never rejected — then each decided by :func:`decide` (or too small).

    Holm's procedure over valid one-sided p-values keeps the family-wise error ≤ α, whatever
    the kinds of its members. A comparison outside the family (report-only) gets m times its
    own p-value: it is shown as the family's strictest member would be decided."""
    gating = [i for i, r in enumerate(rows) if r.fields["in_family"]]
    members = family_size(family, len(gating) + len(others), "members")
    adjusted = _holm_over([r.fields["sign_p"] for r in rows], gating)
    beyond = _holm_over([r.fields["sign_p_margin"] for r in rows], gating)
    # outside the family: as the family's strictest member would be (Bonferroni at m)
    regression = [min(1.0, r.fields["p_regression"] * members) for r in rows]
    joint = family_holm([rows[i].fields["p_regression"] for i in gating] + list(others),
                        members)
    for i, p in zip(gating, joint.tolist()):
        regression[i] = p
    holm_test = policy.regression_test == "holm"
    comparisons = []
    for pair, p_holm, p_regression_holm, p_beyond in zip(rows, adjusted, regression, beyond):
        row = {key: value for key, value in pair.fields.items() if key != "sign_p_margin"}
        decision: Decision = "inconclusive" if row["too_small"] else decide(
            row["n"], pair.mean_turned, pair.low_turned, row["ci_high_adjusted"], p_holm,
            row["margin"], policy.alpha, ci_high_adjusted=row["ci_high_adjusted"],
            rule=policy.regression_rule, min_queries=policy.min_queries,
            p_regression_holm=p_regression_holm if holm_test else None,
            ci_high_before=row["ci_high_before"], sign_p_margin_holm=p_beyond)
        note = (f"too small to decide: {row['n']} queries, fewer than this gate's min-queries "
                f"= {row['min_queries']}" if row["too_small"]
                else decision_note(row["n"], policy.min_queries))
        comparisons.append(Comparison(**row, sign_p_holm=p_holm, sign_p_margin_holm=p_beyond,
                                      p_regression_holm=p_regression_holm, decision=decision,
                                      decision_note=note,
                                      improvement=note is None and pair.low_turned > 0))
    return tuple(comparisons)


def _holm_over(values: list[Any], members: list[int]) -> list[Any]:
    """``values`` with those at the positions ``members`` Holm-adjusted together, the others as
    they are; all of them as they are when the first is None (not computed)."""
    adjusted = list(values)
    if not values or values[0] is None:
        return adjusted
    for i, p in zip(members, holm([values[i] for i in members]).tolist()):
        adjusted[i] = p
    return adjusted


def _mean(values: np.ndarray) -> float | None:
    """Exact macro mean (``math.fsum``), None for no value."""
    return math.fsum(values.tolist()) / len(values) if len(values) else None


def _interval_note(method: str) -> str | None:
    return {"constant": "every query has the same difference: the interval is that value",
            "empty": "no query in this slice"}.get(method)
