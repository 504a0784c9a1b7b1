"""A regression must not rest on items nobody judged.

Under ``unjudged = nonrelevant`` (trec_eval's rule, the default), a candidate that retrieves
items the judgments never saw loses points for them, relevant or not: a new retriever is
penalised for finding what the pool missed (pool bias), and a run of another evidence unit —
chunk ids of another chunking under document judgments — scores as if it found nothing. Each
gated comparison of a retrieval measure (higher is better) decided ``regression`` is looked at
where the drop is — on the queries of its slice where the candidate scored lower (the *lost*
queries) — and is ``inconclusive`` when it depends on unjudged items there:

1. **Judged pools** (:func:`judged_pool`: judgments that name non-relevant items too — graded
   pools, span judgments). The unjudged share of each run's top k on the lost queries is
   taken as the measure reads the ranking: each item counting the same for a measure of a set
   (Recall@k, P@k, Hit@k, ...), each rank r weighing 1/r for one that reads the order (nDCG,
   AP, RR, CP: ``Judged(weight=rank)``), where an item at the top weighs most. When the
   candidate's share exceeds the baseline's by :data:`UNJUDGED_SHARE` or more (and it ranks
   at least :data:`MIN_ITEMS` unjudged items there), the measure is decided again, in the same
   family, on **condensed rankings** (:func:`~retrieval_gate.scoring.scores.condense`: the
   unjudged items removed from both runs, Sakai 2007; trec_eval ``-J``). A drop that holds on
   the judged items alone stands; one that does not rests on the unjudged items. Below that
   gap (the usual pool bias) the decision stands, and the pool-bias warning says what to
   judge. Judgments that name relevant items only (Cranfield's, MS MARCO's) take every other
   item for non-relevant by their own convention: they cannot tell an unjudged item from a
   non-relevant one, and this check does not apply.
2. **Ids of another unit** (:func:`unchecked_chunk_ids`: document judgments without a corpus
   to check the runs' ids, at least half the judged ids holding ``#`` as chunk ids do). An
   unjudged item *looks like* a judged unit when its id's stem, the part before its last
   ``#``, is the stem of a judged id of its query (``compound#12`` beside judged
   ``compound#7``): a piece of a judged document under another name, as another chunking's
   chunk is. When the candidate's top k on the lost queries holds at least :data:`MIN_ITEMS`
   and :data:`LOOKALIKE_SHARE` of its slots more such items than the baseline's, the
   comparison is inconclusive, and the report says how to have the ids checked. (Ids that
   hold ``#`` for another reason — ``numpy/numpy#123`` — meet the same rule: the pinned corpus,
   which checks them, lifts it. A snapshot of chunk judgments compares runs of its own
   chunking only: another one is not comparable, so the rule does not apply there.)

A genuinely worse candidate that ranks *judged* non-relevant items keeps its regression: its
top k is no less judged than the baseline's, and its condensed rankings show the drop too.
The calibration of :data:`UNJUDGED_SHARE` (false alarms under pool bias, power kept) is in
``benchmarks/pool_bias.py`` and docs/concepts/pool.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from retrieval_gate.core.model import Qrels, RankedRun
from retrieval_gate.decide.policy import Comparison, GatePolicy, PairPolicy
from retrieval_gate.decide.signals import PairedSignal, compare_signals
from retrieval_gate.inputs.snapshot import Snapshot, TestSet
from retrieval_gate.scoring.measures import COUNT, RANK, Measure, harmonic
from retrieval_gate.scoring.scores import Scores
from retrieval_gate.scoring.units import chunk_like, judged_ids

UNJUDGED_SHARE = 0.3  # the candidate's extra unjudged share of its top k, where it lost
LOOKALIKE_SHARE = 0.05  # ... of items that look like pieces of judged units
MIN_ITEMS = 10  # and never fewer items than this
RANKED = ("nDCG", "AP", "RR", "CP")  # the families that read where an item sits in the top k
_SEPARATOR = "#"
POOL_SHARE = 0.05  # the candidate's unjudged share must exceed the baseline's by this…
POOL_ITEMS = 10  # …and by this many items, for the pool-bias warning

Rescore = Callable[[Sequence[Measure], bool], tuple[Scores, Scores]]
"""Both runs' scores of some measures of one stage, on condensed rankings or not."""
Redecide = Callable[[str, np.ndarray, np.ndarray], Sequence[Comparison]]
"""The family decided again with one signal's per-query values (baseline, candidate, on the
answerable queries) replaced: every comparison."""


