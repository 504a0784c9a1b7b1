"""What every renderer shows in the same words, grouped by kind of signal: the leaks, the costs,
the evidence funnel and the unanswerable queries as :class:`Table`\\ s (each declaring once
which of its columns are numbers and how much of a value from the inputs a cell shows), the
sentences around them, and the order of the groups after the comparisons
(:func:`signal_groups`). Cells and sentences hold text from the inputs (stage names, ids, paths)
as is; each renderer makes them safe."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from retrieval_gate.decide.cost import CostRow
from retrieval_gate.gating.outcome import FunnelReport, Report, UnanswerableSide
from retrieval_gate.report.cells import (
    Labels,
    bootstrap_name,
    cost_decision,
    cost_name,
    cost_value,
    counted,
    percent,
    ratio,
    ratio_interval,
)
from retrieval_gate.report.safe import LINE, NAME, TEXT

__all__ = ["LEAKS_SHOWN", "Group", "Table", "abstention_note", "cost_detail", "cost_first",
           "cost_notes", "cost_rule", "cost_table", "funnel_table", "holm_phrase",
           "instead_lines", "leak_summary", "leak_table", "leaks_not_shown", "score_lines",
           "signal_groups", "statistics", "timed_on", "unanswerable_table"]

LEAKS_SHOWN = 10  # leaks listed in a report; the JSON report lists up to 1,000


@dataclass(frozen=True)
class Table:
    """A table of a report: ``rows`` of cells, the header first (none: no table); the
    ``numeric`` columns, aligned right; and per column, ``limits``: how many characters of a
    value from the inputs a renderer that cuts long values shows (None: a cell the gate made,
    shown whole and as it is)."""

    rows: tuple[tuple[str, ...], ...]
    numeric: frozenset[int]
    limits: tuple[int | None, ...]


Group = Literal["costs", "funnel", "newly failing", "drops", "instead", "scores",
                "unanswerable", "warnings"]


def signal_groups(report: Report) -> tuple[Group, ...]:
    """The groups of signals after the comparisons, in the order the reports list them: the
    diagnosis first — a cost gate's regression (:func:`cost_first`), the evidence funnel, the
    newly failing queries, the largest per-query drops, what was retrieved instead — then the
    gated per-query scores, the unanswerable queries, the costs when no cost gate found a
    regression, and the warnings. A renderer shows what each group holds, nothing for an empty
    one."""
    first = cost_first(report)
    return (*(("costs",) if first else ()), "funnel", "newly failing", "drops", "instead",
            "scores", "unanswerable", *(() if first else ("costs",)), "warnings")


def statistics(report: Report, lab: Labels) -> str:
    """The statistics behind the decisions in one phrase: ``paired per query; 10000 BCa
    bootstrap resamples (seed 0), 95% intervals (…), sign test with Holm across 2
    comparisons``."""
    policy = report.policy
    return (f"paired per query; {policy.resamples} {bootstrap_name(policy)} bootstrap resamples "
            f"(seed {policy.seed}), {lab.intervals}, {holm_phrase(report)}")


def holm_phrase(report: Report) -> str:
    """The regression test's p-values and their multiplicity in words. Test ``holm``:
    ``regression p from the paired t-test and the studentized bootstrap, Holm across 3
    comparisons``, and with relative cost gates in the family ``… Holm across 4 members (3
    comparisons, 1 cost gate)``; test ``bonferroni``: ``sign test with Holm across 3
    comparisons``; or what there is to adjust when the family holds one member or none."""
    n, m = report.holm_family, report.family
    holm = report.policy.regression_test == "holm"
    test = ("regression p from the paired t-test and the studentized bootstrap" if holm
            else "sign test")
    costs = m - n
    if holm and costs > 0:
        gates = f"{costs} cost {'gate' if costs == 1 else 'gates'}"
        if m == 1:
            return f"{test}, one cost gate in the family (no Holm)"
        if n == 0:
            return f"{test}, Holm across {gates}"
        return (f"{test}, Holm across {m} members ({n} "
                f"{'comparison' if n == 1 else 'comparisons'}, {gates})")
    if n > 1:
        return f"{test}{',' if holm else ' with'} Holm across {n} comparisons"
    return f"{test}, {'one comparison' if n else 'no comparison'} in the family (no Holm)"


# --------------------------------------------------------------------------------------------
# The evidence funnel


def funnel_table(funnel: FunnelReport) -> Table:
    """Header, then a row per stage (units reaching it) and per loss kind (units lost so):
    baseline, candidate, difference."""
    rows = [("evidence units", "baseline", "candidate", "Δ")]
    for (_, base, cand), described in zip(funnel.reaching, funnel.stages):
        rows.append((f"reach {described}", str(base), str(cand), f"{cand - base:+d}"))
    rows += [(f"lost: {row.label}", str(row.baseline), str(row.candidate), f"{row.diff:+d}")
             for row in funnel.losses]
    return Table(tuple(rows), frozenset({1, 2, 3}), (LINE, None, None, None))


# --------------------------------------------------------------------------------------------
# Costs


def cost_first(report: Report) -> bool:
    """Whether a cost gate found a regression: the cost section is then part of the diagnosis,
    shown straight after the comparisons; otherwise it comes with the rest."""
    return any(row.decision == "regression" for row in report.costs)


def cost_table(report: Report) -> Table:
    """Header, then a row per cost statistic: n, both values, the ratio and its interval, the
    gate and the decision (no rows without costs)."""
    rows = [(cost_name(row), str(row.n), cost_value(row, row.baseline),
             cost_value(row, row.candidate), "-" if row.ratio is None else ratio(row.ratio),
             ratio_interval(row) or "-", "-" if row.gate is None else row.gate.describe(),
             cost_decision(row)) for row in report.costs]
    header = ("cost", "n", "baseline", "candidate", "ratio",
              f"{percent(1 - report.policy.alpha)}% CI", "gate", "decision")
    return Table((header, *rows) if rows else (), frozenset({1, 2, 3, 4}),
                 (NAME, *[None] * 7))


def cost_detail(row: CostRow) -> str:
    """One gated cost in a sentence: ``latency_ms p95: 12.1 → 18.4 (×1.52, 95% CI [×1.40,
    ×1.66]), gate ≤ +20%, n = 89``."""
    shown = "no ratio" if row.ratio is None else ratio(row.ratio)
    interval = ratio_interval(row)
    within = f", interval {interval}" if interval else ""
    gate = "" if row.gate is None else f", gate {row.gate.describe()}"
    return (f"{cost_name(row)}: {cost_value(row, row.baseline)} → "
            f"{cost_value(row, row.candidate)} ({shown}{within}){gate}, n = {row.n}"
            + (f" — {row.note}" if row.note else ""))


def cost_notes(report: Report) -> list[str]:
    """One line per cost row with a note: ``latency_ms p95: p95 of 25 queries lies between
    its 3rd-slowest and its 2nd-slowest: at least 50 queries are needed to certify it; …``."""
    return [f"{cost_name(row)}: {row.note}" for row in report.costs if row.note]


def timed_on(report: Report, shown: Callable[[str], str]) -> str | None:
    """Where the runs' latencies were timed, as a phrase of the cost section's header — both in
    one place, in two, in one recorded place, or nowhere recorded; None when no cost shown is a
    latency. ``shown`` makes a place (from a manifest) safe to print; it is quoted."""
    if not any(row.metric == "latency_ms" for row in report.costs):
        return None
    base, cand = report.baseline.timed_on or None, report.candidate.timed_on or None
    if base is None and cand is None:
        return "neither run records where its latencies were timed"
    if base == cand:
        return f"both runs' latencies timed on “{shown(str(base))}”"
    if base is None or cand is None:
        timed, unknown = ("baseline", "candidate") if cand is None else ("candidate", "baseline")
        return (f"the {timed}'s latencies timed on “{shown(str(base or cand))}”, the "
                f"{unknown}'s place not recorded")
    return (f"latencies timed in different places: the baseline's on “{shown(base)}”, the "
            f"candidate's on “{shown(cand)}”")


def cost_rule(report: Report) -> str:
    """The cost gates' rule in one sentence, at the level of the family the decision used."""
    policy = report.policy
    shown = percent(1 - policy.alpha)
    null = "1 + max-increase" if policy.regression_rule == "interval" else "1"
    if policy.regression_test == "holm":
        significant = (f"its Holm-adjusted regression p (the ratio above {null}) < "
                       f"{policy.alpha:g}")
    else:
        family = percent(1 - policy.alpha / max(report.family, 1))
        significant = f"the low end of its {family}% interval is above {null}"
    regression = (significant if policy.regression_rule == "interval"
                  else f"the ratio ≥ 1 + max-increase and {significant}")
    return (f"a relative cost gate: regression when {regression} (a percentile: paired "
            "percentile bootstrap of the ratio; the mean: paired t-test and studentized "
            f"bootstrap of candidate − ratio × baseline); pass when the high end of the {shown}% "
            "interval is below 1 + max-increase; neither with fewer queries than its "
            "min-queries; an absolute one: pass when the candidate's statistic is at most max")


