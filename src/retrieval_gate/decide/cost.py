"""Cost beside quality: each query's latency and context size, paired between the runs.

Two per-query costs: ``latency_ms`` (what the run records; for a pipeline, the sum over its
stages) and ``context_tokens`` (the tokens of the last stage's items within its contract).
Each is summarised by a statistic — ``p50``, ``p95`` (numpy's linear-interpolation
percentiles) or ``mean`` — over the queries both runs give it for, and compared as the ratio
candidate / baseline.

**The interval** of a relatively gated statistic is a paired percentile bootstrap of that
ratio: the same resampled queries for both runs, ``policy.resamples`` resamples from
``numpy.random.default_rng(policy.seed)``. A statistic that is shown but not gated that way
gets no interval (the report shows its values and ratio): it decides nothing, and at 5,000
queries its 10,000 resamples would cost more than scoring the runs.

**Gates.** A relative gate (``max_increase`` δ: the candidate's statistic may be at most
(1 + δ) × the baseline's) decides like a quality measure, in the same words, as a member of
the gate's one family of m (the quality comparisons that can decide and the relative cost
gates that can: see :mod:`retrieval_gate.decide.policy`):

- ``regression`` — rule ``estimate``: the ratio's estimate ≥ 1 + δ and the low end of its
  two-sided 1 − α/m interval (Bonferroni over the family) is above 1: clearly more costly, by
  the margin; rule ``interval``: that low end is above 1 + δ — the increase exceeds the margin
  with confidence;
- ``pass`` — the high end of the 1 − α interval is below 1 + δ;
- ``inconclusive`` — otherwise, and with fewer queries than the statistic's minimum
  (:func:`min_queries`), which is then outside the family;

a gate with fewer queries than its own ``min_queries`` is *too small to decide*, as a quality
gate is: shown, its decision None (it does not count in the verdict), outside the family.

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
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from retrieval_gate.decide.policy import CostGate, Decision, GatePolicy, family_level
from retrieval_gate.decide.signals import PairedSignal

METRICS = ("latency_ms", "context_tokens")
STATS = ("p50", "p95", "mean")
SHOWN = {"latency_ms": ("p50", "p95"), "context_tokens": ("mean", "p95")}
# The fewest queries from which a relative gate on a percentile decides, when the policy's
# min-queries is lower: the smallest test set at which the calibration kept its false-alarm
# rate within α under both rules and the estimator's bias within 5 %, on real and log-normal
# latencies (docs/concepts/pipelines.md, "Cost gates, measured").
PERCENTILE_MIN_QUERIES = {"p50": 15, "p95": 50}
_BATCH = 250  # resamples per block: bounds memory at _BATCH × queries


@dataclass(frozen=True)
class CostRow:
    """One statistic of one cost for both runs over the ``n`` queries both give it for: the
    values, their ratio and its bootstrap interval (None when undefined), and, when gated, the
    gate and its decision; each run's expected bias at n as a share of its statistic
    (``baseline_bias``, ``candidate_bias``: :func:`expected_bias`, None when no log-normal
    fits). ``min_queries``: the fewest queries on which the gate
    decides (None when not gated relatively); ``in_family``: whether the gate is a member of
    the family (it can say ``regression``); ``too_small``: fewer queries than the gate's own
    ``min_queries`` — shown, not decided, not counted."""

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
    ``regression`` from an interval)."""
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
                  policy: GatePolicy, family: int | None = None) -> tuple[CostRow, ...]:
    """A row per shown statistic of each cost signal (a cost both runs record:
    :meth:`~retrieval_gate.decide.signals.PairedSignal.cost`), and per gated one; paired over
    the queries both runs give it for. ``family``: the size m of the family the gate decides
    as one (the quality comparisons and the relative cost gates that can decide); None: these
    gates' members alone (:func:`family_members`). A gated cost a run does not record is the
    caller's error to raise (see :func:`missing_costs`)."""
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
            rows.append(_row(metric, stat, b, c, gated.get(stat), policy, family_alpha))
    return tuple(rows)


def missing_costs(baseline: dict[str, np.ndarray | None], candidate: dict[str, np.ndarray | None],
                  gates: Sequence[CostGate]) -> list[str]:
    """For each gated cost a run does not record: which run, and which cost."""
    return [f"{role} records no {g.metric}" for g in gates
            for role, side in (("baseline", baseline), ("candidate", candidate))
            if side.get(g.metric) is None]


