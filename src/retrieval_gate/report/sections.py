"""The pipeline sections every renderer shows, as rows of cells: the evidence funnel and the
costs. Cells hold text from the inputs (stage names) as is; each renderer makes them safe."""

from __future__ import annotations

from retrieval_gate.cost import CostRow
from retrieval_gate.policy import percent
from retrieval_gate.report.model import FunnelReport, Report, UnanswerableSide

__all__ = ["abstention_note", "cost_detail", "cost_notes", "cost_rule", "cost_table",
           "funnel_table",
           "instead_lines", "leak_rows", "leak_summary", "leaks_not_shown", "lost_at", "timed_on", "unanswerable_rows"]


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
        interval = _interval(row) or "-"
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
    interval = f", interval {_interval(row)}" if _interval(row) else ""
    gate = "" if row.gate is None else f", gate {row.gate.describe()}"
    return (f"{row.metric} {row.stat}: {_value(row, row.baseline)} → "
            f"{_value(row, row.candidate)} ({ratio}{interval}){gate}, n = {row.n}"
            + (f" — {row.note}" if row.note else ""))


def cost_notes(report: Report) -> list[str]:
    """One line per cost row with a note: ``latency_ms p95: p95 of 25 queries rests on the
    slowest 2: at least 50 queries are needed to certify it; …``."""
    return [f"{row.metric} {row.stat}: {row.note}" for row in report.costs if row.note]


def _interval(row: CostRow) -> str | None:
    """``[×0.687, ×0.888]`` (``∞`` for an unbounded end), or None without an interval."""
    if row.ratio_low is None:
        return None
    high = "∞" if row.ratio_high is None else f"×{row.ratio_high:.3f}"
    return f"[×{row.ratio_low:.3f}, {high}]"


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
    """The cost gates' rule in one sentence, at the level of the family the decision used."""
    shown = percent(1 - report.policy.alpha)
    family = percent(1 - report.policy.alpha / max(report.family, 1))
    regression = (f"the low end of its {family}% paired bootstrap interval is above 1 + "
                  "max-increase" if report.policy.regression_rule == "interval" else
                  f"the ratio ≥ 1 + max-increase and the low end of its {family}% paired "
                  "bootstrap interval is above 1")
    return (f"a relative cost gate: regression when {regression}; pass when the high end of "
            f"the {shown}% interval is below 1 + max-increase; neither with fewer queries than "
            "its min-queries; an absolute one: pass when the candidate's statistic is at most "
            "max")


LEAKS_SHOWN = 10  # leaks listed in a report; the JSON report lists up to 1,000


def leak_summary(report: Report) -> str | None:
    """One sentence on both runs' leaks (None without access data): ``the candidate returns
    489 items their askers may not see (95 queries); the baseline 0 — fails the gate``."""
    leaks = report.leaks
    if leaks is None:
        return None
    def part(count: int, queries: int) -> str:
        return (f"{count} {'item' if count == 1 else 'items'} ({queries} "
                f"{'query' if queries == 1 else 'queries'})" if count else "0")
    c, b = leaks.candidate, leaks.baseline
    outcome = ("fails the gate" if leaks.fails else
               "reported, not failing (leaks: warn)" if leaks.policy == "warn" else
               "the baseline's are reported, not failing (leaks: candidate)" if b.count else "")
    text = (f"the candidate returns {part(c.count, len(c.per_query))} its askers may not see; "
            f"the baseline {part(b.count, len(b.per_query))}")
    if b.count and not c.count:
        text += " — a pre-existing leak is still a leak"
    return text + (f" — {outcome}" if outcome and (b.count or c.count) else "")


def leak_rows(report: Report) -> list[list[str]]:
    """Header, then the first leaks of each run: run, query, rank (and stage), item,
    document, who may see it."""
    if report.leaks is None:
        return []
    rows = [["run", "query", "rank", "item", "document", "visible to"]]
    for role, leaks in (("candidate", report.leaks.candidate), ("baseline", report.leaks.baseline)):
        for leak in leaks.rows[:LEAKS_SHOWN]:
            rows.append([role, leak.query, f"{leak.rank}" + (f" [{leak.stage}]" if leak.stage
                                                                else ""),
                         leak.item, leak.document, ", ".join(leak.allowed) or "nobody"])
    return rows if len(rows) > 1 else []


def leaks_not_shown(report: Report) -> str | None:
    """``… and 479 more of the candidate (the JSON report lists up to 1,000)``, or None."""
    if report.leaks is None:
        return None
    more = [f"{leaks.count - LEAKS_SHOWN} more of the {role}" for role, leaks in
            (("candidate", report.leaks.candidate), ("baseline", report.leaks.baseline))
            if leaks.count > LEAKS_SHOWN]
    return f"… and {', '.join(more)} (the JSON report lists up to 1,000)" if more else None


def unanswerable_rows(report: Report) -> list[list[str]]:
    """Header, then per unanswerable query what each run did: abstained, or the items it
    returned, its top score and its leaks."""
    if not report.unanswerable:
        return []

    def side(s: UnanswerableSide) -> str:
        if s.abstained:
            return "abstained"
        top = "" if s.top_score is None else f", top {s.top_score:.4g}"
        leaks = f", {s.leaks} leaked" if s.leaks else ""
        answered = "answered: " if s.abstained is False else ""
        return f"{answered}{s.returned} items{top}{leaks}"
    rows = [["query", "baseline", "candidate", "text"]]
    rows += [[row.query, side(row.baseline), side(row.candidate), row.text]
             for row in report.unanswerable]
    return rows


def abstention_note(report: Report) -> str | None:
    """Said when a run records no abstention decision and the test set has unanswerable
    queries: returning nothing is not, by itself, a correct abstention."""
    if not report.unanswerable:
        return None
    missing = [role for role, side in (("baseline", report.unanswerable[0].baseline),
                                       ("candidate", report.unanswerable[0].candidate))
               if side.abstained is None]
    if not missing:
        return None
    return (f"the {' and the '.join(missing)} record{'s' if len(missing) == 1 else ''} no "
            "abstention decision: for the unanswerable queries below, what each run returned "
            "is shown instead (returning nothing is not, by itself, a correct abstention; "
            'record "abstained" per query to measure Abstain and FalseAbstain)')


def _at(rank: int | None) -> str:
    return "not retrieved" if rank is None else f"#{rank}"


def instead_lines(report: Report) -> list[tuple[str, str, str]]:
    """Per query shown: (query, its relevant evidence ``unit (grade g): #1 → not retrieved``
    joined with ``; ``, the candidate's top items ``#1 item "snippet"`` joined with ``; ``)."""
    out = []
    for row in report.instead:
        evidence = "; ".join(f"{e.unit} (grade {e.grade}): {_at(e.baseline_rank)} → "
                             f"{_at(e.candidate_rank)}" for e in row.evidence) or "none"
        top = "; ".join(f"#{t.rank} {t.item}" + (f' "{t.snippet}"' if t.snippet else "")
                        for t in row.candidate_top) or "nothing"
        out.append((row.query, evidence, top))
    return out
