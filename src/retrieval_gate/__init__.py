"""retrieval-gate: a CI regression gate for the retrieval stage of RAG systems.

One call runs the gate as ``gate check`` does: :func:`check` (the project's configuration,
arguments winning over it) returns a :class:`Report`; :func:`score` scores one run as
``gate score`` does, :func:`run` runs a retriever over a snapshot's queries as ``gate run``
does, and :func:`load_snapshot` loads a snapshot. Underneath, the library
mirrors the command line: read inputs with :func:`read_qrels` and :func:`read_run`, parse
measures with :func:`parse_measure`, score a run with :func:`score_run`, run the orchestrator
:func:`run_gate` on paths and a :class:`GatePolicy`, and render its report with
:func:`renderer`. The names below are imported lazily, so that ``import retrieval_gate`` and
``gate --help`` load neither numpy nor scipy.

These names are the API: each is named as the package's own (``retrieval_gate.Report``, not
the internal module that defines it), so that it prints and pickles so; every other module is
internal, and its names may change.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports on first use
    from retrieval_gate.api import check, run, score
    from retrieval_gate.core.errors import GateError, InputError, NotComparableError, OutOfMemory
    from retrieval_gate.core.model import Qrels, Query
    from retrieval_gate.decide.policy import GatedMeasure, GatePolicy
    from retrieval_gate.formats import read_qrels, read_run
    from retrieval_gate.gating.gate import run_gate
    from retrieval_gate.gating.outcome import Report
    from retrieval_gate.inputs.snapshot import load_snapshot
    from retrieval_gate.report.registry import renderer
    from retrieval_gate.scoring.measures import Measure, parse_measure, parse_measures
    from retrieval_gate.scoring.rules import ScoringPolicy
    from retrieval_gate.scoring.scores import Scores, score_run

__version__ = "0.1.0"

_EXPORTS = {
    "check": "retrieval_gate.api",
    "run": "retrieval_gate.api",
    "score": "retrieval_gate.api",
    "GatePolicy": "retrieval_gate.decide.policy",
    "GatedMeasure": "retrieval_gate.decide.policy",
    "Report": "retrieval_gate.gating.outcome",
    "run_gate": "retrieval_gate.gating.gate",
    "load_snapshot": "retrieval_gate.inputs.snapshot",
    "GateError": "retrieval_gate.core.errors",
    "InputError": "retrieval_gate.core.errors",
    "NotComparableError": "retrieval_gate.core.errors",
    "OutOfMemory": "retrieval_gate.core.errors",
    "Measure": "retrieval_gate.scoring.measures",
    "parse_measure": "retrieval_gate.scoring.measures",
    "parse_measures": "retrieval_gate.scoring.measures",
    "Qrels": "retrieval_gate.core.model",
    "Query": "retrieval_gate.core.model",
    "ScoringPolicy": "retrieval_gate.scoring.rules",
    "Scores": "retrieval_gate.scoring.scores",
    "score_run": "retrieval_gate.scoring.scores",
    "renderer": "retrieval_gate.report.registry",
    "read_qrels": "retrieval_gate.formats",
    "read_run": "retrieval_gate.formats",
}

__all__ = [
    "GateError",
    "GatePolicy",
    "GatedMeasure",
    "InputError",
    "Measure",
    "NotComparableError",
    "OutOfMemory",
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
    "read_qrels",
    "read_run",
    "renderer",
    "run",
    "run_gate",
    "score",
    "score_run",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'retrieval_gate' has no attribute {name!r}")
