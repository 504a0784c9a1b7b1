"""What a reviewer needs beside the decisions: the newly failing queries, the largest drops and
what was retrieved instead, every query's values, the funnel of a pipeline, the leaks, what
each run did with the unanswerable queries, and whether anything changed at all."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.stages import REACHED, Funnel, loss_labels
from retrieval_gate.decide.policy import SCORE_PREFIX, Comparison, GatePolicy
from retrieval_gate.decide.signals import PairedSignal
from retrieval_gate.gating.gates import UNANSWERABLE, Cover, Gated
from retrieval_gate.gating.instead import Instead, retrieved_instead
from retrieval_gate.gating.outcome import (
    FunnelQuery,
    FunnelReport,
    FunnelRow,
    LeakReport,
    QueryChange,
    QueryRow,
    RunSummary,
    UnanswerableRow,
    UnanswerableSide,
)
from retrieval_gate.gating.pipeline import RunScores
from retrieval_gate.gating.unjudged import pool_bias_warning
from retrieval_gate.gating.warnings import check_warnings
from retrieval_gate.inputs.run_manifest import RunManifest
from retrieval_gate.inputs.snapshot import Snapshot, TestSet
from retrieval_gate.scoring.measures import Measure
from retrieval_gate.scoring.scores import Leaks, Scores

TOP_REGRESSIONS = 5  # per gated measure
INSTEAD = 15  # queries shown with what was retrieved instead


@dataclass(frozen=True)
class Findings:
    """What a reviewer needs beside the decisions (see :class:`Report`)."""

    newly_failing: tuple[QueryChange, ...]
    unchanged: bool
    pool_bias: bool
    warnings: list[str]
    leaks: LeakReport | None
    funnel: FunnelReport | None
    drops: tuple[QueryChange, ...]
    instead: tuple[Instead, ...]
    queries: tuple[QueryRow, ...]
    unanswerable: tuple[UnanswerableRow, ...]


def findings(snap: Snapshot, test_set: TestSet, base: RunScores, cand: RunScores,
             signals: list[PairedSignal], comparisons: tuple[Comparison, ...],
             slices: dict[str, np.ndarray], gated: Gated, cover: Cover,
             nothing: tuple[str, ...], policy: GatePolicy) -> Findings:
    """The newly failing queries, whether nothing changed, the pool bias, the warnings, the
    leaks, the funnel, the largest drops and what was retrieved instead, every query's values
    and what each run did with the unanswerable queries."""
    texts = {q.id: q.text for q in test_set.queries}
    newly_failing = _newly_failing(base.scores, cand.scores, cover.hit, texts)
    unchanged = _unchanged(comparisons, base, cand, signals)
    pool_bias = pool_bias_warning(base.scores, cand.scores, cover.judged, cover.cutoff)
    drops = (_top_regressions(base.scores, cand.scores, gated.measures, texts)
             + _score_drops(signals, base.scores.query_ids, texts))
    return Findings(
        newly_failing, unchanged, pool_bias is not None,
        check_warnings(base, cand, comparisons, newly_failing, pool_bias, cover.cutoff,
                  gated.measures, nothing, unchanged),
        _leak_report(base, cand, policy) if test_set.access is not None else None,
        None if base.funnel is None or cand.funnel is None else _funnel_report(
            snap, base.funnel, cand.funnel, base.scores.query_ids),
        drops,
        retrieved_instead(snap, test_set, base.scores, cand.scores,
                          _worst_queries(drops, newly_failing)),
        _query_rows(test_set, base.scores, cand.scores, slices, signals),
        _unanswerable(test_set, base, cand) if base.ranked and cand.ranked else ())


def _unchanged(comparisons: tuple[Comparison, ...], base: RunScores, cand: RunScores,
               signals: list[PairedSignal]) -> bool:
    """Whether nothing changed: every measure of every query, every abstention decision,
    every gated signal and every cost (each query's latency and context size, recorded by
    both runs or by neither) equal in both runs."""
    return (all(c.wins == c.losses == 0 for c in comparisons)
            and np.array_equal(base.scores.values, cand.scores.values)
            and base.abstained == cand.abstained
            and all(np.array_equal(s.baseline, s.candidate) for s in signals)
            and all(_same_cost(b, cand.costs()[metric]) for metric, b in base.costs().items()))


def _same_cost(base: np.ndarray | None, cand: np.ndarray | None) -> bool:
    """Whether both runs record a cost alike: neither, or both with equal values per query
    (a query neither gives, NaN, is alike)."""
    if base is None or cand is None:
        return base is cand
    return np.array_equal(base, cand, equal_nan=True)


def _worst_queries(drops: tuple[QueryChange, ...], newly_failing: tuple[QueryChange, ...]
                   ) -> list[str]:
    """The queries shown with what was retrieved instead: the largest drops first, then the
    newly failing ones, each once, at most :data:`INSTEAD`."""
    return list(dict.fromkeys([q.query for q in drops] + [q.query for q in newly_failing])
                )[:INSTEAD]


def _query_rows(test_set: TestSet, base: Scores, cand: Scores, slices: dict[str, np.ndarray],
                signals: list[PairedSignal]) -> tuple[QueryRow, ...]:
    """Every answerable query with its slices, every measure's value in both runs and each
    gated per-query score's (None where its pair was dropped for a failed score)."""
    texts = {q.id: q.text for q in test_set.queries}
    member: dict[int, list[str]] = {}
    for name, rows in slices.items():
        if name != UNANSWERABLE:
            for i in rows.tolist():
                member.setdefault(i, []).append(name)
    n = len(base.query_ids)
    names = [str(m) for m in base.measures]
    shown = [s for s in signals if s.name.startswith(SCORE_PREFIX)]
    values = [np.hstack([run.values, *(getattr(s, side)[:n, None] for s in shown)]).tolist()
              for run, side in ((base, "baseline"), (cand, "candidate"))]
    names += [s.name for s in shown]
    dropped = {j: s.covers[:n] for j, s in enumerate(shown, len(base.measures))
               if not s.covers[:n].all()}
    for side in values:  # a dropped pair has no value to show
        for j, covers in dropped.items():
            for i in np.flatnonzero(~covers).tolist():
                side[i][j] = None
    return tuple(QueryRow(qid, texts.get(qid, ""), tuple(member.get(i, ())),
                          dict(zip(names, b)), dict(zip(names, c)))
                 for i, (qid, b, c) in enumerate(zip(base.query_ids, *values)))


