"""A regression must not rest on items nobody judged.

Under ``unjudged = nonrelevant`` (trec_eval's rule, the default), a candidate that retrieves
items the judgments never saw loses points for them, relevant or not: a new retriever is
penalised for finding what the pool missed (pool bias), and a run of another evidence unit —
chunk ids of another chunking under document judgments — scores as if it found nothing. Each
gated comparison of a retrieval measure (higher is better) decided ``regression`` is checked
twice, and is ``inconclusive`` when either check finds that it depends on unjudged items:

1. **Judged pools** (:func:`judged_pool`: judgments that name non-relevant items too — graded
   pools, span judgments). When the candidate's top k on the comparison's slice holds
   materially more unjudged items than the baseline's — at least :data:`UNJUDGED_SHARE` of
   its k × n slots and :data:`MIN_ITEMS` items more — the measure is decided again, in the
   same family, on **condensed rankings** (:func:`~retrieval_gate.scoring.scores.condense`:
   the unjudged items removed from both runs, Sakai 2007; trec_eval ``-J``). A drop that holds
   on the judged items alone stands; one that does not rests on the unjudged items. Below
   that gap (a candidate with a few unjudged items more, the usual pool bias) the decision
   stands, and the pool-bias warning says what to judge. Judgments that name relevant items
   only (Cranfield's, MS MARCO's) take every other item for non-relevant by their own
   convention: they cannot tell an unjudged item from a non-relevant one, and this check does
   not apply.
2. **Ids of another unit** (:func:`unchecked_chunk_ids`: the snapshot pins nothing that
   checks the runs' ids — document judgments without a corpus, chunk judgments without their
   chunk table — and at least half the judged ids hold ``#``, as chunk ids do). An unjudged
   item *looks like* a judged unit when its id's stem, the part before its last ``#``, is the
   stem of a judged id of its query (``compound#12`` beside judged ``compound#7``): a piece of a
   judged document under another name, as another chunking's chunk is. When the candidate's
   top k holds at least :data:`MIN_ITEMS` and :data:`LOOKALIKE_SHARE` of its slots more such
   items than the baseline's, the comparison is inconclusive, and the report names
   ``--unit``.

A genuinely worse candidate that ranks *judged* non-relevant items keeps its regression: it
has no more unjudged items than the baseline, and its condensed rankings show the drop too.
The calibration of :data:`UNJUDGED_SHARE` (false alarms under pool bias, power kept) is in
``benchmarks/pool_bias.py`` and the documentation (docs/concepts/pool.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from retrieval_gate.core.model import Qrels, RankedRun
from retrieval_gate.decide.policy import Comparison
from retrieval_gate.inputs.snapshot import Snapshot, TestSet
from retrieval_gate.scoring.measures import Measure
from retrieval_gate.scoring.scores import Scores
from retrieval_gate.scoring.units import judged_ids

UNJUDGED_SHARE = 0.3  # the candidate's extra unjudged share of its top-k slots that is material
LOOKALIKE_SHARE = 0.05  # ... of items that look like pieces of judged units
MIN_ITEMS = 10  # and never fewer items than this
_SEPARATOR = "#"

Rescore = Callable[[Measure, bool], tuple[Scores, Scores]]
"""Both runs' scores of one measure (on its stage's ranking), on condensed rankings or not."""
Redecide = Callable[[str, np.ndarray, np.ndarray], Sequence[Comparison]]
"""The family decided again with one signal's per-query values (baseline, candidate, on the
answerable queries) replaced: every comparison."""


@dataclass(frozen=True)
class Unjudged:
    """What the unjudged items did to one comparison decided ``regression``: the unjudged items
    in each run's top ``k`` on its slice (``slots``: k per query, or the items returned without
    a cutoff: ``k`` None); with a judged pool and a material gap, the measure decided on condensed rankings
    (``condensed``); with chunk-like ids the snapshot cannot check, the items of each run that
    look like pieces of judged units (``lookalike``: baseline, candidate) and an example; and
    whether the regression rests on the unjudged items (``depends``: it is inconclusive)."""

    measure: str
    slice: str
    k: int | None
    slots: int
    baseline: int
    candidate: int
    condensed: Comparison | None = None
    lookalike: tuple[int, int] | None = None
    example: str | None = None

    @property
    def other_unit(self) -> bool:
        """Whether the candidate's unjudged items look like another unit's ids."""
        return self.lookalike is not None and _material(
            self.lookalike[1] - self.lookalike[0], self.slots, LOOKALIKE_SHARE)

    @property
    def depends(self) -> bool:
        """Whether the regression rests on the unjudged items."""
        held = self.condensed is None or self.condensed.decision == "regression"
        return self.other_unit or not held

    def note(self) -> str:
        """Why the comparison is inconclusive, in words."""
        if self.other_unit:
            assert self.lookalike is not None
            return (f"depends on {self.lookalike[1]} unjudged items that look like pieces of "
                    f"judged ones ({self.example}; the baseline ranks {self.lookalike[0]}): "
                    "the candidate's ids may be another chunking's, which this snapshot cannot "
                    "judge — freeze the judgments as spans (gate qrels to-spans) or with "
                    "--unit chunk and the chunk table, or judge the items (gate pool export)")
        assert self.condensed is not None
        c = self.condensed
        top = "ranking" if self.k is None else f"top {self.k}"
        return (f"depends on {self.candidate} unjudged items: the candidate's {top} holds them "
                f"on this slice, the baseline's {self.baseline}; on the judged items alone "
                f"(condensed rankings) Δ = {c.mean_diff:+.4f}, {c.decision} — judge them "
                "(gate pool export) to decide")


def judged_pool(qrels: Qrels, threshold: int) -> bool:
    """Whether the judgments name non-relevant items too: a judgment of grade 0 up to the
    threshold (exclusive) — or span judgments, which judge the rest of a judged document's
    text non-relevant. Judgments of relevant items only make every other item non-relevant
    by their own convention, and cannot tell an unjudged item from a non-relevant one."""
    if qrels.spans is not None:
        return True
    return any(0 <= grade < threshold for labels in qrels.judgments.values()
               for grade in labels.values())


def unchecked_chunk_ids(snapshot: Snapshot, test_set: TestSet) -> bool:
    """Whether the runs' ids go unchecked while the judged ids look like chunk ids: document
    judgments without a corpus, or chunk judgments without their chunk table, and at least
    half the judged ids holding ``#``."""
    if not ((snapshot.unit == "document" and test_set.corpus is None)
            or (snapshot.unit == "chunk" and test_set.chunks is None)):
        return False
    ids = judged_ids(test_set.qrels)
    return len(ids) > 0 and 2 * int((np.char.find(ids, _SEPARATOR.encode()) >= 0).sum()) >= len(ids)


