"""The data the gate works on: queries, judgments and runs.

Runs are columnar (numpy arrays, one row per retrieved item) so that scoring can be vectorised
over queries; item ids are UTF-8 byte strings (numpy ``S`` dtype), whose order is the byte order
trec_eval uses to break score ties.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class Query:
    """One query of the frozen query set. ``answerable=False`` marks a question the approved
    corpus cannot answer: it has no positive judgment, is reported separately, never averaged."""

    id: str
    text: str = ""
    tags: tuple[str, ...] = ()
    answerable: bool = True


@dataclass(frozen=True, eq=False)
class Qrels:
    """Relevance judgments: query id → item id → integer grade, in file order.

    ``lines`` maps each query id to the line (or JSON path) of its first judgment, for messages.
    """

    source: str
    judgments: dict[str, dict[str, int]]
    lines: dict[str, int | str] = field(default_factory=dict)

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
        """``retrieval_gate.ranking.hash_ids`` of every id (unsalted), in row order."""
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
    - ``doc_ids``: the document id each item belongs to (JSONL ``doc_id``), or None.
    """

    source: str
    query_ids: tuple[str, ...]
    qcodes: np.ndarray
    items: np.ndarray | ItemIds
    scores: np.ndarray | None
    lines: np.ndarray | RowLines | None = None
    doc_ids: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class RankedRun:
    """A run in rank order: the rows of query ``query_ids[i]`` are ``offsets[i]:offsets[i+1]``,
    best first. ``scores`` is None when the order was explicit."""

    source: str
    query_ids: tuple[str, ...]
    offsets: np.ndarray
    docs: np.ndarray
    scores: np.ndarray | None
    lines: np.ndarray | None

    def where(self, row: int) -> int | None:
        return None if self.lines is None else int(self.lines[row])


@dataclass(frozen=True, eq=False)
class JudgedRows:
    """The ranked items of the evaluated queries joined with their judgments, the input of every
    measure. Rows are grouped by query (``qidx`` non-decreasing) and in rank order within it.

    - ``rank``: 1-based rank within the query; ``grade``: the item's grade (0 if unjudged);
      ``judged``: the item has a judgment with a grade ≥ 0;
    - ``retrieved``: number of items per query;
    - ``judgment_qidx`` / ``judgment_grade``: every judgment of the evaluated queries;
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
    ideal_qidx: np.ndarray
    ideal_rank: np.ndarray
    ideal_grade: np.ndarray

    def relevant(self, threshold: int) -> np.ndarray:
        """Per row: judged with grade ≥ threshold (and ≥ 0)."""
        return self.judged & (self.grade >= max(threshold, 0))

    def n_relevant(self, threshold: int) -> np.ndarray:
        """R per query: judgments with grade ≥ threshold (negative grades never count)."""
        mask = self.judgment_grade >= max(threshold, 0)
        return np.bincount(self.judgment_qidx[mask], minlength=self.n_queries)