def _newly_failing(base: Scores, cand: Scores, hit: Measure, texts: dict[str, str]
                   ) -> tuple[QueryChange, ...]:
    """Queries with a relevant item within the cutoff in the baseline and none in the
    candidate, in query order."""
    if hit not in base.measures:  # runs of scores only
        return ()
    j = base.measures.index(hit)
    lost = np.flatnonzero((base.values[:, j] == 1) & (cand.values[:, j] == 0))
    return tuple(QueryChange(str(hit), base.query_ids[i], texts.get(base.query_ids[i], ""),
                             1.0, 0.0) for i in lost.tolist())


def _top_regressions(base: Scores, cand: Scores, gated: tuple[Measure, ...],
                     texts: dict[str, str]) -> tuple[QueryChange, ...]:
    """For each gated measure, the queries (all answerable) with the largest drops, at most
    :data:`TOP_REGRESSIONS`, largest first (ties by query id)."""
    changes = []
    for measure in gated:
        j = base.measures.index(measure)
        b, c = base.values[:, j], cand.values[:, j]
        worse = [(c[i] - b[i], base.query_ids[i], i) for i in np.flatnonzero(c < b).tolist()]
        for _, qid, i in sorted(worse)[:TOP_REGRESSIONS]:
            changes.append(QueryChange(str(measure), qid, texts.get(qid, ""), float(b[i]),
                                       float(c[i])))
    return tuple(changes)