def check_regressions(comparisons: Sequence[Comparison], measures: Sequence[Measure],
                      slices: Mapping[str, np.ndarray], snapshot: Snapshot, test_set: TestSet,
                      rescore: Rescore, redecide: Redecide
                      ) -> tuple[tuple[Comparison, ...], tuple[Unjudged, ...]]:
    """``comparisons`` with each regression of a retrieval measure (``measures``) that rests
    on unjudged items made ``inconclusive`` (see the module docstring), and what the unjudged
    items did to each regression with a material gap. ``rescore`` scores a measure again,
    ``redecide`` decides the family again with a measure's values replaced."""
    by_name = {str(m): m for m in measures if not m.lower_is_better}
    regressed = [c for c in comparisons if c.decision == "regression" and c.measure in by_name]
    if not regressed:
        return tuple(comparisons), ()
    pooled = judged_pool(test_set.qrels, snapshot.policy.threshold)
    chunk_like = unchecked_chunk_ids(snapshot, test_set)
    if not (pooled or chunk_like):
        return tuple(comparisons), ()
    counted = {name: _Counted.of(by_name[name], test_set, rescore, chunk_like)
               for name in dict.fromkeys(c.measure for c in regressed)}
    condensed: dict[str, Sequence[Comparison]] = {}
    found = []
    for c in regressed:
        rows = slices[c.slice]
        seen = counted[c.measure].on(c, rows)
        if pooled and _material(seen.candidate - seen.baseline, seen.slots, UNJUDGED_SHARE):
            if c.measure not in condensed:
                base, cand = rescore(by_name[c.measure], True)
                condensed[c.measure] = redecide(c.measure, base.values[:, 0],
                                                cand.values[:, 0])
            seen = replace(seen, condensed=next(d for d in condensed[c.measure]
                                                if d.measure == c.measure
                                                and d.slice == c.slice))
        if seen.condensed is not None or seen.other_unit:
            found.append(seen)
    depends = {(u.measure, u.slice): u for u in found if u.depends}
    return tuple(replace(c, decision="inconclusive", improvement=False,
                         decision_note=depends[(c.measure, c.slice)].note())
                 if (c.measure, c.slice) in depends else c for c in comparisons), tuple(found)


