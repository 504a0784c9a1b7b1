"""Cost beside quality: each query's latency and context size, paired between the runs.

Two per-query costs: ``latency_ms`` (what the run records; for a pipeline, the sum over its
stages) and ``context_tokens`` (the tokens of the last stage's items within its contract).
Each is summarised by a statistic — ``p50``, ``p95`` (numpy's linear-interpolation
percentiles) or ``mean`` — over the queries both runs give it for, and compared as the ratio
candidate / baseline.

**The test** of a relatively gated statistic (``max_increase`` δ: the candidate's statistic may
be at most (1 + δ) × the baseline's), one-sided on each side, ``policy.resamples`` resamples
of the queries from ``numpy.random.default_rng(policy.seed)``, the same resampled queries for
both runs:

- a **percentile** (p50, p95): the paired percentile bootstrap of the ratio. The regression
  p-value against a ratio r₀ is ``(1 + #{resampled ratios ≤ r₀}) / (B + 1)``; the interval's
  ends are the resampled ratios' quantiles. A resample whose baseline statistic is 0 has an
  infinite ratio when the candidate's is not: a large increase, which counts against the
  baseline on both sides; one where both are 0 counts against a regression on the low side and
  against a pass on the high side (nothing is known of it). Each side is decided on its own
  end, so an unbounded high end never hides a low end that clears the bar;
- the **mean**: the ratio exceeds r₀ exactly when the mean of ``candidate − r₀·baseline``
  exceeds 0, so the regression p-value is that of a one-sided paired test of those
  differences — the larger of the paired t-test's and the studentized bootstrap's, as for a
  quality measure (the t-test's alone when no resample is as extreme as the data). The
  interval's ends are the ratios this test rejects at α/2 on either side (a Fieller-type
  interval, found by bisection; its high end unbounded when the baseline's mean is not
  clearly above 0). The percentile bootstrap of the ratio of means (the rule
  before) is not used: on interchangeable runs its p-value falls below α/m up to 2.3 times as
  often as α/m (0.029 at α/4 = 0.0125 on 25 pydoc queries; 0.089 at α on 25 log-normal σ =
  0.85 ones), where this test's stays within 2 standard errors of its level in every cell
  (``benchmarks/calibration.py --costs``).

A statistic that is shown but not gated that way gets no interval (the report shows its values
and ratio): it decides nothing, and at 5,000 queries its 10,000 resamples would cost more than
scoring the runs.

**Gates.** A relative gate decides like a quality measure, in the same words, as a member of
the gate's one family of m (the quality comparisons that can decide and the relative cost gates
that can: see :mod:`retrieval_gate.decide.policy`); its regression p-value is Holm-adjusted
over the whole family, quality comparisons included (``p_regression_holm``):

- ``regression`` — rule ``estimate``: the ratio's estimate ≥ 1 + δ and the Holm-adjusted
  p-value against a ratio of 1 is below α: clearly more costly, by the margin; rule
  ``interval``: the Holm-adjusted p-value against 1 + δ is below α — the increase exceeds the
  margin with confidence. Test ``bonferroni`` (the rule before): the unadjusted p-value below
  α/(2m), the low end of the two-sided 1 − α/m interval above 1 (1 + δ);
- ``pass`` — the high end of the 1 − α interval is below 1 + δ;
- ``inconclusive`` — otherwise, and with fewer queries than the statistic's minimum
  (:func:`min_queries`), which is then outside the family;

a gate with fewer queries than its own ``min_queries`` is *too small to decide*, as a quality
gate is: shown, its decision None (it does not count in the verdict), outside the family.
``ratio_low_adjusted`` is the one-sided 1 − α/m lower bound of the ratio (test ``bonferroni``:
the low end of the two-sided 1 − α/m interval): above 1 (1 + δ), the gate's test rejects at
Holm's strictest level.

``improved`` when the whole 1 − α interval is below 1. An absolute gate (``max``: e.g. mean
context tokens ≤ 1,800) is a budget, not an estimate: ``pass`` when the candidate's statistic
is at most the budget, else ``regression``; it is never in the family.

**Percentiles on few queries.** A p95 of 25 queries lies between its 3rd- and 2nd-slowest
values: it is biased low (the sample p95 of a skewed distribution underestimates the true one)
and its ratio between two runs that are truly the same varies widely. A relative percentile
gate therefore decides only from :data:`PERCENTILE_MIN_QUERIES` queries on (measured by
``benchmarks/calibration.py --costs``: the estimator's floor, like the policy's
``min_queries`` for the quality comparisons); below, it is ``inconclusive`` and its note says
why. Every row reports each run's expected bias at its n
as a share of the statistic (:func:`expected_bias`: under a log-normal with the run's spread;
0 for the mean), and a relatively gated percentile's note states it. An absolute budget on a
percentile of fewer queries than that minimum decides as before, and its note says how few.

Latencies are comparable only when both runs were timed in the same place under the same
load: each run manifest says where (``provenance.timed_on``), and the report shows both.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from retrieval_gate.decide.policy import (
    CostGate,
    Decision,
    GatePolicy,
    family_holm,
    family_level,
    family_size,
)
from retrieval_gate.decide.signals import PairedSignal
from retrieval_gate.decide.student_t import t_cdf, t_quantile

METRICS = ("latency_ms", "context_tokens")
STATS = ("p50", "p95", "mean")
SHOWN = {"latency_ms": ("p50", "p95"), "context_tokens": ("mean", "p95")}
# The fewest queries from which a relative gate on a percentile decides, when the policy's
# min-queries is lower: the smallest test set at which the calibration kept its false-alarm
# rate within α under both rules and the estimator's bias within 5 % (the log-normal models'
# exact bias), on real, log-normal and Pareto latencies (docs/concepts/how-the-gate-decides.md,
# "Cost gates, measured"): a p50 of 15 queries is biased +5.2 % under a log-normal σ = 1.
PERCENTILE_MIN_QUERIES = {"p50": 20, "p95": 50}
_BATCH = 250  # resamples per block: bounds memory at _BATCH × queries
_BISECTIONS = 200  # at most this many halvings of a bound's bracket


@dataclass(frozen=True)
class CostRow:
    """One statistic of one cost for both runs over the ``n`` queries both give it for: the
    values, their ratio and its bootstrap interval (None when undefined or unbounded), and,
    when gated, the gate and its decision; each run's expected bias at n as a share of its
    statistic (``baseline_bias``, ``candidate_bias``: :func:`expected_bias`, None when no
    log-normal fits). ``min_queries``: the fewest queries on which the gate
    decides (None when not gated relatively); ``in_family``: whether the gate is a member of
    the family (it can say ``regression``); ``too_small``: fewer queries than the gate's own
    ``min_queries`` — shown, not decided, not counted. ``p_regression``: the one-sided p-value
    that the ratio is at most 1 (rule ``interval``: 1 + max-increase), None when not gated
    relatively; ``p_regression_holm``: that p-value Holm-adjusted over the family (m times it
    outside the family)."""

    metric: str
    stat: str
    n: int
    baseline: float | None
    candidate: float | None
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    ratio_low_adjusted: float | None
    gate: CostGate | None
    decision: Decision | None
    improvement: bool
    note: str | None
    baseline_bias: float | None = None
    candidate_bias: float | None = None
    min_queries: int | None = None
    in_family: bool = False
    too_small: bool = False
    p_regression: float | None = None
    p_regression_holm: float | None = None


def min_queries(gate: CostGate, policy: GatePolicy) -> int:
    """The fewest queries on which ``gate`` decides (relative) or is trusted (a budget): for a
    percentile, the larger of the policy's and :data:`PERCENTILE_MIN_QUERIES`; for the mean,
    the policy's."""
    return max(policy.min_queries, PERCENTILE_MIN_QUERIES.get(gate.stat, 0))


