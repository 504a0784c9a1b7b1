"""The data the gate works on: queries, judgments, runs, the corpus and chunk tables.

Runs are columnar (numpy arrays, one row per retrieved item) so that scoring can be vectorised
over queries; item ids are UTF-8 byte strings (numpy ``S`` dtype), whose order is the byte order
trec_eval uses to break score ties.

Evidence units (what a judgment is about): a *document* or a *chunk* is judged by its id; a
*span* is judged by its place in the corpus text — characters ``[start, end)`` of a document,
counted in Unicode code points, end exclusive — so that any chunking of the documents can be
scored against it. An item of a run may carry such a place (its *provenance*: document, start,
end and token count), from the run itself or from the chunk table of the run's chunking.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from retrieval_gate.core.exported import exported
from retrieval_gate.core.sparse import RowSets


@exported
@dataclass(frozen=True)
class Query:
    """One query of the frozen query set. ``answerable=False`` marks a question the approved
    corpus cannot answer: it has no positive judgment, is reported separately, never averaged.
    ``scope`` is the asker's principals (None: not given — the asker sees public documents
    only); ``as_of`` the day the question is asked at (a proleptic Gregorian ordinal, None:
    no day, so no document is out of force)."""

    id: str
    text: str = ""
    tags: tuple[str, ...] = ()
    answerable: bool = True
    facts: tuple[str, ...] | None = None  # required facts; None: every fact labelled for it
    scope: tuple[str, ...] | None = None
    as_of: int | None = None


@dataclass(frozen=True)
class Span:
    """A judged evidence span: characters ``[start, end)`` of document ``doc`` (code points,
    end exclusive) with a grade and, optionally, the ``fact`` it states."""

    doc: str
    start: int
    end: int
    grade: int
    fact: str | None = None

    @property
    def key(self) -> str:
        """The span's name in reports and in :attr:`Qrels.judgments`: ``doc[start:end]``."""
        return f"{self.doc}[{self.start}:{self.end}]"


@exported
@dataclass(frozen=True, eq=False)
class Qrels:
    """Relevance judgments: query id → judged unit → integer grade, in file order.

    - ``judgments``: the unit's id (a document or chunk id; for a span, :attr:`Span.key`) →
      grade, per query;
    - ``spans``: with span judgments, the spans of each query (None for id judgments);
    - ``facts``: the fact each id judgment states, per query (span facts are in the spans);
    - ``lines``: each query id → the line (or JSON path) of its first judgment, for messages.
    """

    source: str
    judgments: dict[str, dict[str, int]]
    lines: dict[str, int | str] = field(default_factory=dict)
    spans: dict[str, tuple[Span, ...]] | None = None
    facts: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def unit(self) -> str:
        """``span`` for span judgments, else ``id`` (documents or chunks, judged by id)."""
        return "id" if self.spans is None else "span"

    def fact_of(self, query_id: str, unit: str) -> str | None:
        """The fact judgment ``unit`` of ``query_id`` states, if labelled."""
        return self.facts.get(query_id, {}).get(unit)

    def labelled_facts(self, query_id: str) -> tuple[str, ...]:
        """Every fact labelled for ``query_id``, in file order."""
        if self.spans is not None:
            found = [s.fact for s in self.spans.get(query_id, ()) if s.fact is not None]
        else:
            found = list(self.facts.get(query_id, {}).values())
        return tuple(dict.fromkeys(found))

    def where(self, query_id: str) -> int | str | None:
        return self.lines.get(query_id)


class ItemIds(Protocol):
    """Item ids a reader keeps in its own layout (one byte buffer with offsets, for the pyarrow
    reader), gathered into an ``S`` array only for the rows asked for. A plain ``S`` array
    serves the same purpose."""

    def __len__(self) -> int: ...

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The ids of ``rows`` as an ``S`` array."""
        ...

    def hashes(self) -> np.ndarray:
        """``retrieval_gate.core.ranking.hash_ids`` of every id (unsalted), in row order."""
        ...


class RowLines:
    """The line numbers of a file with one data line per line (no comment, no blank line): row
    ``r`` is on line ``r + 1``, with no array held. Indexed like a numpy array."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, rows: np.ndarray | int) -> np.ndarray:
        return np.asarray(rows, dtype=np.int64) + 1


