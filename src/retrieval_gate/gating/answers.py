"""What a reviewer needs to read gated per-query scores: each score's kind, samples per query,
within-query spread and failed scores (:class:`~retrieval_gate.gating.outcome.AnswerScores`),
and the warnings they call for."""

from __future__ import annotations

from collections.abc import Sequence

from retrieval_gate.core.errors import InputError
from retrieval_gate.decide.policy import SCORE_PREFIX
from retrieval_gate.decide.signals import MissingCount, PairedSignal
from retrieval_gate.gating.gates import UNANSWERABLE, Gated
from retrieval_gate.gating.outcome import AnswerScores, ScoreSummary
from retrieval_gate.inputs.answer_scores import QueryScores, judge_warnings, load_run_scores
from retrieval_gate.inputs.run_manifest import RunManifest
from retrieval_gate.inputs.snapshot import TestSet

_DID = {"drop-pair": "left out of both runs", "worst": "scored as the worst value"}


def answer_summary(scores: tuple[QueryScores, QueryScores], signals: Sequence[PairedSignal],
                   missing: Sequence[MissingCount]) -> AnswerScores:
    """The summary of both runs' gated scores (``missing``: one count per gated score, in the
    order of the score signals among ``signals``)."""
    by_name = {s.name: s for s in signals}
    rows = []
    for count in missing:
        name = count.name.removeprefix(SCORE_PREFIX)
        signal = by_name[count.name]
        rows.append(ScoreSummary(
            count.name, signal.kind, signal.lower_is_better,
            _sample_ranges(scores),
            tuple(s.spread[s.names.index(name)] for s in scores),  # type: ignore[arg-type]
            (count.baseline, count.candidate), count.policy, count.pairs))
    return AnswerScores((scores[0].source, scores[1].source), (scores[0].tool, scores[1].tool),
                        (scores[0].judge, scores[1].judge), tuple(rows))


def _sample_ranges(scores: tuple[QueryScores, QueryScores]
                   ) -> tuple[tuple[int, int], tuple[int, int]]:
    """Each run's fewest and most samples of a query its file scores."""
    first, second = ((int(s.samples[~s.absent].min()), int(s.samples[~s.absent].max()))
                     for s in scores)
    return first, second


def missing_warnings(missing: Sequence[MissingCount]) -> list[str]:
    """One warning per gated score with failed scores: how many, in which run, and what the
    policy did with them."""
    return [f"{c.name}: {c.baseline + c.candidate} failed "
            f"{'score' if c.baseline + c.candidate == 1 else 'scores'} (baseline {c.baseline}, "
            f"candidate {c.candidate}) — missing = {c.policy}: {c.pairs} "
            f"{'query' if c.pairs == 1 else 'queries'} {_DID[c.policy]}"
            for c in missing if c.pairs]


def load_answer_scores(manifests: tuple[RunManifest, RunManifest], test_set: TestSet,
                       gated: Gated, config: str | None) -> tuple[QueryScores, QueryScores]:
    """Both runs' per-query scores, when a ``score:NAME`` is gated: each run's score file, hash-checked and matched with the snapshot's queries; InputError when a
    run pins none, a gated score is not in its file, or a score is gated on ``unanswerable``
    and a file scores none of those queries; exit 3 when the judges differ."""
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
