"""The Markdown report of ``gate check``, for a pull request comment or a job summary: the status
word first, what to do next, one compact table, then the diagnosis (a cost gate's regression,
the evidence funnel, the details of what regressed in ``<details>`` blocks) before the rest.

Every value from the inputs is shown as text, never as markup — as GitHub renders Markdown,
including what it adds afterwards (@-mentions, #-references, bare links):

- in table cells and list items (:func:`escape`): cut to a length per kind of value with "…";
  made :func:`~retrieval_gate.core.untrusted.visible` (a CR, LF or U+2028 cannot end the
  cell or the line); ``&``, ``<``, ``>`` and ``"`` as HTML entities (no raw HTML); every other
  ASCII character that can start Markdown, ``\\ ` * _ [ ] ( ) ! # + - . | ~ $ =``,
  backslash-escaped (no link, image, emphasis, code, heading, list, math or extra table cell);
  and a zero-width space (U+200B) after ``@`` (mentions, e-mail links; not in ``Recall@10``),
  after ``#`` (issue references), between the slashes of ``//`` and after ``www`` before a dot
  (bare links), and in ``GH-`` references;
- in code spans (:func:`code`, never inside a table): the fence is one backtick longer than the
  longest run of backticks in the value, so nothing in it can close the span;
- in HTML (``<summary>``, :func:`html_text`): HTML-escaped, with the same zero-width spaces.

The document is cut to :data:`MAX_CHARS` characters at a line boundary (an open ``<details>``
is closed) with a note, so that it fits a pull-request comment (65,536 characters) and stays
far below GitHub's 1 MiB job-summary limit.
"""

from __future__ import annotations

import html
import re

from retrieval_gate.core.untrusted import capped, visible
from retrieval_gate.decide.policy import labels
from retrieval_gate.gating.outcome import Report, RunSummary
from retrieval_gate.report.sections import (
    abstention_note,
    cost_first,
    cost_notes,
    cost_rule,
    cost_table,
    funnel_table,
    holm_phrase,
    instead_lines,
    leak_rows,
    leak_summary,
    leaks_not_shown,
    next_step,
    score_lines,
    timed_on,
    unanswerable_rows,
)
from retrieval_gate.report.text import (
    chunkings,
    deciding_bound,
    decision_cell,
    decision_reason,
    headline,
    in_words,
    mean_cell,
    p_value,
    signed,
)

__all__ = ["MARKER", "MAX_CHARS", "code", "escape", "html_text", "report_markdown"]

MARKER = "<!-- retrieval-gate report -->"
MAX_CHARS = 60_000
_SHOWN = 50  # rows per details table
_ICON = {"PASS": "✅", "REGRESSION": "❌", "INCONCLUSIVE": "⚠️"}
# Characters of one value shown: names and ids, paths, query texts, sentences.
NAME, PATH, TEXT, LINE = 80, 160, 200, 400

_ZERO_WIDTH = "\u200b"
_REFERENCES = re.compile(
    r"@(?!(?<=[A-Za-z0-9_]@)\d+(?![\w.-]))"  # a mention or an e-mail address; not k of Recall@k
    r"|#|/(?=/)|(?i:www)(?=\.)|(?i:\bgh)(?=-\d)")