def too_small(gate: CostGate, n: int) -> bool:
    """Whether ``gate`` on ``n`` paired queries has fewer than its own ``min_queries``."""
    return gate.min_queries is not None and n < gate.min_queries


def in_family(gate: CostGate, n: int, policy: GatePolicy) -> bool:
    """Whether ``gate`` on ``n`` paired queries is a member of the family: a relative gate
    that is not too small, with at least its :func:`min_queries` (only those can say
    ``regression``)."""
    return (gate.max_increase is not None and not too_small(gate, n)
            and n >= min_queries(gate, policy))


def family_members(signals: Sequence[PairedSignal], gates: Sequence[CostGate],
                   policy: GatePolicy) -> int:
    """How many of ``gates`` are members of the family on these cost signals (a cost no
    signal carries has no pair: it is not)."""
    covered = {s.name: int(s.covers.sum()) for s in signals}
    return sum(in_family(g, covered.get(g.metric, 0), policy) for g in gates)


def statistic(values: np.ndarray, stat: str, axis: int | None = None) -> np.ndarray:
    """``p50``, ``p95`` (linear interpolation) or ``mean`` along ``axis``."""
    if stat == "mean":
        return np.mean(values, axis=axis)
    return np.percentile(values, 50 if stat == "p50" else 95, axis=axis)