# --------------------------------------------------------------------------------------------
# Leaks


def leak_summary(report: Report) -> str | None:
    """One sentence on both runs' leaks (None without access data): ``the candidate returns
    489 items their askers may not see (95 queries); the baseline 0 — fails the gate``."""
    leaks = report.leaks
    if leaks is None:
        return None
    def part(count: int, queries: int) -> str:
        return (f"{counted(count, 'item', 'items')} ({counted(queries, 'query', 'queries')})"
                if count else "0")
    c, b = leaks.candidate, leaks.baseline
    outcome = ("fails the gate" if leaks.fails else
               "reported, not failing (leaks: warn)" if leaks.policy == "warn" else
               "the baseline's are reported, not failing (leaks: candidate)" if b.count else "")
    text = (f"the candidate returns {part(c.count, len(c.per_query))} its askers may not see; "
            f"the baseline {part(b.count, len(b.per_query))}")
    if b.count and not c.count:
        text += " — a pre-existing leak is still a leak"
    return text + (f" — {outcome}" if outcome and (b.count or c.count) else "")


def leak_table(report: Report) -> Table:
    """Header, then the first leaks of each run: run, query, rank (and stage), item,
    document, who may see it (no rows without a leak)."""
    rows = [] if report.leaks is None else [
        (role, leak.query, f"{leak.rank}" + (f" [{leak.stage}]" if leak.stage else ""),
         leak.item, leak.document, ", ".join(leak.allowed) or "nobody")
        for role, leaks in (("candidate", report.leaks.candidate),
                            ("baseline", report.leaks.baseline))
        for leak in leaks.rows[:LEAKS_SHOWN]]
    header = ("run", "query", "rank", "item", "document", "visible to")
    return Table((header, *rows) if rows else (), frozenset({2}), (NAME,) * 6)