@dataclass(frozen=True, eq=False)
class RunRows:
    """A run as read, before ranking: one row per (query, item) in file order.

    - ``query_ids``: distinct query ids in order of first appearance (a query given with an
      empty ranking, possible in JSON formats, is listed and has no rows);
    - ``qcodes``: integer index into ``query_ids`` per row;
    - ``items``: the item ids (UTF-8, numpy ``S``, or :class:`ItemIds`);
    - ``scores``: float64 per row, or None when the order is explicit (file order);
    - ``lines``: 1-based source line per row (an array, or :class:`RowLines`), or None for
      whole-file JSON documents;
    - ``doc_ids``: the document id each item belongs to (JSONL ``doc_id``, or the chunk
      table), or None;
    - ``starts`` / ``ends``: the item's place in its document (int64), or None when no item
      has a place; ``tokens``: its size in tokens (int64; −1 where not given), or None when
      no item gives one;
    - ``latency_ms``: per query (by index into ``query_ids``) the time the system took to
      make the ranking, in milliseconds, or None when the run records none;
    - ``abstained``: per query, whether the system declined to answer, or None.
    """

    source: str
    query_ids: tuple[str, ...]
    qcodes: np.ndarray
    items: np.ndarray | ItemIds
    scores: np.ndarray | None
    lines: np.ndarray | RowLines | None = None
    doc_ids: np.ndarray | None = None
    starts: np.ndarray | None = None
    ends: np.ndarray | None = None
    tokens: np.ndarray | None = None
    latency_ms: np.ndarray | None = None
    abstained: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Places:
    """Where ranked items lie: per row, the document id (``S``), the start and end offsets
    (code points, end exclusive) and the token count (−1 unknown)."""

    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    tokens: np.ndarray

    def take(self, rows: np.ndarray) -> Places:
        return Places(self.doc[rows], self.start[rows], self.end[rows], self.tokens[rows])


@dataclass(frozen=True, eq=False)
class RankedRun:
    """A run in rank order: the rows of query ``query_ids[i]`` are ``offsets[i]:offsets[i+1]``,
    best first. ``scores`` is None when the order was explicit. ``docs`` are the ranked ids
    (items, or their documents once collapsed); ``places``, when kept, the items' provenance
    in the same order; ``tokens``, when the items are not collapsed and the run gives them,
    each item's size in tokens."""

    source: str
    query_ids: tuple[str, ...]
    offsets: np.ndarray
    docs: np.ndarray
    scores: np.ndarray | None
    lines: np.ndarray | None
    places: Places | None = None
    tokens: np.ndarray | None = None

    def where(self, row: int) -> int | None:
        return None if self.lines is None else int(self.lines[row])


@dataclass(frozen=True, eq=False)
class Corpus:
    """The pinned corpus, the universe of documents: ``ids`` (``S``, distinct) in the order of
    ``keys``, their 64-bit hashes sorted (``retrieval_gate.core.ranking.hash_ids``), so that looking
    an id up is a binary search; ``lengths``, each document's text length in code points, in
    the same order (None for a list of ids without text, which can check membership but not
    offsets); ``places``, the byte offset in the corpus file where each document's line
    starts, in the same order (its text is read from there, not held; None with
    ``lengths``)."""

    source: str
    ids: np.ndarray
    lengths: np.ndarray | None
    keys: np.ndarray
    places: np.ndarray | None


