"""The plain-text report of ``gate check``: the verdict first, then one table row per gated
(measure, slice), then the diagnosis — what regressed and where: a cost gate's regression, the
evidence funnel, newly failing queries, largest per-query drops, what was retrieved instead —
and only then unanswerable queries, costs, warnings, the statistics and definitions.

Every string from the inputs (paths, the snapshot's name, slices, query ids and texts,
warnings) is made :func:`~retrieval_gate.core.untrusted.visible` first, so a CR, LF, U+2028
or escape sequence in it can neither break a line of the table nor forge one (a fake
``PASS: ...``); and every line is made
:func:`~retrieval_gate.core.untrusted.command_safe`, so none is a GitHub workflow command."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from retrieval_gate.core.untrusted import command_safe, visible
from retrieval_gate.decide.policy import GatePolicy, Labels, labels, nothing_gated
from retrieval_gate.gating.outcome import Comparison, QueryChange, Report, RunSummary
from retrieval_gate.report.sections import (
    abstention_note,
    cost_first,
    cost_notes,
    cost_table,
    funnel_table,
    holm_phrase,
    instead_lines,
    leak_rows,
    leak_summary,
    leaks_not_shown,
    lost_at,
    next_step,
    queries_needed,
    score_lines,
    timed_on,
    unanswerable_rows,
)

__all__ = ["chunkings", "deciding_bound", "decision_cell", "decision_reason", "headline",
           "in_words", "mean_cell", "p_value", "report_text", "signed", "undecided"]

_SHOWN = 10  # queries listed per section


def headline(report: Report) -> tuple[str, str]:
    """(status word, one-sentence explanation) of the verdict."""
    def named(decision: str) -> str:
        return ", ".join(f"{c.measure} ({c.slice})" for c in report.comparisons
                         if c.decision == decision and c.gating)
    if report.verdict == "regression":
        costs = [f"{r.metric} {r.stat}" for r in report.costs if r.decision == "regression"]
        where = ", ".join(filter(None, [named("regression"), *costs]))
        lost = lost_at(report)
        found = f"material regression in {where}" + (f"; {lost}" if lost else "")
        if "leak" in report.reasons:
            leaks = f"leak: {leak_summary(report)}"
            return "REGRESSION", leaks + (f"; and {found}" if where else "")
        return "REGRESSION", found
    if report.verdict == "inconclusive":
        if report.gated_nothing:
            return "INCONCLUSIVE", f"nothing was gated — {nothing_gated(report.comparisons)}"
        zero = (f"both runs score 0 on every query of {', '.join(report.scored_nothing)}: "
                "neither retrieved anything the judgments count, so nothing is certified"
                if report.scored_nothing else None)
        costs = [f"can't tell whether {r.metric} {r.stat} grew by more than the gate allows"
                 + (f" — {r.n} queries, and at least {r.min_queries} are needed to certify it"
                    if r.min_queries is not None and r.n < r.min_queries else "")
                 for r in report.costs if r.decision == "inconclusive"]
        return "INCONCLUSIVE", "; ".join([*([zero] if zero else []),
                                          *(undecided(c) for c in report.comparisons
                                            if c.decision == "inconclusive" and c.gating
                                            and c.measure not in report.scored_nothing),
                                          *costs])
    if report.unchanged and report.verdict == "pass":
        return "PASS", ("nothing changed: the candidate scores exactly as the baseline on "
                        "every measure of every query")
    improved = ", ".join(f"{c.measure} ({c.slice})" for c in report.comparisons
                         if c.improvement and c.gating)
    if not report.gates_a_measure:  # only cost gates decided
        passed = ", ".join(f"{r.metric} {r.stat}" for r in report.costs if r.decision == "pass")
        return "PASS", (f"the cost gates pass ({passed}); no measure was gated — "
                        f"{nothing_gated(report.comparisons)}")
    return "PASS", "no material regression" + (f"; improved: {improved}" if improved else "")


def undecided(c: Comparison) -> str:
    """What an inconclusive comparison means, in words: ``can't rule out a drop larger than
    0.03 on Recall@5 (all) — this test set would need about 310 queries to decide``."""
    change = "a rise" if c.lower_is_better else "a drop"
    what = f"can't rule out {change} larger than {c.margin:g} on {c.measure} ({c.slice})"
    if c.decision_note:
        return f"{what} — {c.decision_note}"
    needed = queries_needed(c)
    if needed is None:
        return what
    if needed <= c.n:
        return f"{what} — the difference is too close to the margin to tell"
    return f"{what} — this test set would need about {needed:,} queries to decide"


def in_words(c: Comparison) -> str:
    """The sign test's counts in words: ``85 better, 24 worse, 116 same``."""
    return f"{c.wins} better, {c.losses} worse, {c.ties} same"


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


