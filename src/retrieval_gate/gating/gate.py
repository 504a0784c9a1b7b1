"""The whole gate as one library call: snapshot + baseline + candidate + policy → :class:`Report`.

Steps: load the snapshot (schema, paths, file hashes) and its test set; load both run manifests
and require that both name the snapshot's fingerprint; score both runs per query under the
snapshot's scoring policy; for every gated (measure, slice) compare the paired per-query
differences (sign test, bootstrap interval, Holm across the family, minimum detectable drop);
decide (:func:`retrieval_gate.decide.policy.compare`); collect what a reviewer needs next (newly
failing queries, largest per-query drops, warnings) into a
:class:`~retrieval_gate.gating.outcome.Report`.

Slices: ``all`` is every answerable query of the snapshot; any other slice name is a query tag.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from retrieval_gate.core.errors import InputError, NotComparableError
from retrieval_gate.core.exported import exported
from retrieval_gate.core.parallel import both
from retrieval_gate.core.stages import REACHED, Funnel, loss_labels
from retrieval_gate.decide import skew
from retrieval_gate.decide.cost import (
    CostRow,
    decide_costs,
    measure_costs,
    member_p_values,
    missing_costs,
)
from retrieval_gate.decide.cost import family_members as cost_members
from retrieval_gate.decide.policy import (
    SCORE_PREFIX,
    Comparison,
    Decision,
    GatedMeasure,
    GatePolicy,
    Paired,
    PairPolicy,
    decide_pairs,
    exit_code,
    resolution_warning,
    verdict,
)
from retrieval_gate.decide.signals import (
    MissingCount,
    PairedSignal,
    compare_signals,
    family_of,
    paired_signals,
)
from retrieval_gate.gating.cut_spans import distrust_cut_spans, favoured
from retrieval_gate.gating.instead import Instead, retrieved_instead
from retrieval_gate.gating.latency import compared_latency, require_latency_gates
from retrieval_gate.gating.outcome import (
    FunnelQuery,
    FunnelReport,
    FunnelRow,
    LeakReport,
    QueryChange,
    QueryRow,
    Report,
    RunSummary,
    UnanswerableRow,
    UnanswerableSide,
)
from retrieval_gate.gating.pipeline import (
    RunScores,
    ignored_stages,
    score_ranking,
    score_stages,
    stage_sources,
    unranked,
)
from retrieval_gate.gating.sources import (
    abstention_signals,
    cost_signals,
    measure_signals,
    score_signals,
)
from retrieval_gate.gating.unjudged import Redecide, Rescore, check_regressions
from retrieval_gate.inputs.run_manifest import (
    RunManifest,
    failed_queries,
    load_run_chunks,
    read_run_file,
    read_run_manifest,
    require_made_on,
    resolve_run,
    verify_run_hash,
)
from retrieval_gate.inputs.snapshot import Snapshot, TestSet, load_snapshot, load_test_set
from retrieval_gate.scoring.chunkcut import cut_warning
from retrieval_gate.scoring.measures import Measure
from retrieval_gate.scoring.scores import Leaks, Scores

if TYPE_CHECKING:  # per-query scores are read, and summarised, only when one is gated
    from retrieval_gate.inputs.answer_scores import QueryScores

ALL = "all"
UNANSWERABLE = "unanswerable"
ABSTAIN, FALSE_ABSTAIN = "Abstain", "FalseAbstain"
SMALL_N = 25  # below this many queries a slice gets a warning
TOP_REGRESSIONS = 5  # per gated measure
_LISTED = 10  # newly failing queries named in a warning
_DEFAULT_POLICY = GatePolicy()


@exported
def run_gate(snapshot: str | os.PathLike[str], baseline: str | os.PathLike[str],
             candidate: str | os.PathLike[str], policy: GatePolicy = _DEFAULT_POLICY,
             config: str | None = None, baseline_manifest: str | os.PathLike[str] | None = None,
             candidate_manifest: str | os.PathLike[str] | None = None) -> Report:
    """Run the gate; see the module docstring. ``baseline`` and ``candidate`` are run files or
    baseline folders (one run with its manifest). ``config`` names where ``policy`` came from
    (for messages and the report). Raises InputError (exit 2) or NotComparableError (exit 3).

    The steps: the inputs (the snapshot, both runs and their manifests) → what is gated → both
    runs scored on the snapshot → the paired signals (measures, abstention decisions, per-query
    scores, costs) → one family decided → what a reviewer needs next → the report."""
    snap, test_set, runs, manifests = _inputs(snapshot, baseline, candidate, baseline_manifest,
                                              candidate_manifest)
    gated = _gated(snap, policy, config)
    slices = _slices(test_set, policy, config, [g.slice for _, g in gated.named if g.slice])
    cover = _Cover.of(snap, gated)
    base, cand = _scored(snap, test_set, runs, manifests, cover, gated, policy, config)
    answers = _answer_scores(manifests, test_set, gated, config)
    signals, missing = _signals(test_set, base, cand, gated, answers, policy)
    # One family: every signal's comparisons and the relative cost gates that can decide
    # (known from the number of queries alone, before any resampling)
    pairs = _pairs(policy, gated.named, slices)
    rows = {**slices, UNANSWERABLE: np.arange(len(test_set.unanswerable))
            + len(test_set.answerable)}
    costs_paired, uncompared = _compared_costs(base, cand)
    costs_paired, latency_said = compared_latency(costs_paired, manifests)
    family = (family_of(signals, rows, pairs, policy)
              + cost_members(costs_paired, policy.costs, policy))
    # the costs' bootstrap is numpy work that releases the GIL: it runs beside the quality
    # comparisons' (the family's Holm procedure then needs both)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cost-bootstrap") as pool:
        pending_costs = pool.submit(measure_costs, costs_paired, policy.costs, policy, family)
        quality = paired_signals(signals, rows, pairs, policy, family)
        measured = pending_costs.result()
    cost_p = member_p_values(measured)
    comparisons, nothing = _decided(quality, policy, family, cost_p, base, cand, gated, signals)
    costs = decide_costs(measured, policy, family,
                         [row.fields["p_regression"] for row in quality if row.fields["in_family"]])
    spans_cut = _spans_cut(manifests, (base, cand))
    if not policy.accept_cut_spans:
        comparisons = distrust_cut_spans(comparisons, [str(m) for m in gated.measures
                                                       if not m.lower_is_better],
                                         favoured(spans_cut, (manifests[0].chunking,
                                                              manifests[1].chunking)))
    comparisons, unjudged = check_regressions(
        comparisons, gated.measures, slices, snap, test_set,
        _rescorer(snap, test_set, runs, manifests),
        _redecider(signals, rows, pairs, policy, family, len(test_set.unanswerable), cost_p))
    found = _findings(snap, test_set, base, cand, signals, comparisons, slices, gated, cover,
                      nothing, policy)
    warnings = [*found.warnings, *uncompared, *latency_said, *_cost_warnings(manifests, costs),
                *_input_warnings(snap, manifests, (base, cand)),
                *filter(None, [resolution_warning(policy, family)])]
    summary = None
    if answers is not None:
        from retrieval_gate.gating.answers import answer_summary, missing_warnings
        from retrieval_gate.inputs.answer_scores import judge_warnings

        warnings += [*judge_warnings(manifests), *missing_warnings(missing)]
        summary = answer_summary(answers, signals, missing)
    overall, reasons = _overall(comparisons, costs, found.leaks)
    return Report(
        verdict=overall, exit_code=exit_code(overall, policy.fail_on), snapshot=snap,
        baseline=_summary(manifests[0].run, manifests[0], base.scores, snap, cover.judged),
        candidate=_summary(manifests[1].run, manifests[1], cand.scores, snap, cover.judged),
        policy=policy, config=config, comparisons=comparisons, hit_measure=str(cover.hit),
        newly_failing=found.newly_failing, top_regressions=found.drops,
        warnings=tuple(warnings), funnel=found.funnel, costs=costs, leaks=found.leaks,
        unanswerable=found.unanswerable, reasons=reasons, queries=found.queries,
        unchanged=found.unchanged, instead=found.instead, pool_bias=found.pool_bias,
        family=family, scored_nothing=nothing, spans_cut=spans_cut, unjudged=unjudged,
        answer_scores=summary)


@dataclass(frozen=True)
class _Cover:
    """The gate's own measures on the last stage: ``Hit`` and ``Judged`` at the deepest cutoff
    of the gated measures there (for the newly failing queries and the unjudged share), and
    every measure scored: the snapshot's and these."""

    hit: Measure
    judged: Measure
    cutoff: int | None
    measures: tuple[Measure, ...]

    @staticmethod
    def of(snap: Snapshot, gated: Gated) -> _Cover:
        final = snap.stages[-1].name if snap.stages else None
        cutoff = max((m.k for m in gated.measures if m.k is not None and m.stage == final),
                     default=None)
        hit, judged = Measure("Hit", cutoff, stage=final), Measure("Judged", cutoff, stage=final)
        return _Cover(hit, judged, cutoff, tuple(dict.fromkeys((*snap.measures, hit, judged))))