@dataclass(frozen=True, eq=False)
class ChunkTable:
    """A chunking: each chunk's id (``S``, distinct), its document (``S``), its place in the
    document — ``start`` and ``end`` in code points, end exclusive — and its size in ``tokens``
    (−1 when not given), as the pipeline counted them; ``lines``, each chunk's line in its file
    (for messages; None when not known)."""

    source: str
    ids: np.ndarray
    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    tokens: np.ndarray
    lines: np.ndarray | None = None


NEVER = np.iinfo(np.int64).max  # the rank of a unit no item of the ranking covers


@dataclass(frozen=True, eq=False)
class JudgedRows:
    """The ranked items of the evaluated queries joined with their judgments, the input of every
    measure. Rows are grouped by query (``qidx`` non-decreasing) and in rank order within it.

    - ``rank``: 1-based rank within the query; ``grade``: the item's grade (0 if unjudged);
      ``judged``: the item has a judgment with a grade ≥ 0, or (with access data) its asker
      may not see it or it is not in force on the query's day — it gains 0 whatever a
      judgment would say;
    - ``retrieved``: number of items per query;
    - ``judgment_qidx`` / ``judgment_grade``: every judged unit (document, chunk or span) of
      the evaluated queries; ``judgment_rank``: the rank at which the ranking covers it (the
      rank of the judged id; for a span, of the item that completes its coverage), or
      :data:`NEVER`; ``judgment_fact``: the code of the fact it states, −1 for none;
    - ``required_qidx`` / ``required_fact``: the facts each query requires (fact codes);
    - ``stale`` / ``family`` / ``version``: per row, not in force on the query's day, its
      family of versions (−1 none) and which document of it (its row in the access table, −1
      none: several items of one document are one version); None without access data;
    - ``ideal_qidx`` / ``ideal_rank`` / ``ideal_grade``: the positive grades of each query sorted
      best first, the ideal ranking for nDCG.
    """

    n_queries: int
    qidx: np.ndarray
    rank: np.ndarray
    grade: np.ndarray
    judged: np.ndarray
    retrieved: np.ndarray
    judgment_qidx: np.ndarray
    judgment_grade: np.ndarray
    judgment_rank: np.ndarray
    ideal_qidx: np.ndarray
    ideal_rank: np.ndarray
    ideal_grade: np.ndarray
    judgment_fact: np.ndarray
    required_qidx: np.ndarray
    required_fact: np.ndarray
    stale: np.ndarray | None = None
    family: np.ndarray | None = None
    version: np.ndarray | None = None
    unit_names: Callable[[np.ndarray], list[str]] | None = None

    def relevant(self, threshold: int) -> np.ndarray:
        """Per row: judged with grade ≥ threshold (and ≥ 0)."""
        return self.judged & (self.grade >= max(threshold, 0))

    def relevant_units(self, threshold: int) -> np.ndarray:
        """Per judged unit: grade ≥ threshold (negative grades never count)."""
        return self.judgment_grade >= max(threshold, 0)

    def n_relevant(self, threshold: int) -> np.ndarray:
        """R per query: judgments with grade ≥ threshold (negative grades never count)."""
        mask = self.relevant_units(threshold)
        return np.bincount(self.judgment_qidx[mask], minlength=self.n_queries)


@dataclass(frozen=True, eq=False)
class AccessTable:
    """Who may see each document and when it is in force (see
    :mod:`retrieval_gate.formats.permissions`), for the documents that say and those a
    ``supersedes`` names (public and always in force unless they say): ids in hash order
    (``keys``); ``principals``, every principal an ACL names, sorted (a principal's *code* is
    its position); ``acl``, per row the codes of the principals allowed to see the document
    (sparse, one set per row; empty for a public document); ``public`` where the document has
    no ACL; the first and last day in force (ordinals; int64 min / max when unbounded) and the
    family of versions (−1: none)."""

    source: str
    ids: np.ndarray
    keys: np.ndarray
    principals: tuple[str, ...]
    acl: RowSets
    public: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    family: np.ndarray