def _row(metric: str, stat: str, b: np.ndarray, c: np.ndarray, gate: CostGate | None,
         policy: GatePolicy, family_alpha: float) -> CostRow:
    n = len(b)
    if n == 0:
        return CostRow(metric, stat, 0, None, None, None, None, None, None, gate,
                       None if gate is None else "inconclusive", False,
                       "no query has this cost in both runs")
    base, cand = float(statistic(b, stat)), float(statistic(c, stat))
    ratio = cand / base if base > 0 else None
    low = high = low_adjusted = None
    least = None if gate is None else min_queries(gate, policy)
    relative = gate is not None and gate.max_increase is not None
    if ratio is not None and relative:
        low, high, low_adjusted = (finite_or_none(v) for v in
                                   _ratio_interval(b, c, stat, policy, family_alpha))
    bias_b, bias_c = expected_bias(b, stat), expected_bias(c, stat)
    small = gate is not None and too_small(gate, n)
    decision, note = _decide(gate, n, base, cand, ratio, high, low_adjusted, policy)
    if small:
        assert gate is not None and gate.min_queries is not None
        decision, note = None, (f"too small to decide: {n} {'query' if n == 1 else 'queries'}, "
                                f"fewer than this gate's min-queries ({gate.min_queries})")
    elif gate is not None and least is not None and n < least and stat != "mean":
        note = _joined(note, _few(metric, stat, n, least, relative))
    if relative and bias_b is not None and bias_c is not None and stat != "mean":
        note = _joined(note, f"expected bias of the {stat} of {n} queries (log-normal model): "
                             f"baseline {_signed_share(bias_b)}, candidate "
                             f"{_signed_share(bias_c)}")
    improvement = (relative and not small and least is not None and n >= least
                   and high is not None and high < 1)
    return CostRow(metric, stat, n, base, cand, ratio, low, high, low_adjusted, gate, decision,
                   improvement, note, bias_b, bias_c, least if relative else None,
                   relative and gate is not None and in_family(gate, n, policy), small)


def _signed_share(share: float) -> str:
    return f"{100 * share:+.1f}%".replace("-", "−")


def _joined(first: str | None, second: str) -> str:
    return second if first is None else f"{first}; {second}"


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


def _ratio_interval(b: np.ndarray, c: np.ndarray, stat: str, policy: GatePolicy,
                    family_alpha: float) -> tuple[float, float, float]:
    """Percentile bootstrap of candidate stat / baseline stat, the same queries resampled for
    both: (low, high) of the 1 − α interval and the low end of the 1 − family_alpha one."""
    rng = np.random.default_rng(policy.seed)
    n = len(b)
    sides = [_Sorted(b), _Sorted(c)]
    ratios = []
    for start in range(0, policy.resamples, _BATCH):
        size = min(_BATCH, policy.resamples - start)
        picks = rng.integers(0, n, size=(size, n))
        sb, sc = (side.resampled(picks, stat) for side in sides)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios.append(np.where(sb > 0, sc / np.where(sb > 0, sb, 1), np.inf))
    draws = np.concatenate(ratios)
    low, high = np.quantile(draws, [policy.alpha / 2, 1 - policy.alpha / 2])
    return float(low), float(high), float(np.quantile(draws, family_alpha / 2))


_NORMAL = NormalDist()
_GRID = 4001  # points of the numerical integral of an order statistic's expectation


def expected_bias(values: np.ndarray, stat: str) -> float | None:
    """The expected bias of ``stat`` over ``len(values)`` queries, as a share of the true
    statistic: E[estimate] / true − 1, under a log-normal model with the spread of these
    values (the standard deviation of their logarithms). The mean is unbiased under any
    distribution: 0. A percentile (numpy's linear interpolation between the order statistics
    at 0-based position q·(n − 1)) is an order statistic of the model, whose expectation is a
    one-dimensional integral against the normal order statistic's density, computed here on
    a grid. None for fewer than 2 queries or a value ≤ 0 (no log-normal fits).

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
    return float(np.dot(weights, np.exp(sigma * offsets))) - 1.0


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


def _decide(gate: CostGate | None, n: int, base: float, cand: float, ratio: float | None,
            high: float | None, low_adjusted: float | None, policy: GatePolicy
            ) -> tuple[Decision | None, str | None]:
    if gate is None:
        return None, None
    if gate.max is not None:
        return ("pass" if cand <= gate.max else "regression"), None
    assert gate.max_increase is not None
    if ratio is None:
        return "inconclusive", f"the baseline's {gate.stat} is {base:g}: no ratio"
    if high is None or low_adjusted is None:
        return "inconclusive", ("the interval is unbounded: the baseline's statistic is 0 in "
                                "some resamples")
    least = min_queries(gate, policy)
    if n < least:
        return "inconclusive", (None if gate.stat != "mean" else  # the percentile's own note
                                f"only {n} {'query' if n == 1 else 'queries'}, fewer than "
                                f"min-queries = {least}")
    limit = 1 + gate.max_increase
    if policy.regression_rule == "interval":
        if low_adjusted > limit:
            return "regression", None
    elif ratio >= limit and low_adjusted > 1:
        return "regression", None
    if high < limit:
        return "pass", None
    return "inconclusive", None


def finite_or_none(value: float | None) -> float | None:
    """``value``, or None when it is not a finite number (an infinite bootstrap ratio)."""
    return None if value is None or not math.isfinite(value) else value
