"""The JSON report of ``gate check`` (schema ``schemas/report.schema.json``), and the error form
of a gate that could not decide: ``{"schema", "verdict": "invalid" | "not-comparable" |
"error", "exit_code": N, "errors": [one line each]}``.

Deterministic: keys sorted, floats unrounded in Python's shortest round-trip form, no wall-clock
time; the same inputs and configuration give the same bytes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from retrieval_gate.decide.policy import CostGate
from retrieval_gate.gating.outcome import FunnelReport, Report, RunSummary, Unjudged
from retrieval_gate.report.score_table import to_json
from retrieval_gate.report.verdict import error_lines, error_verdict

__all__ = ["REPORT_SCHEMA", "failure_json", "report_document", "report_json"]

REPORT_SCHEMA = "urn:retrieval-gate:schema:report:3"
"""The report's schema and its version (the ``$id`` of ``schemas/report.schema.json``); version
2 added the gated per-query scores (``answer_scores``), the policy's ``missing`` and a gate's
``lower_is_better``."""


def _run(summary: RunSummary) -> dict[str, Any]:
    return dataclasses.asdict(summary)


def report_document(report: Report) -> dict[str, Any]:
    """The report as a JSON-ready mapping."""
    snap = report.snapshot
    changes = ("measure", "query", "text", "baseline", "candidate")
    return {
        "schema": REPORT_SCHEMA,
        "verdict": report.verdict,
        "exit_code": report.exit_code,
        "snapshot": {"name": snap.name, "fingerprint": snap.fingerprint, "path": snap.source},
        "baseline": _run(report.baseline),
        "candidate": _run(report.candidate),
        "settings": {
            **report.policy.as_dict(),
            "family": report.family,
            "config": report.config,
            "scoring": {**snap.policy.as_dict(), "gain": snap.gain,
                        "measures": [str(m) for m in snap.measures],
                        "definitions": {str(m): m.describe(snap.policy.threshold)
                                        for m in snap.measures}},
        },
        "comparisons": [dataclasses.asdict(c) for c in report.comparisons],
        "newly_failing": {"measure": report.hit_measure,
                          "queries": [{"query": q.query, "text": q.text}
                                      for q in report.newly_failing]},
        "top_regressions": [{**{k: getattr(q, k) for k in changes}, "diff": q.diff}
                            for q in report.top_regressions],
        "warnings": list(report.warnings),
        "funnel": None if report.funnel is None else _funnel(report.funnel),
        "costs": [{**dataclasses.asdict(row),
                   "gate": None if row.gate is None else _gate(row.gate)}
                  for row in report.costs],
        "reasons": list(report.reasons),
        "leaks": None if report.leaks is None else {
            "policy": report.leaks.policy, "fails": report.leaks.fails,
            "baseline": dataclasses.asdict(report.leaks.baseline),
            "candidate": dataclasses.asdict(report.leaks.candidate)},
        "unanswerable": [dataclasses.asdict(row) for row in report.unanswerable],
        "queries": [{"query": row.query, "text": row.text, "slices": list(row.slices),
                     "baseline": row.baseline, "candidate": row.candidate}
                    for row in report.queries],
        "unchanged": report.unchanged,
        "instead": [dataclasses.asdict(row) for row in report.instead],
        "answer_scores": None if report.answer_scores is None else _answer_scores(report),
        **({"unjudged": [_unjudged(u) for u in report.unjudged]} if report.unjudged else {}),
    }


def _unjudged(found: Unjudged) -> dict[str, Any]:
    """What the unjudged items did to one regression (present only when they put it in
    question)."""
    return {"measure": found.measure, "slice": found.slice, "k": found.k,
            "weight": found.weight, "lost": found.lost, "slots": found.slots,
            "baseline": found.baseline, "candidate": found.candidate,
            "exposure": {"baseline": found.exposure[0], "candidate": found.exposure[1]},
            "condensed": None if found.condensed is None else dataclasses.asdict(found.condensed),
            "lookalike": None if found.lookalike is None else {
                "baseline": found.lookalike[0], "candidate": found.lookalike[1],
                "example": found.example},
            "other_unit": found.other_unit, "depends": found.depends}


def _answer_scores(report: Report) -> dict[str, Any]:
    answers = report.answer_scores
    assert answers is not None
    return {"files": list(answers.files), "tools": list(answers.tools),
            "judges": list(answers.judges),
            "scores": [{**dataclasses.asdict(s), "unequal_samples": s.unequal_samples}
                       for s in answers.scores]}


def _gate(gate: CostGate) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(gate).items() if v is not None}


def _funnel(funnel: FunnelReport) -> dict[str, Any]:
    return {
        "stages": list(funnel.stages),
        "units": funnel.units,
        "reaching": [{"stage": s, "baseline": b, "candidate": c} for s, b, c in funnel.reaching],
        "losses": [dataclasses.asdict(row) for row in funnel.losses],
        "worst": None if funnel.worst is None else dataclasses.asdict(funnel.worst),
        "queries": [{"query": q.query, "baseline": q.baseline, "candidate": q.candidate}
                    for q in funnel.queries],
    }


def report_json(report: Report) -> str:
    return to_json(report_document(report))


def failure_json(message: str, exit_code: int) -> str:
    """The error form of the report (the report schema's), for a gate that could not decide."""
    return to_json({"schema": REPORT_SCHEMA, "verdict": error_verdict(exit_code),
                    "exit_code": exit_code, "errors": error_lines(message)})
