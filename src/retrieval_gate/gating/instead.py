"""What was retrieved instead: for a query that got worse, where the baseline's relevant
evidence went, and what the candidate put at the top.

For each such query: every relevant judged unit (a document, or a span ``doc[start:end]``)
with the rank at which the baseline and the candidate cover it (None: not among the items the
measures read — "not retrieved"), and the candidate's first three items with a snippet of
their text when the pinned corpus has text (the item's own characters for a chunk with a
place, else the start of its document), made visible and capped. Ranks are those of the
ranked run the measures read (documents once chunks collapse; the last stage of a pipeline).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.model import NEVER, RankedRun
from retrieval_gate.core.untrusted import capped, visible
from retrieval_gate.formats.source import Blob
from retrieval_gate.inputs.snapshot import Snapshot, TestSet
from retrieval_gate.scoring.scores import Scores, UnitCoverage

TOP = 3  # the candidate's items shown
SNIPPET = 120  # characters of text shown per item


@dataclass(frozen=True)
class Evidence:
    """A relevant unit of the query (a document, or a span ``doc[start:end]``) and the rank at
    which each run covers it (None: not retrieved)."""

    unit: str
    grade: int
    baseline_rank: int | None
    candidate_rank: int | None


@dataclass(frozen=True)
class Retrieved:
    """One of the candidate's first items: its rank, id, document and a snippet (or None)."""

    rank: int
    item: str
    document: str
    snippet: str | None


@dataclass(frozen=True)
class Instead:
    """For one query: its relevant evidence in both runs, and the candidate's top items."""

    query: str
    evidence: tuple[Evidence, ...]
    candidate_top: tuple[Retrieved, ...]


def retrieved_instead(snap: Snapshot, test_set: TestSet, base: Scores, cand: Scores,
                      queries: Iterable[str]) -> tuple[Instead, ...]:
    """:class:`Instead` for each of ``queries`` (in order, each once); none without the ranked
    runs and their coverage."""
    if base.ranked is None or cand.ranked is None or base.coverage is None \
            or cand.coverage is None:
        return ()
    firsts = {qid: _items(cand.ranked, qid, TOP) for qid in queries}
    texts = corpus_texts(snap, test_set, {doc for items in firsts.values()
                                          for _, doc, _ in items})
    position = {q: i for i, q in enumerate(base.query_ids)}
    out = []
    for qid, items in firsts.items():
        evidence = _evidence(base.coverage, cand.coverage, position.get(qid, -1))
        top = []
        for rank, (item, doc, place) in enumerate(items, 1):
            text = texts.get(doc)
            piece = None if text is None else (text[place[0]:place[1]] if place else text)
            top.append(Retrieved(rank, item, doc, None if piece is None else
                                 visible(capped(" ".join(piece.split()), SNIPPET))))
        out.append(Instead(qid, evidence, tuple(top)))
    return tuple(out)


def _evidence(base: UnitCoverage, cand: UnitCoverage, query: int) -> tuple[Evidence, ...]:
    """The query's relevant units (best grade first, then name) with the rank at which each
    run covers them (None: not covered)."""
    at = np.flatnonzero((base.qidx == query) & base.relevant)
    if not len(at) or base.names is None or base.grade is None or base.rank is None \
            or cand.rank is None:
        return ()
    names = base.names(at)
    rows = [(names[j], int(base.grade[i]), _covered(base.rank[i]), _covered(cand.rank[i]))
            for j, i in enumerate(at.tolist())]
    return tuple(Evidence(*row) for row in sorted(rows, key=lambda r: (-r[1], r[0])))


def _covered(rank: int) -> int | None:
    return None if rank == NEVER else int(rank)


def _rows(ranked: RankedRun, qid: str) -> range:
    try:
        i = ranked.query_ids.index(qid)
    except ValueError:
        return range(0)
    return range(int(ranked.offsets[i]), int(ranked.offsets[i + 1]))


def _items(ranked: RankedRun, qid: str, limit: int
           ) -> list[tuple[str, str, tuple[int, int] | None]]:
    """(item, document, its characters or None) of the query's first ``limit`` ranked rows,
    in rank order."""
    out: list[tuple[str, str, tuple[int, int] | None]] = []
    for row in _rows(ranked, qid)[:limit]:
        item = ranked.docs[row].decode(errors="replace")
        if ranked.places is not None:
            doc = ranked.places.doc[row].decode(errors="replace")
            out.append((item, doc, (int(ranked.places.start[row]),
                                    int(ranked.places.end[row]))))
        else:
            out.append((item, item, None))
    return out


def corpus_texts(snap: Snapshot, test_set: TestSet, docs: Iterable[str]) -> dict[str, str]:
    """The text of each of ``docs`` in the pinned corpus (JSON Lines with text), each read
    from its own line; empty without one. A document not in the corpus is left out."""
    source = snap.blobs.get("corpus")
    if test_set.corpus is None or not isinstance(source, Blob):
        return {}
    from retrieval_gate.formats.corpus import document_texts

    return document_texts(test_set.corpus, source, docs)