def _scored(snap: Snapshot, test_set: TestSet, runs: tuple[Path, Path],
            manifests: tuple[RunManifest, RunManifest], cover: _Cover, gated: Gated,
            policy: GatePolicy, config: str | None) -> tuple[RunScores, RunScores]:
    """Both runs scored on the snapshot, their files checked against their manifests; for runs
    of per-query scores only, nothing is ranked (a ranked side is only hash-checked)."""
    if all(m.ranked for m in manifests):
        base, cand = _score_verified(snap, test_set, runs, manifests, cover.measures)
    else:
        _require_scores_only(manifests, gated, policy, config)
        _verify_unscored(snap, runs, manifests)
        base = cand = unranked(snap, test_set)
    _require_recorded(base, cand, gated, policy, config)
    require_latency_gates(manifests, policy.costs, config)
    return base, cand


def _signals(test_set: TestSet, base: RunScores, cand: RunScores, gated: Gated,
             answers: tuple[QueryScores, QueryScores] | None, policy: GatePolicy
             ) -> tuple[list[PairedSignal], list[MissingCount]]:
    """The gated signals of every source (see :mod:`retrieval_gate.gating.sources`), and what
    the policy's ``missing`` did to each per-query score."""
    signals = [*measure_signals(test_set, base, cand, gated.measures),
               *abstention_signals(test_set, base, cand, gated.decisions)]
    if answers is None:
        return signals, []
    scored, missing = score_signals(answers, gated.scores, policy.missing)
    return signals + scored, missing


