"""The Markdown report of ``gate check``, for a pull request comment or a job summary: the status
word first, what to do next, one compact table, then the diagnosis (a cost gate's regression,
the evidence funnel, the details of what regressed in ``<details>`` blocks) before the rest;
and the Markdown form of a gate that could not decide.

Every value from the inputs is shown as text, never as markup, as GitHub renders Markdown
(see :mod:`~retrieval_gate.report.safe`): escaped in table cells and list items, as a code span
it cannot close elsewhere, HTML-escaped in ``<summary>``.

The document is cut to :data:`MAX_CHARS` characters at a line boundary (an open ``<details>``
is closed) with a note, so that it fits a pull-request comment (65,536 characters) and stays
far below GitHub's 1 MiB job-summary limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from retrieval_gate.gating.outcome import Comparison, Report, RunSummary
from retrieval_gate.report.cells import (
    bootstrap_name,
    deciding_bound,
    decision_cell,
    decision_reason,
    in_words,
    interval,
    labels,
    mean_cell,
    sentence,
    signed,
    test_p,
)
from retrieval_gate.report.safe import LINE, NAME, TEXT, markdown_code, markdown_html
from retrieval_gate.report.safe import markdown as escape
from retrieval_gate.report.sections import (
    Group,
    Table,
    abstention_note,
    cost_notes,
    cost_rule,
    cost_table,
    funnel_table,
    holm_phrase,
    instead_lines,
    leak_summary,
    leak_table,
    leaks_not_shown,
    score_lines,
    signal_groups,
    timed_on,
    unanswerable_table,
)
from retrieval_gate.report.verdict import (
    ERRORS_SHOWN,
    chunkings,
    error_lines,
    error_verdict,
    failure_step,
    headline,
    next_step,
)

__all__ = ["MARKER", "MAX_CHARS", "failure_markdown", "report_markdown"]

MARKER = "<!-- retrieval-gate report -->"
MAX_CHARS = 60_000
_SHOWN = 50  # rows per details table
_ICON = {"PASS": "✅", "REGRESSION": "❌", "INCONCLUSIVE": "⚠️"}


def report_markdown(report: Report) -> str:
    """The report as one Markdown document (see the module docstring)."""
    lines = [*_head(report), *_leaks(report), *_comparisons(report),
             *(line for group in signal_groups(report) for line in _GROUPS[group](report)),
             *_decided(report)]
    return _fit(lines)


def failure_markdown(message: str, exit_code: int) -> str:
    """For a gate that could not decide: the status word, the sentence "the gate could not
    compare the runs", what to do next (the error's own advice), the error lines escaped (at
    most :data:`~retrieval_gate.report.verdict.ERRORS_SHOWN`)."""
    lines = error_lines(message)
    body = _error_body(lines[:ERRORS_SHOWN])
    if len(lines) > ERRORS_SHOWN:
        body.append(f"- … and {len(lines) - ERRORS_SHOWN} more (see the job log)")
    step = failure_step(message)
    return (f"{MARKER}\n### {error_verdict(exit_code).upper()} ⛔ retrieval-gate\n\n**The gate "
            f"could not compare the runs (exit {exit_code}).**\n\n"
            + (f"**Next:** {escape(step, 2 * LINE)}.\n\n" if step else "")
            + "".join(f"{line}\n" for line in body))


def _error_body(lines: Sequence[str]) -> list[str]:
    """An error's lines as list items, but for an aligned table among them (the not-comparable
    table: consecutive lines indented by two spaces, columns two or more spaces apart, the
    first its header, every line with the same number of columns), which is drawn as a table
    with blank lines around it; lines that do not split evenly stay list items."""
    body: list[str] = []
    at = 0
    while at < len(lines):
        end = at
        while end < len(lines) and lines[end].startswith("  "):
            end += 1
        cells = [re.split(r" {2,}", line.strip()) for line in lines[at:end]]
        if end - at >= 2 and len({len(row) for row in cells}) == 1 and len(cells[0]) >= 2:
            body += ["", _row([escape(c, LINE) for c in cells[0]]),
                     "|" + "|".join("---" for _ in cells[0]) + "|",
                     *(_row([escape(c, LINE) for c in row]) for row in cells[1:]), ""]
            at = end
            continue
        body.append(f"- {escape(lines[at], LINE)}")
        at += 1
    return body


def _row(cells: Sequence[str]) -> str:
    """A table row of cells already safe as Markdown (escaped, or made by the gate)."""
    return "| " + " | ".join(cells) + " |"


def _drawn(table: Table, shown: int | None = None) -> list[str]:
    """A section's table: its header, the alignment row (numbers right), and at most ``shown``
    rows, each value from the inputs escaped and cut to its column's limit."""
    if not table.rows:
        return []
    align = "|" + "|".join("--:" if i in table.numeric else "---"
                           for i in range(len(table.limits))) + "|"
    body = table.rows[1:] if shown is None else table.rows[1:shown + 1]
    return [_row(table.rows[0]), align,
            *(_row([cell if limit is None else escape(cell, limit)
                    for cell, limit in zip(row, table.limits)]) for row in body)]


