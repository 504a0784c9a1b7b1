"""Scoring a run on a snapshot, one ranking or a pipeline of stages.

A one-ranking run is scored as it always was. A pipeline run (its manifest lists ``stages``)
must give a ranking for every stage of the snapshot's contract, in the contract's order (exit
2 naming the first missing stage); each stage's ranking is cut to its contract (cutoff, token
budget) and scored on the measures that name the stage. Alongside the scores come the
evidence funnel (:mod:`retrieval_gate.core.stages`), each query's latency (the sum over the stages
that record ``latency_ms``) and its context size (the tokens of the last stage's items within
its contract, when they carry token counts) and, with span judgments, how many relevant spans
begin and end on the run's chunk boundaries (:mod:`retrieval_gate.scoring.chunkcut`).

With access data, the leaks of every stage are counted: among the items the stage's measures
read (within their deepest cutoff, or every item); on a stage no measure reads, among every
item it passes on; on a stage with a token budget, among every item it lists within its
cutoff, over the budget or not (what the packer was given is checked, not only what fit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.model import ChunkTable, RunRows
from retrieval_gate.core.ranking import rank_run
from retrieval_gate.core.stages import Funnel, StageContract, funnel
from retrieval_gate.formats import Source, read_run
from retrieval_gate.formats.jsonfmt import path as json_path
from retrieval_gate.inputs.run_manifest import RunManifest
from retrieval_gate.inputs.snapshot import Snapshot, TestSet
from retrieval_gate.scoring.chunkcut import Boundaries, Cut, cut_spans, relevant_spans
from retrieval_gate.scoring.evidence import attach_chunks
from retrieval_gate.scoring.measures import Measure
from retrieval_gate.scoring.scores import MAX_LEAKS, Leaks, Scores, score_run


@dataclass(frozen=True, eq=False)
class RunScores:
    """A run scored on a snapshot: the per-query values of the measures (``scores``), the
    evidence funnel of a pipeline run (None otherwise or when not asked), and per answerable
    query the latency in milliseconds and the context size in tokens (None when the run
    records none; NaN for a query the run does not give); ``short_lists``: per measure with a
    cutoff k (outside a budgeted stage, which its budget bounds), the queries whose ranking
    holds fewer than k items; ``leaks``: with access data, every stage's leaks (see
    :class:`~retrieval_gate.scoring.scores.Leaks`); ``abstained``: per query of the run (answerable
    or not) the system's decision to decline, from the last ranking that records one (None
    when none does); ``returned``: per unanswerable query, the items the last ranking returned,
    its top score and the leaks of every stage; ``cut``: with span judgments, the relevant
    spans cut by the run's chunking (its chunk table, else its items' places; None without
    either); ``recorded``: per ranking scored, its stage's name (None for a one-ranking run)
    and the costs its file records (:data:`RECORDED`: ``latency_ms`` per query, ``tokens`` per
    item)."""

    scores: Scores
    funnel: Funnel | None = None
    latency_ms: np.ndarray | None = None
    context_tokens: np.ndarray | None = None
    short_lists: dict[str, tuple[str, ...]] = field(default_factory=dict)
    leaks: Leaks | None = None
    abstained: dict[str, bool] | None = None
    returned: dict[str, tuple[int, float | None, int]] = field(default_factory=dict)
    cut: Cut | None = None
    recorded: tuple[tuple[str | None, tuple[str, ...]], ...] = ()

    @property
    def ranked(self) -> bool:
        """Whether the run was ranked and scored (not :func:`unranked`: scores only)."""
        return bool(self.scores.measures)

    def costs(self) -> dict[str, np.ndarray | None]:
        return {"latency_ms": self.latency_ms, "context_tokens": self.context_tokens}

    def cost_stages(self) -> dict[str, tuple[str, ...]]:
        """Per cost the run records, the stages it is measured on: ``latency_ms``, the stages
        whose files record it (a query's latency is their sum); ``context_tokens``, the last
        stage. A one-ranking run names no stage."""
        named = [(name, costs) for name, costs in self.recorded if name is not None]
        stages = {"latency_ms": tuple(name for name, costs in named if "latency_ms" in costs),
                  "context_tokens": named[-1][:1] if named else ()}
        return {metric: stages[metric] for metric, values in self.costs().items()
                if values is not None}


def unranked(snapshot: Snapshot, test_set: TestSet) -> RunScores:
    """A run of per-query scores only: no ranking, so no measure (its scores have no column),
    no funnel, no cost, no abstention."""
    scores = Scores((), test_set.answerable, np.zeros((len(test_set.answerable), 0)),
                    test_set.unanswerable, (), snapshot.policy)
    return RunScores(scores)


def stage_sources(snapshot: Snapshot, manifest: RunManifest, run: Path
                  ) -> tuple[tuple[StageContract | None, Path, str], ...]:
    """(contract, file, pinned SHA-256) of each ranking the snapshot scores: every stage of
    its contract, in order, from the run's manifest; or, without a contract, the run itself
    (contract None). See :func:`match_stages` for the errors."""
    if not snapshot.stages:
        return ((None, run, manifest.sha256),)
    files = {name: (file, sha) for name, file, sha in manifest.stage_files()}
    matched = match_stages(snapshot, list(files), manifest.source, json_path("stages"))
    return tuple((contract, *files[name]) for contract, name in matched)


def match_stages(snapshot: Snapshot, given: Sequence[str], source: str,
                 where: str | None = None) -> tuple[tuple[StageContract, str], ...]:
    """Each stage of the snapshot's contract with the run's stage of that name. InputError
    (exit 2) naming the first stage the run lacks, for stages in another order, and for a
    one-ranking run (``given`` empty) on a pipeline snapshot. Stages outside the contract
    are left out (see :func:`ignored_stages`)."""
    wanted = [s.name for s in snapshot.stages]
    if not given:
        raise InputError(source, "the run is one ranking, and the snapshot's pipeline "
                         f"has stages {', '.join(wanted)}", "give a run file per stage: gate "
                         "run-manifest --stage NAME=FILE (repeated, in pipeline order)", where)
    missing = [name for name in wanted if name not in given]
    if missing:
        raise InputError(source, f"stage '{missing[0]}' of the snapshot's pipeline is "
                         f"missing from the run (it gives {', '.join(given)})",
                         f"add the {missing[0]} stage's run file: gate run-manifest --stage "
                         f"{missing[0]}=FILE", where)
    order = [name for name in given if name in wanted]
    if order != wanted:
        raise InputError(source, f"the run gives the stages in the order "
                         f"{', '.join(order)}; the snapshot's pipeline is {', '.join(wanted)}",
                         "list the stages in pipeline order", where)
    return tuple((contract, contract.name) for contract in snapshot.stages)


def ignored_stages(snapshot: Snapshot, manifest: RunManifest) -> list[str]:
    """Stages of the run outside the snapshot's contract (not scored)."""
    wanted = {s.name for s in snapshot.stages}
    if not snapshot.stages:
        return list(manifest.stages[:-1])
    return [name for name in manifest.stages if name not in wanted]


def score_stages(snapshot: Snapshot, test_set: TestSet,
                 rankings: Sequence[tuple[StageContract | None, Source]],
                 measures: Sequence[Measure] | None = None, chunks: ChunkTable | None = None,
                 with_funnel: bool = False) -> RunScores:
    """Score each ranking (see :func:`stage_sources`) on the measures that read its stage
    (the snapshot's measures unless ``measures`` are given), items placed by ``chunks`` (the
    run's chunk table) or the snapshot's. Values come back in the order of the measures.

    Steps, stage by stage: read the ranking and place its items (:func:`_read_stage`), score
    it (:func:`_score_stage`), and collect what each stage adds — its measures' columns,
    short lists, warnings, latency, leaks, abstentions, funnel coverage and, for the last
    stage, the context size (:class:`_Collected`); then assemble the run's scores."""
    wanted = tuple(measures or snapshot.measures)
    table = chunks or test_set.chunks
    collected = _Collected()
    for contract, source in rankings:
        rows, places = _read_stage(source, table, test_set)
        if places is not None:
            collected.placed.append(places)
        stage = _score_stage(snapshot, test_set, rows, contract, wanted, with_funnel)
        collected.add(stage, rows, with_funnel)
        if contract is not None and contract is snapshot.stages[-1]:
            collected.tokens = _context_tokens(rows, contract, stage.scored.query_ids, snapshot)
    return collected.run_scores(snapshot, test_set, wanted, table, len(rankings), with_funnel)


@dataclass(frozen=True)
class _Stage:
    """One ranking scored: its contract (None for a one-ranking run), its scores on the
    measures that read it, and for a budgeted stage its items within the cutoff, over the
    budget or not (``cut``: what the packer was given)."""

    contract: StageContract | None
    scored: Scores
    cut: Scores | None

    @property
    def name(self) -> str | None:
        return None if self.contract is None else self.contract.name


def _read_stage(source: Source, table: ChunkTable | None, test_set: TestSet
                ) -> tuple[RunRows, Boundaries | None]:
    """A ranking read, its items placed by the chunk table; without one, under span
    judgments, the places its items state (None when they state none)."""
    rows = read_run(source)
    if table is not None:
        return attach_chunks(rows, table), None
    if test_set.qrels.spans is not None:
        return rows, Boundaries.of_items(rows) or None
    return rows, None


def _score_stage(snapshot: Snapshot, test_set: TestSet, rows: RunRows,
                 contract: StageContract | None, wanted: tuple[Measure, ...],
                 with_funnel: bool) -> _Stage:
    """The ranking scored on the measures of its stage (Hit alone when none reads it); a
    budgeted stage also within its cutoff only, when the funnel or access data need it."""
    name = None if contract is None else contract.name
    own = [m for m in wanted if m.stage == name]
    scored = _score(snapshot, test_set, rows, own or [Measure("Hit", stage=name)], contract,
                    whole_list=with_funnel and contract is not None)
    cut = None
    if contract is not None and contract.budget is not None and (
            with_funnel or test_set.access is not None):
        cut = _score(snapshot, test_set, rows, [Measure("Hit", stage=name)],
                     StageContract(contract.name, contract.cutoff), whole_list=True)
    return _Stage(contract, scored, cut)


@dataclass
class _Collected:
    """What the stages of a run add up to, collected stage by stage (see :meth:`add`)."""

    columns: dict[Measure, np.ndarray] = field(default_factory=dict)
    short: dict[str, tuple[str, ...]] = field(default_factory=dict)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    latency: np.ndarray | None = None
    tokens: np.ndarray | None = None
    leaks: list[Leaks] = field(default_factory=list)
    abstained: dict[str, bool] | None = None
    listed: list[np.ndarray] = field(default_factory=list)
    budgeted: list[np.ndarray | None] = field(default_factory=list)
    placed: list[Boundaries] = field(default_factory=list)
    first: Scores | None = None
    last: Scores | None = None
    recorded: list[tuple[str | None, tuple[str, ...]]] = field(default_factory=list)

    def add(self, stage: _Stage, rows: RunRows, with_funnel: bool) -> None:
        """One stage's measures (and the queries whose list is shorter than a measure's
        cutoff, outside a budgeted stage), warnings, latency (summed over the stages), leaks
        (within what the packer was given), abstentions (the last ranking recording them
        wins) and funnel coverage."""
        scored, contract = stage.scored, stage.contract
        self.first = self.first or scored
        self.last = scored
        for j, measure in enumerate(scored.measures):
            self.columns[measure] = scored.values[:, j]
            if measure.k is not None and (contract is None or contract.budget is None) \
                    and scored.retrieved is not None:
                self.short[str(measure)] = tuple(scored.query_ids[i] for i in
                                                 np.flatnonzero(scored.retrieved < measure.k))
        for text in scored.warnings:
            self.warnings.setdefault(text, []).append(stage.name or "")
        self.recorded.append((stage.name, recorded_costs(rows)))
        self.latency = _add_latency(self.latency, rows, scored.query_ids)
        stage_leaks = scored.leaks if stage.cut is None else stage.cut.leaks
        if stage_leaks is not None:
            self.leaks.append(Leaks(stage_leaks.count, stage_leaks.per_query, tuple(
                replace(leak, stage=stage.name) for leak in stage_leaks.rows)))
        if rows.abstained is not None:
            self.abstained = dict(zip(rows.query_ids, rows.abstained.tolist()))
        if contract is not None and with_funnel:
            self._add_coverage(stage)

    def _add_coverage(self, stage: _Stage) -> None:
        """The relevant units a stage lists (within its cutoff) and, budgeted, packs."""
        assert stage.scored.coverage is not None
        if stage.contract is None or stage.contract.budget is None:
            self.listed.append(stage.scored.coverage.covered)
            self.budgeted.append(None)
            return
        assert stage.cut is not None and stage.cut.coverage is not None
        self.listed.append(stage.cut.coverage.covered)
        self.budgeted.append(stage.scored.coverage.covered)

    def run_scores(self, snapshot: Snapshot, test_set: TestSet, wanted: tuple[Measure, ...],
                   table: ChunkTable | None, n_rankings: int, with_funnel: bool) -> RunScores:
        """The run's scores: the measures' columns in ``wanted`` order, the funnel, the
        merged leaks, what each unanswerable query got and the spans the chunking cut."""
        first, last = self.first, self.last
        assert first is not None and last is not None
        values = (np.column_stack([self.columns[m] for m in wanted]) if len(first.query_ids)
                  else np.zeros((0, len(wanted))))
        scores = Scores(wanted, first.query_ids, values, first.unanswerable,
                        tuple(_merged(self.warnings, n_rankings)), first.policy,
                        coverage=last.coverage, retrieved=last.retrieved, ranked=last.ranked)
        found = None
        if with_funnel and snapshot.stages and first.coverage is not None:
            relevant = first.coverage.relevant
            found = funnel(snapshot.stages, [c[relevant] for c in self.listed],
                           [None if b is None else b[relevant] for b in self.budgeted],
                           first.coverage.qidx[relevant], len(first.query_ids))
        merged = _merged_leaks(self.leaks) if self.leaks else None
        returned = {q: (n, top, 0 if merged is None else merged.per_query.get(q, 0))
                    for q, (n, top, _) in last.returned.items()}
        return RunScores(scores, found, self.latency, self.tokens, self.short, merged,
                         self.abstained, returned, _spans_cut(snapshot, test_set, table,
                                                              self.placed),
                         tuple(self.recorded))


RECORDED = ("latency_ms", "tokens")  # the costs a run file may record


def recorded_costs(rows: RunRows) -> tuple[str, ...]:
    """The costs a ranking records (of :data:`RECORDED`): ``latency_ms`` per query, ``tokens``
    for every item (from the file, or from the chunk table that placed its items)."""
    return tuple(name for name, values in (("latency_ms", rows.latency_ms),
                                           ("tokens", rows.tokens))
                 if values is not None and (name != "tokens" or not (values < 0).any()))


def _spans_cut(snapshot: Snapshot, test_set: TestSet, table: ChunkTable | None,
               placed: list[Boundaries]) -> Cut | None:
    """With span judgments, the relevant spans the run's chunking cuts (its chunk table,
    else its items' places); None without span judgments or places."""
    bounds = Boundaries.of_table(table) if table is not None else Boundaries.joined(placed)
    if test_set.qrels.spans is None or bounds is None:
        return None
    return cut_spans(*relevant_spans(test_set.qrels.spans, snapshot.policy.threshold), bounds)


def _merged_leaks(per_stage: list[Leaks]) -> Leaks:
    """The leaks of every stage together (the first :data:`MAX_LEAKS` listed)."""
    per_query: dict[str, int] = {}
    for leaks in per_stage:
        for query, n in leaks.per_query.items():
            per_query[query] = per_query.get(query, 0) + n
    rows = tuple(leak for leaks in per_stage for leak in leaks.rows)[:MAX_LEAKS]
    return Leaks(sum(leaks.count for leaks in per_stage), per_query, rows)


def score_ranking(snapshot: Snapshot, test_set: TestSet, contract: StageContract | None,
                  source: Source, measures: Sequence[Measure], chunks: ChunkTable | None = None,
                  condensed: bool = False) -> Scores:
    """One ranking (a stage of ``contract``, or a one-ranking run) scored on ``measures``,
    its items placed by ``chunks`` (the run's chunk table) or the snapshot's; on condensed
    rankings with ``condensed`` (see :func:`~retrieval_gate.scoring.scores.condense`)."""
    rows, _ = _read_stage(source, chunks or test_set.chunks, test_set)
    return _score(snapshot, test_set, rows, measures, contract, False, condensed)


def _score(snapshot: Snapshot, test_set: TestSet, rows: RunRows, measures: Sequence[Measure],
           contract: StageContract | None, whole_list: bool, condensed: bool = False) -> Scores:
    return score_run(test_set.qrels, rows, measures, snapshot.policy, test_set.queries,
                     corpus=test_set.corpus, min_coverage=snapshot.min_coverage,
                     limit=contract, whole_list=whole_list, access=test_set.access,
                     by_item=snapshot.unit == "chunk", documents=test_set.documents,
                     condensed=condensed)


def _merged(warnings: dict[str, list[str]], n_rankings: int) -> list[str]:
    """Each warning once: as is when every ranking gave it (or there is one), else prefixed
    with the stages that gave it."""
    out = []
    for text, stages in warnings.items():
        if len(stages) == n_rankings or not any(stages):
            out.append(text)
        else:
            out.append(f"stage {', '.join(stages)}: {text}")
    return out


def _per_answerable(values: np.ndarray, run_ids: Sequence[str], query_ids: Sequence[str]
                    ) -> np.ndarray:
    """Per-run-query ``values`` arranged per answerable query; NaN where the run lacks it."""
    at = {q: i for i, q in enumerate(run_ids)}
    return np.array([values[at[q]] if q in at else math.nan for q in query_ids],
                    dtype=np.float64)


def _add_latency(total: np.ndarray | None, rows: RunRows, query_ids: Sequence[str]
                 ) -> np.ndarray | None:
    """``total`` plus this ranking's latency per answerable query (stages run one after the
    other, so a query's latency is the sum over the stages that record one)."""
    if rows.latency_ms is None:
        return total
    mine = _per_answerable(rows.latency_ms, rows.query_ids, query_ids)
    return mine if total is None else total + mine


def _context_tokens(rows: RunRows, contract: StageContract, query_ids: Sequence[str],
                    snapshot: Snapshot) -> np.ndarray | None:
    """Per answerable query, the tokens of the items the last stage passes on (within its
    cutoff and budget); None when its items carry no token counts."""
    if rows.tokens is None or (rows.tokens < 0).any():
        return None
    ranked = rank_run(rows, snapshot.policy.duplicates, collapse=False, limit=contract)
    assert ranked.tokens is not None
    counts = np.diff(ranked.offsets)
    per_query = np.bincount(np.repeat(np.arange(len(counts)), counts),
                            weights=ranked.tokens.astype(np.float64), minlength=len(counts))
    return _per_answerable(per_query, ranked.query_ids, query_ids)
