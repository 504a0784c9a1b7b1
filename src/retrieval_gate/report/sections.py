"""The pipeline sections every renderer shows, as rows of cells: the evidence funnel and the
costs. Cells hold text from the inputs (stage names) as is; each renderer makes them safe."""

from __future__ import annotations

from retrieval_gate.cost import CostRow
from retrieval_gate.policy import percent
from retrieval_gate.report.model import FunnelReport, Report

__all__ = ["cost_detail", "cost_rule", "cost_table", "funnel_table", "lost_at", "timed_on"]


def funnel_table(funnel: FunnelReport) -> list[list[str]]:
    """Header, then a row per stage (units reaching it) and per loss kind (units lost so):
    baseline, candidate, difference."""
    rows = [["evidence units", "baseline", "candidate", "Δ"]]
    for (name, base, cand), described in zip(funnel.reaching, funnel.stages):
        rows.append([f"reach {described}", str(base), str(cand), f"{cand - base:+d}"])
    rows += [[f"lost: {row.label}", str(row.baseline), str(row.candidate), f"{row.diff:+d}"]
             for row in funnel.losses]
    return rows


def lost_at(report: Report) -> str | None:
    """For a regression, where the candidate lost the evidence: ``evidence lost: dropped at
    packing (context), 8 → 30 of 120 units``; else None."""
    funnel = report.funnel
    if report.verdict != "regression" or funnel is None or funnel.worst is None:
        return None
    worst = funnel.worst
    return (f"evidence lost: {worst.label}, {worst.baseline} → {worst.candidate} of "
            f"{funnel.units} units")


def cost_table(report: Report) -> list[list[str]]:
    """Header, then a row per cost statistic: n, both values, the ratio and its interval, the
    gate and the decision (empty without costs)."""
    if not report.costs:
        return []
    ci = f"{percent(1 - report.policy.alpha)}% CI"
    rows = [["cost", "n", "baseline", "candidate", "ratio", ci, "gate", "decision"]]
    for row in report.costs:
        interval = ("-" if row.ratio_low is None else
                    f"[×{row.ratio_low:.3f}, {'∞' if row.ratio_high is None else f'×{row.ratio_high:.3f}'}]")
        decision = "-" if row.decision is None else row.decision + (
            ", improved" if row.improvement else "")
        rows.append([f"{row.metric} {row.stat}", str(row.n), _value(row, row.baseline),
                     _value(row, row.candidate),
                     "-" if row.ratio is None else f"×{row.ratio:.3f}", interval,
                     "-" if row.gate is None else row.gate.describe(), decision])
    return rows


def cost_detail(row: CostRow) -> str:
    """One gated cost in a sentence: ``latency_ms p95: 12.1 → 18.4 (×1.52, 95% CI [×1.40,
    ×1.66]), gate ≤ +20%, n = 89``."""
    ratio = "no ratio" if row.ratio is None else f"×{row.ratio:.3f}"
    interval = ("" if row.ratio_low is None else f", interval [×{row.ratio_low:.3f}, "
                f"{'∞' if row.ratio_high is None else f'×{row.ratio_high:.3f}'}]")
    gate = "" if row.gate is None else f", gate {row.gate.describe()}"
    return (f"{row.metric} {row.stat}: {_value(row, row.baseline)} → "
            f"{_value(row, row.candidate)} ({ratio}{interval}){gate}, n = {row.n}")


def _value(row: CostRow, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if row.metric == "latency_ms" else f"{value:,.0f}"


def timed_on(report: Report) -> tuple[str, str | None]:
    """Where each run's latencies were measured: (the baseline's, the candidate's), or (one
    place, None) when both name the same one."""
    places = report.baseline.timed_on or "not recorded", report.candidate.timed_on or \
        "not recorded"
    return (places[0], None) if places[0] == places[1] else places


def cost_rule(report: Report) -> str:
    """The cost gates' rule in one sentence."""
    m = sum(1 for g in report.policy.costs if g.max_increase is not None)
    shown = percent(1 - report.policy.alpha)
    family = percent(1 - report.policy.alpha / max(m, 1))
    return (f"a relative cost gate: regression when the ratio ≥ 1 + max-increase and the low end "
            f"of its {family}% paired bootstrap interval is above 1; pass when the high end of "
            f"the {shown}% interval is below 1 + max-increase; an absolute one: pass when the "
            "candidate's statistic is at most max")
