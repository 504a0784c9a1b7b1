"""JUnit XML for CI systems other than GitHub: one test case per gated (measure, slice).

A regression is a ``<failure>``; an inconclusive comparison is a ``<failure>`` too when the gate
fails on inconclusive, else a passing case whose ``<system-out>`` says so; the statistics are in
each case's ``<system-out>``, and why a comparison decided nothing (its note). Deterministic (no timestamps). A gate that could not decide
writes one test case, ``retrieval-gate``, with an ``<error>``.

Every attribute and text is made :func:`~retrieval_gate.core.untrusted.visible`: the control
characters XML 1.0 forbids in names from the inputs (which ElementTree would write as they are,
giving a document no parser accepts), lone surrogates and U+FFFE/U+FFFF become escapes such as
``\\x01``; ElementTree escapes ``&``, ``<``, ``>`` and quotes."""

from __future__ import annotations

from xml.etree import ElementTree

from retrieval_gate.core.untrusted import capped, visible
from retrieval_gate.decide.policy import Comparison
from retrieval_gate.gating.outcome import Report
from retrieval_gate.report.cells import comparison_detail, labels, p_value, wins_losses_ties
from retrieval_gate.report.sections import cost_detail, leak_summary
from retrieval_gate.report.verdict import error_lines, error_verdict

__all__ = ["failure_junit", "report_junit"]


def _fails(decision: str | None, report: Report) -> bool:
    return decision == "regression" or (decision == "inconclusive"
                                        and report.policy.fail_on == "inconclusive")


def _case(suite: ElementTree.Element, classname: str, name: str, detail: str,
          failure: str | None) -> None:
    """A test case whose ``<system-out>`` is ``detail``; with ``failure``, failing with that
    type and ``detail``."""
    case = ElementTree.SubElement(suite, "testcase", {"classname": classname, "name": name})
    if failure is not None:
        ElementTree.SubElement(case, "failure", {"type": failure, "message": detail}).text = detail
    ElementTree.SubElement(case, "system-out").text = detail


def report_junit(report: Report) -> str:
    cases = report.comparisons
    failing = [c for c in cases if c.gating and _fails(c.decision, report)]
    costs = [row for row in report.costs if row.decision is not None]
    leaks = report.leaks
    leak_case = 0 if leaks is None else 1
    attributes = {"name": "retrieval-gate", "tests": str(len(cases) + len(costs) + leak_case),
                  "failures": str(len(failing) + sum(_fails(r.decision, report) for r in costs)
                                  + int(leaks is not None and leaks.fails)),
                  "errors": "0", "skipped": "0"}
    suites = ElementTree.Element("testsuites", attributes)
    ci = labels(report.policy, report.family).ci
    name = report.snapshot.name
    suite = ElementTree.SubElement(suites, "testsuite",
                                   {**attributes, "name": f"retrieval-gate {name}"})
    if leaks is not None:  # first: a leak fails whatever the statistics say
        _case(suite, f"retrieval-gate.{name}.access", "leaks", str(leak_summary(report)),
              "leak" if leaks.fails else None)
    holm = report.policy.regression_test == "holm"
    for c in cases:
        _case(suite, f"retrieval-gate.{name}.{c.slice}", f"{c.measure} ({c.slice})",
              _detail(c, ci, holm), c.decision if c in failing else None)
    for row in costs:
        _case(suite, f"retrieval-gate.{name}.cost", f"{row.metric} {row.stat}",
              f"{row.decision}: {cost_detail(row)}",
              str(row.decision) if _fails(row.decision, report) else None)
    for element in suites.iter():
        element.attrib.update({key: visible(value) for key, value in element.attrib.items()})
        element.text = element.text and visible(element.text)
    return _document(suites)


def _detail(c: Comparison, ci: str, holm: bool) -> str:
    """A comparison's test case text: its decision, numbers, W/L/T and regression p (the
    sign test's under the rule before), and its note."""
    p, adjusted = (c.p_regression, c.p_regression_holm) if holm else (c.sign_p, c.sign_p_holm)
    return (f"{c.decision}: {comparison_detail(c, ci)}, W/L/T {wins_losses_ties(c)}, "
            f"{'regression' if holm else 'sign'} p {p_value(p)} (Holm {p_value(adjusted)})"
            + (f" — {c.decision_note}" if c.decision_note else ""))


def failure_junit(message: str, exit_code: int) -> str:
    """For a gate that could not decide: one test case with an ``<error>`` holding the
    message (made visible, at most 20,000 characters; its first line, at most 400, as the
    error's message)."""
    detail = visible(capped(message.rstrip("\n"), 20_000))
    attributes = {"name": "retrieval-gate", "tests": "1", "failures": "0", "errors": "1",
                  "skipped": "0"}
    suites = ElementTree.Element("testsuites", attributes)
    suite = ElementTree.SubElement(suites, "testsuite", attributes)
    case = ElementTree.SubElement(suite, "testcase", {"classname": "retrieval-gate",
                                                      "name": "retrieval-gate"})
    error = ElementTree.SubElement(case, "error", {
        "type": error_verdict(exit_code), "message": visible(capped(error_lines(message)[0], 400))})
    error.text = detail
    return _document(suites)


def _document(suites: ElementTree.Element) -> str:
    ElementTree.indent(suites)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + ElementTree.tostring(suites, encoding="unicode") + "\n")