def compare_costs(signals: Sequence[PairedSignal], gates: Sequence[CostGate],
                  policy: GatePolicy, family: int | None = None,
                  others: Sequence[float] = ()) -> tuple[CostRow, ...]:
    """A row per shown statistic of each cost signal (a cost both runs record:
    :meth:`~retrieval_gate.decide.signals.PairedSignal.cost`), and per gated one; paired over
    the queries both runs give it for, decided (:func:`measure_costs`, then
    :func:`decide_costs`). ``family``: the size m of the family the gate decides as one (the
    quality comparisons and the relative cost gates that can decide); None: these gates'
    members and ``others``. ``others``: the regression p-values of the family's other members
    (its quality comparisons), Holm-adjusted together with these gates'. A gated cost a run
    does not record is the caller's error to raise (see :func:`missing_costs`)."""
    if family is None:  # the bounds' level and the Holm procedure count the same m
        family = family_members(signals, gates, policy) + len(others)
    return decide_costs(measure_costs(signals, gates, policy, family), policy, family, others)


def measure_costs(signals: Sequence[PairedSignal], gates: Sequence[CostGate],
                  policy: GatePolicy, family: int | None = None) -> tuple[CostRow, ...]:
    """The rows of :func:`compare_costs` before the family decides: values, ratios, intervals,
    bounds at the family's level α/m and raw regression p-values; every decision None (the
    bootstrap: numpy work that can run beside the quality comparisons')."""
    family_alpha = family_level(policy.alpha, family, family_members(signals, gates, policy),
                                "cost gates")
    by_metric = {s.name: s for s in signals}
    rows = []
    for metric in METRICS:
        if metric not in by_metric:
            continue
        b, c = by_metric[metric].paired()
        gated = {g.stat: g for g in gates if g.metric == metric}
        for stat in dict.fromkeys((*SHOWN[metric], *gated)):
            rows.append(_measured(metric, stat, b, c, gated.get(stat), policy, family_alpha))
    return tuple(rows)


def decide_costs(rows: Sequence[CostRow], policy: GatePolicy, family: int | None = None,
                 others: Sequence[float] = ()) -> tuple[CostRow, ...]:
    """``rows`` (of :func:`measure_costs`) decided in the family of ``family`` members (None:
    these rows' members and ``others``): the members' regression p-values Holm-adjusted
    together with ``others`` (the family's quality comparisons'; members not given count as
    never rejected: :func:`~retrieval_gate.decide.policy.family_holm`), a relative gate
    outside the family m times its own."""
    members = [i for i, row in enumerate(rows) if row.in_family]
    m = family_size(family, len(members) + len(others), "members")
    adjusted = family_holm([*others, *(_p(rows[i]) for i in members)], m)[len(others):]
    holm_of = dict(zip(members, adjusted.tolist()))
    return tuple(_decided(row, holm_of.get(i), policy, m) for i, row in enumerate(rows))


def member_p_values(rows: Sequence[CostRow]) -> list[float]:
    """The regression p-values of the family's cost gates among ``rows``, in order."""
    return [_p(row) for row in rows if row.in_family]


def missing_costs(baseline: dict[str, np.ndarray | None], candidate: dict[str, np.ndarray | None],
                  gates: Sequence[CostGate]) -> list[str]:
    """For each gated cost a run does not record: which run, and which cost."""
    return [f"{role} records no {g.metric}" for g in gates
            for role, side in (("baseline", baseline), ("candidate", candidate))
            if side.get(g.metric) is None]


def _p(row: CostRow) -> float:
    """A member's regression p-value; 1 (never rejected) for one with no ratio (both runs'
    statistic 0: a member by its number of queries, known before any resampling)."""
    return 1.0 if row.p_regression is None else row.p_regression


def _ratio_of(base: float, cand: float) -> float | None:
    """candidate / baseline: ∞ when only the baseline's is 0 (an increase from nothing),
    None when both are (no ratio)."""
    if base > 0:
        return cand / base
    return math.inf if cand > 0 else None


