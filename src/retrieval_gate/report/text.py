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

from collections.abc import Callable, Collection
from dataclasses import replace

from retrieval_gate.core.untrusted import command_safe, visible
from retrieval_gate.gating.outcome import QueryChange, Report, RunSummary
from retrieval_gate.report.cells import (
    Labels,
    deciding_bound,
    decision_cell,
    detectable,
    in_words,
    interval,
    labels,
    mean_cell,
    named,
    signed,
    test_p,
)
from retrieval_gate.report.sections import (
    Group,
    Table,
    abstention_note,
    cost_notes,
    cost_table,
    funnel_table,
    instead_lines,
    leak_summary,
    leak_table,
    leaks_not_shown,
    score_lines,
    signal_groups,
    statistics,
    timed_on,
    unanswerable_table,
)
from retrieval_gate.report.verdict import chunkings, headline, next_step

__all__ = ["report_text"]

_SHOWN = 10  # queries listed per section


def report_text(report: Report) -> str:
    """The report, diagnosis first: the verdict, the runs, the table; then what regressed and
    where — a cost gate's regression, the evidence funnel, the newly failing queries, the
    largest per-query drops, what was retrieved instead; then the unanswerable queries, the
    costs (when no cost gate found a regression), warnings, the statistics behind the
    decisions and the definitions (see :func:`~retrieval_gate.report.sections.signal_groups`)."""
    report = _visible(report)
    lab = labels(report.policy, report.family, report.family_costs)
    lines = [*_head(report, lab), "", *_comparisons(report, lab), "",
             *(line for group in signal_groups(report) for line in _GROUPS[group](report)),
             *_statistics(report, lab)]
    return "".join(f"{command_safe(line)}\n" for line in lines)


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


def _aligned(rows: list[list[str]], right: Collection[int]) -> list[str]:
    """Rows of cells as lines of columns (``right``: right-aligned columns); none for no
    rows."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
            for row in rows]


def _drawn(table: Table) -> list[str]:
    """A section's table, indented, every cell made visible."""
    return [f"  {line}" for line in _aligned([[visible(cell) for cell in row]
                                              for row in table.rows], table.numeric)]


def _system(run: RunSummary, other: RunSummary) -> str:
    """``name (path)``, or the path when the manifest names no system."""
    name = visible(run.system_name(other))
    return run.path if name == run.path else f"{name} ({run.path})"


def _head(report: Report, lab: Labels) -> list[str]:
    """The verdict, what to do next, the runs, the snapshot, the evidence unit, the leaks and
    the statistics."""
    word, why = headline(report)
    snap = report.snapshot
    n_all = max((c.n for c in report.comparisons if c.slice == "all"), default=None)
    queries = f", {n_all} answerable queries" if n_all is not None else ""
    return [
        f"{word}: {why} (exit {report.exit_code})",
        f"Next: {visible(next_step(report))}",
        (f"candidate {_system(report.candidate, report.baseline)} vs baseline "
         f"{_system(report.baseline, report.candidate)}"),
        f"snapshot {snap.name} ({snap.fingerprint}){queries}",
        chunkings(report, visible),
        *_leaks(report),
        statistics(report, lab),
    ]


def _leaks(report: Report) -> list[str]:
    summary = leak_summary(report)
    if summary is None:
        return []
    more = leaks_not_shown(report)
    return [f"Leaks: {visible(summary)}", *_drawn(leak_table(report)),
            *([f"  {more}"] if more else [])]


def _comparisons(report: Report, lab: Labels) -> list[str]:
    header = ["measure", "slice", "n", "baseline", "candidate", "Δ", lab.ci, lab.bound,
              "queries", "margin", "decision"]
    rows = [[c.measure, c.slice, str(c.n), mean_cell(c.baseline_mean), mean_cell(c.candidate_mean),
             signed(c.mean_diff), interval(c.ci_low, c.ci_high), deciding_bound(c),
             in_words(c), f"{c.margin:g}", decision_cell(c, report.policy)]
            for c in report.comparisons]
    return _aligned([header, *rows], {2, 3, 4, 5})


# --------------------------------------------------------------------------------------------
# The signal groups


def _costs(report: Report) -> list[str]:
    """The cost section: its header, with where the latencies were timed, its table and its
    notes (no line without costs)."""
    table = cost_table(report)
    if not table.rows:
        return []
    where = timed_on(report, visible)
    return [("Cost (paired over the queries both runs record" + (f"; {where}" if where else "")
             + "):"), *_drawn(table),
            *(f"  note: {visible(note)}" for note in cost_notes(report))]


def _funnel(report: Report) -> list[str]:
    if report.funnel is None:
        return []
    return [(f"Evidence funnel ({report.funnel.units} relevant units of the answerable "
             "queries; where each was lost first):"), *_drawn(funnel_table(report.funnel))]


def _newly_failing(report: Report) -> list[str]:
    if not report.ranked:
        return []
    failing = report.newly_failing
    more = len(failing) - _SHOWN
    return [(f"Newly failing queries ({report.hit_measure} = 1 in the baseline, 0 in the "
             f"candidate): {len(failing)}"),
            *(f"  {q.query}  {q.text}".rstrip() for q in failing[:_SHOWN]),
            *([f"  … and {more} more (see the JSON report)"] if more > 0 else [])]


def _drops(report: Report) -> list[str]:
    if not report.top_regressions:
        return []
    return ["Largest per-query drops:",
            *(f"  {q.query}  {q.measure}  {q.baseline:.4f} → {q.candidate:.4f} "
              f"({signed(q.diff)})  {q.text}".rstrip() for q in report.top_regressions)]


def _instead(report: Report) -> list[str]:
    if not report.instead:
        return []
    lines = [("What was retrieved instead (relevant evidence: baseline rank → candidate rank; "
              "the candidate's first items):")]
    for query, evidence, top in instead_lines(report):
        lines.append(f"  {visible(query)}  relevant: {visible(evidence)}")
        lines.append(f"  {' ' * len(visible(query))}  candidate's top: {visible(top)}")
    return lines


def _unanswerable(report: Report) -> list[str]:
    table = unanswerable_table(report)
    if not table.rows:
        return []
    note = abstention_note(report)
    return ["Unanswerable queries" + (f" ({note})" if note else "") + ":", *_drawn(table)]


def _warnings(report: Report) -> list[str]:
    if not report.warnings:
        return []
    return ["Warnings:", *(f"  - {w}" for w in report.warnings)]


def _scores(report: Report) -> list[str]:
    return []  # the gated per-query scores are listed with the definitions


_GROUPS: dict[Group, Callable[[Report], list[str]]] = {
    "costs": _costs, "funnel": _funnel, "newly failing": _newly_failing, "drops": _drops,
    "instead": _instead, "scores": _scores, "unanswerable": _unanswerable,
    "warnings": _warnings}


def _statistics(report: Report, lab: Labels) -> list[str]:
    """The detectable drops, the sign tests, the definitions of the measures and what the
    gated per-query scores are."""
    detectable_drops = ([] if report.unchanged else [
        f"Detectable drop ({lab.power}): "
        + ", ".join(f"{named(c)} {detectable(c)}" for c in report.comparisons)])
    return [*detectable_drops,
            f"{lab.p_about}: "
            + ", ".join(f"{named(c)} {test_p(c, report.policy)}" for c in report.comparisons),
            "Definitions:",
            *(f"  {m.describe(report.snapshot.policy.threshold)}"
              for m in report.defined),
            *(f"  {visible(line)}" for line in score_lines(report))]