def _material(extra: int, slots: int, share: float) -> bool:
    """Whether ``extra`` items of ``slots`` are material: at least :data:`MIN_ITEMS` and
    ``share`` of the slots."""
    return extra >= MIN_ITEMS and extra >= share * slots


@dataclass(frozen=True)
class _Counted:
    """Per answerable query, each run's unjudged items in the measure's top k, the slots
    (k, or the items returned), and (with chunk-like ids) the items that look like pieces of
    judged units, with an example."""

    measure: Measure
    unjudged: tuple[np.ndarray, np.ndarray]
    slots: np.ndarray
    lookalike: tuple[np.ndarray, np.ndarray] | None
    example: str | None

    @staticmethod
    def of(measure: Measure, test_set: TestSet, rescore: Rescore, chunk_like: bool
           ) -> _Counted:
        judged = Measure("Judged", measure.k, stage=measure.stage)
        base, cand = rescore(judged, False)
        unjudged, slots = zip(*(_unjudged(s, measure.k) for s in (base, cand)))
        if not chunk_like:
            return _Counted(measure, (unjudged[0], unjudged[1]), slots[1], None, None)
        looks = [_lookalikes(s.ranked, test_set.qrels, test_set.answerable, measure.k)
                 for s in (base, cand)]
        return _Counted(measure, (unjudged[0], unjudged[1]), slots[1],
                        (looks[0][0], looks[1][0]), looks[1][1])

    def on(self, c: Comparison, rows: np.ndarray) -> Unjudged:
        """The counts on one comparison's slice (``rows``: its answerable positions)."""
        looks = None if self.lookalike is None else (int(self.lookalike[0][rows].sum()),
                                                     int(self.lookalike[1][rows].sum()))
        return Unjudged(c.measure, c.slice, self.measure.k, int(self.slots[rows].sum()),
                        int(self.unjudged[0][rows].sum()), int(self.unjudged[1][rows].sum()),
                        lookalike=looks, example=self.example)


def _unjudged(scores: Scores, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per answerable query, the unjudged items among the first k a run ranks (``scores`` of
    ``Judged@k``: judged items / k), and the slots: k, or the items returned without a
    cutoff. An empty slot is not an item."""
    assert scores.retrieved is not None  # scored from one ranking
    returned = scores.retrieved if k is None else np.minimum(scores.retrieved, k)
    slots = returned if k is None else np.full(len(returned), k)
    judged = np.rint(scores.values[:, 0] * slots).astype(np.int64)
    return returned - judged, slots


def _lookalikes(ranked: RankedRun | None, qrels: Qrels, answerable: Sequence[str],
                k: int | None) -> tuple[np.ndarray, str | None]:
    """Per answerable query, the unjudged items among the first k that look like pieces of a
    judged unit (the stem before the last ``#`` of a judged id of the query), and the first
    one with its judged namesake."""
    counts = np.zeros(len(answerable), dtype=np.int64)
    example = None
    if ranked is None:
        return counts, example
    at = {q: i for i, q in enumerate(ranked.query_ids)}
    for position, qid in enumerate(answerable):
        judged = qrels.judgments.get(qid, {})
        stems = {_stem(j): j for j in judged if _SEPARATOR in j}
        i = at.get(qid)
        if i is None or not stems:
            continue
        first, last = int(ranked.offsets[i]), int(ranked.offsets[i + 1])
        for raw in ranked.docs[first:last if k is None else min(last, first + k)].tolist():
            item = raw.decode(errors="replace")
            if item not in judged and _SEPARATOR in item and _stem(item) in stems:
                counts[position] += 1
                example = example or f"'{item}' beside judged '{stems[_stem(item)]}'"
    return counts, example


def _stem(item: str) -> str:
    return item.rpartition(_SEPARATOR)[0]
