"""The Markdown report of ``gate check``, for a pull request comment or a job summary: the status
word first, one compact table, and the details in ``<details>`` blocks. Query texts are escaped
so that they cannot break the table or inject HTML; lists are capped so the document stays far
below GitHub's 1 MiB summary limit."""

from __future__ import annotations

from retrieval_gate.policy import labels
from retrieval_gate.report.model import Report
from retrieval_gate.report.text import headline, mean_cell, p_value, signed

__all__ = ["MARKER", "report_markdown"]

MARKER = "<!-- retrieval-gate report -->"
_SHOWN = 50  # rows per details table
_ICON = {"PASS": "✅", "REGRESSION": "❌", "INCONCLUSIVE": "⚠️"}


def _escape(text: str) -> str:
    """Plain text safe inside a Markdown table cell."""
    return (" ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;")
            .replace(">", "&gt;").replace("|", "\\|").replace("`", "\\`"))


def _details(summary: str, body: list[str]) -> list[str]:
    return ["", f"<details><summary>{summary}</summary>", "", *body, "", "</details>"]


def report_markdown(report: Report) -> str:
    word, why = headline(report)
    snap = report.snapshot
    n_all = max((c.n for c in report.comparisons if c.slice == "all"), default=0)
    lab = labels(report.policy, len(report.comparisons))
    lines = [
        MARKER,
        f"### {word} {_ICON[word]} retrieval-gate",
        "",
        (f"**{why[0].upper()}{why[1:]}.** Candidate `{report.candidate.path}` vs baseline "
         f"`{report.baseline.path}` on snapshot `{snap.name}` (`{snap.fingerprint[:19]}`), "
         f"{n_all} queries."),
        "",
        (f"| measure | slice | n | baseline | candidate | Δ | {lab.ci} | W/L/T | sign p (Holm) "
         "| decision |"),
        "|---|---|--:|--:|--:|--:|---|---|--:|---|",
    ]
    for c in report.comparisons:
        decision = f"**{c.decision}**" if c.decision != "pass" else "pass"
        lines.append(
            f"| {c.measure} | {_escape(c.slice)} | {c.n} | "
            f"{mean_cell(c.baseline_mean)} | {mean_cell(c.candidate_mean)} | "
            f"{signed(c.mean_diff)} | [{signed(c.ci_low)}, {signed(c.ci_high)}] | "
            f"{c.wins}/{c.losses}/{c.ties} | {p_value(c.sign_p)} ({p_value(c.sign_p_holm)}) | "
            f"{decision}{' ↑' if c.improvement else ''} |")

    failing = report.newly_failing
    if failing:
        body = ["| query | text |", "|---|---|"]
        body += [f"| {_escape(q.query)} | {_escape(q.text)} |" for q in failing[:_SHOWN]]
        if len(failing) > _SHOWN:
            body.append(f"\n… and {len(failing) - _SHOWN} more (see the JSON report)")
        lines += _details(f"Newly failing queries ({len(failing)}): {report.hit_measure} = 1 "
                          "in the baseline, 0 in the candidate", body)
    if report.top_regressions:
        body = ["| measure | query | baseline | candidate | Δ | text |", "|---|---|--:|--:|--:|---|"]
        body += [f"| {q.measure} | {_escape(q.query)} | {q.baseline:.4f} | {q.candidate:.4f} | "
                 f"{signed(q.diff)} | {_escape(q.text)} |" for q in report.top_regressions]
        lines += _details("Largest per-query drops", body)
    if report.warnings:
        lines += _details(f"Warnings ({len(report.warnings)})",
                          [f"- {_escape(w)}" for w in report.warnings])
    policy = report.policy
    body = ["- margins: " + ", ".join(f"{g.measure} {g.margin:g}" for g in policy.gates),
            (f"- α = {policy.alpha:g}; {policy.resamples} "
            f"{'BCa' if policy.bootstrap == 'bca' else 'percentile'} bootstrap resamples of the "
            f"queries, seed {policy.seed}; tie band {policy.tie_band:g}; Holm across "
            f"{len(report.comparisons)} comparisons; fail on {policy.fail_on}"),
            f"- detectable drop at {lab.power}: " + ", ".join(
                f"{c.measure} ({_escape(c.slice)}) "
                f"{'undefined' if c.mde is None else f'{c.mde:.4f}'}"
                for c in report.comparisons),
            f"- rule: {lab.rule}",
            *(f"- {_escape(m.describe(snap.policy.threshold))}" for m in snap.measures)]
    lines += _details("How this was decided", body)
    return "\n".join(lines) + "\n"
