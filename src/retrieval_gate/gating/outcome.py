"""The report of ``gate check`` as data. Every renderer reads only this module's types (and
the snapshot and policy they carry), never the orchestrator that builds them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from retrieval_gate.core.exported import exported
from retrieval_gate.decide.cost import CostRow
from retrieval_gate.decide.policy import Comparison, GatePolicy
from retrieval_gate.gating.instead import Instead
from retrieval_gate.gating.unjudged import Unjudged
from retrieval_gate.inputs.snapshot import Snapshot
from retrieval_gate.scoring.scores import Leak, Leaks

__all__ = ["AnswerScores", "Comparison", "CostRow", "FunnelQuery", "FunnelReport", "FunnelRow", "Leak",
           "LeakReport", "Leaks", "QueryChange", "QueryRow", "Report", "RunSummary", "ScoreSummary", "UnanswerableRow",
           "UnanswerableSide", "Unjudged"]


@dataclass(frozen=True)
class RunSummary:
    """One side of the comparison: the run file, its manifest's system, its mean scores, the
    share of unjudged items (or empty slots) in its top ``k``, its chunking (the chunk table
    its manifest pins: file, hash, version, parameters; None when its items are not chunks of
    a table), the stages of a pipeline run, where its latencies were measured, and whether it
    has a ranking (``ranked`` false: per-query scores only, ``sha256`` its score file's)."""

    path: str
    sha256: str
    system: dict[str, Any]
    means: dict[str, float | None]
    unjudged_share: float | None
    chunking: dict[str, Any] | None = None
    stages: tuple[str, ...] = ()
    timed_on: str | None = None
    ranked: bool = True

    def system_name(self, other: RunSummary | None = None) -> str:
        """The system in a few words, from its manifest: its ``name``; else its ``retriever``
        with the first field whose value differs from ``other``'s (the other run's system),
        e.g. ``bm25 (indexed=title)``; else the run file's path."""
        system = self.system
        if system.get("name"):
            return str(system["name"])
        if not system.get("retriever"):
            return self.path
        theirs = {} if other is None else other.system
        differs = next(((k, v) for k, v in system.items()
                        if k not in ("retriever", "script") and theirs.get(k) != v), None)
        return str(system["retriever"]) + ("" if differs is None else
                                           f" ({differs[0]}={differs[1]})")

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
class FunnelRow:
    """Relevant units lost in one way (``kind``: a stage name, or ``STAGE:budget``), in words
    (``label``), in each run."""

    kind: str
    label: str
    baseline: int
    candidate: int

    @property
    def diff(self) -> int:
        return self.candidate - self.baseline


@dataclass(frozen=True)
class FunnelQuery:
    """One query's relevant units by where they were lost (kind → count, and ``reached``)."""

    query: str
    baseline: dict[str, int]
    candidate: dict[str, int]


@dataclass(frozen=True)
class FunnelReport:
    """The evidence funnel of both runs: the stages (described), the relevant units of the
    answerable queries, how many reach each stage (name, baseline, candidate), the losses by
    kind, the loss that grew most in the candidate (None when none grew), and per query."""

    stages: tuple[str, ...]
    units: int
    reaching: tuple[tuple[str, int, int], ...]
    losses: tuple[FunnelRow, ...]
    worst: FunnelRow | None
    queries: tuple[FunnelQuery, ...]


@dataclass(frozen=True)
class LeakReport:
    """Both runs' leaks (items their askers may not see), the policy (``fail``: any leak
    fails; ``candidate``: the candidate's do; ``warn``: none does) and whether they fail."""

    policy: str
    baseline: Leaks
    candidate: Leaks
    fails: bool


@dataclass(frozen=True)
class UnanswerableSide:
    """What one run did with an unanswerable query: items returned (within what the measures
    read), its top score, its leaks, and its abstention decision (None: not recorded)."""

    returned: int
    top_score: float | None
    leaks: int
    abstained: bool | None


@dataclass(frozen=True)
class UnanswerableRow:
    """An unanswerable query and what each run did with it."""

    query: str
    text: str
    baseline: UnanswerableSide
    candidate: UnanswerableSide


@dataclass(frozen=True)
class QueryRow:
    """One answerable query: its text, the slices it belongs to, and every measure's value in
    each run (the snapshot's measures, then the gate's own)."""

    query: str
    text: str
    slices: tuple[str, ...]
    baseline: dict[str, float | None]
    candidate: dict[str, float | None]


@dataclass(frozen=True)
class ScoreSummary:
    """One gated per-query score (``score:NAME``): its kind (``decision`` when every value is
    0 or 1, whose sign test is the exact McNemar test; else ``score``), its direction, each
    run's samples per query (fewest, most: unequal when they differ), each run's within-query
    spread (None without repeated samples), each run's failed scores and what the policy's
    ``missing`` did with them (``pairs``: the pairs dropped or scored as the worst value)."""

    name: str
    kind: str
    lower_is_better: bool
    samples: tuple[tuple[int, int], tuple[int, int]]
    spread: tuple[float | None, float | None]
    failed: tuple[int, int]
    missing: str
    pairs: int

    @property
    def unequal_samples(self) -> bool:
        return any(low != high for low, high in self.samples) or \
            self.samples[0] != self.samples[1]


@dataclass(frozen=True)
class AnswerScores:
    """Both runs' score files (as given), their tools, who scored them (empty: not recorded)
    and one :class:`ScoreSummary` per gated score."""

    files: tuple[str, str]
    tools: tuple[str, str]
    judges: tuple[dict[str, str], dict[str, str]]
    scores: tuple[ScoreSummary, ...]


@exported
@dataclass(frozen=True)
class Report:
    """Everything ``gate check`` decided and what a reviewer needs next: the overall verdict
    and exit code, both runs, the policy, one :class:`Comparison` per gated (measure, slice),
    the newly failing queries (``hit_measure`` = 1 in the baseline, 0 in the candidate), the
    largest per-query drops and the warnings; for a pipeline, the evidence funnel; the costs
    both runs record (gated or shown); with access data, the leaks; what each run did with
    the unanswerable queries; the reasons of a regression (``leak``, ``measures``,
    ``cost``); every query's values; whether nothing changed (every measure of every
    query, and every abstention decision, equal in both runs); for the queries that got
    worst, what was retrieved instead; whether the candidate surfaces clearly more unjudged
    items than the baseline (a pool bias: one of the warnings says so); the gated measures on
    which both runs score 0 on every query (``scored_nothing``: their comparisons certify
    nothing); the runs (``baseline``, ``candidate``) whose chunking cut the span judgments
    (``spans_cut``: a warning says how many); and ``family``, the
    size m of the family the decision used (its Bonferroni level is α/m): the comparisons and
    relative cost gates marked ``in_family``; with gated per-query scores, ``answer_scores``:
    their files, judges, samples and failed scores; ``unjudged``: for each regression the
    candidate's unjudged items put in question, what they did to it (those it rests on are
    inconclusive: see :mod:`retrieval_gate.gating.unjudged`)."""

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
    funnel: FunnelReport | None = None
    costs: tuple[CostRow, ...] = ()
    leaks: LeakReport | None = None
    unanswerable: tuple[UnanswerableRow, ...] = ()
    reasons: tuple[str, ...] = ()
    queries: tuple[QueryRow, ...] = ()
    unchanged: bool = False
    instead: tuple[Instead, ...] = ()
    pool_bias: bool = False
    scored_nothing: tuple[str, ...] = ()
    spans_cut: tuple[str, ...] = ()
    family: int = 0
    answer_scores: AnswerScores | None = None
    unjudged: tuple[Unjudged, ...] = ()

    @property
    def ranked(self) -> bool:
        """Whether both runs have rankings (else they are compared on per-query scores only,
        and nothing about retrieval applies)."""
        return self.baseline.ranked and self.candidate.ranked

    @property
    def defined(self) -> tuple[Any, ...]:
        """The measures whose definitions the reports list: the snapshot's, when both runs
        have rankings (none for runs of scores only)."""
        return tuple(self.snapshot.measures) if self.ranked else ()

    @property
    def gates_a_measure(self) -> bool:
        """Whether some comparison counts in the verdict (not report-only, not too small)."""
        return any(c.gating for c in self.comparisons)

    @property
    def gated_nothing(self) -> bool:
        """Whether nothing decided: no comparison counts in the verdict (each report-only or
        too small to decide) and no cost gate decided."""
        return not self.gates_a_measure and all(row.decision is None for row in self.costs)

    @property
    def family_costs(self) -> int:
        """The relative cost gates among the family's members."""
        return sum(row.in_family for row in self.costs)

    @property
    def holm_family(self) -> int:
        """The comparisons whose sign tests Holm adjusts together: the family's quality
        comparisons."""
        return sum(c.in_family for c in self.comparisons)
