"""What every renderer shows in the same words: the evidence funnel and the costs as rows of
cells, the leaks, the unanswerable queries, what was retrieved instead, and the one line that
says what to do next. Cells and sentences hold text from the inputs (stage names, ids, paths)
as is; each renderer makes them safe."""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable

from retrieval_gate.core.errors import InputError
from retrieval_gate.decide.cost import CostRow
from retrieval_gate.decide.policy import percent
from retrieval_gate.gating.outcome import Comparison, FunnelReport, Report, UnanswerableSide
from retrieval_gate.scoring.measures import parse_measure

__all__ = ["abstention_note", "cost_detail", "cost_first", "cost_notes", "cost_rule",
           "cost_table", "failure_step", "funnel_table", "holm_phrase", "instead_lines",
           "leak_rows", "leak_summary", "leaks_not_shown", "lost_at", "next_step",
           "queries_needed", "timed_on", "unanswerable_rows"]


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
        decision = ("too small to decide" if row.too_small else "-" if row.decision is None
                    else row.decision + (", improved" if row.improvement else ""))
        rows.append([f"{row.metric} {row.stat}", str(row.n), _value(row, row.baseline),
                     _value(row, row.candidate),
                     "-" if row.ratio is None else f"×{row.ratio:.3f}", interval,
                     "-" if row.gate is None else row.gate.describe(), decision])
    return rows


def holm_phrase(report: Report) -> str:
    """The sign test's multiplicity in words: ``sign test with Holm across 3 comparisons``,
    or what there is to adjust when the family holds one comparison or none."""
    n = report.holm_family
    if n > 1:
        return f"sign test with Holm across {n} comparisons"
    return f"sign test, {'one comparison' if n else 'no comparison'} in the family (no Holm)"


def cost_first(report: Report) -> bool:
    """Whether a cost gate found a regression: the cost section is then part of the diagnosis,
    shown straight after the comparisons; otherwise it comes with the rest."""
    return any(row.decision == "regression" for row in report.costs)


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
    """One line per cost row with a note: ``latency_ms p95: p95 of 25 queries lies between
    its 3rd-slowest and its 2nd-slowest: at least 50 queries are needed to certify it; …``."""
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


def queries_needed(c: Comparison) -> int | None:
    """About how many queries would decide comparison ``c``: the detectable drop shrinks as
    1/√n, so n × (detectable drop / margin)². A count of at most n means the difference lies
    too close to the margin for more queries of this kind to tell (the callers say so); None
    without a detectable drop (n < 2) or a margin."""
    if c.mde is None or c.margin <= 0 or c.n == 0:
        return None
    return math.ceil(c.n * (c.mde / c.margin) ** 2)


def next_step(report: Report) -> str:
    """What to do next, in one line fitted to the verdict: the leaks first; then runs whose
    ids the judgments never count, and span judgments cut by one run's chunking; for a
    regression, the stage that lost the evidence, else the diagnosis below; with a pool-bias
    warning, judging the candidate's unjudged items; for an inconclusive verdict, how many
    queries would decide it; for a pass, nothing."""
    leaks = report.leaks
    if leaks is not None and (leaks.fails or leaks.candidate.count):
        who = "candidate" if leaks.candidate.count else "baseline"
        return f"fix the permission filter: the {who} returns items its askers may not see"
    if report.scored_nothing:
        return (f"check that the runs' item ids are the ids the judgments name (documents of "
                f"the corpus, or chunks of the judged chunking): both runs score 0 on every "
                f"query of {', '.join(report.scored_nothing)}")
    if len(report.spans_cut) == 1:  # cut by both runs' chunking, it favours neither
        return (f"narrow the span judgments to their evidence before trusting this comparison "
                f"(gate qrels to-spans --evidence): the {report.spans_cut[0]}'s chunking cut "
                "them, so the comparison favours it")
    regressed = [c for c in report.comparisons if c.gating and c.decision == "regression"]
    worst = None if report.funnel is None else report.funnel.worst
    if regressed and worst is not None and worst.diff > 0:
        return (f"look at stage {worst.kind.split(':')[0]}: it lost {worst.diff} more "
                f"{'unit' if worst.diff == 1 else 'units'}")
    if report.pool_bias:
        return "judge the candidate's unjudged items first: " + _pool_export(report)
    if regressed:
        if report.top_regressions:
            return ("the largest drops and what was retrieved instead are below"
                    if report.instead else "the largest per-query drops are below")
        c = regressed[0]  # a decision (FalseAbstain), not a score per query
        return (f"look at the {c.losses} {'query' if c.losses == 1 else 'queries'} where "
                f"{c.measure} got worse (the JSON report has every query's values)")
    costly = [row for row in report.costs if row.decision == "regression"]
    if costly:
        return "look at " + "; ".join(map(cost_detail, costly))
    if report.verdict == "inconclusive":
        return _ungated(report) if report.gated_nothing else _more_queries(report)
    if not report.gates_a_measure:  # a pass of the cost gates alone
        return _ungated(report)
    return "nothing to do"