def _details(summary: str, body: list[str]) -> list[str]:
    return ["", f"<details><summary>{summary}</summary>", "", *body, "", "</details>"]


def _fit(lines: list[str]) -> str:
    """The document; past :data:`MAX_CHARS` characters, cut at a line boundary with a note."""
    text = "".join(f"{line}\n" for line in lines)
    if len(text) <= MAX_CHARS:
        return text
    note = f"… cut at {MAX_CHARS} characters; the JSON report has everything."
    kept, size, in_details = [], 0, False
    for line in lines:
        size += len(line) + 1
        if size > MAX_CHARS - len(note) - 20:
            break
        kept.append(line)
        in_details = line.startswith("<details>") or (in_details and line != "</details>")
    return "".join(f"{line}\n" for line in [*kept, *(["", "</details>"] if in_details else []),
                                            "", note])


def _system(run: RunSummary, other: RunSummary) -> str:
    """The system's name, then its run file as code."""
    name = run.system_name(other)
    return (markdown_code(run.path) if name == run.path
            else f"{escape(name, NAME)} ({markdown_code(run.path)})")


def _head(report: Report) -> list[str]:
    """The status, the verdict's sentence, the runs, what to do next and the evidence unit."""
    word, why = headline(report)
    snap = report.snapshot
    n_all = max((c.n for c in report.comparisons if c.slice == "all"), default=0)
    return [
        MARKER,
        f"### {word} {_ICON[word]} retrieval-gate",
        "",
        (f"**{escape(sentence(why), 5 * LINE)}.** Candidate "
         f"{_system(report.candidate, report.baseline)} vs baseline "
         f"{_system(report.baseline, report.candidate)} on snapshot "
         f"{markdown_code(snap.name, NAME)} (`{snap.fingerprint[:19]}`), {n_all} queries."),
        "",
        f"**Next:** {escape(next_step(report), 2 * LINE)}.",
        "",
        chunkings(report, lambda name: escape(name, NAME)) + ".",
        "",
    ]


def _leaks(report: Report) -> list[str]:
    """The leaks, first of all details: a sentence and the first rows."""
    summary = leak_summary(report)
    if summary is None:
        return []
    table = leak_table(report)
    more = leaks_not_shown(report) if table.rows else None
    return [f"**Leaks:** {escape(summary, 2 * LINE)}.", "",
            *([*_drawn(table), ""] if table.rows else []),
            *([escape(more), ""] if more else [])]


def _comparisons(report: Report) -> list[str]:
    lab = labels(report.policy, report.family, report.family_costs)
    return [(f"| measure | slice | n | baseline | candidate | Δ | {lab.ci} | {lab.bound} | "
             "queries | margin | decision |"),
            "|---|---|--:|--:|--:|--:|---|---|---|--:|---|",
            *(_comparison(c, report) for c in report.comparisons)]


def _comparison(c: Comparison, report: Report) -> str:
    reason = decision_reason(c, report.policy)
    decision = (f"**{c.decision}**" + (f" \\({escape(reason)}\\)" if reason else "")
                if c.decision != "pass" and c.gating
                else escape(decision_cell(c, report.policy)))
    return (f"| {escape(c.measure, NAME)} | {escape(c.slice, NAME)} | {c.n} | "
            f"{mean_cell(c.baseline_mean)} | {mean_cell(c.candidate_mean)} | "
            f"{signed(c.mean_diff)} | {interval(c.ci_low, c.ci_high)} | "
            f"{deciding_bound(c)} | {in_words(c)} | {c.margin:g} | "
            f"{decision}{' ↑' if c.improvement else ''} |")


# --------------------------------------------------------------------------------------------
# The signal groups


def _costs(report: Report) -> list[str]:
    """The cost section: its header, with where the latencies were timed, and its table."""
    table = cost_table(report)
    if not table.rows:
        return []
    where = timed_on(report, lambda place: escape(place, TEXT))
    notes = cost_notes(report)
    return ["", ("**Cost** (paired over the queries both runs record"
                 + (f"; {where}" if where else "") + "):"), "", *_drawn(table),
            *(["", *(f"- {escape(note, 2 * LINE)}" for note in notes)] if notes else [])]


