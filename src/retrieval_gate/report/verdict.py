"""The verdict in the words every report starts with: the status word and its one-sentence
explanation (:func:`headline`), the one line that says what to do next (:func:`next_step`),
the evidence unit and chunkings; and, for a gate that could not decide, its verdict and next
step. Sentences hold text from the inputs (slices, ids, paths) as is; each renderer makes them
safe."""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable

from retrieval_gate.core.errors import EXIT_INVALID, EXIT_NOT_COMPARABLE, InputError
from retrieval_gate.gating.cut_spans import distrusted_pass, favoured
from retrieval_gate.gating.outcome import Comparison, Report
from retrieval_gate.report.cells import cost_name, counted, named, nothing_gated
from retrieval_gate.report.sections import cost_detail, leak_summary
from retrieval_gate.scoring.measures import parse_measure

__all__ = ["ERRORS_SHOWN", "chunkings", "error_lines", "error_verdict", "failure_step",
           "headline", "lost_at", "next_step", "queries_needed", "undecided"]


def headline(report: Report) -> tuple[str, str]:
    """(status word, one-sentence explanation) of the verdict."""
    if report.verdict == "regression":
        return "REGRESSION", _regression(report)
    if report.verdict == "inconclusive":
        return "INCONCLUSIVE", _inconclusive(report)
    return "PASS", _passed(report)


def _gating(report: Report, decision: str) -> str:
    """The gating comparisons of ``decision``, named and joined with commas."""
    return ", ".join(named(c) for c in report.comparisons if c.decision == decision and c.gating)


def _regression(report: Report) -> str:
    costs = [cost_name(r) for r in report.costs if r.decision == "regression"]
    where = ", ".join(filter(None, [_gating(report, "regression"), *costs]))
    lost = lost_at(report)
    found = f"material regression in {where}" + (f"; {lost}" if lost else "")
    if "leak" in report.reasons:
        leaks = f"leak: {leak_summary(report)}"
        return leaks + (f"; and {found}" if where else "")
    return found


def _inconclusive(report: Report) -> str:
    if report.gated_nothing:
        return f"nothing was gated — {nothing_gated(report.comparisons)}"
    zero = (f"both runs score 0 on every query of {', '.join(report.scored_nothing)}: "
            "neither retrieved anything the judgments count, so nothing is certified"
            if report.scored_nothing else None)
    costs = [f"can't tell whether {cost_name(r)} grew by more than the gate allows"
             + (f" — {r.n} queries, and at least {r.min_queries} are needed to certify it"
                if r.min_queries is not None and r.n < r.min_queries else "")
             for r in report.costs if r.decision == "inconclusive"]
    return "; ".join([*([zero] if zero else []),
                      *(undecided(c) for c in report.comparisons
                        if c.decision == "inconclusive" and c.gating
                        and c.measure not in report.scored_nothing),
                      *costs])


def _passed(report: Report) -> str:
    if report.unchanged:
        return ("nothing changed: the candidate scores exactly as the baseline on every measure "
                "of every query")
    if not report.gates_a_measure:  # only cost gates decided
        passed = ", ".join(cost_name(r) for r in report.costs if r.decision == "pass")
        return (f"the cost gates pass ({passed}); no measure was gated — "
                f"{nothing_gated(report.comparisons)}")
    improved = ", ".join(named(c) for c in report.comparisons if c.improvement and c.gating)
    return "no material regression" + (f"; improved: {improved}" if improved else "")


def undecided(c: Comparison) -> str:
    """What an inconclusive comparison means, in words: ``can't rule out a drop larger than
    0.03 on Recall@5 (all) — this test set would need about 310 queries to decide``."""
    change = "a rise" if c.lower_is_better else "a drop"
    what = (f"can't trust the pass on {named(c)}" if distrusted_pass(c) else
            f"can't rule out {change} larger than {c.margin:g} on {named(c)}")
    if c.decision_note:
        return f"{what} — {c.decision_note}"
    needed = queries_needed(c)
    if needed is None:
        return what
    if needed <= c.n:
        return f"{what} — the difference is too close to the margin to tell"
    return f"{what} — this test set would need about {needed:,} queries to decide"