def _ungated(report: Report) -> str:
    """When nothing was gated: the queries the gate most short of its own min-queries needs,
    else (every gate report-only) a gate that decides."""
    small = [c for c in report.comparisons if c.too_small and not c.report_only]
    if not small:
        return "gate a measure: every gate is report-only (drop report-only from one)"
    c = max(small, key=lambda c: (c.min_queries or 0) - c.n)
    where = "" if c.slice == "all" else f" to slice {c.slice}"
    return (f"add queries{where}: its gate of {c.measure} needs at least {c.min_queries:,} "
            f"(it has {c.n:,}), or lower that gate's min-queries")


def _pool_export(report: Report) -> str:
    """The commands that judge the candidate's unjudged items (paths quoted for a shell)."""
    try:
        k = parse_measure(report.hit_measure).k
    except InputError:
        k = None
    return (f"gate pool export --snapshot {shlex.quote(report.snapshot.source)} --candidate "
            f"{shlex.quote(report.candidate.path)} --baseline {shlex.quote(report.baseline.path)}"
            f"{'' if k is None else f' -k {k}'} -o pool.jsonl, then gate pool merge")


def _more_queries(report: Report) -> str:
    """For an inconclusive verdict: how many queries would decide every undecided comparison —
    min-queries for one with fewer, else :func:`queries_needed` — or why more queries would
    not."""
    undecided = [c for c in report.comparisons if c.gating and c.decision == "inconclusive"]
    if not undecided:  # only a cost is undecided
        return "add queries: the cost's interval still straddles its gate"
    least = report.policy.min_queries
    asks = [(least if c.n < least else queries_needed(c), c) for c in undecided]
    deciding = [(n, c) for n, c in asks if n is not None and n > c.n]
    if not deciding:
        return ("the difference lies too close to the margin for more queries to tell: look at "
                "the largest drops below")
    most, c = max(deciding, key=lambda pair: pair[0])
    where = "" if c.slice == "all" else f" to slice {c.slice}"
    if c.n < least:
        return f"add queries{where}: at least {most:,} are needed to certify anything"
    return f"add queries{where}: about {most:,} would decide it"


ADVICE = "what to do — "  # the start of a not-comparable error's lines of advice


def failure_step(message: str) -> str | None:
    """For a gate that could not decide, what to do next: the error's own advice — its ``what
    to do`` lines (not comparable), else what follows the last `` — `` of its first line
    (``FILE: problem — fix``); None when it gives none."""
    lines = message.rstrip("\n").split("\n")
    advice = [line[len(ADVICE):] for line in lines if line.startswith(ADVICE)]
    if advice:
        return "; ".join(advice)
    _, dash, fix = lines[0].rpartition(" — ")
    return fix if dash and fix else None


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
                  f"{s.failed[1]} — missing = {s.missing}: {s.pairs} "
                  f"{'query' if s.pairs == 1 else 'queries'} "
                  f"{'left out' if s.missing == 'drop-pair' else 'scored as the worst value'}")
        harm = ", lower is better" if s.lower_is_better else ""
        lines.append(f"{s.name}: {kind}{harm}; {samples}{spread}{failed}")
    for role, file, tool, judge in zip(("baseline", "candidate"), answers.files, answers.tools,
                                       answers.judges):
        who = ", ".join(f"{k}={v}" for k, v in judge.items()) or "no judge recorded"
        lines.append(f"{role} scores: {file} ({tool}); {who}")
    return lines
