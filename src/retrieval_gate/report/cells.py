"""One value of a report in the words every output format uses for it: numbers, signed
differences, p-values, intervals, a comparison's counts and decision, a cost's values and ratio,
counts of things — so that the text, Markdown, HTML, JUnit and GitHub outputs never word one
value two ways. A cell holds no text from the inputs (those are made safe per format by
:mod:`~retrieval_gate.report.safe`).

The policy's labels — the levels of the intervals, the power, the decision rule (:class:`Labels`,
:func:`labels`, :func:`percent`) — and why nothing was gated (:func:`nothing_gated`) are here
too."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: `gate score` renders its means without the gate's types
    from collections.abc import Sequence

    from retrieval_gate.decide.cost import CostRow
    from retrieval_gate.decide.policy import GatePolicy
    from retrieval_gate.gating.outcome import Comparison

__all__ = ["UNBOUNDED", "Labels", "bootstrap_name", "comparison_detail", "cost_decision",
           "cost_name", "cost_value", "counted", "deciding_bound", "decision_cell",
           "decision_reason", "decision_words", "detectable", "in_words", "interval", "labels",
           "mean_cell", "named", "nothing_gated", "p_value", "percent", "ratio",
           "ratio_interval", "sentence", "signed", "test_p", "wins_losses_ties"]

UNBOUNDED = 1e3  # a bound this far from 0 bounds no difference of two scores in [0, 1]


# --------------------------------------------------------------------------------------------
# Labels


def percent(p: float) -> str:
    """A probability as a percentage for a label, four significant digits: 0.95 → ``95``,
    0.975 → ``97.5``, 0.99375 → ``99.38``."""
    return f"{100 * p:.4g}"


@dataclass(frozen=True)
class Labels:
    """The words every report uses for the policy's levels and rule, from one place, so that no
    renderer prints a level the gate did not use.

    - ``ci``: the shown interval, e.g. ``95% CI`` (two-sided 1 − α);
    - ``intervals``: both levels in one phrase, e.g. ``95% intervals (97.5% for regression:
      Bonferroni over 2 comparisons)``, or ``… over 3 comparisons, 1 of them a cost``;
    - ``power``: the minimum detectable drop's power, e.g. ``80% power``;
    - ``rule``: the decision rule in one sentence;
    - ``bound``: the regression bound ``ci_high_adjusted``, e.g. ``97.5% bound`` (one-sided
      1 − α/m under test ``holm``, two-sided 1 − α/m under ``bonferroni``);
    - ``p``: the p-values the test reads, as a column header: ``regression p (Holm)`` or
      ``sign p (Holm)``; ``p_about``: the same in a sentence.
    """

    ci: str
    intervals: str
    power: str
    rule: str
    bound: str
    p: str
    p_about: str


def labels(policy: GatePolicy, family: int, costs: int = 0) -> Labels:
    """The :class:`Labels` of ``policy`` for the family the decision used: ``family`` members
    (the report's :attr:`~retrieval_gate.gating.outcome.Report.family`; 0 and 1 both give the
    unadjusted level), ``costs`` of them relative cost gates."""
    m = max(family, 1)
    shown = percent(1 - policy.alpha)
    level = percent(1 - policy.alpha / m)
    of_them = (f", {costs} of them {'a cost' if costs == 1 else 'costs'}" if costs else "")
    holm = policy.regression_test == "holm"
    if holm:
        intervals = f"{shown}% intervals, {level}% one-sided bound"
    else:
        intervals = (f"{shown}% intervals" if m == 1 else f"{shown}% intervals ({level}% for "
                     f"regression: Bonferroni over {m} comparisons{of_them})")
    against = "−margin" if policy.regression_rule == "interval" else "0"
    if holm:
        regression = (f"regression when Δ ≤ −margin and the Holm-adjusted regression p (Δ "
                      f"below {against}) < {policy.alpha:g}")
    elif policy.regression_rule == "interval":
        regression = (f"regression when the whole {level}% interval lies below −margin and "
                      f"the Holm-adjusted sign test p < {policy.alpha:g}")
    else:
        regression = (f"regression when Δ ≤ −margin, the {level}% interval lies below 0 and "
                      f"the Holm-adjusted sign test p < {policy.alpha:g}")
    rule = (f"{regression}; pass when the {shown}% interval's low end > −margin; neither with "
            f"fewer than {policy.min_queries} queries; else inconclusive")
    p_about = ("Regression p, one-sided (the larger of the paired t-test's and the studentized "
               "bootstrap's), Holm-adjusted in brackets" if holm else
               "Sign test, one-sided toward a regression, p (Holm-adjusted)")
    return Labels(f"{shown}% CI", intervals, f"{percent(policy.power)}% power", rule,
                  f"{level}% bound", "regression p (Holm)" if holm else "sign p (Holm)",
                  p_about)


def nothing_gated(comparisons: Sequence[Comparison]) -> str:
    """Why no comparison counts in the verdict, in words: ``every gated comparison has fewer
    queries than its min-queries (Recall@10 on 'paraphrase': 13 < 15)``, ``every gate is
    report-only``, or both."""
    small = [c for c in comparisons if c.too_small and not c.report_only]
    listed = ", ".join(f"{c.measure} on '{c.slice}': {c.n} < {c.min_queries}" for c in small)
    if not comparisons:
        return "no measure is gated"
    if not small:
        return "every gate is report-only"
    why = ("every gated comparison has fewer queries than its min-queries"
           if len(small) == len(comparisons) else
           "every gate is report-only or has fewer queries than its min-queries")
    return f"{why} ({listed})"


# --------------------------------------------------------------------------------------------
# Numbers


def signed(value: float | None, digits: int = 4) -> str:
    """``+0.0123`` / ``−0.0123`` (a true minus sign), ``-`` for None."""
    if value is None:
        return "-"
    text = f"{value:+.{digits}f}"
    return text.replace("-", "−")


def p_value(p: float) -> str:
    """Three significant digits; below 0.001 as ``<0.001``."""
    return "<0.001" if p < 0.001 else f"{p:.3g}"


def mean_cell(value: float | None) -> str:
    """Four decimals, ``-`` for None (no query)."""
    return "-" if value is None else f"{value:.4f}"


def interval(low: float, high: float) -> str:
    """``[−0.0312, +0.0105]``: both ends :func:`signed`."""
    return f"[{signed(low)}, {signed(high)}]"


def counted(n: int, one: str, many: str) -> str:
    """``1 query``, ``5 queries``."""
    return f"{n} {one if n == 1 else many}"


def sentence(text: str) -> str:
    """``text`` with its first letter capitalised, to start a sentence."""
    return text[:1].upper() + text[1:]


def bootstrap_name(policy: GatePolicy) -> str:
    """The policy's bootstrap interval: ``BCa`` or ``percentile``."""
    return "BCa" if policy.bootstrap == "bca" else "percentile"


