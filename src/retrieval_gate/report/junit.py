"""JUnit XML for CI systems other than GitHub: one test case per gated (measure, slice).

A regression is a ``<failure>``; an inconclusive comparison is a ``<failure>`` too when the gate
fails on inconclusive, else a passing case whose ``<system-out>`` says so; the statistics are in
each case's ``<system-out>``. Deterministic (no timestamps).

Every attribute and text is made :func:`~retrieval_gate.core.untrusted.visible`: the control
characters XML 1.0 forbids in names from the inputs (which ElementTree would write as they are,
giving a document no parser accepts), lone surrogates and U+FFFE/U+FFFF become escapes such as
``\\x01``; ElementTree escapes ``&``, ``<``, ``>`` and quotes."""

from __future__ import annotations

from xml.etree import ElementTree

from retrieval_gate.core.untrusted import visible
from retrieval_gate.decide.policy import labels
from retrieval_gate.gating.outcome import Report
from retrieval_gate.report.sections import cost_detail, leak_summary
from retrieval_gate.report.text import p_value, signed

__all__ = ["report_junit"]


def _fails(decision: str | None, report: Report) -> bool:
    return decision == "regression" or (decision == "inconclusive"
                                        and report.policy.fail_on == "inconclusive")


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
    suite = ElementTree.SubElement(suites, "testsuite",
                                   {**attributes, "name": f"retrieval-gate {report.snapshot.name}"})
    if leaks is not None:  # first: a leak fails whatever the statistics say
        case = ElementTree.SubElement(suite, "testcase", {
            "classname": f"retrieval-gate.{report.snapshot.name}.access", "name": "leaks"})
        detail = str(leak_summary(report))
        if leaks.fails:
            failure = ElementTree.SubElement(case, "failure", {"type": "leak",
                                                               "message": detail})
            failure.text = detail
        ElementTree.SubElement(case, "system-out").text = detail
    for c in cases:
        case = ElementTree.SubElement(suite, "testcase", {
            "classname": f"retrieval-gate.{report.snapshot.name}.{c.slice}",
            "name": f"{c.measure} ({c.slice})"})
        detail = (f"{c.decision}: Δ {signed(c.mean_diff)}, {ci} [{signed(c.ci_low)}, "
                  f"{signed(c.ci_high)}], margin {c.margin:g}, n = {c.n}, W/L/T "
                  f"{c.wins}/{c.losses}/{c.ties}, sign p {p_value(c.sign_p)} (Holm "
                  f"{p_value(c.sign_p_holm)})")
        if c in failing:
            failure = ElementTree.SubElement(case, "failure", {"type": c.decision,
                                                               "message": detail})
            failure.text = detail
        ElementTree.SubElement(case, "system-out").text = detail
    for row in costs:
        case = ElementTree.SubElement(suite, "testcase", {
            "classname": f"retrieval-gate.{report.snapshot.name}.cost",
            "name": f"{row.metric} {row.stat}"})
        detail = f"{row.decision}: {cost_detail(row)}"
        if _fails(row.decision, report):
            failure = ElementTree.SubElement(case, "failure", {"type": str(row.decision),
                                                               "message": detail})
            failure.text = detail
        ElementTree.SubElement(case, "system-out").text = detail
    for element in suites.iter():
        element.attrib.update({key: visible(value) for key, value in element.attrib.items()})
        element.text = element.text and visible(element.text)
    ElementTree.indent(suites)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + ElementTree.tostring(suites, encoding="unicode") + "\n")