def _score_drops(signals: list[PairedSignal], query_ids: tuple[str, ...],
                 texts: dict[str, str]) -> tuple[QueryChange, ...]:
    """For each gated per-query score, the answerable queries where the candidate is worse
    (lower; higher for a harm), at most :data:`TOP_REGRESSIONS`, worst first (ties by query
    id); dropped pairs have no value."""
    changes = []
    n = len(query_ids)
    for s in signals:
        if not s.name.startswith(SCORE_PREFIX):
            continue
        b, c = s.baseline[:n], s.candidate[:n]
        turned = (b - c) if s.lower_is_better else (c - b)
        worse = [(turned[i], query_ids[i], i)
                 for i in np.flatnonzero((turned < 0) & s.covers[:n]).tolist()]
        for _, qid, i in sorted(worse)[:TOP_REGRESSIONS]:
            changes.append(QueryChange(s.name, qid, texts.get(qid, ""), float(b[i]),
                                       float(c[i])))
    return tuple(changes)


def _unanswerable(test_set: TestSet, base: RunScores, cand: RunScores
                  ) -> tuple[UnanswerableRow, ...]:
    """What each run did with each unanswerable query."""
    texts = {q.id: q.text for q in test_set.queries}

    def side(run: RunScores, qid: str) -> UnanswerableSide:
        returned, top, leaks = run.returned.get(qid, (0, None, 0))
        return UnanswerableSide(returned, top, leaks,
                                None if run.abstained is None else run.abstained.get(qid))
    return tuple(UnanswerableRow(q, texts.get(q, ""), side(base, q), side(cand, q))
                 for q in test_set.unanswerable)


def _funnel_report(snap: Snapshot, base: Funnel, cand: Funnel, query_ids: tuple[str, ...]
                   ) -> FunnelReport:
    """Both runs' funnels side by side: units reaching each stage, losses by kind, the loss
    that grew most, and per query."""
    labels = loss_labels(snap.stages)
    counts = (base.counts(), cand.counts())
    losses = tuple(FunnelRow(kind, labels[kind], counts[0][kind], counts[1][kind])
                   for kind in base.kinds)
    reaching = []
    gone = [0, 0]
    for stage in snap.stages:
        for side in (0, 1):
            gone[side] += counts[side][stage.name] + counts[side].get(f"{stage.name}:budget", 0)
        reaching.append((stage.name, len(base.qidx) - gone[0], len(cand.qidx) - gone[1]))
    grew = [row for row in losses if row.diff > 0]
    worst = max(grew, key=lambda row: row.diff) if grew else None
    names = (REACHED, *base.kinds)
    per_query = (base.per_query(), cand.per_query())
    queries = tuple(FunnelQuery(qid, dict(zip(names, per_query[0][i].tolist())),
                                dict(zip(names, per_query[1][i].tolist())))
                    for i, qid in enumerate(query_ids))
    return FunnelReport(tuple(s.describe() for s in snap.stages), len(base.qidx),
                        tuple(reaching), losses, worst, queries)


def _leak_report(base: RunScores, cand: RunScores, policy: GatePolicy) -> LeakReport:
    """Both runs' leaks, and whether they fail the gate under ``policy.leaks``."""
    none = Leaks(0, {}, ())
    b, c = base.leaks or none, cand.leaks or none
    fails = (policy.leaks == "fail" and (b.count > 0 or c.count > 0)) or (
        policy.leaks == "candidate" and c.count > 0)
    return LeakReport(policy.leaks, b, c, fails)


def run_summary(path: str | os.PathLike[str], manifest: RunManifest, scores: Scores,
                snap: Snapshot, judged: Measure) -> RunSummary:
    means = scores.means()  # none for a run of scores only
    share = means.get(str(judged))
    return RunSummary(str(path), manifest.sha256, manifest.system,
                      {str(m): means.get(str(m)) for m in snap.measures},
                      None if share is None else 1.0 - share, manifest.chunking,
                      manifest.stages, manifest.timed_on, manifest.ranked)
