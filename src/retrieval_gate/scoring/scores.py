"""Per-query scoring: a ranked run joined with the judgments, every measure vectorised over
queries.

Which queries are scored: the answerable queries of the query set (``queries``), or, without
one, every query of the qrels. Unanswerable queries are listed apart and never averaged. The
policies of :class:`~retrieval_gate.scoring.rules.ScoringPolicy` decide what happens to queries missing
from the run, run queries outside the set, answerable queries without a relevant judgment,
repeated items and unjudged items. Means are macro averages (each query weighs the same),
summed exactly (``math.fsum``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.exported import exported
from retrieval_gate.core.model import (
    NEVER,
    AccessTable,
    Corpus,
    JudgedRows,
    Places,
    Qrels,
    Query,
    RankedRun,
    RunRows,
    Span,
)
from retrieval_gate.core.ranking import IdIndex, rank_run
from retrieval_gate.core.stages import StageContract
from retrieval_gate.scoring.evidence import judge_spans, require_in_corpus, spans_in_corpus
from retrieval_gate.scoring.measures import FACT_FAMILIES, Measure
from retrieval_gate.scoring.rules import ScoringPolicy

if TYPE_CHECKING:
    from retrieval_gate.scoring.visibility import ItemAccess

_LISTED = 10  # how many query ids a warning names before "and N more"
_DEFAULT_POLICY = ScoringPolicy()


MAX_LEAKS = 1000  # leaks listed one by one; the count covers them all


@dataclass(frozen=True)
class Leak:
    """An item its asker may not see: the query, its rank, the item, its document and the
    principals that may see it (any one would do)."""

    query: str
    rank: int
    item: str
    document: str
    allowed: tuple[str, ...]
    stage: str | None = None


@dataclass(frozen=True, eq=False)
class Leaks:
    """The leaks of one ranking among the items the measures read: how many, per query, and
    the first :data:`MAX_LEAKS` of them in run order."""

    count: int
    per_query: dict[str, int]
    rows: tuple[Leak, ...]


@dataclass(frozen=True, eq=False)
class UnitCoverage:
    """The judged units of the scored queries, in the same order for every run of one test
    set: each unit's query (position among the answerable queries), whether it is relevant
    (grade ≥ the threshold), whether the scored items cover it and at which rank
    (:data:`~retrieval_gate.core.model.NEVER` if not), its grade, and ``names``: the names of the
    units at some positions (a document id, or ``doc[start:end]`` for a span), made on
    demand."""

    qidx: np.ndarray
    relevant: np.ndarray
    covered: np.ndarray
    rank: np.ndarray | None = None
    grade: np.ndarray | None = None
    names: Callable[[np.ndarray], list[str]] | None = None


@exported
@dataclass(frozen=True, eq=False)
class Scores:
    """Per-query values of each measure for the answerable queries (rows of ``values``, in
    ``query_ids`` order), the unanswerable query ids, and warnings for the reader; and, when
    scored from one ranking, the coverage of the judged units and the number of ranked items
    per query (up to the depth the measures read)."""

    measures: tuple[Measure, ...]
    query_ids: tuple[str, ...]
    values: np.ndarray
    unanswerable: tuple[str, ...]
    warnings: tuple[str, ...]
    policy: ScoringPolicy
    coverage: UnitCoverage | None = None
    retrieved: np.ndarray | None = None
    leaks: Leaks | None = None
    returned: dict[str, tuple[int, float | None, int]] = field(default_factory=dict)
    ranked: RankedRun | None = None

    def means(self) -> dict[str, float | None]:
        """Macro average of each measure; None when no query was scored."""
        n = len(self.query_ids)
        return {str(m): (math.fsum(self.values[:, j].tolist()) / n if n else None)
                for j, m in enumerate(self.measures)}

    def per_query(self) -> dict[str, dict[str, float]]:
        names = [str(m) for m in self.measures]
        return {qid: dict(zip(names, row)) for qid, row in zip(self.query_ids,
                                                               self.values.tolist())}


def _listing(ids: Sequence[str]) -> str:
    """Up to ten quoted ids, then "and N more"."""
    shown = ", ".join(f"'{q}'" for q in ids[:_LISTED])
    return shown + (f" and {len(ids) - _LISTED} more" if len(ids) > _LISTED else "")


def _queries(n: int) -> str:
    return f"{n} {'query' if n == 1 else 'queries'}"


def query_set(qrels: Qrels, queries: Sequence[Query] | None,
              policy: ScoringPolicy = _DEFAULT_POLICY) -> tuple[list[str], list[str], list[str]]:
    """(answerable ids, unanswerable ids, warnings): the queries to score, checked against the
    judgments. Without a query set, every judged query is answerable. Raises InputError when a
    judged query is not in the query set, an unanswerable query has a judgment at or above the
    threshold, a required fact is labelled on none of its query's judgments, or (under
    ``unlabeled: error``) an answerable query has no judgment at or above the threshold."""
    if queries is None:
        answerable, unanswerable = list(qrels.judgments), []
    else:
        _check_query_set(qrels, queries, policy.threshold)
        answerable = [q.id for q in queries if q.answerable]
        unanswerable = [q.id for q in queries if not q.answerable]
    return answerable, unanswerable, _unlabeled(qrels, answerable, policy)


def _relevant_judgment(qrels: Qrels, qid: str, threshold: int) -> bool:
    """Whether the query has a judgment at grade ≥ the threshold (and ≥ 0)."""
    return any(g >= max(threshold, 0) for g in qrels.judgments.get(qid, {}).values())


def _check_query_set(qrels: Qrels, queries: Sequence[Query], threshold: int) -> None:
    """InputError unless the query set and the judgments agree: every judged query is in the
    set, no unanswerable query has a relevant judgment, and every fact a query requires is
    labelled on one of its judgments (:func:`_check_facts`)."""
    known = {q.id for q in queries}
    for qid in qrels.judgments:
        if qid not in known:
            raise InputError(qrels.source, f"query '{qid}' is judged but not in the query "
                             "set", "add it to the queries file or remove its judgments",
                             qrels.where(qid))
    for q in queries:
        if not q.answerable and _relevant_judgment(qrels, q.id, threshold):
            raise InputError(qrels.source, f"query '{q.id}' is marked unanswerable but has "
                             f"a judgment at grade ≥ {threshold}", "mark it answerable in "
                             "the queries file, or correct its judgments", qrels.where(q.id))
    _check_facts(qrels, queries)


def _check_facts(qrels: Qrels, queries: Sequence[Query]) -> None:
    """InputError unless every fact a query requires is labelled on one of its judgments."""
    for q in queries:
        labelled = set(qrels.labelled_facts(q.id)) if q.facts else set()
        unknown = [f for f in q.facts or () if f not in labelled]
        if unknown:
            raise InputError(qrels.source, f"query '{q.id}' requires fact '{unknown[0]}', "
                             "which none of its judgments states", "label a judgment of "
                             "the query with that fact, or correct the query's 'facts'",
                             qrels.where(q.id))


def _unlabeled(qrels: Qrels, answerable: list[str], policy: ScoringPolicy) -> list[str]:
    """The warning for answerable queries without a judgment at grade ≥ the threshold
    (``unlabeled: zero``), or InputError (``unlabeled: error``)."""
    threshold = policy.threshold
    unlabeled = [q for q in answerable if not _relevant_judgment(qrels, q, threshold)]
    if not unlabeled:
        return []
    if policy.unlabeled == "error":
        raise InputError(qrels.source, f"query '{unlabeled[0]}' has no judgment at grade ≥ "
                         f"{threshold} ({_queries(len(unlabeled))} without one: "
                         f"{_listing(unlabeled)})", "judge it, mark it answerable: false in "
                         "the queries file, or score it as trec_eval does: "
                         + policy.fix("unlabeled", "zero"), qrels.where(unlabeled[0]))
    return [(f"{_queries(len(unlabeled))} without a judgment at grade ≥ {threshold} "
             "(unlabeled: zero): their binary measures are 0, and nDCG counts only "
             f"their grades below the threshold: {_listing(unlabeled)}")]


@exported
def score_run(qrels: Qrels, run: RunRows, measures: Sequence[Measure],
              policy: ScoringPolicy = _DEFAULT_POLICY, queries: Sequence[Query] | None = None,
              doc_map: dict[str, str] | None = None, corpus: Corpus | None = None,
              min_coverage: float = 1.0, limit: StageContract | None = None,
              whole_list: bool = False, access: AccessTable | None = None,
              by_item: bool = False, documents: Mapping[str, str] | None = None,
              condensed: bool = False) -> Scores:
    """Score ``run`` against ``qrels`` on every measure, per query; see the module docstring.

    With a ``corpus``, every document the scored items name must be in it (and every item's
    place inside its document's text): InputError otherwise. The scored items are those within
    the deepest cutoff (+1, for ties) — every item when a measure reads the whole ranking;
    items below it no measure reads. Span judgments need the corpus and
    items with places (a chunk table, or JSON Lines items with ``doc_id``, ``start``, ``end``)
    — a run without any item needs none, and scores 0;
    a span counts as retrieved once ``min_coverage`` of it is covered (see
    :mod:`retrieval_gate.scoring.evidence`). ``limit``, a pipeline stage's contract, keeps only what
    the stage passes on (its cutoff and token budget); ``whole_list`` reads every item (so
    that :attr:`Scores.coverage` covers the whole ranking, not only the measures' depth).
    With ``access`` data (:mod:`retrieval_gate.scoring.visibility`), an item the query may not see or
    that is not in force on its day gains nothing, judgments of such documents are not
    counted, and the leaks among the items the measures read are listed. ``by_item`` keeps
    items as they are even when they carry documents (chunk judgments name the chunks);
    ``documents`` then gives each judged chunk's document, which access data name.
    ``condensed`` scores condensed rankings (:func:`condense`: the unjudged items removed).

    The steps, each a function below: the queries to score (:func:`query_set`), the run's
    places for span judgments (:func:`_placed`), the ranking (:func:`_rank`, then
    :func:`_check_in_corpus`), the run's queries against the scored ones (:func:`_outside`,
    :func:`_missing`), access and leaks (:func:`_access`), the join with the judgments
    (:func:`_judge`), the measures (:func:`_evaluate`) and the warnings they raise
    (:func:`_measure_warnings`)."""
    if not measures:
        raise InputError("--measure", "no measure to compute", "name at least one measure")
    answerable, unanswerable, warnings = query_set(qrels, queries, policy)
    run = _placed(run, qrels, corpus)
    ranked = _rank(run, measures, policy, doc_map, limit, whole_list or condensed,
                   collapse=qrels.spans is None and not by_item)
    if corpus is not None:
        _check_in_corpus(run.source, corpus, ranked)
    index = {q: i for i, q in enumerate(answerable)}
    skipped = set(unanswerable)
    warnings += _outside(ranked, index, skipped, queries is not None, policy, run.source)
    warnings += _missing(ranked, answerable, policy, run.source)
    flags = leaks = None
    if access is not None:
        by_id = {q.id: q for q in queries or ()}
        flags, leaks = _access(access, ranked, by_id, index, skipped, measures)
    rows = _judge(ranked, qrels, answerable, index, policy, queries, min_coverage, flags,
                  access, documents)
    if condensed:
        rows = condense(rows)
    values = _evaluate(rows, measures, policy.threshold)
    warnings += _measure_warnings(rows, ranked, measures, policy.threshold, answerable, index)
    return Scores(tuple(measures), tuple(answerable), values, tuple(unanswerable),
                  tuple(warnings), policy, _coverage(rows, policy.threshold), rows.retrieved,
                  leaks, _returned(ranked, unanswerable, leaks, measures), ranked)


def _placed(run: RunRows, qrels: Qrels, corpus: Corpus | None) -> RunRows:
    """The run, ready for the judgments' units: as it is for id judgments. Span judgments need
    the corpus (their spans must lie in it) and each item's place in it: InputError without
    them — but a run without any item gets empty places (every ranking is empty, and scores
    0)."""
    spans = qrels.spans
    if spans is None:
        return run
    if corpus is None:
        raise InputError(qrels.source, "span judgments need the corpus their offsets "
                         "point into", "pin the corpus file in the snapshot (or pass "
                         "--corpus FILE to gate score)")
    spans_in_corpus(spans, corpus, qrels.source)
    if run.starts is not None and run.ends is not None and run.doc_ids is not None:
        return run
    if len(run.qcodes):
        raise InputError(run.source, "span judgments need each item's place in the "
                         "corpus (document, start, end)", "give the run's chunk "
                         "table, or JSON Lines items with doc_id, start and end")
    return replace(run, doc_ids=np.zeros(0, dtype="S1"), starts=np.zeros(0, dtype=np.int64),
                   ends=np.zeros(0, dtype=np.int64))


def _rank(run: RunRows, measures: Sequence[Measure], policy: ScoringPolicy,
          doc_map: dict[str, str] | None, limit: StageContract | None, whole_list: bool,
          collapse: bool) -> RankedRun:
    """Each query's ranking (see :func:`~retrieval_gate.core.ranking.rank_run`): trec_eval's
    order, repeated items as the ``duplicates`` policy says, cut as a pipeline stage's
    ``limit`` passes them on, and with ``collapse`` items collapsed to their documents. Items
    below the deepest cutoff (+1, to see ties at it) cannot change a score and are left out —
    unless a measure reads the whole list, ``whole_list`` asks for every item, or an unjudged
    item is an error (wherever it is)."""
    deepest = _depth(measures)
    depth = (None if whole_list or deepest is None or policy.unjudged == "error"
             else deepest + 1)
    return rank_run(run, policy.duplicates, doc_map, depth,
                    "remove the repeat, or keep its best rank: " + policy.fix("duplicates", "first"),
                    collapse=collapse, limit=limit)


def _check_in_corpus(source: str, corpus: Corpus, ranked: RankedRun) -> None:
    """InputError unless every document the ranked items name is in the corpus (and every
    item's place lies inside its document's text)."""
    places = ranked.places
    require_in_corpus(source, corpus, _row_docs(ranked),
                      None if places is None else places.start,
                      None if places is None else places.end)


def _outside(ranked: RankedRun, index: dict[str, int], unanswerable: set[str],
             query_set_given: bool, policy: ScoringPolicy, source: str) -> list[str]:
    """The warning for the run's queries outside the query set (or the qrels, without one):
    ignored under ``extra: ignore``, InputError (naming the first one's line) under ``extra:
    error``."""
    extra = [q for q in ranked.query_ids if q not in index and q not in unanswerable]
    if not extra:
        return []
    where = "query set" if query_set_given else "qrels"
    if policy.extra == "error":
        row = int(ranked.offsets[ranked.query_ids.index(extra[0])])
        raise InputError(source, f"query '{extra[0]}' is not in the {where} "
                         f"({_queries(len(extra))} outside it: {_listing(extra)})",
                         "remove it from the run, or ignore such queries: "
                         + policy.fix("extra", "ignore"),
                         ranked.where(row) if row < len(ranked.docs) else None)
    return [(f"ignored {_queries(len(extra))} of the run outside the {where} (extra: ignore): "
             f"{_listing(extra)}")]


def _missing(ranked: RankedRun, answerable: list[str], policy: ScoringPolicy, source: str
             ) -> list[str]:
    """The warning for answerable queries the run has no ranking for: scored 0 under
    ``missing: zero``, InputError under ``missing: error``."""
    present = set(ranked.query_ids)
    missing = [q for q in answerable if q not in present]
    if not missing:
        return []
    if policy.missing == "error":
        raise InputError(source, f"query '{missing[0]}' has no ranking "
                         f"({_queries(len(missing))} missing: {_listing(missing)})",
                         "add its ranking (an empty one is a result: in a JSON Lines run, "
                         f'{{"query_id": {json.dumps(missing[0], ensure_ascii=False)}, '
                         '"items": []}; a TREC run cannot hold one), or score it 0 as '
                         "trec_eval -c does: " + policy.fix("missing", "zero"))
    return [(f"{_queries(len(missing))} missing from the run, scored 0 (missing: zero): "
             f"{_listing(missing)}")]


def _evaluate(rows: JudgedRows, measures: Sequence[Measure], threshold: int) -> np.ndarray:
    """Every measure's per-query values: one row per answerable query, one column per
    measure (none of either without answerable queries)."""
    if not rows.n_queries:
        return np.zeros((0, len(measures)))
    return np.column_stack([m.compute(rows, threshold) for m in measures])


def _measure_warnings(rows: JudgedRows, ranked: RankedRun, measures: Sequence[Measure],
                      threshold: int, answerable: list[str], index: dict[str, int]
                      ) -> list[str]:
    """What the reader of the measures should know: queries without a relevant judgment at a
    measure's own threshold, queries that require no fact, and ties a cutoff splits."""
    return [*_threshold_warnings(rows, measures, threshold, answerable),
            *_fact_warnings(rows, measures, answerable), *_tie_warnings(ranked, measures, index)]


def condense(rows: JudgedRows) -> JudgedRows:
    """The condensed rankings of ``rows`` (Sakai, "Alternatives to Bpref", SIGIR 2007;
    trec_eval's ``-J``): every unjudged item removed and the judged ones moved up, each query's
    ranks counted again from 1; the judgments, R and the ideal ranking unchanged. A unit is
    covered at the new rank of the item that covered it: only judged items cover a unit (an
    item of a unit's document is judged), so removing the others changes no coverage, only its
    rank. Items a query's asker may not see or that are not in force count as judged (they
    stay, gaining nothing). Measures on these rows are the condensed measures (AP′, nDCG′,
    ...); a cutoff k then reads the first k judged items of the whole ranking."""
    keep = rows.judged
    starts = np.searchsorted(rows.qidx, np.arange(rows.n_queries))  # rows grouped by query
    kept_before = np.concatenate(([0], np.cumsum(keep)))
    new_rank = kept_before[1:] - kept_before[starts[rows.qidx]]  # 1, 2, ... among the kept
    covered = rows.judgment_rank != NEVER
    at = starts[rows.judgment_qidx[covered]] + rows.judgment_rank[covered] - 1
    judgment_rank = rows.judgment_rank.copy()
    judgment_rank[covered] = np.where(keep[at], new_rank[at], NEVER)
    return replace(
        rows, qidx=rows.qidx[keep], rank=new_rank[keep], grade=rows.grade[keep],
        judged=rows.judged[keep], retrieved=np.bincount(rows.qidx[keep],
                                                        minlength=rows.n_queries),
        judgment_rank=judgment_rank,
        stale=None if rows.stale is None else rows.stale[keep],
        family=None if rows.family is None else rows.family[keep],
        version=None if rows.version is None else rows.version[keep])


def _coverage(rows: JudgedRows, threshold: int) -> UnitCoverage:
    """The judged units' coverage by the scored items (see :class:`UnitCoverage`)."""
    return UnitCoverage(rows.judgment_qidx, rows.relevant_units(threshold),
                        rows.judgment_rank != NEVER, rows.judgment_rank, rows.judgment_grade,
                        rows.unit_names)


def _depth(measures: Sequence[Measure]) -> int | None:
    """How deep the measures read: the deepest cutoff, None for the whole list."""
    cutoffs = [m.k for m in measures if m.k is not None]
    return None if len(cutoffs) < len(measures) else max(cutoffs)


def _row_docs(ranked: RankedRun) -> np.ndarray:
    """The document of each ranked row (the item itself once collapsed)."""
    return ranked.docs if ranked.places is None else ranked.places.doc


def _access(table: AccessTable, ranked: RankedRun, by_id: dict[str, Query],
            index: dict[str, int], unanswerable: set[str], measures: Sequence[Measure]
            ) -> tuple[ItemAccess, Leaks]:
    """Every ranked row's access, and the leaks among the rows the measures read, of the
    queries of the query set (answerable or not)."""
    from retrieval_gate.scoring.visibility import allowed, askers, item_access  # access data only

    asked = [by_id.get(q) or Query(q) for q in ranked.query_ids]
    counts = np.diff(ranked.offsets)
    row_query = np.repeat(np.arange(len(asked)), counts)
    flags = item_access(table, askers(table, asked), row_query, _row_docs(ranked))
    rank = np.arange(len(row_query)) - np.repeat(ranked.offsets[:-1], counts) + 1
    depth = _depth(measures)
    in_set = np.array([q in index or q in unanswerable for q in ranked.query_ids], dtype=bool)
    leaked = np.flatnonzero(~flags.visible & in_set[row_query]
                            & (True if depth is None else rank <= depth))
    shown = leaked[:MAX_LEAKS]
    leaky, counted = np.unique(row_query[leaked], return_counts=True)
    who_may = allowed(table, flags.row[shown])
    return flags, Leaks(
        count=len(leaked),
        per_query={ranked.query_ids[i]: n for i, n in zip(leaky.tolist(), counted.tolist())},
        rows=tuple(Leak(ranked.query_ids[int(row_query[r])], int(rank[r]),
                        ranked.docs[r].decode(errors="replace"),
                        _row_docs(ranked)[r].decode(errors="replace"), principals)
                   for r, principals in zip(shown.tolist(), who_may)))


def _returned(ranked: RankedRun, unanswerable: list[str], leaks: Leaks | None,
              measures: Sequence[Measure]) -> dict[str, tuple[int, float | None, int]]:
    """For each unanswerable query: how many items the run returned (within the measures'
    depth), its top score (None without scores) and its leaks."""
    at = {q: i for i, q in enumerate(ranked.query_ids)}
    depth = _depth(measures)
    out: dict[str, tuple[int, float | None, int]] = {}
    for qid in unanswerable:
        i = at.get(qid)
        n = 0 if i is None else int(ranked.offsets[i + 1] - ranked.offsets[i])
        n = n if depth is None else min(n, depth)
        top = (None if i is None or n == 0 or ranked.scores is None
               else float(ranked.scores[ranked.offsets[i]]))
        out[qid] = (n, top, 0 if leaks is None else leaks.per_query.get(qid, 0))
    return out


def _judge(ranked: RankedRun, qrels: Qrels, answerable: list[str], index: dict[str, int],
           policy: ScoringPolicy, queries: Sequence[Query] | None, min_coverage: float,
           flags: ItemAccess | None = None, access: AccessTable | None = None,
           documents: Mapping[str, str] | None = None) -> JudgedRows:
    """Join the ranked items of the answerable queries with their judged units (ids or spans):
    each row's grade, and each unit's grade, fact and the rank that covers it. With access
    data (``flags`` per ranked row), rows the query may not see or not in force gain nothing,
    and units of such documents are dropped (a judged chunk's document: from ``documents``).
    Under ``unjudged: error`` an unjudged item is an InputError."""
    n = len(answerable)
    selected, qidx, rank = _answerable_rows(ranked, index)
    units = _units_of(qrels, answerable, queries)
    ok = stale = family = version = None
    if flags is not None and access is not None:
        ok = (flags.visible & flags.in_force)[selected]
        stale, family = ~flags.in_force[selected], flags.family[selected]
        version = flags.row[selected]
        known = {q.id: q for q in queries or ()}
        units = _acceptable_units(units, access, [known.get(q) or Query(q) for q in answerable],
                                  documents)
    if qrels.spans is not None:
        grade, judged, unit_rank = _grade_spans(ranked, selected, qidx, rank, units, ok,
                                                min_coverage)
    else:
        grade, judged, unit_rank = _grade_ids(ranked.docs[selected], qidx, rank, units, ok)
    if ok is not None:
        judged = judged | ~ok  # not evidence for this query: judged non-relevant
    if policy.unjudged == "error" and not judged.all():
        row = int(np.flatnonzero(~judged)[0])
        raise InputError(ranked.source, f"item '{ranked.docs[selected[row]].decode()}' of "
                         f"query '{answerable[qidx[row]]}' has no judgment", "judge it, or "
                         "count unjudged items as non-relevant: "
                         + policy.fix("unjudged", "nonrelevant"),
                         ranked.where(int(selected[row])))
    ideal_qidx, ideal_rank, ideal_grade = _ideal(units, n)
    return JudgedRows(
        n_queries=n, qidx=qidx, rank=rank, grade=grade, judged=judged,
        retrieved=np.bincount(qidx, minlength=n), judgment_qidx=units.qidx,
        judgment_grade=units.grade, judgment_rank=unit_rank, ideal_qidx=ideal_qidx,
        ideal_rank=ideal_rank, ideal_grade=ideal_grade, judgment_fact=units.fact,
        required_qidx=units.required_qidx, required_fact=units.required_fact,
        stale=stale, family=family, version=version, unit_names=_UnitNames(units),
    )


def _answerable_rows(ranked: RankedRun, index: dict[str, int]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ranked rows, their query's position in ``index``, their rank): the rows of the
    queries ``index`` holds, regrouped from run order into ``index``'s order (each query's
    rows keep their order)."""
    run_to_eval = np.array([index.get(q, -1) for q in ranked.query_ids], dtype=np.int64)
    counts = np.diff(ranked.offsets)
    row_query = np.repeat(run_to_eval, counts)
    selected = np.flatnonzero(row_query >= 0)
    selected = selected[np.argsort(row_query[selected], kind="stable")]
    starts = np.repeat(ranked.offsets[:-1], counts)[selected]
    return selected, row_query[selected], (selected - starts + 1).astype(np.int64)


def _grade_spans(ranked: RankedRun, selected: np.ndarray, qidx: np.ndarray, rank: np.ndarray,
                 units: _Units, ok: np.ndarray | None, min_coverage: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(grade, judged per row; rank covering each unit) for span judgments, from the rows'
    places (see :func:`~retrieval_gate.scoring.evidence.judge_spans`); a row that is not
    ``ok`` (not acceptable evidence) holds no text."""
    assert ranked.places is not None  # checked by score_run
    places = ranked.places.take(selected)
    if ok is not None and not ok.all():
        places = Places(places.doc, places.start, np.where(ok, places.end, places.start),
                        places.tokens)
    return judge_spans(qidx, rank, places, units.qidx, units.spans, min_coverage)


def _grade_ids(docs: np.ndarray, qidx: np.ndarray, rank: np.ndarray, units: _Units,
               ok: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(grade, judged per row; best rank of each unit, :data:`NEVER` if unranked) for id
    judgments: a row is its query's judged unit of the same id, unless it is not ``ok``."""
    found = IdIndex(units.ids, units.qidx).find(docs, qidx)
    hit = found >= 0 if ok is None else (found >= 0) & ok
    grade = np.zeros(len(docs), dtype=units.grade.dtype)  # (no unit left: none judged)
    grade[hit] = units.grade[found[hit]]
    unit_rank = np.full(len(units.grade), NEVER, dtype=np.int64)
    np.minimum.at(unit_rank, found[hit], rank[hit])
    return grade, hit & (grade >= 0), unit_rank


def _ideal(units: _Units, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query, rank, grade) of each query's ideal ranking: its units of positive grade, best
    grade first."""
    positive = np.flatnonzero(units.grade > 0)
    order = positive[np.lexsort((-units.grade[positive], units.qidx[positive]))]
    ideal_qidx = units.qidx[order]
    ideal_starts = np.searchsorted(ideal_qidx, np.arange(n))
    ideal_rank = np.arange(len(order)) - ideal_starts[ideal_qidx] + 1
    return ideal_qidx, ideal_rank, units.grade[order]


@dataclass(frozen=True, eq=False)
class _UnitNames:
    """Names of units at some positions: document ids, or ``doc[start:end]`` for spans (a
    class, not a closure, so that scores pickle)."""

    units: _Units

    def __call__(self, at: np.ndarray) -> list[str]:
        units = self.units
        if units.spans:
            return [f"{units.spans[i].doc}[{units.spans[i].start}:{units.spans[i].end}]"
                    for i in at.tolist()]
        return [units.ids[i].decode(errors="replace") for i in at.tolist()]


def _acceptable_units(units: _Units, access: AccessTable, asked: list[Query],
                      documents: Mapping[str, str] | None = None) -> _Units:
    """``units`` without the judgments of documents their query may not see or that are not
    in force on its day: not acceptable evidence, never counted in R or the ideal ranking. A
    judged chunk's document is in ``documents`` (chunk judgments); other units name theirs."""
    from retrieval_gate.scoring.visibility import askers, item_access

    if units.spans:
        docs = np.array([s.doc.encode() for s in units.spans], dtype="S")
    elif documents and len(units.ids):
        docs = np.array([documents.get(i, i).encode()
                         for i in (b.decode() for b in units.ids.tolist())], dtype="S")
    else:
        docs = units.ids
    if not len(docs):
        return units
    flags = item_access(access, askers(access, asked), units.qidx, docs)
    keep = flags.visible & flags.in_force
    if keep.all():
        return units
    return _Units(units.qidx[keep], units.ids[keep] if not units.spans else units.ids,
                  tuple(s for s, k in zip(units.spans, keep.tolist()) if k), units.grade[keep],
                  units.fact[keep], units.required_qidx, units.required_fact)


@dataclass(frozen=True, eq=False)
class _Units:
    """The judged units of the evaluated queries, in query order: query, id (for id
    judgments, an ``S`` array) or span, grade, and fact code (−1 none); and the facts each
    query requires (codes)."""

    qidx: np.ndarray
    ids: np.ndarray
    spans: tuple[Span, ...]
    grade: np.ndarray
    fact: np.ndarray
    required_qidx: np.ndarray
    required_fact: np.ndarray


_LAST_UNITS: list[tuple[Qrels, Sequence[Query] | None, list[str], _Units]] = []


def _units_of(qrels: Qrels, answerable: list[str], queries: Sequence[Query] | None) -> _Units:
    """:func:`_units`, kept for the last test set: the stages of a pipeline and both runs of a
    check score against the same judgments (the objects themselves are held, so a match is the
    same test set, never a recycled id)."""
    for held, held_queries, held_answerable, units in _LAST_UNITS:
        if held is qrels and held_queries is queries and held_answerable == answerable:
            return units
    units = _units(qrels, answerable, queries)
    _LAST_UNITS[:] = [(qrels, queries, list(answerable), units)]
    return units


def _units(qrels: Qrels, answerable: list[str], queries: Sequence[Query] | None) -> _Units:
    required_of = {q.id: q.facts for q in queries or ()}
    codes: dict[str, int] = {}
    qidx: list[int] = []
    ids: list[bytes] = []
    spans: list[Span] = []
    grades: list[int] = []
    facts: list[int] = []
    need_q: list[int] = []
    need_f: list[int] = []
    for i, qid in enumerate(answerable):
        labels = qrels.judgments.get(qid, {})
        qidx.extend([i] * len(labels))
        grades.extend(labels.values())
        if qrels.spans is not None:
            given = qrels.spans.get(qid, ())
            spans.extend(given)
            facts.extend(-1 if s.fact is None else codes.setdefault(s.fact, len(codes))
                         for s in given)
        else:
            ids.extend(d.encode() for d in labels)
            facts.extend(-1 if (f := qrels.fact_of(qid, d)) is None
                         else codes.setdefault(f, len(codes)) for d in labels)
        required = required_of.get(qid) or qrels.labelled_facts(qid)
        need_q.extend([i] * len(required))
        need_f.extend(codes.setdefault(f, len(codes)) for f in required)
    return _Units(_ints(qidx), np.array(ids, dtype="S") if ids else np.zeros(0, dtype="S1"),
                  tuple(spans), _ints(grades), _ints(facts), _ints(need_q), _ints(need_f))


def _ints(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _threshold_warnings(rows: JudgedRows, measures: Sequence[Measure], default: int,
                        answerable: list[str]) -> list[str]:
    out = []
    for threshold in sorted({m.threshold(default) for m in measures if m.uses_threshold
                             and m.rel is not None}):
        empty = np.flatnonzero(rows.n_relevant(threshold) == 0)
        if len(empty):
            names = ", ".join(str(m) for m in measures if m.rel == threshold)
            out.append(f"{names}: {_queries(len(empty))} without a judgment at grade ≥ {threshold} "
                       f"and score 0: {_listing([answerable[i] for i in empty])}")
    return out


def _fact_warnings(rows: JudgedRows, measures: Sequence[Measure], answerable: list[str]
                   ) -> list[str]:
    """Queries that require no fact score 0 on the fact measures: say which."""
    names = [str(m) for m in measures if m.family in FACT_FAMILIES]
    if not names:
        return []
    none = np.flatnonzero(np.bincount(rows.required_qidx, minlength=rows.n_queries) == 0)
    if not len(none):
        return []
    return [(f"{', '.join(names)}: {_queries(len(none))} label no fact and score 0: "
             f"{_listing([answerable[i] for i in none])}")]


def _tie_warnings(ranked: RankedRun, measures: Sequence[Measure], index: dict[str, int]
                  ) -> list[str]:
    """Queries whose items at ranks k and k + 1 have equal scores: the cutoff splits a tie,
    and only the item-id tie-break (trec_eval's rule) decides which one counts. Also the
    queries whose two scores differ as float64 but are equal once rounded to float32, the
    precision of trec_eval 9.x and pytrec_eval: those tools break that "tie" by item id and
    may order the two items the other way round."""
    if ranked.scores is None:
        return []
    out = []
    evaluated = np.array([q in index for q in ranked.query_ids], dtype=bool)
    for k in sorted({m.k for m in measures if m.k is not None}):
        at_k = ranked.offsets[:-1] + k - 1
        has_next = evaluated & (at_k + 1 < ranked.offsets[1:])
        rows = at_k[has_next]
        above, below = ranked.scores[rows], ranked.scores[rows + 1]
        tied = above == below
        with np.errstate(over="ignore"):  # beyond float32's range both become inf
            tied32 = ~tied & (above.astype(np.float32) == below.astype(np.float32))
        queries = np.flatnonzero(has_next)
        if tied.any():
            ids = [ranked.query_ids[i] for i in queries[tied]]
            out.append(f"score ties straddle cutoff {k} in {_queries(len(ids))} (order decided "
                       f"by item id, trec_eval's rule): {_listing(ids)}")
        if tied32.any():
            ids = [ranked.query_ids[i] for i in queries[tied32]]
            out.append(f"scores at cutoff {k} differ only beyond float32 precision in "
                       f"{_queries(len(ids))}: ordered by the float64 scores, as trec_eval 10 "
                       "does; trec_eval 9.x and pytrec_eval round to float32, see a tie and "
                       f"may rank the two items the other way round: {_listing(ids)}")
    return out
