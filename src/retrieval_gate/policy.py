"""The gate's policy, its decision rule, and the paired comparison of two runs' per-query values.

For one gated (measure, slice) with margin δ (the largest mean drop that is not material), the
mean per-query difference d̄ = mean(candidate − baseline), the two-sided 1 − α bootstrap interval
[ci_low, ci_high] and the Holm-adjusted one-sided sign-test p-value:

- ``regression`` — d̄ ≤ −δ, ci_high < 0 and sign_p_holm < α: a material drop, significant by both
  the bootstrap and the sign test;
- ``pass`` — ci_low > −δ: non-inferior (any drop is smaller than the margin);
- ``inconclusive`` — otherwise: this test set cannot tell (too few queries or too much spread).

``improvement`` is a separate flag: ci_low > 0. A slice without a query is ``inconclusive``.
The overall verdict is ``regression`` if any comparison is, else ``inconclusive`` if any is, else
``pass``; the exit code follows ``fail_on``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from retrieval_gate.compare import bootstrap_ci, holm, minimum_detectable_drop, sign_test
from retrieval_gate.errors import EXIT_INCONCLUSIVE, EXIT_PASS, EXIT_REGRESSION

Decision = Literal["pass", "regression", "inconclusive"]
FailOn = Literal["regression", "inconclusive", "never"]
DEFAULT_MARGIN = 0.02
POWER = 0.8  # power of the minimum detectable drop


@dataclass(frozen=True)
class GatedMeasure:
    """A measure the gate decides on (its name, resolved against the snapshot later) and its
    margin."""

    measure: str
    margin: float = DEFAULT_MARGIN


@dataclass(frozen=True)
class GatePolicy:
    """Everything the decision depends on besides the data. Defaults: Recall@10 and nDCG@10
    with margin 0.02, the ``all`` slice, α = 0.05, 10,000 BCa resamples with seed 0, tie band 0,
    fail on regression."""

    gates: tuple[GatedMeasure, ...] = (GatedMeasure("Recall@10"), GatedMeasure("nDCG@10"))
    slices: tuple[str, ...] = ("all",)
    alpha: float = 0.05
    resamples: int = 10_000
    seed: int = 0
    tie_band: float = 0.0
    bootstrap: Literal["bca", "percentile"] = "bca"
    fail_on: FailOn = "regression"
    power: float = field(default=POWER, init=False)

    def as_dict(self) -> dict[str, object]:
        return {
            "gates": [{"measure": g.measure, "margin": g.margin} for g in self.gates],
            "slices": list(self.slices),
            "alpha": self.alpha,
            "resamples": self.resamples,
            "seed": self.seed,
            "tie_band": self.tie_band,
            "bootstrap": self.bootstrap,
            "fail_on": self.fail_on,
            "power": self.power,
        }


def decide(n: int, mean_diff: float, ci_low: float, ci_high: float, sign_p_holm: float,
           margin: float, alpha: float) -> Decision:
    """The decision rule of the module docstring; ``n == 0`` → ``inconclusive``."""
    if n == 0:
        return "inconclusive"
    if mean_diff <= -margin and ci_high < 0 and sign_p_holm < alpha:
        return "regression"
    if ci_low > -margin:
        return "pass"
    return "inconclusive"


def verdict(decisions: list[Decision]) -> Decision:
    """``regression`` if any, else ``inconclusive`` if any, else ``pass``."""
    if "regression" in decisions:
        return "regression"
    return "inconclusive" if "inconclusive" in decisions else "pass"


def exit_code(overall: Decision, fail_on: FailOn) -> int:
    """0 pass; 1 regression; 4 inconclusive under ``fail_on = inconclusive`` (else 0); always 0
    under ``fail_on = never``."""
    if fail_on == "never" or overall == "pass":
        return EXIT_PASS
    if overall == "regression":
        return EXIT_REGRESSION
    return EXIT_INCONCLUSIVE if fail_on == "inconclusive" else EXIT_PASS


@dataclass(frozen=True)
class Comparison:
    """One gated (measure, slice): the paired statistics and the decision. ``ci_note`` says why
    the interval is not a plain bootstrap interval (no query, no spread, BCa undefined)."""

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
    wins: int
    losses: int
    ties: int
    sign_p: float
    sign_p_two_sided: float
    sign_p_holm: float
    mde: float | None
    margin: float
    decision: Decision
    improvement: bool


def compare(baseline: np.ndarray, candidate: np.ndarray, measures: Sequence[str],
            slices: Mapping[str, np.ndarray], policy: GatePolicy) -> tuple[Comparison, ...]:
    """Every gated (measure, slice) comparison, decided: a pure function of per-query values.

    ``baseline`` and ``candidate`` have shape (queries, measures): column j holds the values of
    ``measures[j]``, gated with the margin of ``policy.gates[j]``, and row i the same query in
    both. ``slices`` maps a slice name to the row positions of its queries. Per slice, one
    bootstrap with ``numpy.random.default_rng(policy.seed)`` resamples the slice's queries for
    all measures at once (so a slice's interval does not depend on which other slices are
    gated); the sign tests of every (measure, slice) form one Holm family. Comparisons come
    slice by slice, measures in order."""
    rows: list[dict[str, Any]] = []
    for name, members in slices.items():
        b = baseline[members].T
        c = candidate[members].T
        d = c - b
        intervals = bootstrap_ci(d, rng=np.random.default_rng(policy.seed),
                                 resamples=policy.resamples, alpha=policy.alpha,
                                 method=policy.bootstrap)
        for j, (measure, interval) in enumerate(zip(measures, intervals)):
            n = len(members)
            signs = sign_test(d[j], policy.tie_band)
            rows.append({
                "measure": measure, "slice": name, "n": n,
                "baseline_mean": _mean(b[j]), "candidate_mean": _mean(c[j]),
                "mean_diff": _mean(d[j]) or 0.0,
                "ci_low": interval.low, "ci_high": interval.high, "ci_method": interval.method,
                "ci_note": interval.fallback or _interval_note(interval.method),
                "wins": signs.wins, "losses": signs.losses, "ties": signs.ties,
                "sign_p": signs.p_regression, "sign_p_two_sided": signs.p_two_sided,
                "mde": minimum_detectable_drop(d[j], policy.alpha, policy.power),
                "margin": policy.gates[j].margin,
            })
    adjusted = holm([r["sign_p"] for r in rows])
    comparisons = []
    for row, p_holm in zip(rows, adjusted.tolist()):
        decision = decide(row["n"], row["mean_diff"], row["ci_low"], row["ci_high"], p_holm,
                          row["margin"], policy.alpha)
        comparisons.append(Comparison(**row, sign_p_holm=p_holm, decision=decision,
                                      improvement=row["n"] > 0 and row["ci_low"] > 0))
    return tuple(comparisons)


def _mean(values: np.ndarray) -> float | None:
    """Exact macro mean (``math.fsum``), None for no value."""
    return math.fsum(values.tolist()) / len(values) if len(values) else None


def _interval_note(method: str) -> str | None:
    return {"constant": "every query has the same difference: the interval is that value",
            "empty": "no query in this slice"}.get(method)