def _funnel(report: Report) -> list[str]:
    if report.funnel is None:
        return []
    return ["", (f"**Evidence funnel** ({report.funnel.units} relevant units; where each was "
                 "lost first):"), "", *_drawn(funnel_table(report.funnel))]


def _newly_failing(report: Report) -> list[str]:
    failing = report.newly_failing
    if not failing:
        return []
    body = ["| query | text |", "|---|---|",
            *(f"| {escape(q.query, NAME)} | {escape(q.text, TEXT)} |" for q in failing[:_SHOWN])]
    if len(failing) > _SHOWN:
        body.append(f"\n… and {len(failing) - _SHOWN} more (see the JSON report)")
    return _details(f"Newly failing queries ({len(failing)}): "
                    f"{markdown_html(report.hit_measure, NAME)} = 1 in the baseline, 0 in the "
                    "candidate", body)


def _drops(report: Report) -> list[str]:
    if not report.top_regressions:
        return []
    body = ["| measure | query | baseline | candidate | Δ | text |", "|---|---|--:|--:|--:|---|",
            *(f"| {escape(q.measure, NAME)} | {escape(q.query, NAME)} | {q.baseline:.4f} | "
              f"{q.candidate:.4f} | {signed(q.diff)} | {escape(q.text, TEXT)} |"
              for q in report.top_regressions)]
    return _details("Largest per-query drops", body)


def _instead(report: Report) -> list[str]:
    if not report.instead:
        return []
    body = [("| query | relevant evidence: baseline → candidate | the candidate's first "
             "items |"), "|---|---|---|",
            *(f"| {escape(q, NAME)} | {escape(e, 2 * LINE)} | {escape(t, 2 * LINE)} |"
              for q, e, t in instead_lines(report))]
    return _details("What was retrieved instead", body)


def _scores(report: Report) -> list[str]:
    scored = score_lines(report)
    if not scored:
        return []
    return _details("Per-query scores", [f"- {escape(line, 2 * LINE)}" for line in scored])


def _unanswerable(report: Report) -> list[str]:
    table = unanswerable_table(report)
    if not table.rows:
        return []
    note = abstention_note(report)
    body = [escape(sentence(note), 2 * LINE) + ".", ""] if note else []
    return _details(f"Unanswerable queries ({len(table.rows) - 1})",
                    [*body, *_drawn(table, _SHOWN)])


def _warnings(report: Report) -> list[str]:
    if not report.warnings:
        return []
    return _details(f"Warnings ({len(report.warnings)})",
                    [f"- {escape(w)}" for w in report.warnings])


_GROUPS: dict[Group, Callable[[Report], list[str]]] = {
    "costs": _costs, "funnel": _funnel, "newly failing": _newly_failing, "drops": _drops,
    "instead": _instead, "scores": _scores, "unanswerable": _unanswerable,
    "warnings": _warnings}


def _decided(report: Report) -> list[str]:
    """How this was decided: margins, the policy, the detectable drops, the sign tests, the
    rules and the definitions of the measures."""
    policy = report.policy
    lab = labels(policy, report.family, report.family_costs)

    def escaped(c: Comparison) -> str:
        return f"{escape(c.measure, NAME)} ({escape(c.slice, NAME)})"
    body = ["- margins: " + ", ".join(f"{escape(g.measure, NAME)} {g.margin:g}"
                                      for g in policy.gates),
            (f"- α = {policy.alpha:g}; {policy.resamples} {bootstrap_name(policy)} bootstrap "
             f"resamples of the queries, seed {policy.seed}; tie band {policy.tie_band:g}; "
             f"{holm_phrase(report)}; fail on {policy.fail_on}"),
            *([] if report.unchanged else [f"- detectable drop at {lab.power}: " + ", ".join(
                f"{escaped(c)} {'undefined' if c.mde is None else f'{c.mde:.4f}'}"
                for c in report.comparisons)]),
            f"- {lab.p_about[:1].lower()}{lab.p_about[1:]}: " + ", ".join(
                f"{escaped(c)} {test_p(c, policy)}" for c in report.comparisons),
            f"- rule: {lab.rule}",
            *([f"- cost: {cost_rule(report)}"] if policy.costs else []),
            *(f"- {escape(m.describe(report.snapshot.policy.threshold))}"
              for m in report.defined)]
    return _details("How this was decided", body)