# --------------------------------------------------------------------------------------------
# A comparison


def named(c: Comparison) -> str:
    """``Recall@10 (all)``: the measure and its slice."""
    return f"{c.measure} ({c.slice})"


def in_words(c: Comparison) -> str:
    """The sign test's counts in words: ``85 better, 24 worse, 116 same``."""
    return f"{c.wins} better, {c.losses} worse, {c.ties} same"


def wins_losses_ties(c: Comparison) -> str:
    """The sign test's counts in short: ``85/24/116``."""
    return f"{c.wins}/{c.losses}/{c.ties}"


def test_p(c: Comparison, policy: GatePolicy) -> str:
    """The p-value the policy's regression test reads and its Holm-adjusted value: ``0.0312
    (0.0624)`` — the regression p under test ``holm``, the sign test's under ``bonferroni``."""
    if policy.regression_test == "holm":
        return f"{p_value(c.p_regression)} ({p_value(c.p_regression_holm)})"
    return f"{p_value(c.sign_p)} ({p_value(c.sign_p_holm)})"


def detectable(c: Comparison) -> str:
    """The minimum detectable drop: four decimals, ``undefined (n < 2)`` without one."""
    return "undefined (n < 2)" if c.mde is None else f"{c.mde:.4f}"


def comparison_detail(c: Comparison, ci: str) -> str:
    """``Δ −0.0312, 95% CI [−0.0511, −0.0120], margin 0.02, n = 225`` (``ci``: the interval's
    label)."""
    return (f"Δ {signed(c.mean_diff)}, {ci} {interval(c.ci_low, c.ci_high)}, margin "
            f"{c.margin:g}, n = {c.n}")


def decision_words(decision: str, improvement: bool) -> str:
    """``pass``, ``pass, improved``, ``regression``, ``inconclusive``."""
    return decision + (", improved" if improvement else "")


def decision_cell(c: Comparison, policy: GatePolicy | None = None) -> str:
    """The decision cell: ``pass, improved``; ``report-only: regression``; ``too small``;
    with the ``policy``, an inconclusive decision with its :func:`decision_reason`:
    ``inconclusive (sign test p 0.144)``."""
    if c.too_small:
        return "too small to decide"
    why = None if policy is None else decision_reason(c, policy)
    word = decision_words(c.decision, c.improvement) + (f" ({why})" if why else "")
    return f"report-only: {word}" if c.report_only else word


