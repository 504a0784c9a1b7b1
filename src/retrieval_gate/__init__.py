"""retrieval-gate: a CI regression gate for the retrieval stage of RAG systems.

One call runs the gate as ``gate check`` does: :func:`check` (the project's configuration,
arguments winning over it) returns a :class:`Report`; :func:`score` scores one run as
``gate score`` does, and :func:`load_snapshot` loads a snapshot. Underneath, the library
mirrors the command line: read inputs with :mod:`retrieval_gate.formats`, parse measures with
:func:`parse_measure`, score a run with :func:`score_run`, and run the orchestrator
:func:`retrieval_gate.gate.check` on paths and a :class:`GatePolicy`. The names below are
imported lazily, so that ``import retrieval_gate`` and ``gate --help`` load neither numpy nor
scipy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports on first use
    from retrieval_gate.api import check, score
    from retrieval_gate.errors import GateError, InputError
    from retrieval_gate.measures import Measure, parse_measure, parse_measures
    from retrieval_gate.model import Qrels, Query
    from retrieval_gate.policy import GatedMeasure, GatePolicy
    from retrieval_gate.report.model import Report
    from retrieval_gate.scoring import Scores, score_run
    from retrieval_gate.scoring_policy import ScoringPolicy
    from retrieval_gate.snapshot import load_snapshot

__version__ = "0.1.0"

_EXPORTS = {
    "check": "retrieval_gate.api",
    "score": "retrieval_gate.api",
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
    "check",
    "load_snapshot",
    "parse_measure",
    "parse_measures",
    "score",
    "score_run",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'retrieval_gate' has no attribute {name!r}")