def leaks_not_shown(report: Report) -> str | None:
    """``… and 479 more of the candidate (the JSON report lists up to 1,000)``, or None."""
    if report.leaks is None:
        return None
    more = [f"{leaks.count - LEAKS_SHOWN} more of the {role}" for role, leaks in
            (("candidate", report.leaks.candidate), ("baseline", report.leaks.baseline))
            if leaks.count > LEAKS_SHOWN]
    return f"… and {', '.join(more)} (the JSON report lists up to 1,000)" if more else None


# --------------------------------------------------------------------------------------------
# Unanswerable queries


def _side(s: UnanswerableSide) -> str:
    """What one run did on an unanswerable query: abstained, or the items it returned, its top
    score and its leaks."""
    if s.abstained:
        return "abstained"
    top = "" if s.top_score is None else f", top {s.top_score:.4g}"
    leaks = f", {s.leaks} leaked" if s.leaks else ""
    answered = "answered: " if s.abstained is False else ""
    return f"{answered}{s.returned} items{top}{leaks}"


def unanswerable_table(report: Report) -> Table:
    """Header, then per unanswerable query what each run did (no rows without one)."""
    rows = [(row.query, _side(row.baseline), _side(row.candidate), row.text)
            for row in report.unanswerable]
    header = ("query", "baseline", "candidate", "text")
    return Table((header, *rows) if rows else (), frozenset(), (NAME, NAME, NAME, TEXT))


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


# --------------------------------------------------------------------------------------------
# What was retrieved instead


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


# --------------------------------------------------------------------------------------------
# Per-query scores


def score_lines(report: Report) -> list[str]:
    """One line per gated per-query score: what it is (the per-query mean of the score files'
    values; a 0/1 decision's sign test is the exact McNemar test), samples per query, the
    within-query spread, failed scores and what ``missing`` did; then both files and who
    scored them. Empty without gated scores."""
    answers = report.answer_scores
    if answers is None:
        return []
    lines = []
    for s in answers.scores:
        k = [f"{low}" if low == high else f"{low}–{high}" for low, high in s.samples]
        samples = (f"{k[0]} {'sample' if k[0] == '1' else 'samples'} per query" if k[0] == k[1]
                   else f"baseline {k[0]}, candidate {k[1]} samples per query")
        spread = ("" if s.spread == (None, None) else ", within-query spread " + " / ".join(
            "–" if v is None else f"{v:.4f}" for v in s.spread) + " (baseline / candidate)")
        kind = ("a 0/1 decision per query (its sign test is the exact McNemar test)"
                if s.kind == "decision" else "the per-query mean of the score's samples")
        failed = ("" if not s.pairs else f"; failed: baseline {s.failed[0]}, candidate "
                  f"{s.failed[1]} — missing = {s.missing}: {counted(s.pairs, 'query', 'queries')} "
                  f"{'left out' if s.missing == 'drop-pair' else 'scored as the worst value'}")
        harm = ", lower is better" if s.lower_is_better else ""
        lines.append(f"{s.name}: {kind}{harm}; {samples}{spread}{failed}")
    for role, file, tool, judge in zip(("baseline", "candidate"), answers.files, answers.tools,
                                       answers.judges):
        who = ", ".join(f"{k}={v}" for k, v in judge.items()) or "no judge recorded"
        lines.append(f"{role} scores: {file} ({tool}); {who}")
    return lines