def decision_cell(c: Comparison, policy: GatePolicy | None = None) -> str:
    """The decision cell: ``pass, improved``; ``report-only: regression``; ``too small``;
    with the ``policy``, an inconclusive decision with its :func:`decision_reason`:
    ``inconclusive (sign test p 0.144)``."""
    if c.too_small:
        return "too small to decide"
    why = None if policy is None else decision_reason(c, policy)
    word = c.decision + (", improved" if c.improvement else "") + (f" ({why})" if why else "")
    return f"report-only: {word}" if c.report_only else word


def deciding_bound(c: Comparison) -> str:
    """The bound the regression rule compares (``ci_high_adjusted``, the family-adjusted
    studentized bound), as it reads against Δ: ``≤ −0.0101`` — Δ is at most that, and a
    regression needs it below 0 (below −margin under the interval rule). For a measure where
    lower is better it bounds the turned difference, so it is shown as the bound on the rise:
    ``≥ +0.0050``, and a regression needs it above 0. A bound far outside any difference of
    two scores — the studentized bound of a few discordant queries, whose resamples mostly
    have no spread — is ``unbounded``: it bounds nothing."""
    value = -c.ci_high_adjusted + 0.0 if c.lower_is_better else c.ci_high_adjusted
    if abs(value) >= UNBOUNDED:
        return "unbounded"
    return ("≥ " if c.lower_is_better else "≤ ") + signed(value)


UNBOUNDED = 1e3  # a bound this far from 0 bounds no difference of two scores in [0, 1]


def decision_reason(c: Comparison, policy: GatePolicy) -> str | None:
    """Why an inconclusive comparison is not a regression, in a short phrase, when the interval
    shown does not say so: too few queries (``n < 25``); or, with the interval wholly on the
    worse side of 0, the first condition of the regression rule that fails — ``Δ above
    −margin``, ``bound ≥ 0`` (the :func:`deciding_bound` shown beside it; ``≥ −margin`` under
    the interval rule), ``sign test p 0.144`` (Holm-adjusted, not below α). None for other
    decisions, and when the interval reaches 0 (it says why itself)."""
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
    interval = policy.regression_rule == "interval"
    if c.ci_high_adjusted >= (-c.margin if interval else 0.0):
        target = ("+margin" if lower else "−margin") if interval else "0"
        return f"bound {'≤' if lower else '≥'} {target}"
    if c.sign_p_holm >= policy.alpha:
        return f"sign test p {p_value(c.sign_p_holm)}"
    return None


def _table(comparisons: tuple[Comparison, ...], lab: Labels, policy: GatePolicy) -> list[str]:
    header = ["measure", "slice", "n", "baseline", "candidate", "Δ", lab.ci, lab.bound,
              "queries", "margin", "decision"]
    rows = [[c.measure, c.slice, str(c.n), mean_cell(c.baseline_mean), mean_cell(c.candidate_mean),
             signed(c.mean_diff), f"[{signed(c.ci_low)}, {signed(c.ci_high)}]",
             deciding_bound(c), in_words(c), f"{c.margin:g}", decision_cell(c, policy)]
            for c in comparisons]
    return _aligned([header, *rows], {2, 3, 4, 5})