def chunkings(report: Report, shown: Callable[[str], str]) -> str:
    """One line: the evidence unit and both runs' chunkings (``shown`` makes a chunking's name,
    which comes from a manifest, safe to print); for runs of per-query scores only, that
    nothing about retrieval applies."""
    if not report.ranked:
        unranked = [role for role, run in (("baseline", report.baseline),
                                           ("candidate", report.candidate)) if not run.ranked]
        who = ("the runs have no rankings" if len(unranked) == 2 else
               f"the {unranked[0]} has no ranking")
        return f"per-query scores only: {who}, so nothing about retrieval is compared"
    snap = report.snapshot
    unit = snap.unit + (f" (min coverage {snap.min_coverage:g})" if snap.unit == "span" else "")
    return (f"evidence unit {unit}; chunking: candidate "
            f"{shown(report.candidate.chunking_name())}, baseline "
            f"{shown(report.baseline.chunking_name())}")


def lost_at(report: Report) -> str | None:
    """For a regression, where the candidate lost the evidence: ``evidence lost: dropped at
    packing (context), 8 → 30 of 120 units``; else None."""
    funnel = report.funnel
    if report.verdict != "regression" or funnel is None or funnel.worst is None:
        return None
    worst = funnel.worst
    return (f"evidence lost: {worst.label}, {worst.baseline} → {worst.candidate} of "
            f"{funnel.units} units")


def queries_needed(c: Comparison) -> int | None:
    """About how many queries would decide comparison ``c``: the detectable drop shrinks as
    1/√n, so n × (detectable drop / margin)². A count of at most n means the difference lies
    too close to the margin for more queries of this kind to tell (the callers say so); None
    without a detectable drop (n < 2) or a margin, and when no test set could hold them (a
    margin far below the detectable drop)."""
    if c.mde is None or c.margin <= 0 or c.n == 0:
        return None
    try:
        needed = c.n * (c.mde / c.margin) ** 2
    except OverflowError:  # a margin of 1e-200: no test set could decide
        return None
    return math.ceil(needed) if needed < 1e15 else None


# --------------------------------------------------------------------------------------------
# What to do next


def next_step(report: Report) -> str:
    """What to do next, in one line fitted to the verdict: the leaks first; then runs whose
    ids the judgments never count, span judgments cut by one run's chunking, and regressions
    that rest on unjudged items (another unit's ids, or items to judge); for a
    regression, the stage that lost the evidence, else the diagnosis below; with a pool-bias
    warning, judging the candidate's unjudged items; then a cost gate's regression; for an
    inconclusive verdict, how many queries would decide it; for a pass, nothing."""
    for step in _STEPS:
        advice = step(report)
        if advice is not None:
            return advice
    return "nothing to do"


def _leaking(report: Report) -> str | None:
    leaks = report.leaks
    if leaks is None or not (leaks.fails or leaks.candidate.count):
        return None
    who = "candidate" if leaks.candidate.count else "baseline"
    return f"fix the permission filter: the {who} returns items its askers may not see"


def _scored_nothing(report: Report) -> str | None:
    if not report.scored_nothing:
        return None
    return (f"check that the runs' item ids are the ids the judgments name (documents of the "
            f"corpus, or chunks of the judged chunking): both runs score 0 on every query of "
            f"{', '.join(report.scored_nothing)}")


def _credited_nothing(report: Report) -> str | None:
    names = [c.measure for c in report.comparisons
             if c.decision_note is not None and "the judge credited nothing" in c.decision_note]
    if not names:
        return None
    return (f"check the score files: both runs score 0 on every query of "
            f"{', '.join(dict.fromkeys(names))} (a judge that failed writes null, not 0)")


def _spans_cut(report: Report) -> str | None:
    runs = favoured(report.spans_cut, (report.baseline.chunking, report.candidate.chunking))
    if not runs:  # one chunking cut them for both runs: it favours neither
        return None
    whose = ("both runs' chunkings cut them, each where it is favoured" if len(runs) == 2
             else f"the {runs[0]}'s chunking cut them, so the comparison favours it")
    return ("narrow the span judgments to their evidence before trusting this comparison "
            f"(gate qrels to-spans --evidence): {whose}")


