"""Rendering a gate report to every requested destination: standard output, the report files
(``--json``, ``--markdown``, ``--junit``, ``--html``: every format of
:mod:`~retrieval_gate.report.registry` written to a file), and GitHub Actions — and, when the
gate could not decide (exit 2, 3), the same files holding the error.

The files land all or nothing: every report is rendered first, then the files are written
together by :func:`~retrieval_gate.formats.atomic.staged_texts` (staged beside their targets,
then renamed), in the registry's order. If one cannot be written, or appending to GitHub's
summary and outputs fails afterwards, or Ctrl-C arrives before the end, none of them is left:
files replaced are put back, files created are deleted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from retrieval_gate.formats.atomic import staged_texts
from retrieval_gate.gating.outcome import Report
from retrieval_gate.report.registry import FILES, renderer

__all__ = ["write_failure_reports", "write_reports"]


def _requested(files: Mapping[str, str | None] | None) -> dict[str, str]:
    """The report files asked for, format name → path, in the registry's order; ValueError
    for a name that is no format written to a file."""
    given = {name: path for name, path in (files or {}).items() if path}
    unknown = set(given) - {r.name for r in FILES}
    if unknown:
        raise ValueError(f"no report file format {', '.join(sorted(unknown))}")
    return {r.name: given[r.name] for r in FILES if r.name in given}


def write_reports(report: Report, output_format: str,
                  files: Mapping[str, str | None] | None = None, github: bool = False) -> str:
    """Write the ``files`` asked for (format name → path; None or "" for none) and return what
    goes to standard output (the report in ``output_format``, then GitHub's annotation lines
    in GitHub mode). In GitHub mode the JSON report is always written: to its file, else
    :func:`github.default_report_path`; and the report on standard output is made
    :func:`github.workflow_safe`."""
    rendered: dict[str, str] = {}

    def text(name: str) -> str:
        if name not in rendered:
            rendered[name] = renderer(name).render(report)
        return rendered[name]

    paths = _requested(files)
    if github and "json" not in paths:
        from retrieval_gate.report.github import default_report_path

        paths = _requested({**paths, "json": str(default_report_path(os.environ))})
    staged = [(path, text(name)) for name, path in paths.items()]
    out = text(output_format)
    markdown = text("markdown") if github else ""
    with staged_texts(staged):
        if github:
            from retrieval_gate.report.github import publish, workflow_safe

            lines = publish(report, markdown, Path(paths["json"]))
            out = workflow_safe(out) + "".join(f"{line}\n" for line in lines)
    return out


def write_failure_reports(message: str, exit_code: int,
                          files: Mapping[str, str | None] | None = None) -> None:
    """The requested files (as :func:`write_reports` takes them) for a gate that could not
    decide, each in its format's error form, written all or nothing like a decision's."""
    staged = [(path, renderer(name).failure(message, exit_code))
              for name, path in _requested(files).items()]
    with staged_texts(staged):
        pass
