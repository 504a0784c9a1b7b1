"""The sources of the gate's paired signals (:class:`~retrieval_gate.decide.signals.PairedSignal`),
each on the gate's rows — the snapshot's answerable queries, then its unanswerable ones:

- :func:`measure_signals`: the gated retrieval measures of both runs' scores (0 on the
  unanswerable rows, where no measure is gated);
- :func:`abstention_signals`: each run's abstained decision per query (``Abstain`` and
  ``FalseAbstain`` read the same 0/1 values on different slices);
- :func:`score_signals`: the gated ``score:NAME`` of both runs' score files, failed scores
  treated by the policy's ``missing``;
- :func:`cost_signals`: each cost both runs record, per answerable query (decided as a ratio of
  statistics by :mod:`retrieval_gate.decide.cost`).

A new kind of signal is one more function here, and its reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from retrieval_gate.decide.policy import SCORE_PREFIX, Missing
from retrieval_gate.decide.signals import MissingCount, PairedSignal, apply_missing
from retrieval_gate.gating.pipeline import RunScores
from retrieval_gate.inputs.snapshot import TestSet
from retrieval_gate.scoring.measures import Measure

if TYPE_CHECKING:
    from retrieval_gate.inputs.answer_scores import QueryScores

FALSE_ABSTAIN = "FalseAbstain"


def measure_signals(test_set: TestSet, base: RunScores, cand: RunScores,
                    gated: Sequence[Measure]) -> list[PairedSignal]:
    """One signal per gated retrieval measure (its own direction: Stale is lower-is-better)."""
    extra = np.zeros(len(test_set.unanswerable))
    signals = []
    for measure in gated:
        j = base.scores.measures.index(measure)
        b, c = (np.concatenate([run.scores.values[:, j], extra]) for run in (base, cand))
        signals.append(PairedSignal.of(str(measure), b, c, measure.lower_is_better, "score"))
    return signals


def abstention_signals(test_set: TestSet, base: RunScores, cand: RunScores,
                       decisions: Sequence[str]) -> list[PairedSignal]:
    """One signal per gated abstention decision: 1 where the run abstained (FalseAbstain is
    lower-is-better: abstaining on an answerable query is the harm)."""
    rows = (*test_set.answerable, *test_set.unanswerable)
    declined = []
    for run in (base, cand):
        said = run.abstained or {}
        declined.append(np.array([float(said.get(q, False)) for q in rows]))
    return [PairedSignal.of(name, declined[0], declined[1], name == FALSE_ABSTAIN, "decision")
            for name in decisions]


def cost_signals(base: RunScores, cand: RunScores) -> list[PairedSignal]:
    """One signal per cost both runs record (latency, context tokens), per answerable query;
    a run that records a cost for some queries only pairs on the queries both give."""
    both = [(metric, b, cand.costs()[metric]) for metric, b in base.costs().items()]
    return [PairedSignal.cost(metric, b, c) for metric, b, c in both
            if b is not None and c is not None]


def score_signals(scores: tuple[QueryScores, QueryScores], gated: Sequence[tuple[str, bool]],
                  missing: Missing) -> tuple[list[PairedSignal], list[MissingCount]]:
    """One signal per gated ``score:NAME`` (with whether lower is better), and what
    ``missing`` did to each; a query either file leaves out (an unanswerable query of a file
    that scores none of them) is not covered."""
    signals, counts = [], []
    for name, lower in gated:
        score = name.removeprefix(SCORE_PREFIX)
        signal, count = apply_missing(name, scores[0].column(score), scores[1].column(score),
                                      lower, missing, scores[0].query_ids,
                                      (scores[0].source, scores[1].source),
                                      scores[0].absent | scores[1].absent)
        signals.append(signal)
        counts.append(count)
    return signals, counts