@dataclass(frozen=True)
class Unjudged:
    """What the unjudged items did to one comparison decided ``regression``, on its ``lost``
    queries (those of its slice where the candidate scored lower): each run's unjudged items
    in its top ``k`` there (None: its whole ranking) and their share of it (``exposure``:
    baseline, candidate), counted as the measure reads the ranking (``weight``: ``count``, or
    ``rank``: rank r weighs 1/r); ``slots``, the slots there, the same for both runs (k per
    query; without a cutoff, the longer ranking's items); with a judged pool and a material
    gap, the measure decided on condensed rankings (``condensed``); with chunk-like ids the
    snapshot cannot check, the items of each run that look like pieces of judged units
    (``lookalike``: baseline, candidate) and an example."""

    measure: str
    slice: str
    k: int | None
    weight: str
    lost: int
    slots: int
    baseline: int
    candidate: int
    exposure: tuple[float, float]
    condensed: Comparison | None = None
    lookalike: tuple[int, int] | None = None
    example: str | None = None

    @property
    def gap(self) -> float:
        """The candidate's unjudged share of its top k, less the baseline's (lost queries)."""
        return self.exposure[1] - self.exposure[0]

    @property
    def other_unit(self) -> bool:
        """Whether the candidate's unjudged items look like another unit's ids."""
        return self.lookalike is not None and _material(
            self.lookalike[1] - self.lookalike[0], self.slots, LOOKALIKE_SHARE)

    @property
    def depends(self) -> bool:
        """Whether the regression rests on the unjudged items: inconclusive."""
        held = self.condensed is None or self.condensed.decision == "regression"
        return self.other_unit or not held

    def note(self) -> str:
        """Why the comparison is inconclusive, in words."""
        where = f"on the {self.lost} {'query' if self.lost == 1 else 'queries'} where it lost"
        if self.other_unit:
            assert self.lookalike is not None
            return (f"depends on {self.lookalike[1]} unjudged items that look like pieces of "
                    f"judged ones ({self.example}; the baseline ranks {self.lookalike[0]}) "
                    f"{where}: the candidate's ids may be another chunking's, and without a "
                    "corpus the snapshot cannot check them — pin the corpus (gate snapshot "
                    "freeze --corpus-file) or turn the judgments into spans (gate qrels "
                    "to-spans); or judge the items (gate pool export)")
        assert self.condensed is not None
        c = self.condensed
        top = "ranking" if self.k is None else f"top {self.k}"
        weighted = ", rank-weighted" if self.weight == RANK else ""
        return (f"depends on {self.candidate} unjudged items: {where}, they fill "
                f"{100 * self.exposure[1]:.0f}% of the candidate's {top}{weighted} (the "
                f"baseline's {100 * self.exposure[0]:.0f}%); on the judged items alone "
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
    judgments without a corpus, and at least half the judged ids holding ``#``."""
    return (snapshot.unit == "document" and test_set.corpus is None
            and chunk_like(judged_ids(test_set.qrels)))


def check_regressions(comparisons: Sequence[Comparison], measures: Sequence[Measure],
                      slices: Mapping[str, np.ndarray], snapshot: Snapshot, test_set: TestSet,
                      rescore: Rescore, redecide: Redecide
                      ) -> tuple[tuple[Comparison, ...], tuple[Unjudged, ...]]:
    """``comparisons`` with each regression of a retrieval measure (``measures``) that rests
    on unjudged items made ``inconclusive`` (see the module docstring), and what the unjudged
    items did to each regression with a material gap. ``rescore`` scores measures again,
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
    found = _unjudged_of(regressed, counted, slices, pooled, by_name, rescore, redecide)
    depends = {(u.measure, u.slice): u for u in found if u.depends}
    return tuple(replace(c, decision="inconclusive", improvement=False,
                         decision_note=depends[(c.measure, c.slice)].note())
                 if (c.measure, c.slice) in depends else c for c in comparisons), tuple(found)


def _unjudged_of(regressed: Sequence[Comparison], counted: Mapping[str, _Counted],
                 slices: Mapping[str, np.ndarray], pooled: bool, by_name: Mapping[str, Measure],
                 rescore: Rescore, redecide: Redecide) -> list[Unjudged]:
    """What the unjudged items did to each regression: with a judged pool, a material gap is
    decided again on condensed rankings (each measure rescored once); a regression is listed
    when it was, or when its items look like pieces of judged units."""
    condensed: dict[str, Sequence[Comparison]] = {}
    found = []
    for c in regressed:
        seen = counted[c.measure].on(c, slices[c.slice])
        if pooled and seen.gap >= UNJUDGED_SHARE and seen.candidate >= MIN_ITEMS:
            if c.measure not in condensed:
                base, cand = rescore([by_name[c.measure]], True)
                condensed[c.measure] = redecide(c.measure, base.values[:, 0],
                                                cand.values[:, 0])
            seen = replace(seen, condensed=next(d for d in condensed[c.measure]
                                                if d.measure == c.measure
                                                and d.slice == c.slice))
        if seen.condensed is not None or seen.other_unit:
            found.append(seen)
    return found


def _material(extra: int, slots: int, share: float) -> bool:
    """Whether ``extra`` items of ``slots`` are material: at least :data:`MIN_ITEMS` and
    ``share`` of the slots."""
    return extra >= MIN_ITEMS and extra >= share * slots


@dataclass(frozen=True)
class _Counted:
    """Per answerable query, each run's value of the measure, its unjudged items in the
    measure's top k and their share of it (weighted as the measure reads the ranking: see the
    module docstring), over slots both runs share (k; without a cutoff, the longer ranking's
    items: a shorter ranking never looks less judged for its missing items); with chunk-like
    ids, the items that look like pieces of judged units, with an example."""

    measure: Measure
    weight: str
    values: tuple[np.ndarray, np.ndarray]
    unjudged: tuple[np.ndarray, np.ndarray]
    shares: tuple[np.ndarray, np.ndarray]
    slots: np.ndarray
    lookalike: tuple[np.ndarray, np.ndarray] | None
    example: str | None

    @staticmethod
    def of(measure: Measure, test_set: TestSet, rescore: Rescore, chunk_like: bool
           ) -> _Counted:
        weight = RANK if measure.family in RANKED else COUNT
        judged = {w: Measure("Judged", measure.k, weight=w, stage=measure.stage)
                  for w in (COUNT, weight)}
        wanted = list(dict.fromkeys([measure, *judged.values()]))
        scored = rescore(wanted, False)
        column = {m: wanted.index(m) for m in wanted}

        items, mass, slots = zip(*(_unjudged(s, measure.k, weight,
                                             s.values[:, column[judged[COUNT]]],
                                             s.values[:, column[judged[weight]]])
                                   for s in scored))
        common = np.maximum(slots[0], slots[1])  # without a cutoff: the longer ranking's
        size = common if weight == COUNT else harmonic(common)
        shares = [np.divide(m, size, out=np.zeros(len(size)), where=size > 0) for m in mass]
        base = (scored[0].values[:, column[measure]], items[0], shares[0])
        cand = (scored[1].values[:, column[measure]], items[1], shares[1])
        looks = ([_lookalikes(s.ranked, test_set.qrels, test_set.answerable, measure.k)
                  for s in scored] if chunk_like else None)
        return _Counted(measure, weight, (base[0], cand[0]), (base[1], cand[1]),
                        (base[2], cand[2]), common,
                        None if looks is None else (looks[0][0], looks[1][0]),
                        None if looks is None else looks[1][1])

    def on(self, c: Comparison, rows: np.ndarray) -> Unjudged:
        """The counts on the queries of one comparison's slice (``rows``: its answerable
        positions) where the candidate scored lower."""
        lost = rows[self.values[1][rows] < self.values[0][rows]]
        looks = None if self.lookalike is None else (int(self.lookalike[0][lost].sum()),
                                                     int(self.lookalike[1][lost].sum()))
        mean = [math.fsum(s[lost].tolist()) / len(lost) if len(lost) else 0.0
                for s in self.shares]
        return Unjudged(c.measure, c.slice, self.measure.k, self.weight, len(lost),
                        int(self.slots[lost].sum()), int(self.unjudged[0][lost].sum()),
                        int(self.unjudged[1][lost].sum()), (mean[0], mean[1]),
                        lookalike=looks, example=self.example)


def _unjudged(scores: Scores, k: int | None, weight: str, judged: np.ndarray,
              weighted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per answerable query, from a run's ``Judged@k`` (``judged``: judged items / k) and
    ``Judged(weight=...)@k`` (``weighted``): its unjudged items among the first k, their mass
    as ``weight`` counts it (items, or Σ 1/r over their ranks r), and its slots — k, or the
    items returned without a cutoff. An empty slot is not an item: neither judged nor
    unjudged."""
    assert scores.retrieved is not None  # scored from one ranking
    returned = scores.retrieved if k is None else np.minimum(scores.retrieved, k)
    slots = returned if k is None else np.full(len(returned), k)
    items = returned - np.rint(judged * slots).astype(np.int64)
    if weight == COUNT:
        return items, items.astype(np.float64), slots
    return items, harmonic(returned) - weighted * harmonic(slots), slots


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


def pool_bias_warning(base: Scores, cand: Scores, judged: Measure, cutoff: int | None) -> str | None:
    """A warning when the candidate surfaces clearly more unjudged items than the baseline
    (a pool bias: they score as non-relevant, so its scores may be understated); None when
    it does not — a share of unjudged items the two runs share is no news, and fewer items
    (a short ranking, a packing bug) are no unjudged items."""
    base_side, cand_side = (_unjudged_share(s, judged, cutoff) for s in (base, cand))
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


def _unjudged_share(scores: Scores, judged: Measure, cutoff: int | None
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


def redecider(signals: list[PairedSignal], rows: dict[str, np.ndarray],
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