def _measured(metric: str, stat: str, b: np.ndarray, c: np.ndarray, gate: CostGate | None,
              policy: GatePolicy, family_alpha: float) -> CostRow:
    """One row with everything but its decision (see :func:`measure_costs`)."""
    n = len(b)
    if n == 0:
        return CostRow(metric, stat, 0, None, None, None, None, None, None, gate, None, False,
                       "no query has this cost in both runs")
    base, cand = float(statistic(b, stat)), float(statistic(c, stat))
    ratio = _ratio_of(base, cand)
    relative = gate is not None and gate.max_increase is not None
    low = high = bound = p = None
    if relative and ratio is not None:
        assert gate is not None and gate.max_increase is not None
        test = _ratio_test(b, c, stat, policy)
        low, high = test.interval(policy.alpha)
        bound = test.bound(family_alpha if policy.regression_test == "holm"
                           else family_alpha / 2)
        p = test.p(1 + gate.max_increase if policy.regression_rule == "interval" else 1.0)
    bias_b, bias_c = expected_bias(b, stat), expected_bias(c, stat)
    small = gate is not None and too_small(gate, n)
    return CostRow(metric, stat, n, base, cand, finite_or_none(ratio), finite_or_none(low),
                   finite_or_none(high), finite_or_none(bound), gate, None, False,
                   _measured_note(metric, stat, n, gate, policy, (bias_b, bias_c), small),
                   bias_b, bias_c, min_queries(gate, policy) if relative and gate else None,
                   relative and gate is not None and in_family(gate, n, policy), small, p)


def _measured_note(metric: str, stat: str, n: int, gate: CostGate | None, policy: GatePolicy,
                   bias: tuple[float | None, float | None], small: bool) -> str | None:
    """What a row says whatever its decision: a percentile of fewer queries than its minimum,
    and a relatively gated percentile's expected bias."""
    if gate is None or stat == "mean":
        return None
    relative = gate.max_increase is not None
    least = min_queries(gate, policy)
    note = None if small or n >= least else _few(metric, stat, n, least, relative)
    if relative and bias[0] is not None and bias[1] is not None:
        note = _joined(note, f"expected bias of the {stat} of {n} queries (log-normal model): "
                             f"baseline {_signed_share(bias[0])}, candidate "
                             f"{_signed_share(bias[1])}")
    return note


def _decided(row: CostRow, p_holm: float | None, policy: GatePolicy, family: int) -> CostRow:
    """``row`` with its decision, its note and whether it improved, at ``p_holm`` (the
    family's adjustment of its regression p-value; None outside the family: m times it)."""
    gate = row.gate
    if gate is None:
        return row
    if p_holm is None and row.p_regression is not None:
        p_holm = min(1.0, row.p_regression * family)
    if row.too_small:
        assert gate.min_queries is not None
        small = (f"too small to decide: {row.n} {'query' if row.n == 1 else 'queries'}, "
                 f"fewer than this gate's min-queries ({gate.min_queries})")
        return replace(row, note=_joined(small, row.note),
                       p_regression_holm=p_holm)
    decision, note = _decide(row, p_holm, policy, family)
    relative = gate.max_increase is not None
    improvement = (relative and row.n >= min_queries(gate, policy)
                   and row.ratio_high is not None and row.ratio_high < 1)
    return replace(row, decision=decision, note=_joined(note, row.note),
                   improvement=improvement, p_regression_holm=p_holm)


def _signed_share(share: float) -> str:
    return f"{100 * share:+.1f}%".replace("-", "−")


def _joined(first: str | None, second: str | None) -> str | None:
    if first is None or second is None:
        return second if first is None else first
    return f"{first}; {second}"


def _few(metric: str, stat: str, n: int, least: int, relative: bool) -> str:
    """Why a percentile of ``n`` queries is not trusted: ``p95 of 25 queries lies between its
    3rd-slowest and its 2nd-slowest: at least 50 queries are needed to certify it`` (numpy's
    linear percentile of n values, read from the top)."""
    at = 0.95 * (n - 1)
    low = int(at)
    which = "slowest" if metric == "latency_ms" else "largest"
    rests = f"{stat} of {n} {'query' if n == 1 else 'queries'}"
    if stat == "p95" and n > 1:
        rests += (f" is its {_ordinal(n - low)}{which}" if at == low else
                  f" lies between its {_ordinal(n - low)}{which} and its "
                  f"{_ordinal(n - low - 1)}{which}")
    if relative:
        return f"{rests}: at least {least} queries are needed to certify it"
    return (f"{rests}: the budget holds for these queries; an estimate of the {stat} needs at "
            f"least {least}")


def _ordinal(k: int) -> str:
    """``2nd-``, ``3rd-``, ``11th-`` … before ``slowest``; nothing for the first."""
    if k == 1:
        return ""
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}-"


class _RatioTest:
    """One-sided tests of the ratio candidate / baseline of one statistic (see the module
    docstring): ``p(r)``, the regression p-value against a ratio of at most r; ``bound(level)``,
    the one-sided 1 − level lower bound (the ratios r whose p(r) is below level lie under it;
    None when no ratio is); ``interval(alpha)``, the two-sided 1 − alpha interval, each end a
    one-sided α/2 bound (an end of +∞: unbounded)."""

    def p(self, null: float) -> float:
        raise NotImplementedError

    def bound(self, level: float) -> float | None:
        raise NotImplementedError

    def interval(self, alpha: float) -> tuple[float, float]:
        raise NotImplementedError