def _regressed(report: Report) -> list[Comparison]:
    return [c for c in report.comparisons if c.gating and c.decision == "regression"]


def _lost_stage(report: Report) -> str | None:
    worst = None if report.funnel is None else report.funnel.worst
    if not _regressed(report) or worst is None or worst.diff <= 0:
        return None
    return (f"look at stage {worst.kind.split(':')[0]}: it lost {worst.diff} more "
            f"{'unit' if worst.diff == 1 else 'units'}")


def _pool_bias(report: Report) -> str | None:
    if not report.pool_bias:
        return None
    return "judge the candidate's unjudged items first: " + _pool_export(report)


def _rests_on_unjudged(report: Report) -> str | None:
    found = [u for u in report.unjudged if u.depends]
    if not found:
        return None
    if any(u.other_unit for u in found):
        return ("check the evidence unit: the candidate's unjudged items look like pieces of "
                "judged units under other names (another chunking?) — pin the corpus so that "
                "the runs' ids are checked, or turn the judgments into spans (gate qrels "
                "to-spans)")
    first = found[0]
    stage = parse_measure(first.measure).stage
    last = report.snapshot.stages[-1].name if report.snapshot.stages else None
    if stage is not None and stage != last:
        return (f"judge the candidate's unjudged items in the top {first.k} of its stage "
                f"{stage}: a regression rests on them (gate pool export reads the last stage, "
                f"{last})")
    return ("judge the candidate's unjudged items: a regression rests on them — "
            + _pool_export(report, first.k))


def _regressed_queries(report: Report) -> str | None:
    regressed = _regressed(report)
    if not regressed:
        return None
    if report.top_regressions:
        return ("the largest drops and what was retrieved instead are below"
                if report.instead else "the largest per-query drops are below")
    c = regressed[0]  # a decision (FalseAbstain), not a score per query
    return (f"look at the {counted(c.losses, 'query', 'queries')} where {c.measure} got worse "
            "(the JSON report has every query's values)")


def _costly(report: Report) -> str | None:
    costly = [row for row in report.costs if row.decision == "regression"]
    return "look at " + "; ".join(map(cost_detail, costly)) if costly else None


def _undecided(report: Report) -> str | None:
    if report.verdict == "inconclusive":
        return _ungated(report) if report.gated_nothing else _more_queries(report)
    if not report.gates_a_measure:  # a pass of the cost gates alone
        return _ungated(report)
    return None


_STEPS: tuple[Callable[[Report], str | None], ...] = (
    _leaking, _scored_nothing, _credited_nothing, _spans_cut, _rests_on_unjudged, _lost_stage,
    _pool_bias, _regressed_queries, _costly, _undecided)


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


def _pool_export(report: Report, k: int | None = None) -> str:
    """The commands that judge the candidate's unjudged items in its top ``k`` (default: the
    cutoff of the gate's newly-failing measure; paths quoted for a shell)."""
    if k is None:
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


# --------------------------------------------------------------------------------------------
# A gate that could not decide


def error_verdict(exit_code: int) -> str:
    """The verdict of a gate that could not decide (exit 2 invalid input, 3 not comparable,
    else an internal error)."""
    return {EXIT_INVALID: "invalid", EXIT_NOT_COMPARABLE: "not-comparable"}.get(exit_code,
                                                                             "error")


ERRORS_SHOWN = 50  # error lines a Markdown or HTML report shows
_ADVICE = "what to do — "  # the start of a not-comparable error's lines of advice


def error_lines(message: str) -> list[str]:
    """The lines of an error message (without its final line break)."""
    return message.rstrip("\n").split("\n")


def failure_step(message: str) -> str | None:
    """For a gate that could not decide, what to do next: the error's own advice — its ``what
    to do`` lines (not comparable), else what follows the last `` — `` of its first line
    (``FILE: problem — fix``); None when it gives none."""
    lines = error_lines(message)
    advice = [line[len(_ADVICE):] for line in lines if line.startswith(_ADVICE)]
    if advice:
        return "; ".join(advice)
    _, dash, fix = lines[0].rpartition(" — ")
    return fix if dash and fix else None