def _decided(quality: list[Paired], policy: GatePolicy, family: int, cost_p: list[float],
             base: RunScores, cand: RunScores, gated: Gated, signals: list[PairedSignal]
             ) -> tuple[tuple[Comparison, ...], tuple[str, ...]]:
    """Every (signal, slice) decided in the family, whose relative cost gates' regression
    p-values are ``cost_p``; those of a measure (or score) on which both runs score 0
    everywhere certify nothing. Also the measures that scored nothing."""
    comparisons = decide_pairs(quality, policy, family, cost_p)
    nothing = _scored_nothing(base.scores, cand.scores, gated.measures)
    credited = _credited_nothing(signals)
    return tuple(_certifies_nothing(c) if c.measure in nothing else
                 _certifies_nothing(c, CREDITED_NOTHING) if c.measure in credited else c
                 for c in comparisons), nothing


@dataclass(frozen=True)
class _Findings:
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


def _findings(snap: Snapshot, test_set: TestSet, base: RunScores, cand: RunScores,
              signals: list[PairedSignal], comparisons: tuple[Comparison, ...],
              slices: dict[str, np.ndarray], gated: Gated, cover: _Cover,
              nothing: tuple[str, ...], policy: GatePolicy) -> _Findings:
    """The newly failing queries, whether nothing changed, the pool bias, the warnings, the
    leaks, the funnel, the largest drops and what was retrieved instead, every query's values
    and what each run did with the unanswerable queries."""
    texts = {q.id: q.text for q in test_set.queries}
    newly_failing = _newly_failing(base.scores, cand.scores, cover.hit, texts)
    unchanged = _unchanged(comparisons, base, cand, signals)
    pool_bias = _pool_bias(base.scores, cand.scores, cover.judged, cover.cutoff)
    drops = (_top_regressions(base.scores, cand.scores, gated.measures, texts)
             + _score_drops(signals, base.scores.query_ids, texts))
    return _Findings(
        newly_failing, unchanged, pool_bias is not None,
        _warnings(base, cand, comparisons, newly_failing, pool_bias, cover.cutoff,
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


def _overall(comparisons: tuple[Comparison, ...], costs: tuple[CostRow, ...],
             leaks: LeakReport | None) -> tuple[Decision, tuple[str, ...]]:
    """The verdict (a failing leak is a regression whatever else) and its reasons: ``leak``,
    ``measures``, ``cost``."""
    leaking = leaks is not None and leaks.fails
    reasons = (*(["leak"] if leaking else []),
               *(["measures"] if any(c.decision == "regression" and c.gating
                                     for c in comparisons) else []),
               *(["cost"] if any(r.decision == "regression" for r in costs) else []))
    overall: Decision = "regression" if leaking else verdict(
        [c.decision for c in comparisons if c.gating]
        + [r.decision for r in costs if r.decision is not None])
    return overall, reasons


def _spans_cut(manifests: tuple[RunManifest, RunManifest], runs: tuple[RunScores, RunScores]
               ) -> tuple[str, ...]:
    """The runs (``baseline``, ``candidate``) whose chunking cut the span judgments."""
    return tuple(role for role, m, run in zip(("baseline", "candidate"), manifests, runs)
                 if cut_warning(role, m.chunking, run.cut) is not None)


def _inputs(snapshot: str | os.PathLike[str], baseline: str | os.PathLike[str],
            candidate: str | os.PathLike[str], baseline_manifest: str | os.PathLike[str] | None,
            candidate_manifest: str | os.PathLike[str] | None
            ) -> tuple[Snapshot, TestSet, tuple[Path, Path], tuple[RunManifest, RunManifest]]:
    """The snapshot and its test set, both runs (a baseline folder resolved to its run) and
    their manifests, each made on the snapshot (exit 3 otherwise)."""
    snap = load_snapshot(snapshot)
    test_set = load_test_set(snap)
    runs = resolve_run(baseline), resolve_run(candidate)
    manifests = (read_run_manifest(runs[0], baseline_manifest),
                 read_run_manifest(runs[1], candidate_manifest))
    require_made_on(snap, (manifests[0], "baseline"), (manifests[1], "candidate"))
    for manifest, role in zip(manifests, ("baseline", "candidate")):
        failed_queries(snap, manifest, role)  # refused under missing: error
    return snap, test_set, runs, manifests


def _require_recorded(base: RunScores, cand: RunScores, gated: Gated, policy: GatePolicy,
                      config: str | None) -> None:
    """InputError (exit 2) when a gated cost or abstention decision is not recorded by both
    runs."""
    missing = missing_costs(base.costs(), cand.costs(), policy.costs)
    if missing:
        raise InputError(config or "gate policy", f"a cost is gated, and the {missing[0]}",
                         "record it in both runs (latency_ms per query in JSON Lines runs; "
                         "token counts of the last stage's items), or remove the cost gate",
                         '$["cost"]')
    stages = (base.cost_stages(), cand.cost_stages())
    for metric in dict.fromkeys(gate.metric for gate in policy.costs):
        if stages[0].get(metric) != stages[1].get(metric):
            raise NotComparableError(
                f"not comparable: {metric} is gated, and the runs measure it on different "
                f"stages: {_measured_on(metric, stages)} — a cost summed over other stages is "
                f"another cost: record {metric} on the same stages in both runs, or remove "
                "the cost gate")
    for name in gated.decisions:
        for role, run in (("baseline", base), ("candidate", cand)):
            if run.abstained is None:
                raise InputError(config or "gate policy", f"{name} is gated, and the {role} "
                                 "records no abstained decision", 'record "abstained": true or '
                                 "false for every query of a JSON Lines run, or remove the gate",
                                 '$["gate"]')


def _compared_costs(base: RunScores, cand: RunScores) -> tuple[list[PairedSignal], list[str]]:
    """The cost signals (:func:`~retrieval_gate.gating.sources.cost_signals`) of the costs both
    runs measure alike, and a warning for each cost left out: recorded by one run only, or
    measured on different stages (a latency summed over other stages is another cost). A gated
    cost was required alike before (:func:`_require_recorded`)."""
    stages = (base.cost_stages(), cand.cost_stages())
    warnings, alike = [], []
    for signal in cost_signals(base, cand):
        if stages[0][signal.name] == stages[1][signal.name]:
            alike.append(signal)
        else:
            warnings.append(f"{signal.name}: the runs measure it on different stages "
                            f"({_measured_on(signal.name, stages)}), so it is not compared — "
                            "record it on the same stages in both runs")
    for metric in base.costs():
        if (metric in stages[0]) != (metric in stages[1]):
            role = "baseline" if metric in stages[0] else "candidate"
            warnings.append(f"{metric}: only the {role} records it, so it is not compared — "
                            "record it in both runs")
    return alike, warnings


def _measured_on(metric: str, stages: tuple[dict[str, tuple[str, ...]], ...]) -> str:
    """Where each run measures ``metric``: ``the baseline on candidates, context; the candidate
    on context``."""
    return "; ".join(f"the {role} on {', '.join(on.get(metric, ())) or 'no stage'}"
                     for role, on in zip(("baseline", "candidate"), stages))


def _require_scores_only(manifests: tuple[RunManifest, RunManifest], gated: Gated,
                         policy: GatePolicy, config: str | None) -> None:
    """A run of per-query scores only has no ranking: InputError (exit 2) when the policy
    gates a retrieval measure, an abstention decision or a cost, or no score at all."""
    role = "baseline" if not manifests[0].ranked else "candidate"
    ranking = [*map(str, gated.measures), *gated.decisions, *(c.name for c in policy.costs)]
    if ranking or not gated.scores:
        what = ("the default gates (Recall@10, nDCG@10) read rankings"
                if policy.gates == _DEFAULT_POLICY.gates else
                f"{ranking[0]} is gated" if ranking else "no per-query score is gated")
        raise InputError(config or "gate policy", f"{what}, and the {role} is per-query "
                         "scores only (its manifest pins no ranking)", "gate its scores only "
                         "(--gate score:NAME=MARGIN, or [[gate]] measure = \"score:NAME\"), "
                         "or give a run with its ranking", '$["gate"]')


def _verify_unscored(snap: Snapshot, runs: tuple[Path, Path],
                     manifests: tuple[RunManifest, RunManifest]) -> None:
    """Beside a run of scores only, the other run's rankings are not scored, but each — and
    its chunk table — must still be the file its manifest pins (exit 3 otherwise)."""
    for manifest, run in zip(manifests, runs):
        if manifest.ranked:
            for contract, file, pinned in stage_sources(snap, manifest, run):
                verify_run_hash(manifest, read_run_file(file).sha256, pinned,
                                None if contract is None else contract.name)
            load_run_chunks(manifest)  # its chunk table too


def _answer_scores(manifests: tuple[RunManifest, RunManifest], test_set: TestSet,
                   gated: Gated, config: str | None
                   ) -> tuple[QueryScores, QueryScores] | None:
    """Both runs' per-query scores, when a ``score:NAME`` is gated (None otherwise): each
    run's score file, hash-checked and matched with the snapshot's queries; InputError when a
    run pins none, a gated score is not in its file, or a score is gated on ``unanswerable``
    and a file scores none of those queries; exit 3 when the judges differ."""
    if not gated.scores:
        return None
    from retrieval_gate.inputs.answer_scores import judge_warnings, load_run_scores

    judge_warnings(manifests)  # exit 3 before reading: scores of different judges
    ids = (*test_set.answerable, *test_set.unanswerable)
    loaded = []
    for role, manifest in (("baseline", manifests[0]), ("candidate", manifests[1])):
        scores = load_run_scores(manifest, test_set, ids)
        if scores is None:
            raise InputError(config or "gate policy", f"{gated.scores[0][0]} is gated, and "
                             f"the {role}'s manifest {manifest.source} pins no score file",
                             "pin the run's scores with gate run-manifest --scores FILE, or "
                             "remove the gate", '$["gate"]')
        for name, _ in gated.scores:
            if name.removeprefix(SCORE_PREFIX) not in scores.names:
                raise InputError(config or "gate policy", f"{name} is gated, and the {role}'s "
                                 f"scores {scores.source} hold no score "
                                 f"'{name.removeprefix(SCORE_PREFIX)}' (they hold "
                                 f"{', '.join(scores.names)})", "gate one of its scores, or "
                                 "score the run for it", '$["gate"]')
        if not scores.scores_unanswerable:
            on = next((name for name, gate in gated.named if gate.slice == UNANSWERABLE
                       and name.startswith(SCORE_PREFIX)), None)
            if on is not None:
                raise InputError(config or "gate policy", f"{on} is gated on slice "
                                 f"'unanswerable', and the {role}'s scores {scores.source} "
                                 "score no unanswerable query", "score the unanswerable "
                                 "queries too, or gate the score on answerable slices only",
                                 '$["gate"]')
        loaded.append(scores)
    return loaded[0], loaded[1]


def _input_warnings(snap: Snapshot, manifests: tuple[RunManifest, RunManifest],
                    runs: tuple[RunScores, RunScores]) -> list[str]:
    """What the inputs leave unchecked: a snapshot without evidence unit, spans cut by a run's
    chunking, a run's stages the snapshot does not score."""
    warnings = []
    if "unit" not in snap.document["chunking"]:
        warnings.append("the snapshot states no evidence unit (it was frozen before units): "
                        "its judgments are taken for chunk ids of chunking "
                        f"'{snap.document['chunking'].get('version')}' and each run for a run "
                        "of that chunking, unchecked — freeze it again with --unit so that "
                        "runs are checked against it")
    warnings += [w for role, m, run in zip(("baseline", "candidate"), manifests, runs)
                 if (w := cut_warning(role, m.chunking, run.cut)) is not None]
    warnings += [w for role, m in zip(("baseline", "candidate"), manifests)
                 if (w := failed_queries(snap, m, role)) is not None]
    warnings += [f"{role}: stage {name} is not in the snapshot's pipeline and is not scored"
                 for role, m in zip(("baseline", "candidate"), manifests)
                 for name in ignored_stages(snap, m)]
    return warnings


INSTEAD = 15  # queries shown with what was retrieved instead
# Run files of this many bytes in all have the baseline scored in a forked child beside the
# candidate: from 1 MiB (below, a fork and the result's trip through a pipe cost more than they
# save) to 128 MiB (above, the child's own copy of the scoring arrays costs memory and saves no
# time: two 7M-line runs were no faster, at 1.18 GiB in all instead of 0.74).
PARALLEL_BYTES = range(1 << 20, 1 << 27)


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


def _pairs(policy: GatePolicy, named: tuple[tuple[str, GatedMeasure], ...],
           slices: dict[str, np.ndarray]) -> dict[tuple[str, str], PairPolicy]:
    """Each gate's (measure, slice) comparisons: on its own slice, else on every answerable
    slice of the policy (``Abstain``: on the unanswerable one); a gate on one slice wins over
    the same measure's gate on every slice."""
    answerable = [s for s in policy.slices if s != UNANSWERABLE]
    pairs = {}
    for name, gate in sorted(named, key=lambda pair: pair[1].slice is not None):
        where = [gate.slice] if gate.slice else ([UNANSWERABLE] if name == ABSTAIN
                                                 else answerable)
        for slice_name in where:
            pairs[(name, slice_name)] = PairPolicy(gate.margin, gate.min_queries,
                                                   gate.report_only)
    return pairs


NOTHING_SCORED = ("both runs score 0 on every query: neither retrieved anything the judgments "
                  "count, so nothing is certified")
CHECK_IDS = ("check that the runs' item ids are the ids the judgments name (documents of the "
             "corpus, or chunks of the judged chunking)")


def _scored_nothing(base: Scores, cand: Scores, gated: tuple[Measure, ...]) -> tuple[str, ...]:
    """The gated measures (higher is better) on which both runs score 0 on every answerable
    query: nothing either run retrieved is counted by the judgments — usually run ids that
    are not the judged ids — so an interval of [0, 0] would certify a pass from nothing."""
    if not len(base.query_ids):
        return ()
    return tuple(str(m) for m in gated if not m.lower_is_better
                 and not base.values[:, base.measures.index(m)].any()
                 and not cand.values[:, cand.measures.index(m)].any())


CREDITED_NOTHING = ("both runs score 0 on every query: the judge credited nothing in either "
                    "run, so nothing is certified — check the score files (a judge that failed "
                    "writes null, not 0)")


def _credited_nothing(signals: list[PairedSignal]) -> tuple[str, ...]:
    """The gated per-query scores (higher is better) that are 0 on every query both runs
    cover: as for a retrieval measure that scores nothing, an interval of [0, 0] would
    certify a pass from nothing."""
    return tuple(s.name for s in signals if s.name.startswith(SCORE_PREFIX)
                 and not s.lower_is_better and s.covers.any()
                 and not s.baseline[s.covers].any() and not s.candidate[s.covers].any())


def _certifies_nothing(c: Comparison, why: str = f"{NOTHING_SCORED} — {CHECK_IDS}"
                       ) -> Comparison:
    """``c`` made inconclusive: both runs scored 0 on every query of its measure."""
    return replace(c, decision="inconclusive", improvement=False, decision_note=why)


def _leak_report(base: RunScores, cand: RunScores, policy: GatePolicy) -> LeakReport:
    """Both runs' leaks, and whether they fail the gate under ``policy.leaks``."""
    none = Leaks(0, {}, ())
    b, c = base.leaks or none, cand.leaks or none
    fails = (policy.leaks == "fail" and (b.count > 0 or c.count > 0)) or (
        policy.leaks == "candidate" and c.count > 0)
    return LeakReport(policy.leaks, b, c, fails)


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


def _score_verified(snap: Snapshot, test_set: TestSet, runs: tuple[Path, Path],
                    manifests: tuple[RunManifest, RunManifest], measures: tuple[Measure, ...]
                    ) -> tuple[RunScores, RunScores]:
    """Read each ranking once (every stage of a pipeline run) and score those bytes: the
    baseline in a forked child while this process scores the candidate when their size is in
    :data:`PARALLEL_BYTES` (:mod:`retrieval_gate.core.parallel`), and a thread hashes the same
    bytes meanwhile. A run that differs from its manifest is reported as such (exit 3) even
    when scoring it failed too: the hash answers first."""
    sources = [stage_sources(snap, manifest, run) for manifest, run in zip(manifests, runs)]
    blobs = [[read_run_file(file) for _, file, _ in run] for run in sources]

    def scored(i: int) -> RunScores:
        return score_stages(snap, test_set, [(contract, blob) for (contract, _, _), blob
                                             in zip(sources[i], blobs[i])], measures,
                            load_run_chunks(manifests[i]), with_funnel=bool(snap.stages))

    def hashes() -> list[list[str]]:
        return [[blob.sha256 for blob in run] for run in blobs]

    with ThreadPoolExecutor(max_workers=1) as pool:  # hashlib releases the GIL
        digests: Future[list[list[str]]] | None = None

        def candidate() -> RunScores:
            nonlocal digests
            digests = pool.submit(hashes)  # a thread started after the fork
            return scored(1)

        size = sum(len(blob.data) for run in blobs for blob in run)
        try:
            scores = both(lambda: scored(0), candidate, fork=size in PARALLEL_BYTES)
        finally:
            actual = hashes() if digests is None else digests.result()
            for manifest, run, digest_of in zip(manifests, sources, actual):
                for (contract, file, pinned), digest in zip(run, digest_of):
                    verify_run_hash(manifest, digest, pinned,
                                    None if contract is None else contract.name)
    return scores


def _rescorer(snap: Snapshot, test_set: TestSet, runs: tuple[Path, Path],
              manifests: tuple[RunManifest, RunManifest]) -> Rescore:
    """Scoring measures of one stage again on both runs, for the unjudged items' check
    (:mod:`retrieval_gate.gating.unjudged`): the ranking of the measure's stage read again and
    checked against its manifest (exit 3 if it changed meanwhile)."""
    def rescore(measures: Sequence[Measure], condensed: bool) -> tuple[Scores, Scores]:
        scored = []
        for manifest, run in zip(manifests, runs):
            contract, file, pinned = next(
                source for source in stage_sources(snap, manifest, run)
                if (None if source[0] is None else source[0].name) == measures[0].stage)
            blob = read_run_file(file)
            verify_run_hash(manifest, blob.sha256, pinned,
                            None if contract is None else contract.name)
            scored.append(score_ranking(snap, test_set, contract, blob, measures,
                                        load_run_chunks(manifest), condensed))
        return scored[0], scored[1]
    return rescore


def _redecider(signals: list[PairedSignal], rows: dict[str, np.ndarray],
               pairs: dict[tuple[str, str], PairPolicy], policy: GatePolicy, family: int,
               unanswerable: int, cost_p: list[float]) -> Redecide:
    """Deciding the family again with one measure's per-query values replaced (its condensed
    values, for the unjudged items' check); the relative cost gates' regression p-values
    ``cost_p`` stay as they were."""
    def redecide(name: str, base: np.ndarray, cand: np.ndarray) -> tuple[Comparison, ...]:
        zeros = np.zeros(unanswerable)
        replaced = [PairedSignal.of(name, np.concatenate([base, zeros]),
                                    np.concatenate([cand, zeros]), s.lower_is_better, "score")
                    if s.name == name else s for s in signals]
        return compare_signals(replaced, rows, pairs, policy, family, cost_p)
    return redecide


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


def _cost_warnings(manifests: tuple[RunManifest, RunManifest], costs: tuple[CostRow, ...]
                   ) -> list[str]:
    """Latencies measured in different (or unknown) places are not comparable: say so."""
    if not any(row.metric == "latency_ms" for row in costs):
        return []
    places = [m.timed_on for m in manifests]
    if places[0] is not None and places[0] == places[1]:
        return []
    shown = [p or "not recorded" for p in places]
    return [(f"latency: the baseline was timed on {shown[0]!r}, the candidate on {shown[1]!r} — "
            "latencies measured on different machines or under different load are not "
            "comparable (record it with gate run-manifest --timed-on)")]


@dataclass(frozen=True)
class Gated:
    """What the policy gates, resolved against the snapshot: the retrieval measures, the
    abstention decisions, the per-query scores (``score:NAME``, with whether lower is better)
    and each gate with the name its comparisons carry."""

    measures: tuple[Measure, ...]
    decisions: tuple[str, ...]
    scores: tuple[tuple[str, bool], ...]
    named: tuple[tuple[str, GatedMeasure], ...]


def _gated(snap: Snapshot, policy: GatePolicy, config: str | None) -> Gated:
    """The gates resolved (:func:`_resolved`): retrieval measures, abstention decisions
    (``Abstain``, ``FalseAbstain``) and per-query scores (``score:NAME``). A (measure, slice)
    gated twice is an error, as is one score gated both as lower-is-better and not."""
    source = config or "gate policy"
    resolved = [_resolved(gate, i, snap, source) for i, gate in enumerate(policy.gates)]
    named = tuple((name, gate) for (name, _), gate in zip(resolved, policy.gates))
    keys = [(name, gate.slice) for name, gate in named]
    if len(set(keys)) != len(keys):
        raise InputError(source, "a measure is gated twice on one slice", "gate each measure "
                         "once per slice (a gate without slice covers every slice)",
                         '$["gate"]')
    lower = {name: gate.lower_is_better for name, gate in named}
    if any(gate.lower_is_better != lower[name] for name, gate in named):
        raise InputError(source, "a score is gated both as lower-is-better and not",
                         "give every gate of one score the same lower-is-better",
                         '$["gate"]')
    measures = tuple(dict.fromkeys(m for _, m in resolved if m is not None))
    decisions = tuple(dict.fromkeys(n for n, _ in named if n in (ABSTAIN, FALSE_ABSTAIN)))
    scores = tuple((n, lower[n]) for n in dict.fromkeys(n for n, _ in named
                                                       if n.startswith(SCORE_PREFIX)))
    return Gated(measures, decisions, scores, named)


def _resolved(gate: GatedMeasure, i: int, snap: Snapshot, source: str
              ) -> tuple[str, Measure | None]:
    """One gate's name as its comparisons carry it, and its retrieval measure (None for a
    decision or a score): parsed with the snapshot's default gain, on the last stage of a
    pipeline when it names none, and one of the snapshot's measures. ``lower-is-better`` is
    for scores only: the others have their own direction."""
    if gate.lower_is_better and not gate.measure.startswith(SCORE_PREFIX):
        raise InputError(source, f"lower-is-better is set on {gate.measure}, which has its "
                         "own direction", "set lower-is-better on per-query scores "
                         "(score:NAME) only", f'$["gate"][{i}]["lower-is-better"]')
    _require_defined_on_slice(gate, i, source)
    if gate.measure in (ABSTAIN, FALSE_ABSTAIN):
        return gate.measure, None
    if gate.measure.startswith(SCORE_PREFIX):
        from retrieval_gate.formats.scores.rows import check_score_name

        check_score_name(gate.measure.removeprefix(SCORE_PREFIX), source,
                         f'$["gate"][{i}]["measure"]')
        return gate.measure, None
    try:
        measure = snap.gated(gate.measure)
    except InputError as exc:
        raise InputError(source, exc.problem, exc.fix, f'$["gate"][{i}]') from None
    if measure not in snap.measures:
        raise InputError(source, f"gated measure {measure} is not one of the snapshot's "
                         f"measures ({', '.join(map(str, snap.measures))})",
                         "gate one of them, or freeze a snapshot that scores it",
                         f'$["gate"][{i}]["measure"]')
    return str(measure), measure


def _require_defined_on_slice(gate: GatedMeasure, i: int, source: str) -> None:
    """InputError (exit 2) for a gate on a slice where its measure is not defined: on
    ``unanswerable``, only ``Abstain`` and per-query scores are (a retrieval measure is 0 for
    every run there, since no item is relevant, and ``FalseAbstain`` counts answerable
    queries); ``Abstain`` is defined there only. A comparison of zeros would pass and join the
    family, raising every other comparison's Holm-adjusted p."""
    if gate.slice is None or gate.measure.startswith(SCORE_PREFIX):
        return
    on_unanswerable = gate.slice == UNANSWERABLE
    if (gate.measure == ABSTAIN) == on_unanswerable:
        return
    if gate.measure == ABSTAIN:
        problem = (f"Abstain is gated on slice '{gate.slice}', where it is not defined: it is "
                   "the share of the unanswerable queries a run abstains on")
        fix = ("gate Abstain without a slice (it is decided on 'unanswerable'), or gate "
               f"FalseAbstain on '{gate.slice}'")
    else:
        why = ("it counts abstentions on answerable queries" if gate.measure == FALSE_ABSTAIN
               else "no item is relevant to an unanswerable query, so every run scores 0")
        problem = f"{gate.measure} is gated on slice 'unanswerable', where it is not defined: {why}"
        fix = ("on 'unanswerable' gate Abstain or per-query scores (score:NAME); gate "
               f"{gate.measure} on an answerable slice")
    raise InputError(source, problem, fix, f'$["gate"][{i}]["slice"]')


def _slices(test_set: TestSet, policy: GatePolicy, config: str | None,
            extra: list[str | None] | None = None) -> dict[str, np.ndarray]:
    """Slice name → positions (in the answerable order) of its answerable queries; the
    ``unanswerable`` slice (the queries marked ``answerable: false``, where ``Abstain`` is
    decided) → their positions after the answerable ones."""
    position = {q: i for i, q in enumerate(test_set.answerable)}
    slices = {}
    for name in dict.fromkeys([*policy.slices, *(s for s in extra or () if s)]):
        if name == ALL:
            slices[name] = np.arange(len(position))
            continue
        if name == UNANSWERABLE:
            if not test_set.unanswerable:
                raise InputError(config or "gate policy", "slice 'unanswerable' is empty: no "
                                 "query is marked answerable: false", "mark the questions the "
                                 "corpus cannot answer, or remove the slice", '$["slices"]')
            slices[name] = np.arange(len(test_set.unanswerable)) + len(position)
            continue
        members = [position[q.id] for q in test_set.queries if name in q.tags and q.id in position]
        if not members:
            raise InputError(config or "gate policy", f"slice '{name}' matches no answerable "
                             "query (slices other than 'all' are query tags)",
                             f"tag queries with \"{name}\" in the query set, or remove the slice",
                             '$["slices"]')
        slices[name] = np.asarray(members)
    return slices


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


def _summary(path: str | os.PathLike[str], manifest: RunManifest, scores: Scores,
             snap: Snapshot, judged: Measure) -> RunSummary:
    means = scores.means()  # none for a run of scores only
    share = means.get(str(judged))
    return RunSummary(str(path), manifest.sha256, manifest.system,
                      {str(m): means.get(str(m)) for m in snap.measures},
                      None if share is None else 1.0 - share, manifest.chunking,
                      manifest.stages, manifest.timed_on, manifest.ranked)


def _warnings(base_run: RunScores, cand_run: RunScores, comparisons: tuple[Comparison, ...],
              newly_failing: tuple[QueryChange, ...], pool_bias: str | None, cutoff: int | None,
              gated: tuple[Measure, ...], nothing: tuple[str, ...] = (),
              unchanged: bool = False) -> list[str]:
    base, cand = base_run.scores, cand_run.scores
    warnings = [f"{role}: {w}" for role, s in (("baseline", base), ("candidate", cand))
                for w in s.warnings]
    if pool_bias:
        warnings.append(pool_bias)
    if nothing:
        warnings.append(f"{', '.join(nothing)}: {NOTHING_SCORED} — {CHECK_IDS}")
    warnings += _short_list_warnings(base_run, cand_run, gated)
    if not unchanged:  # an unchanged candidate's line says it once
        warnings += [w for c in comparisons if c.measure not in nothing
                     for w in _comparison_warnings(c)]
    if newly_failing:
        ids = [q.query for q in newly_failing]
        shown = _listed(ids)
        warnings.append(f"{len(ids)} newly failing {'query' if len(ids) == 1 else 'queries'} "
                        f"(a relevant item within {cutoff or 'the ranking'} in the baseline, "
                        f"none in the candidate): {shown}")
    return warnings


def _short_list_warnings(base_run: RunScores, cand_run: RunScores, gated: tuple[Measure, ...]
                         ) -> list[str]:
    """One line per group of gated measures whose rankings fall short of their k in the same
    queries: how many of the candidate's (and the baseline's) do, and which."""
    grouped: dict[tuple[tuple[str, ...], ...], list[Measure]] = {}
    for measure in gated:
        short = tuple(run.short_lists.get(str(measure), ()) for run in (base_run, cand_run))
        if short[0] or short[1]:
            grouped.setdefault(short, []).append(measure)
    return [f"{', '.join(map(str, named))}: {len(cand_short)} {_plural(len(cand_short))} of "
            f"the candidate (baseline {len(base_short)}) rank fewer than {named[0].k} items — "
            "an empty slot counts as a non-relevant, unjudged item"
            + (f": {_listed(list(cand_short))}" if cand_short else "")
            for (base_short, cand_short), named in grouped.items()]


def _comparison_warnings(c: Comparison) -> list[str]:
    """What one comparison warns of: why it certifies nothing, or how few queries it has; a
    percentile interval's note; differences more skewed than the calibration covers."""
    where = f"{c.measure} on slice '{c.slice}'"
    warnings = []
    if c.decision_note:
        warnings.append(f"{where}: {c.decision_note}")
    elif c.n < SMALL_N:
        warnings.append(f"{where}: only {c.n} queries — drops smaller than the detectable "
                        f"drop ({'undefined' if c.mde is None else f'{c.mde:.3f}'}) go unseen")
    if c.ci_method == "percentile" and c.ci_note:
        warnings.append(f"{where}: {c.ci_note}")
    if c.skew_queries is not None and c.skewness is not None:
        warnings.append(skew.warning(c.measure, c.slice, c.skewness, c.n, c.skew_queries))
    return warnings


POOL_SHARE = 0.05  # the candidate's unjudged share must exceed the baseline's by this…
POOL_ITEMS = 10  # …and by this many items, for the pool-bias warning


def _unjudged(scores: Scores, judged: Measure, cutoff: int | None
              ) -> tuple[float, int] | None:
    """A run's unjudged items in its top ``cutoff`` (without a cutoff, in its rankings): their
    share of the slots (k per query; without a cutoff, of the items returned) and their count;
    None without a query. Empty slots of a short or empty ranking are not items: judging
    cannot fill them. Items their asker may not see or that are not in force count as judged
    (Judged@k): no judgment could make them count."""
    if scores.retrieved is None or not len(scores.query_ids):
        return None
    per_query = scores.values[:, scores.measures.index(judged)]  # judged items / slots
    returned = scores.retrieved if cutoff is None else np.minimum(scores.retrieved, cutoff)
    slots = returned if cutoff is None else np.full(len(returned), cutoff)
    unjudged = int(returned.sum()) - round(float((per_query * slots).sum()))
    total = int(slots.sum())
    return (unjudged / total if total else 0.0), unjudged


def _pool_bias(base: Scores, cand: Scores, judged: Measure, cutoff: int | None) -> str | None:
    """A warning when the candidate surfaces clearly more unjudged items than the baseline
    (a pool bias: they score as non-relevant, so its scores may be understated); None when
    it does not — a share of unjudged items the two runs share is no news, and fewer items
    (a short ranking, a packing bug) are no unjudged items."""
    base_side, cand_side = (_unjudged(s, judged, cutoff) for s in (base, cand))
    if base_side is None or cand_side is None:
        return None
    (base_share, base_count), (cand_share, cand_count) = base_side, cand_side
    extra = cand_count - base_count
    if cand_share - base_share < POOL_SHARE or extra < POOL_ITEMS:
        return None
    where = f"top {cutoff}" if cutoff else "rankings"
    count = f"{extra} more unjudged {'item' if extra == 1 else 'items'}"
    of = "of the slots" if cutoff else "of the items"
    return (f"the candidate surfaces {count} in its {where} than the baseline (baseline "
            f"{100 * base_share:.1f}%, candidate {100 * cand_share:.1f}% {of}): they "
            "score as non-relevant, so its scores may be understated (pool bias) — have them "
            "judged: gate pool export, then gate pool merge --freeze under a new qrels "
            "version")


def _listed(ids: list[str]) -> str:
    return ", ".join(ids[:_LISTED]) + (f" and {len(ids) - _LISTED} more"
                                       if len(ids) > _LISTED else "")


def _plural(n: int) -> str:
    return "query" if n == 1 else "queries"