def _ratio_test(b: np.ndarray, c: np.ndarray, stat: str, policy: GatePolicy) -> _RatioTest:
    """The test of ``stat``'s ratio: :class:`_MeanTest` or :class:`_PercentileTest`."""
    return _MeanTest(b, c, policy) if stat == "mean" else _PercentileTest(b, c, stat, policy)


class _PercentileTest(_RatioTest):
    """The paired percentile bootstrap of a percentile's ratio: the same queries resampled for
    both runs, each resample's ratio kept twice, sorted — ``low`` with 0/0 as 0 (for the low
    end and the regression p-value) and ``high`` with 0/0 as +∞ (for the high end); x/0 is
    +∞ in both."""

    def __init__(self, b: np.ndarray, c: np.ndarray, stat: str, policy: GatePolicy):
        rng = np.random.default_rng(policy.seed)
        n = len(b)
        sides = [_Sorted(b), _Sorted(c)]
        lows, highs = [], []
        for start in range(0, policy.resamples, _BATCH):
            size = min(_BATCH, policy.resamples - start)
            picks = rng.integers(0, n, size=(size, n))
            sb, sc = (side.resampled(picks, stat) for side in sides)
            lows.append(_ratios(sb, sc, 0.0))
            highs.append(_ratios(sb, sc, math.inf))
        self.low = np.sort(np.concatenate(lows))
        self.high = np.sort(np.concatenate(highs))

    def p(self, null: float) -> float:
        """``(1 + #{ratio ≤ null}) / (B + 1)``."""
        count = int(np.searchsorted(self.low, null, side="right"))
        return (1 + count) / (len(self.low) + 1)

    def bound(self, level: float) -> float | None:
        """The k-th smallest ratio, k = ⌈level·(B + 1)⌉ − 2 (0-based): p(r) < level exactly
        when r is below it."""
        k = math.ceil(level * (len(self.low) + 1)) - 2
        return float(self.low[k]) if k >= 0 else None

    def interval(self, alpha: float) -> tuple[float, float]:
        return _quantile(self.low, alpha / 2), _quantile(self.high, 1 - alpha / 2)


def _ratios(sb: np.ndarray, sc: np.ndarray, undefined: float) -> np.ndarray:
    """sc / sb, +∞ where only sb is 0, ``undefined`` where both are (costs are ≥ 0)."""
    out = np.full(sb.shape, math.inf)
    positive = sb > 0
    np.divide(sc, sb, out=out, where=positive)
    out[~positive & ~(sc > 0)] = undefined
    return out


def _quantile(ordered: np.ndarray, q: float) -> float:
    """numpy's linear-interpolation quantile of sorted values that may hold +∞ (+∞ where an
    interpolated neighbour is), without ∞ − ∞."""
    at = q * (len(ordered) - 1)
    low = int(at)
    t = at - low
    below = float(ordered[low])
    if t == 0:
        return below
    above = float(ordered[min(low + 1, len(ordered) - 1)])
    return math.inf if math.isinf(above) else below + (above - below) * t


