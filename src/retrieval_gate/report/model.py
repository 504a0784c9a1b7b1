"""The report of ``gate check`` as data. Every renderer reads only this module's types (and
the snapshot and policy they carry), never the orchestrator that builds them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from retrieval_gate.policy import Comparison, GatePolicy
from retrieval_gate.snapshot import Snapshot

__all__ = ["Comparison", "QueryChange", "Report", "RunSummary"]


@dataclass(frozen=True)
class RunSummary:
    """One side of the comparison: the run file, its manifest's system, its mean scores, the
    share of unjudged items in its top ``k``, and its chunking (the chunk table its manifest
    pins: file, hash, version, parameters; None when its items are not chunks of a table)."""

    path: str
    sha256: str
    system: dict[str, Any]
    means: dict[str, float | None]
    unjudged_share: float | None
    chunking: dict[str, Any] | None = None

    def chunking_name(self) -> str:
        """The chunking in a few words: its version, else its table's hash; ``items as
        given`` without a chunk table."""
        if self.chunking is None:
            return "items as given"
        named = self.chunking.get("version") or f"chunk table sha256:{self.chunking['sha256'][:12]}"
        params = self.chunking.get("params") or {}
        return named + (f" ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else "")


@dataclass(frozen=True)
class QueryChange:
    """A per-query value of one measure in both runs."""

    measure: str
    query: str
    text: str
    baseline: float
    candidate: float

    @property
    def diff(self) -> float:
        return self.candidate - self.baseline


@dataclass(frozen=True)
class Report:
    """Everything ``gate check`` decided and what a reviewer needs next: the overall verdict
    and exit code, both runs, the policy, one :class:`Comparison` per gated (measure, slice),
    the newly failing queries (``hit_measure`` = 1 in the baseline, 0 in the candidate), the
    largest per-query drops and the warnings."""

    verdict: str
    exit_code: int
    snapshot: Snapshot
    baseline: RunSummary
    candidate: RunSummary
    policy: GatePolicy
    config: str | None
    comparisons: tuple[Comparison, ...]
    hit_measure: str
    newly_failing: tuple[QueryChange, ...]
    top_regressions: tuple[QueryChange, ...]
    warnings: tuple[str, ...]
