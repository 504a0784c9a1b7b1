"""Rendering a gate report to every requested destination: standard output, the ``--json``,
``--markdown``, ``--junit`` and ``--html`` files, and GitHub Actions — and, when the gate could
not decide (exit 2, 3), the same files holding the error.

The files land all or nothing: every report is rendered first, then the files are written
together by :func:`~retrieval_gate.formats.atomic.staged_texts` (staged beside their targets,
then renamed). If one cannot be written, or appending to GitHub's summary and outputs fails
afterwards, none of them is left: files replaced are put back, files created are deleted.
"""

from __future__ import annotations

import os
from pathlib import Path

from retrieval_gate.formats.atomic import staged_texts
from retrieval_gate.gating.outcome import Report
from retrieval_gate.report.json import report_json
from retrieval_gate.report.markdown import report_markdown
from retrieval_gate.report.text import report_text

__all__ = ["write_failure_reports", "write_reports"]

_RENDER = {"text": report_text, "json": report_json, "markdown": report_markdown}


def write_reports(report: Report, output_format: str, json_out: str | None = None,
                  markdown_out: str | None = None, junit_out: str | None = None,
                  github: bool = False, html_out: str | None = None) -> str:
    """Write the files asked for and return what goes to standard output (the report in
    ``output_format``, then GitHub's annotation lines in GitHub mode). In GitHub mode the JSON
    report is always written: to ``json_out``, else :func:`github.default_report_path`; and the
    report on standard output is made :func:`github.workflow_safe`."""
    rendered: dict[str, str] = {}

    def text(kind: str) -> str:
        if kind not in rendered:
            rendered[kind] = _RENDER[kind](report)
        return rendered[kind]

    if github and not json_out:
        from retrieval_gate.report.github import default_report_path

        json_out = str(default_report_path(os.environ))
    files = [(path, text(kind)) for path, kind in ((json_out, "json"),
                                                   (markdown_out, "markdown")) if path]
    if junit_out:
        from retrieval_gate.report.junit import report_junit

        files.append((junit_out, report_junit(report)))
    if html_out:
        from retrieval_gate.report.html import report_html

        files.append((html_out, report_html(report)))
    out = text(output_format)
    markdown = text("markdown") if github else ""
    with staged_texts(files):
        if github:
            from retrieval_gate.report.github import publish, workflow_safe

            assert json_out is not None  # set above in GitHub mode
            lines = publish(report, markdown, Path(json_out))
            out = workflow_safe(out) + "".join(f"{line}\n" for line in lines)
    return out


def write_failure_reports(message: str, exit_code: int, json_out: str | None = None,
                          markdown_out: str | None = None, junit_out: str | None = None,
                          html_out: str | None = None) -> None:
    """The requested files for a gate that could not decide, each in its format's error form,
    written all or nothing like a decision's."""
    from retrieval_gate.report import html, json, junit, markdown

    files = [(path, render(message, exit_code)) for path, render in (
        (json_out, json.failure_json), (markdown_out, markdown.failure_markdown),
        (junit_out, junit.failure_junit), (html_out, html.failure_html)) if path]
    with staged_texts(files):
        pass