class _MeanTest(_RatioTest):
    """The ratio of means exceeds r exactly when the mean of ``c − r·b`` exceeds 0: a paired
    test of those differences for every r, from each run's mean and the (co)variances of the
    data and of each resample (the same resampled queries as a percentile's).

    ``p(r)``: the larger of the paired t-test's p-value and the studentized bootstrap's
    (t* = (d̄* − d̄)/(s*/√n) against t = d̄/(s/√n), p = (1 + #{t* ≥ t})/(B + 1)); the
    t-test's alone when no resample is as extreme as the data (the bootstrap's floor, as for
    a quality comparison); without spread (``c − r·b`` the same for every query, to rounding)
    the exact sign test's 2⁻ⁿ when that difference is positive, else 1. The bounds invert it
    by bisection."""

    def __init__(self, b: np.ndarray, c: np.ndarray, policy: GatePolicy):
        self.n = n = len(b)
        self.mb, self.mc = float(np.mean(b)), float(np.mean(c))
        self.scale = float(max(np.max(np.abs(b)), np.max(np.abs(c))))
        cb, cc = b - self.mb, c - self.mc  # centred: no cancellation in the moments
        _, _, var_b, var_c, cov = _moments(cb[None, :], cc[None, :])
        self.observed = (var_b, var_c, cov)
        rng = np.random.default_rng(policy.seed)
        blocks = []
        for start in range(0, policy.resamples, _BATCH):
            size = min(_BATCH, policy.resamples - start)
            picks = rng.integers(0, n, size=(size, n))
            blocks.append(_moments(cb[picks], cc[picks]))
        self.resampled = [np.concatenate(parts) for parts in zip(*blocks)]
        self.criticals: dict[float, float] = {}

    def _spread(self, var_b: np.ndarray, var_c: np.ndarray, cov: np.ndarray, r: float
                ) -> np.ndarray:
        return np.maximum(var_c - 2 * r * cov + r * r * var_b, 0.0)

    def _statistics(self, r: float, up: bool) -> tuple[float, int] | None:
        """At ratio r on one side: the observed t and how many resamples are as extreme
        (t* ≥ t); None without spread (``c − r·b`` the same for every query, to rounding)."""
        sign = 1.0 if up else -1.0
        d = sign * (self.mc - r * self.mb)
        var = float(self._spread(*self.observed, r)[0])
        if var <= (4 * np.finfo(np.float64).eps * (1 + r) * self.scale) ** 2 or self.n < 2:
            return None
        error = math.sqrt(var / self.n)
        shift_b, shift_c, var_b, var_c, cov = self.resampled
        spread = np.sqrt(self._spread(var_b, var_c, cov, r) / self.n)
        shift = sign * (shift_c - r * shift_b)
        extreme = np.where(spread > 0, shift * error >= d * spread, shift > 0)
        return d / error, int(np.count_nonzero(extreme))

    def p_side(self, r: float, up: bool) -> float:
        """The one-sided p-value against a ratio of at most r (``up``), or at least r."""
        found = self._statistics(r, up)
        if found is None:
            return 0.5 ** self.n if (self.mc - r * self.mb) * (1 if up else -1) > 0 else 1.0
        t, extreme = found
        t_p = t_cdf(-t, self.n - 1)
        boot_p = (1 + extreme) / (self.resampled[0].size + 1)
        return t_p if extreme == 0 else max(boot_p, t_p)

    def rejects(self, r: float, up: bool, level: float) -> bool:
        """Whether ``p_side(r, up) < level``, without the t distribution's function: the
        t-test rejects when t is above its critical value (computed once per level)."""
        found = self._statistics(r, up)
        if found is None:
            return self.p_side(r, up) < level
        t, extreme = found
        if t <= self._critical(level):
            return False
        return extreme == 0 or (1 + extreme) / (self.resampled[0].size + 1) < level

    def _critical(self, level: float) -> float:
        """The t above which the one-sided t-test rejects at ``level``."""
        if level not in self.criticals:
            self.criticals[level] = -t_quantile(level, self.n - 1)
        return self.criticals[level]

    def p(self, null: float) -> float:
        return self.p_side(null, True)

    def bound(self, level: float) -> float | None:
        return self._lower(level)

    def interval(self, alpha: float) -> tuple[float, float]:
        return self._lower(alpha / 2), self._upper(alpha / 2)

    def _lower(self, level: float) -> float:
        """The lower end of the ratios not rejected at ``level``: the largest r with p(r) <
        level (bisection between 0 and the estimate, where the t-test's p-value is ½); 0 when
        the ratio 0 is not rejected — the set of ratios not rejected then reaches 0, even if
        the t statistic of ``c − r·b``, which need not be monotone in r, rejects a band of
        ratios above it —, +∞ for a baseline mean of 0 whose candidate is significantly above
        it."""
        if not self.rejects(0.0, True, level):
            return 0.0
        if self.mb <= 0:
            return math.inf
        return _bisect(lambda r: self.rejects(r, True, level), 0.0, self.mc / self.mb)

    def _upper(self, level: float) -> float:
        """The upper end of the ratios not rejected at ``level`` (toward a smaller ratio): the
        smallest r with p(r, below) < level, or +∞ when the largest ratios are not rejected.
        As r grows, the t statistic of ``r·b − c`` tends to the baseline's own, √n·b̄/s_b, and
        is not monotone on the way: when the baseline's mean is not clearly above 0 (its own
        one-sided test at ``level`` does not reject, tried at a ratio 10⁶ times the
        estimate's), the rejected ratios are a bounded band and the ratios not rejected
        reach +∞ (Fieller's unbounded case), whatever band the search would find."""
        if self.mb <= 0:
            return math.inf
        low = self.mc / self.mb
        if not self.rejects(1e6 * max(low, 1.0), False, level):
            return math.inf
        high = max(2 * low, 1e-300)
        for _ in range(64):
            if self.rejects(high, False, level):
                return _bisect(lambda r: not self.rejects(r, False, level), low, high)
            low, high = high, 2 * high
        return math.inf