_MARKUP = str.maketrans({**{c: f"\\{c}" for c in "\\`*_[]()!#+-.|~$="},
                         "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})


def _unlinked(text: str, limit: int) -> str:
    """``text`` capped, made visible, and with a zero-width space wherever GitHub would link."""
    return _REFERENCES.sub(lambda m: m.group(0) + _ZERO_WIDTH, visible(capped(text, limit)))


def escape(text: str, limit: int = LINE) -> str:
    """``text`` as Markdown that renders as exactly that text, in a table cell or anywhere else
    (see the module docstring); at most ``limit`` characters of it."""
    return _unlinked(text, limit).translate(_MARKUP)


def code(text: str, limit: int = PATH) -> str:
    """``text`` as an inline code span that it cannot close (not for table cells)."""
    text = visible(capped(text, limit))
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def html_text(text: str, limit: int = LINE) -> str:
    """``text`` as the text of an HTML element (``<summary>``)."""
    return html.escape(_unlinked(text, limit))


def _system(run: RunSummary, other: RunSummary) -> str:
    """The system's name, then its run file as code."""
    name = run.system_name(other)
    return code(run.path) if name == run.path else f"{escape(name, NAME)} ({code(run.path)})"


def _leaks(report: Report) -> list[str]:
    """The leaks, first of all details: a sentence and the first rows."""
    summary = leak_summary(report)
    if summary is None:
        return []
    rows = leak_rows(report)
    lines = [f"**Leaks:** {escape(summary, 2 * LINE)}.", ""]
    if rows:
        lines += [_markdown_row(rows[0]), "|---|---|--:|---|---|---|",
                  *(_markdown_row([escape(cell, NAME) for cell in row]) for row in rows[1:]),
                  ""]
        more = leaks_not_shown(report)
        if more:
            lines += [escape(more), ""]
    return lines


def _markdown_row(cells: list[str]) -> str:
    """A table row of cells already safe as Markdown (escaped, or made by the gate)."""
    return "| " + " | ".join(cells) + " |"


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


def _costs(report: Report) -> list[str]:
    """The cost section: its header, with where the latencies were timed, and its table."""
    costs = cost_table(report)
    if not costs:
        return []
    where = timed_on(report, lambda place: escape(place, TEXT))
    return ["", ("**Cost** (paired over the queries both runs record"
                 + (f"; {where}" if where else "") + "):"), "",
            _markdown_row(costs[0]), "|---|--:|--:|--:|--:|---|---|---|",
            *(_markdown_row([escape(row[0], NAME), *row[1:]]) for row in costs[1:]),
            *(["", *(f"- {escape(note, 2 * LINE)}" for note in cost_notes(report))]
              if cost_notes(report) else [])]


def report_markdown(report: Report) -> str:
    word, why = headline(report)
    snap = report.snapshot
    n_all = max((c.n for c in report.comparisons if c.slice == "all"), default=0)
    lab = labels(report.policy, report.family, report.family_costs)
    lines = [
        MARKER,
        f"### {word} {_ICON[word]} retrieval-gate",
        "",
        (f"**{escape(why[0].upper() + why[1:], 5 * LINE)}.** Candidate "
         f"{_system(report.candidate, report.baseline)} vs baseline "
         f"{_system(report.baseline, report.candidate)} on snapshot "
         f"{code(snap.name, NAME)} (`{snap.fingerprint[:19]}`), {n_all} queries."),
        "",
        f"**Next:** {escape(next_step(report), 2 * LINE)}.",
        "",
        chunkings(report, lambda name: escape(name, NAME)) + ".",
        "",
        *_leaks(report),
        (f"| measure | slice | n | baseline | candidate | Δ | {lab.ci} | {lab.bound} | queries | "
         "margin | decision |"),
        "|---|---|--:|--:|--:|--:|---|---|---|--:|---|",
    ]
    for c in report.comparisons:
        reason = decision_reason(c, report.policy)
        decision = (f"**{c.decision}**" + (f" \\({escape(reason)}\\)" if reason else "")
                    if c.decision != "pass" and c.gating
                    else escape(decision_cell(c, report.policy)))
        lines.append(
            f"| {escape(c.measure, NAME)} | {escape(c.slice, NAME)} | {c.n} | "
            f"{mean_cell(c.baseline_mean)} | {mean_cell(c.candidate_mean)} | "
            f"{signed(c.mean_diff)} | [{signed(c.ci_low)}, {signed(c.ci_high)}] | "
            f"{deciding_bound(c)} | {in_words(c)} | {c.margin:g} | "
            f"{decision}{' ↑' if c.improvement else ''} |")

    costs = _costs(report)
    if cost_first(report):  # a cost gate's regression is part of the diagnosis
        lines += costs
    if report.funnel is not None:
        rows = funnel_table(report.funnel)
        lines += ["", (f"**Evidence funnel** ({report.funnel.units} relevant units; where each "
                       "was lost first):"), "", _markdown_row(rows[0]), "|---|--:|--:|--:|",
                  *(_markdown_row([escape(row[0], LINE), *row[1:]]) for row in rows[1:])]
    failing = report.newly_failing
    if failing:
        body = ["| query | text |", "|---|---|"]
        body += [f"| {escape(q.query, NAME)} | {escape(q.text, TEXT)} |"
                 for q in failing[:_SHOWN]]
        if len(failing) > _SHOWN:
            body.append(f"\n… and {len(failing) - _SHOWN} more (see the JSON report)")
        lines += _details(f"Newly failing queries ({len(failing)}): "
                          f"{html_text(report.hit_measure, NAME)} = 1 in the baseline, 0 in the "
                          "candidate", body)
    if report.top_regressions:
        body = ["| measure | query | baseline | candidate | Δ | text |", "|---|---|--:|--:|--:|---|"]
        body += [f"| {escape(q.measure, NAME)} | {escape(q.query, NAME)} | {q.baseline:.4f} | "
                 f"{q.candidate:.4f} | {signed(q.diff)} | {escape(q.text, TEXT)} |"
                 for q in report.top_regressions]
        lines += _details("Largest per-query drops", body)
    if report.instead:
        body = [("| query | relevant evidence: baseline → candidate | the candidate's first "
                "items |"), "|---|---|---|"]
        body += [f"| {escape(q, NAME)} | {escape(e, 2 * LINE)} | {escape(t, 2 * LINE)} |"
                 for q, e, t in instead_lines(report)]
        lines += _details("What was retrieved instead", body)
    scored = score_lines(report)
    if scored:
        lines += _details("Per-query scores", [f"- {escape(line, 2 * LINE)}" for line in scored])
    unanswered = unanswerable_rows(report)
    if unanswered:
        note = abstention_note(report)
        body = ([escape(note[0].upper() + note[1:], 2 * LINE) + ".", ""] if note else [])
        body += [_markdown_row(unanswered[0]), "|---|---|---|---|",
                 *(_markdown_row([escape(row[0], NAME), escape(row[1], NAME),
                                  escape(row[2], NAME), escape(row[3], TEXT)])
                   for row in unanswered[1:_SHOWN + 1])]
        lines += _details(f"Unanswerable queries ({len(unanswered) - 1})", body)
    if not cost_first(report):
        lines += costs
    if report.warnings:
        lines += _details(f"Warnings ({len(report.warnings)})",
                          [f"- {escape(w)}" for w in report.warnings])
    policy = report.policy
    body = ["- margins: " + ", ".join(f"{escape(g.measure, NAME)} {g.margin:g}"
                                      for g in policy.gates),
            (f"- α = {policy.alpha:g}; {policy.resamples} "
            f"{'BCa' if policy.bootstrap == 'bca' else 'percentile'} bootstrap resamples of the "
            f"queries, seed {policy.seed}; tie band {policy.tie_band:g}; {holm_phrase(report)}; "
            f"fail on {policy.fail_on}"),
            *([] if report.unchanged else [f"- detectable drop at {lab.power}: " + ", ".join(
                f"{escape(c.measure, NAME)} ({escape(c.slice, NAME)}) "
                f"{'undefined' if c.mde is None else f'{c.mde:.4f}'}"
                for c in report.comparisons)]),
            "- sign test, one-sided toward a regression, p (Holm-adjusted): " + ", ".join(
                f"{escape(c.measure, NAME)} ({escape(c.slice, NAME)}) {p_value(c.sign_p)} "
                f"({p_value(c.sign_p_holm)})" for c in report.comparisons),
            f"- rule: {lab.rule}",
            *([f"- cost: {cost_rule(report)}"] if report.policy.costs else []),
            *(f"- {escape(m.describe(snap.policy.threshold))}" for m in snap.measures)]
    lines += _details("How this was decided", body)
    return _fit(lines)