def _aligned(rows: list[list[str]], right: set[int]) -> list[str]:
    """Rows of cells as lines of columns (``right``: right-aligned columns); none for no
    rows."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
            for row in rows]


def chunkings(report: Report, shown: Callable[[str], str]) -> str:
    """One line: the evidence unit and both runs' chunkings (``shown`` makes a chunking's name,
    which comes from a manifest, safe to print)."""
    snap = report.snapshot
    unit = snap.unit + (f" (min coverage {snap.min_coverage:g})" if snap.unit == "span" else "")
    if not report.ranked:
        return "per-query scores only: the runs have no rankings, nothing about retrieval applies"
    return (f"evidence unit {unit}; chunking: candidate "
            f"{shown(report.candidate.chunking_name())}, baseline "
            f"{shown(report.baseline.chunking_name())}")


def _queries(changes: tuple[QueryChange, ...], with_values: bool) -> list[str]:
    lines = []
    for q in changes[:_SHOWN] if not with_values else changes:
        values = (f"{q.measure}  {q.baseline:.4f} → {q.candidate:.4f} ({signed(q.diff)})  "
                  if with_values else "")
        lines.append(f"  {q.query}  {values}{q.text}".rstrip())
    if not with_values and len(changes) > _SHOWN:
        lines.append(f"  … and {len(changes) - _SHOWN} more (see the JSON report)")
    return lines


def _system(run: RunSummary, other: RunSummary) -> str:
    """``name (path)``, or the path when the manifest names no system."""
    name = visible(run.system_name(other))
    return run.path if name == run.path else f"{name} ({run.path})"


def _visible(report: Report) -> Report:
    """``report`` with every string from the inputs made :func:`visible`."""
    def change(q: QueryChange) -> QueryChange:
        return replace(q, query=visible(q.query), text=visible(q.text))
    return replace(
        report, snapshot=replace(report.snapshot, name=visible(report.snapshot.name)),
        baseline=replace(report.baseline, path=visible(report.baseline.path)),
        candidate=replace(report.candidate, path=visible(report.candidate.path)),
        comparisons=tuple(replace(c, slice=visible(c.slice)) for c in report.comparisons),
        newly_failing=tuple(map(change, report.newly_failing)),
        top_regressions=tuple(map(change, report.top_regressions)),
        warnings=tuple(map(visible, report.warnings)))


def report_text(report: Report) -> str:
    """The report, diagnosis first: the verdict, the runs, the table; then what regressed and
    where — a cost gate's regression, the evidence funnel, the newly failing queries, the
    largest per-query drops, what was retrieved instead; then the unanswerable queries, the
    costs (when no cost gate found a regression), warnings, the statistics behind the
    decisions and the definitions."""
    report = _visible(report)
    word, why = headline(report)
    snap, policy = report.snapshot, report.policy
    n_all = max((c.n for c in report.comparisons if c.slice == "all"), default=None)
    queries = f", {n_all} answerable queries" if n_all is not None else ""
    method = "BCa" if policy.bootstrap == "bca" else "percentile"
    lab = labels(policy, report.family, report.family_costs)
    costs = _costs(report)
    lines = [
        f"{word}: {why} (exit {report.exit_code})",
        f"Next: {visible(next_step(report))}",
        (f"candidate {_system(report.candidate, report.baseline)} vs baseline "
         f"{_system(report.baseline, report.candidate)}"),
        f"snapshot {snap.name} ({snap.fingerprint}){queries}",
        chunkings(report, visible),
        *([f"Leaks: {visible(summary)}"] if (summary := leak_summary(report)) else []),
        *(f"  {line}" for line in _aligned([[visible(c) for c in row]
                                             for row in leak_rows(report)], {2})),
        *([f"  {more}"] if (more := leaks_not_shown(report)) else []),
        (f"paired per query; {policy.resamples} {method} bootstrap resamples (seed "
         f"{policy.seed}), {lab.intervals}, {holm_phrase(report)}"),
        "",
        *_table(report.comparisons, lab, policy),
        "",
        *(costs if cost_first(report) else []),
    ]
    if report.funnel is not None:
        lines.append(f"Evidence funnel ({report.funnel.units} relevant units of the answerable "
                     "queries; where each was lost first):")
        lines.extend(f"  {line}" for line in _aligned(
            [[visible(cell) for cell in row] for row in funnel_table(report.funnel)], {1, 2, 3}))
    if report.ranked:
        lines.append(f"Newly failing queries ({report.hit_measure} = 1 in the baseline, 0 in "
                     f"the candidate): {len(report.newly_failing)}")
        lines.extend(_queries(report.newly_failing, with_values=False))
    if report.top_regressions:
        lines.append("Largest per-query drops:")
        lines.extend(_queries(report.top_regressions, with_values=True))
    if report.instead:
        lines.append("What was retrieved instead (relevant evidence: baseline rank → candidate "
                     "rank; the candidate's first items):")
        for query, evidence, top in instead_lines(report):
            lines.append(f"  {visible(query)}  relevant: {visible(evidence)}")
            lines.append(f"  {' ' * len(visible(query))}  candidate's top: {visible(top)}")
    unanswered = unanswerable_rows(report)
    if unanswered:
        note = abstention_note(report)
        lines.append("Unanswerable queries" + (f" ({note})" if note else "") + ":")
        lines.extend(f"  {line}" for line in _aligned(
            [[visible(c) for c in row] for row in unanswered], set()))
    if not cost_first(report):
        lines.extend(costs)
    if report.warnings:
        lines.append("Warnings:")
        lines.extend(f"  - {w}" for w in report.warnings)
    if not report.unchanged:
        lines.append(f"Detectable drop ({lab.power}): " + ", ".join(
            f"{c.measure} ({c.slice}) {'undefined (n < 2)' if c.mde is None else f'{c.mde:.4f}'}"
            for c in report.comparisons))
    lines.append("Sign test, one-sided toward a regression, p (Holm-adjusted): " + ", ".join(
        f"{c.measure} ({c.slice}) {p_value(c.sign_p)} ({p_value(c.sign_p_holm)})"
        for c in report.comparisons))
    lines.append("Definitions:")
    lines.extend(f"  {m.describe(snap.policy.threshold)}" for m in snap.measures)
    lines.extend(f"  {visible(line)}" for line in score_lines(report))
    return "".join(f"{command_safe(line)}\n" for line in lines)


def _costs(report: Report) -> list[str]:
    """The cost section: its header, with where the latencies were timed, and its table (no
    line without costs)."""
    costs = cost_table(report)
    if not costs:
        return []
    where = timed_on(report, visible)
    return [("Cost (paired over the queries both runs record" + (f"; {where}" if where else "")
             + "):"), *(f"  {line}" for line in _aligned(costs, {1, 2, 3, 4})),
            *(f"  note: {visible(note)}" for note in cost_notes(report))]
