"""The whole gate as one library call: snapshot + baseline + candidate + policy → :class:`Report`.

Steps: load the snapshot (schema, paths, file hashes) and its test set; load both run manifests
and require that both name the snapshot's fingerprint; resolve what is gated
(:mod:`~retrieval_gate.gating.gates`); score both runs per query under the snapshot's scoring
policy (:mod:`~retrieval_gate.gating.scored`); for every gated (measure, slice) compare the
paired per-query differences (sign test, bootstrap interval, Holm across the family, minimum
detectable drop); decide (:func:`retrieval_gate.decide.policy.compare`); collect what a reviewer
needs next (:mod:`~retrieval_gate.gating.findings`: newly failing queries, largest per-query
drops; :mod:`~retrieval_gate.gating.warnings`) into a
:class:`~retrieval_gate.gating.outcome.Report`.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from retrieval_gate.core.exported import exported
from retrieval_gate.decide.cost import CostRow, decide_costs, measure_costs, member_p_values
from retrieval_gate.decide.cost import family_members as cost_members
from retrieval_gate.decide.policy import (
    Comparison,
    Decision,
    GatePolicy,
    Paired,
    decide_pairs,
    exit_code,
    resolution_warning,
    verdict,
)
from retrieval_gate.decide.signals import (
    MissingCount,
    PairedSignal,
    family_of,
    paired_signals,
)
from retrieval_gate.gating.cut_spans import distrust_cut_spans, favoured
from retrieval_gate.gating.findings import findings, run_summary
from retrieval_gate.gating.gates import (
    DEFAULT_POLICY,
    UNANSWERABLE,
    Cover,
    Gated,
    pair_policies,
    resolve_gates,
    slice_rows,
)
from retrieval_gate.gating.latency import compared_latency
from retrieval_gate.gating.outcome import LeakReport, Report
from retrieval_gate.gating.pipeline import RunScores
from retrieval_gate.gating.scored import compared_costs, rescorer, score_runs, spans_cut_by
from retrieval_gate.gating.sources import abstention_signals, measure_signals, score_signals
from retrieval_gate.gating.unjudged import check_regressions, redecider
from retrieval_gate.gating.warnings import (
    CREDITED_NOTHING,
    certifies_nothing,
    cost_warnings,
    credited_nothing,
    input_warnings,
    scored_nothing,
)
from retrieval_gate.inputs.run_manifest import (
    RunManifest,
    failed_queries,
    read_run_manifest,
    require_made_on,
    resolve_run,
)
from retrieval_gate.inputs.snapshot import Snapshot, TestSet, load_snapshot, load_test_set

if TYPE_CHECKING:  # per-query scores are read, and summarised, only when one is gated
    from retrieval_gate.inputs.answer_scores import QueryScores


@exported
def run_gate(snapshot: str | os.PathLike[str], baseline: str | os.PathLike[str],
             candidate: str | os.PathLike[str], policy: GatePolicy = DEFAULT_POLICY,
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
    gated = resolve_gates(snap, policy, config)
    slices = slice_rows(test_set, policy, config, [g.slice for _, g in gated.named if g.slice])
    cover = Cover.of(snap, gated)
    base, cand = score_runs(snap, test_set, runs, manifests, cover, gated, policy, config)
    answers = None
    if gated.scores:  # the score readers are imported only then
        from retrieval_gate.gating.answers import load_answer_scores

        answers = load_answer_scores(manifests, test_set, gated, config)
    signals, missing = _signals(test_set, base, cand, gated, answers, policy)
    # One family: every signal's comparisons and the relative cost gates that can decide
    # (known from the number of queries alone, before any resampling)
    pairs = pair_policies(policy, gated.named, slices)
    rows = {**slices, UNANSWERABLE: np.arange(len(test_set.unanswerable))
            + len(test_set.answerable)}
    costs_paired, uncompared = compared_costs(base, cand)
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
    spans_cut = spans_cut_by(manifests, (base, cand))
    if not policy.accept_cut_spans:
        comparisons = distrust_cut_spans(comparisons, [str(m) for m in gated.measures
                                                       if not m.lower_is_better],
                                         favoured(spans_cut, (manifests[0].chunking,
                                                              manifests[1].chunking)))
    comparisons, unjudged = check_regressions(
        comparisons, gated.measures, slices, snap, test_set,
        rescorer(snap, test_set, runs, manifests),
        redecider(signals, rows, pairs, policy, family, len(test_set.unanswerable), cost_p))
    found = findings(snap, test_set, base, cand, signals, comparisons, slices, gated, cover,
                     nothing, policy)
    warnings = [*found.warnings, *uncompared, *latency_said, *cost_warnings(manifests, costs),
                *input_warnings(snap, manifests, (base, cand)),
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
        baseline=run_summary(manifests[0].run, manifests[0], base.scores, snap, cover.judged),
        candidate=run_summary(manifests[1].run, manifests[1], cand.scores, snap, cover.judged),
        policy=policy, config=config, comparisons=comparisons, hit_measure=str(cover.hit),
        newly_failing=found.newly_failing, top_regressions=found.drops,
        warnings=tuple(warnings), funnel=found.funnel, costs=costs, leaks=found.leaks,
        unanswerable=found.unanswerable, reasons=reasons, queries=found.queries,
        unchanged=found.unchanged, instead=found.instead, pool_bias=found.pool_bias,
        family=family, scored_nothing=nothing, spans_cut=spans_cut, unjudged=unjudged,
        answer_scores=summary)


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
    nothing = scored_nothing(base.scores, cand.scores, gated.measures)
    credited = credited_nothing(signals)
    return tuple(certifies_nothing(c) if c.measure in nothing else
                 certifies_nothing(c, CREDITED_NOTHING) if c.measure in credited else c
                 for c in comparisons), nothing


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
