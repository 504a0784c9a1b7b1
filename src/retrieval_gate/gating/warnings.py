"""The warnings of a check: what its comparisons cannot certify (both runs scored nothing, few
queries, skewed differences), short rankings, newly failing queries, latencies timed in
different places, and what the inputs leave unchecked."""

from __future__ import annotations

from dataclasses import replace

from retrieval_gate.decide import skew
from retrieval_gate.decide.cost import CostRow
from retrieval_gate.decide.policy import SCORE_PREFIX, Comparison
from retrieval_gate.decide.signals import PairedSignal
from retrieval_gate.gating.outcome import QueryChange
from retrieval_gate.gating.pipeline import RunScores, ignored_stages
from retrieval_gate.inputs.run_manifest import RunManifest, failed_queries
from retrieval_gate.inputs.snapshot import Snapshot
from retrieval_gate.scoring.chunkcut import cut_warning
from retrieval_gate.scoring.measures import Measure
from retrieval_gate.scoring.scores import Scores

SMALL_N = 25  # below this many queries a slice gets a warning
_LISTED = 10  # newly failing queries named in a warning
NOTHING_SCORED = ("both runs score 0 on every query: neither retrieved anything the judgments "
                  "count, so nothing is certified")
CHECK_IDS = ("check that the runs' item ids are the ids the judgments name (documents of the "
             "corpus, or chunks of the judged chunking)")
CREDITED_NOTHING = ("both runs score 0 on every query: the judge credited nothing in either "
                    "run, so nothing is certified — check the score files (a judge that failed "
                    "writes null, not 0)")


def check_warnings(base_run: RunScores, cand_run: RunScores, comparisons: tuple[Comparison, ...],
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


def scored_nothing(base: Scores, cand: Scores, gated: tuple[Measure, ...]) -> tuple[str, ...]:
    """The gated measures (higher is better) on which both runs score 0 on every answerable
    query: nothing either run retrieved is counted by the judgments — usually run ids that
    are not the judged ids — so an interval of [0, 0] would certify a pass from nothing."""
    if not len(base.query_ids):
        return ()
    return tuple(str(m) for m in gated if not m.lower_is_better
                 and not base.values[:, base.measures.index(m)].any()
                 and not cand.values[:, cand.measures.index(m)].any())


def credited_nothing(signals: list[PairedSignal]) -> tuple[str, ...]:
    """The gated per-query scores (higher is better) that are 0 on every query both runs
    cover: as for a retrieval measure that scores nothing, an interval of [0, 0] would
    certify a pass from nothing."""
    return tuple(s.name for s in signals if s.name.startswith(SCORE_PREFIX)
                 and not s.lower_is_better and s.covers.any()
                 and not s.baseline[s.covers].any() and not s.candidate[s.covers].any())


def certifies_nothing(c: Comparison, why: str = f"{NOTHING_SCORED} — {CHECK_IDS}"
                       ) -> Comparison:
    """``c`` made inconclusive: both runs scored 0 on every query of its measure."""
    return replace(c, decision="inconclusive", improvement=False, decision_note=why)


def cost_warnings(manifests: tuple[RunManifest, RunManifest], costs: tuple[CostRow, ...]
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


def input_warnings(snap: Snapshot, manifests: tuple[RunManifest, RunManifest],
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


def _listed(ids: list[str]) -> str:
    return ", ".join(ids[:_LISTED]) + (f" and {len(ids) - _LISTED} more"
                                       if len(ids) > _LISTED else "")


def _plural(n: int) -> str:
    return "query" if n == 1 else "queries"
