"""retrieval-gate: a CI regression gate for the retrieval stage of RAG systems.

The library API mirrors the command line: read inputs with :mod:`retrieval_gate.formats`,
parse measures with :func:`parse_measure`, score a run with :func:`score_run`, load a snapshot
with :func:`load_snapshot`, and run the whole gate with :func:`retrieval_gate.gate.check` (a
:class:`GatePolicy` in, a :class:`Report` out). The names below are imported lazily, so that ``gate --help`` loads
neither numpy nor scipy.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "GatePolicy": "retrieval_gate.policy",
    "GatedMeasure": "retrieval_gate.policy",
    "Report": "retrieval_gate.report.model",
    "load_snapshot": "retrieval_gate.snapshot",
    "GateError": "retrieval_gate.errors",
    "InputError": "retrieval_gate.errors",
    "Measure": "retrieval_gate.measures",
    "parse_measure": "retrieval_gate.measures",
    "parse_measures": "retrieval_gate.measures",
    "Qrels": "retrieval_gate.model",
    "Query": "retrieval_gate.model",
    "ScoringPolicy": "retrieval_gate.scoring_policy",
    "Scores": "retrieval_gate.scoring",
    "score_run": "retrieval_gate.scoring",
}

__all__ = [
    "GateError",
    "GatePolicy",
    "GatedMeasure",
    "InputError",
    "Measure",
    "Qrels",
    "Query",
    "Report",
    "Scores",
    "ScoringPolicy",
    "__version__",
    "load_snapshot",
    "parse_measure",
    "parse_measures",
    "score_run",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'retrieval_gate' has no attribute {name!r}")
