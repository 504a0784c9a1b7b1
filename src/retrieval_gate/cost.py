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
(1 + δ) × the baseline's) decides like a quality measure, in the same words:

- ``regression`` — the ratio's estimate ≥ 1 + δ and the low end of its two-sided 1 − α/m
  interval (m relative gates: Bonferroni) is above 1: clearly more costly, by the margin;
- ``pass`` — the high end of the 1 − α interval is below 1 + δ;
- ``inconclusive`` — otherwise, and with fewer than ``min_queries`` queries;

``improved`` when the whole 1 − α interval is below 1. An absolute gate (``max``: e.g. mean
context tokens ≤ 1,800) is a budget, not an estimate: ``pass`` when the candidate's statistic
is at most the budget, else ``regression``.

Latencies are comparable only when both runs were timed in the same place under the same
load: each run manifest says where (``provenance.timed_on``), and the report shows both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.policy import CostGate, Decision, GatePolicy

METRICS = ("latency_ms", "context_tokens")
STATS = ("p50", "p95", "mean")
SHOWN = {"latency_ms": ("p50", "p95"), "context_tokens": ("mean", "p95")}
_BATCH = 250  # resamples per block: bounds memory at _BATCH × queries


@dataclass(frozen=True)
class CostRow:
    """One statistic of one cost for both runs over the ``n`` queries both give it for: the
    values, their ratio and its bootstrap interval (None when undefined), and, when gated, the
    gate and its decision."""

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


def statistic(values: np.ndarray, stat: str, axis: int | None = None) -> np.ndarray:
    """``p50``, ``p95`` (linear interpolation) or ``mean`` along ``axis``."""
    if stat == "mean":
        return np.mean(values, axis=axis)
    return np.percentile(values, 50 if stat == "p50" else 95, axis=axis)


def compare_costs(baseline: dict[str, np.ndarray | None], candidate: dict[str, np.ndarray | None],
                  gates: Sequence[CostGate], policy: GatePolicy) -> tuple[CostRow, ...]:
    """A row per shown statistic of each cost both runs record, and per gated one; paired over
    the queries both runs give it for. A gated cost a run does not record is the caller's
    error to raise (see :func:`missing_costs`)."""
    relative = [g for g in gates if g.max_increase is not None]
    family_alpha = policy.alpha / max(len(relative), 1)
    rows = []
    for metric in METRICS:
        b, c = baseline.get(metric), candidate.get(metric)
        if b is None or c is None:
            continue
        both = ~(np.isnan(b) | np.isnan(c))
        b, c = b[both], c[both]
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
    if ratio is not None and gate is not None and gate.max_increase is not None:
        low, high, low_adjusted = (finite_or_none(v) for v in
                                   _ratio_interval(b, c, stat, policy, family_alpha))
    decision, note = _decide(gate, n, base, cand, ratio, high, low_adjusted, policy)
    improvement = (gate is not None and gate.max_increase is not None and n >= policy.min_queries
                   and high is not None and high < 1)
    return CostRow(metric, stat, n, base, cand, ratio, low, high, low_adjusted, gate, decision,
                   improvement, note)


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
    if n < policy.min_queries:
        return "inconclusive", (f"only {n} {'query' if n == 1 else 'queries'}, fewer than "
                                f"min-queries = {policy.min_queries}")
    limit = 1 + gate.max_increase
    if ratio >= limit and low_adjusted > 1:
        return "regression", None
    if high < limit:
        return "pass", None
    return "inconclusive", None


def finite_or_none(value: float | None) -> float | None:
    """``value``, or None when it is not a finite number (an infinite bootstrap ratio)."""
    return None if value is None or not math.isfinite(value) else value