def _moments(b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row of paired values: both means, both variances and the covariance (ddof = 1;
    0 for one value)."""
    mb, mc = b.mean(axis=1), c.mean(axis=1)
    db, dc = b - mb[:, None], c - mc[:, None]
    dof = max(b.shape[1] - 1, 1)
    return (mb, mc, np.einsum("ij,ij->i", db, db) / dof, np.einsum("ij,ij->i", dc, dc) / dof,
            np.einsum("ij,ij->i", db, dc) / dof)


def _bisect(holds: Callable[[float], bool], low: float, high: float) -> float:
    """The point where ``holds`` (true at ``low``, false at ``high``) stops holding, to a
    relative 1e-12."""
    for _ in range(_BISECTIONS):
        middle = 0.5 * (low + high)
        if high - low <= 1e-12 * high:
            break
        low, high = (middle, high) if holds(middle) else (low, middle)
    return low


_NORMAL = NormalDist()
_GRID = 4001  # points of the numerical integral of an order statistic's expectation


def expected_bias(values: np.ndarray, stat: str) -> float | None:
    """The expected bias of ``stat`` over ``len(values)`` queries, as a share of the true
    statistic: E[estimate] / true − 1, under a log-normal model with the spread of these
    values (the standard deviation of their logarithms). The mean is unbiased under any
    distribution: 0. A percentile (numpy's linear interpolation between the order statistics
    at 0-based position q·(n − 1)) is an order statistic of the model, whose expectation is a
    one-dimensional integral against the normal order statistic's density, computed here on
    a grid. None for fewer than 2 queries or a value ≤ 0 (no log-normal fits), and for a
    spread so wide that the model's bias is not a finite number.

    The model is needed: a p95 is biased low by what the test set's tail lacks, which no
    resampling of the test set can see (a bootstrap draws only its own values). Against the
    truth (``benchmarks/calibration.py --costs``): within 1.6 points under a log-normal, an
    understatement on the real pydoc latencies (−2.6 % for −5.7 % at 25 queries)."""
    n = len(values)
    if stat == "mean":
        return 0.0
    if n < 2 or not bool(np.all(values > 0)):
        return None
    sigma = float(np.std(np.log(values), ddof=1))
    if sigma == 0.0:
        return 0.0
    offsets, weights = _order_statistic(n, 0.5 if stat == "p50" else 0.95)
    with np.errstate(over="ignore"):  # a spread of tens of orders of magnitude: no model
        bias = float(np.dot(weights, np.exp(sigma * offsets))) - 1.0
    return bias if math.isfinite(bias) else None


@functools.lru_cache(maxsize=32)
def _order_statistic(n: int, q: float) -> tuple[np.ndarray, np.ndarray]:
    """The distribution of the linear-interpolation q-quantile of n standard normals, on a
    grid: its points' offsets from the true quantile z_q, and their weights (summing to 1,
    the interpolation of the two order statistics' densities; each density
    n!/((r − 1)!(n − r)!) Φ^(r − 1) (1 − Φ)^(n − r) φ, normalised on the grid)."""
    at = q * (n - 1)
    low = int(at)
    t = at - low
    z_q = _NORMAL.inv_cdf(q)
    spread = math.sqrt(q * (1 - q) / n) / _NORMAL.pdf(z_q)  # of the order statistic, in z
    grid = np.linspace(max(z_q - 14 * spread, -12.0), min(z_q + 14 * spread, 12.0), _GRID)
    below = np.log([0.5 * math.erfc(-z / math.sqrt(2)) or math.ulp(0) for z in grid.tolist()])
    above = np.log([0.5 * math.erfc(z / math.sqrt(2)) or math.ulp(0) for z in grid.tolist()])
    log_pdf = -0.5 * grid * grid

    def density(rank: int) -> np.ndarray:  # of the rank-th smallest (1-based)
        log_density = log_pdf + (rank - 1) * below + (n - rank) * above
        weights = np.exp(log_density - log_density.max())
        return weights / weights.sum()

    weights = density(low + 1) if t == 0 else (
        (1 - t) * density(low + 1) + t * density(min(low + 2, n)))
    return grid - z_q, weights


class _Sorted:
    """One run's per-query costs, arranged so that a resample's percentile is read from the
    order statistics of its ranks (small integers) instead of its floats."""

    def __init__(self, values: np.ndarray):
        order = np.argsort(values, kind="stable")
        self.values = values
        self.ordered = values[order]
        self.ranks = np.empty(len(values), dtype=np.int16 if len(values) < 1 << 15 else np.int64)
        self.ranks[order] = np.arange(len(values))
        self._slots: dict[int, np.ndarray] = {}

    def resampled(self, picks: np.ndarray, stat: str) -> np.ndarray:
        """The statistic of each resample (a row of query positions ``picks``): the mean, or
        the percentile by linear interpolation between the two order statistics around it
        (numpy's default method)."""
        if stat == "mean":
            return self.values[picks].mean(axis=1)
        at = (0.5 if stat == "p50" else 0.95) * (picks.shape[1] - 1)
        low = int(at)
        high = min(low + 1, picks.shape[1] - 1)
        lows, highs = self.order_statistics(picks, low, high)
        below, above = self.ordered[lows], self.ordered[highs]
        t = at - low  # numpy's lerp: from the nearer end, so t = 0 and t = 1 are exact
        return below + (above - below) * t if t < 0.5 else above - (above - below) * (1 - t)

    def order_statistics(self, picks: np.ndarray, low: int, high: int
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Per resample, the ranks at sorted positions ``low ≤ high`` (0-based): exactly
        what ``np.partition`` of its ranks puts there.

        Near the top (a p95) only the ranks of a top region can be there: one wide enough that
        a resample's count of picks in it falls short of the needed ``n − low`` with a chance
        under 1e-9 (six standard deviations). Each resample's picks are counted per rank of
        the region (one ``bincount`` for the batch), and the order statistics read from the
        counts from the top down — about half the work of partitioning every resample. A
        resample short of the region's count, and any percentile lower down, is partitioned
        whole."""
        n = len(self.ranks)
        needed = n - low  # picks at or above the low-th smallest
        region = needed + 6 * math.isqrt(needed) + 16
        if 4 * region > n:
            whole = np.partition(self.ranks[picks], [low, high], axis=1)
            return whole[:, low], whole[:, high]
        start = n - region  # the region's lowest rank
        slots = self._slots.get(start)
        if slots is None:  # a rank's place in the region, or `region` (a bin for the rest)
            slots = np.where(self.ranks >= start, self.ranks - start, region).astype(np.intp)
            self._slots[start] = slots
        rows = len(picks)
        keys = slots[picks]
        keys += np.arange(0, rows * (region + 1), region + 1)[:, None]
        counts = np.bincount(keys.ravel(), minlength=rows * (region + 1))
        from_top = np.cumsum(counts.reshape(rows, region + 1)[:, region - 1::-1], axis=1)
        # the m-th largest pick (0-based) is at the first place from the top holding more than m
        lows = start + region - 1 - np.argmax(from_top > n - 1 - low, axis=1)
        highs = start + region - 1 - np.argmax(from_top > n - 1 - high, axis=1)
        short = np.flatnonzero(from_top[:, -1] < needed)
        if len(short):
            whole = np.partition(self.ranks[picks[short]], [low, high], axis=1)
            lows[short], highs[short] = whole[:, low], whole[:, high]
        return lows, highs


def _decide(row: CostRow, p_holm: float | None, policy: GatePolicy, family: int
            ) -> tuple[Decision | None, str | None]:
    """A gated row's decision and why it is not a plain one (see the module docstring)."""
    gate = row.gate
    assert gate is not None
    if gate.max is not None:
        return ("pass" if row.candidate is not None and row.candidate <= gate.max
                else "regression"), None
    assert gate.max_increase is not None
    if row.p_regression is None or p_holm is None:
        return "inconclusive", f"the baseline's {gate.stat} is {row.baseline or 0:g}: no ratio"
    least = min_queries(gate, policy)
    if row.n < least:
        return "inconclusive", (None if gate.stat != "mean" else  # the percentile's own note
                                f"only {row.n} {'query' if row.n == 1 else 'queries'}, fewer "
                                f"than min-queries = {least}")
    limit = 1 + gate.max_increase
    significant = (p_holm < policy.alpha if policy.regression_test == "holm"
                   else row.p_regression < policy.alpha / (2 * family))
    reaches = row.ratio is None or row.ratio >= limit  # None here: an increase from 0
    if significant and (policy.regression_rule == "interval" or reaches):
        return "regression", None
    if row.ratio_high is not None and row.ratio_high < limit:
        return "pass", None
    if row.ratio_high is None:
        return "inconclusive", (f"no pass: the interval's high end is unbounded (the "
                                f"baseline's {gate.stat} is 0 in some resamples)")
    return "inconclusive", None


def finite_or_none(value: float | None) -> float | None:
    """``value``, or None when it is not a finite number (an infinite bootstrap ratio)."""
    return None if value is None or not math.isfinite(value) else value
