"""The reports of a gate that could not decide (exit 2 invalid input, 3 not comparable, or an
internal error): the same files a decision writes, holding the error and no statistics, so
that a CI system reads a report on every outcome.

- JSON: ``{"verdict": "invalid" | "not-comparable" | "error", "exit_code": N, "errors":
  [one line each]}`` (the report schema's error form);
- Markdown: the status word, the sentence "the gate could not compare the runs", what to do
  next (the error's own advice), the error lines escaped (at most 50);
- JUnit XML: one test case, ``retrieval-gate``, with an ``<error>``;
- HTML: a page with the status, what to do next and the error lines, escaped.
"""

from __future__ import annotations

import html
from xml.etree import ElementTree

from retrieval_gate.core.errors import EXIT_INVALID, EXIT_NOT_COMPARABLE
from retrieval_gate.core.untrusted import capped, visible
from retrieval_gate.report.json import REPORT_SCHEMA
from retrieval_gate.report.markdown import LINE, MARKER, escape
from retrieval_gate.report.score_table import to_json
from retrieval_gate.report.sections import failure_step

__all__ = ["error_verdict", "failure_html", "failure_json", "failure_junit",
           "failure_markdown"]

_LINES = 50  # error lines shown in Markdown and HTML


def error_verdict(exit_code: int) -> str:
    """The verdict of a gate that could not decide."""
    return {EXIT_INVALID: "invalid", EXIT_NOT_COMPARABLE: "not-comparable"}.get(exit_code,
                                                                             "error")


def _lines(message: str) -> list[str]:
    return message.rstrip("\n").split("\n")


def failure_json(message: str, exit_code: int) -> str:
    return to_json({"schema": REPORT_SCHEMA, "verdict": error_verdict(exit_code),
                    "exit_code": exit_code,
                    "errors": _lines(message)})


def failure_markdown(message: str, exit_code: int) -> str:
    lines = _lines(message)
    body = [f"- {escape(line, LINE)}" for line in lines[:_LINES]]
    if len(lines) > _LINES:
        body.append(f"- … and {len(lines) - _LINES} more (see the job log)")
    step = failure_step(message)
    return (f"{MARKER}\n### {error_verdict(exit_code).upper()} ⛔ retrieval-gate\n\n**The gate "
            f"could not compare the runs (exit {exit_code}).**\n\n"
            + (f"**Next:** {escape(step, 2 * LINE)}.\n\n" if step else "")
            + "".join(f"{line}\n" for line in body))


def failure_junit(message: str, exit_code: int) -> str:
    detail = visible(capped(message.rstrip("\n"), 20_000))
    attributes = {"name": "retrieval-gate", "tests": "1", "failures": "0", "errors": "1",
                  "skipped": "0"}
    suites = ElementTree.Element("testsuites", attributes)
    suite = ElementTree.SubElement(suites, "testsuite", attributes)
    case = ElementTree.SubElement(suite, "testcase", {"classname": "retrieval-gate",
                                                      "name": "retrieval-gate"})
    error = ElementTree.SubElement(case, "error", {
        "type": error_verdict(exit_code), "message": visible(capped(_lines(message)[0], 400))})
    error.text = detail
    ElementTree.indent(suites)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + ElementTree.tostring(suites, encoding="unicode") + "\n")


def failure_html(message: str, exit_code: int) -> str:
    verdict = error_verdict(exit_code).upper()
    items = "".join(f"<li>{html.escape(visible(capped(line, LINE)))}</li>\n"
                    for line in _lines(message)[:_LINES])
    step = failure_step(message)
    advice = ("" if step is None else
              f"<p><strong>Next:</strong> {html.escape(visible(capped(step, 2 * LINE)))}.</p>\n")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">\n"
            f"<title>{verdict}: retrieval-gate</title></head>\n<body>\n"
            f"<h1>{verdict} ⛔ retrieval-gate</h1>\n<p>The gate could not compare the runs "
            f"(exit {exit_code}).</p>\n{advice}<ul>\n{items}</ul>\n</body></html>\n")
