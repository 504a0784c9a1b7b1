"""What a reviewer needs to read gated per-query scores: each score's kind, samples per query,
within-query spread and failed scores (:class:`~retrieval_gate.gating.outcome.AnswerScores`),
and the warnings they call for."""

from __future__ import annotations

from collections.abc import Sequence

from retrieval_gate.decide.policy import SCORE_PREFIX
from retrieval_gate.decide.signals import MissingCount, PairedSignal
from retrieval_gate.gating.outcome import AnswerScores, ScoreSummary
from retrieval_gate.inputs.answer_scores import QueryScores

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