def deciding_bound(c: Comparison) -> str:
    """The family's bound (``ci_high_adjusted``: under test ``holm`` the one-sided 1 − α/m
    bound, the larger of the t and the studentized bootstrap bounds, shown beside the
    p-values that decide; under ``bonferroni`` the studentized bound the rule compares), as it
    reads against Δ: ``≤ −0.0101`` — Δ is at most that; below 0 (below −margin under the
    interval rule) the drop is significant at the family's strictest level. For a measure where
    lower is better it bounds the turned difference, so it is shown as the bound on the rise:
    ``≥ +0.0050``, and a regression needs it above 0. A bound far outside any difference of
    two scores — the studentized bound of a few discordant queries, whose resamples mostly
    have no spread — is ``unbounded``: it bounds nothing (:data:`UNBOUNDED` times the larger
    of 1 and the runs' means: a per-query score on a scale of points keeps its bound)."""
    value = -c.ci_high_adjusted + 0.0 if c.lower_is_better else c.ci_high_adjusted
    scale = max(1.0, *(abs(m) for m in (c.baseline_mean, c.candidate_mean) if m is not None))
    if not math.isfinite(value) or abs(value) >= UNBOUNDED * scale:
        return "unbounded"
    return ("≥ " if c.lower_is_better else "≤ ") + signed(value)


def decision_reason(c: Comparison, policy: GatePolicy) -> str | None:
    """Why an inconclusive comparison is not a regression, in a short phrase, when the interval
    shown does not say so: too few queries (``n < 25``); or, with the interval wholly on the
    worse side of 0, the first condition of the regression rule that fails — ``Δ above
    −margin``; under test ``holm`` ``regression p 0.061`` (Holm-adjusted, not below α); under
    ``bonferroni`` ``bound ≥ 0`` (the :func:`deciding_bound` shown beside it; ``≥ −margin``
    under the interval rule), ``sign test p 0.144`` (Holm-adjusted). None for other
    decisions, and when the interval reaches 0 (it says why itself) — but a regression that
    the rule before showed where the regression p-value did not (test ``holm``): ``by the
    studentized bound and sign test``."""
    if c.decision == "regression":
        shown_by_before = (policy.regression_test == "holm"
                           and c.p_regression_holm >= policy.alpha)
        return "by the studentized bound and sign test" if shown_by_before else None
    if c.decision != "inconclusive" or c.too_small:
        return None
    if c.n < policy.min_queries or c.n == 0:
        return f"n < {policy.min_queries}"
    if c.wins == c.losses == 0 and c.baseline_mean == c.candidate_mean == 0:
        return "both 0 everywhere"
    lower = c.lower_is_better
    if not (c.ci_low > 0 if lower else c.ci_high < 0):
        return None
    if (-c.mean_diff if lower else c.mean_diff) > -c.margin:
        return "Δ below +margin" if lower else "Δ above −margin"
    return _failed_test(c, policy)


def _failed_test(c: Comparison, policy: GatePolicy) -> str | None:
    """The first significance condition an inconclusive drop of the margin failed."""
    if policy.regression_test == "holm":
        if c.p_regression_holm >= policy.alpha:
            return f"regression p {p_value(c.p_regression_holm)}"
        return None
    lower = c.lower_is_better
    by_interval = policy.regression_rule == "interval"
    if c.ci_high_adjusted >= (-c.margin if by_interval else 0.0):
        target = ("+margin" if lower else "−margin") if by_interval else "0"
        return f"bound {'≤' if lower else '≥'} {target}"
    if c.sign_p_holm >= policy.alpha:
        return f"sign test p {p_value(c.sign_p_holm)}"
    return None


# --------------------------------------------------------------------------------------------
# A cost


def cost_name(row: CostRow) -> str:
    """``latency_ms p95``: the cost's metric and statistic."""
    return f"{row.metric} {row.stat}"


def cost_value(row: CostRow, value: float | None) -> str:
    """A latency with one decimal, a count of tokens whole, both with thousands separators;
    ``-`` for None."""
    if value is None:
        return "-"
    return f"{value:,.1f}" if row.metric == "latency_ms" else f"{value:,.0f}"


def ratio(value: float) -> str:
    """``×1.520``: candidate over baseline."""
    return f"×{value:.3f}"


def ratio_interval(row: CostRow) -> str | None:
    """``[×0.687, ×0.888]`` (``∞`` for an unbounded end), or None without an interval."""
    if row.ratio_low is None:
        return None
    high = "∞" if row.ratio_high is None else ratio(row.ratio_high)
    return f"[{ratio(row.ratio_low)}, {high}]"


def cost_decision(row: CostRow) -> str:
    """``regression``, ``pass, improved``, ``too small to decide``; ``-`` for a cost shown,
    not gated."""
    if row.too_small:
        return "too small to decide"
    return "-" if row.decision is None else decision_words(row.decision, row.improvement)
