"""Both runs of a check scored on its snapshot, each file checked against its manifest (a run
that is not the file its manifest pins is exit 3), and what both runs must record for what is
gated: the costs and abstention decisions, alike."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from retrieval_gate.core.errors import InputError, NotComparableError
from retrieval_gate.core.parallel import both
from retrieval_gate.decide.cost import missing_costs
from retrieval_gate.decide.policy import GatePolicy
from retrieval_gate.decide.signals import PairedSignal
from retrieval_gate.gating.gates import DEFAULT_POLICY, Cover, Gated
from retrieval_gate.gating.latency import require_latency_gates
from retrieval_gate.gating.pipeline import (
    RunScores,
    score_ranking,
    score_stages,
    stage_sources,
    unranked,
)
from retrieval_gate.gating.sources import cost_signals
from retrieval_gate.gating.unjudged import Rescore
from retrieval_gate.inputs.run_manifest import (
    RunManifest,
    load_run_chunks,
    read_run_file,
    verify_run_hash,
)
from retrieval_gate.inputs.snapshot import Snapshot, TestSet
from retrieval_gate.scoring.chunkcut import cut_warning
from retrieval_gate.scoring.measures import Measure
from retrieval_gate.scoring.scores import Scores

# Run files of this many bytes in all have the baseline scored in a forked child beside the
# candidate: from 1 MiB (below, a fork and the result's trip through a pipe cost more than they
# save) to 128 MiB (above, the child's own copy of the scoring arrays costs memory and saves no
# time: two 7M-line runs were no faster, at 1.18 GiB in all instead of 0.74).
PARALLEL_BYTES = range(1 << 20, 1 << 27)


def score_runs(snap: Snapshot, test_set: TestSet, runs: tuple[Path, Path],
               manifests: tuple[RunManifest, RunManifest], cover: Cover, gated: Gated,
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


def _require_scores_only(manifests: tuple[RunManifest, RunManifest], gated: Gated,
                         policy: GatePolicy, config: str | None) -> None:
    """A run of per-query scores only has no ranking: InputError (exit 2) when the policy
    gates a retrieval measure, an abstention decision or a cost, or no score at all."""
    role = "baseline" if not manifests[0].ranked else "candidate"
    ranking = [*map(str, gated.measures), *gated.decisions, *(c.name for c in policy.costs)]
    if ranking or not gated.scores:
        what = ("the default gates (Recall@10, nDCG@10) read rankings"
                if policy.gates == DEFAULT_POLICY.gates else
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


def compared_costs(base: RunScores, cand: RunScores) -> tuple[list[PairedSignal], list[str]]:
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


def rescorer(snap: Snapshot, test_set: TestSet, runs: tuple[Path, Path],
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


def spans_cut_by(manifests: tuple[RunManifest, RunManifest], runs: tuple[RunScores, RunScores]
               ) -> tuple[str, ...]:
    """The runs (``baseline``, ``candidate``) whose chunking cut the span judgments."""
    return tuple(role for role, m, run in zip(("baseline", "candidate"), manifests, runs)
                 if cut_warning(role, m.chunking, run.cut) is not None)
