"""Access and time: which items a query's asker may see, and which are in force on its day.

For a query with ``scope`` (the asker's principals) and ``as_of`` (the day it is asked) and a
document with access data (:mod:`retrieval_gate.formats.access`):

- **visible** — the document is public (no ACL), or its ACL and the scope share a principal.
  A query without ``scope`` sees public documents only, as does an empty scope. A document
  without access data is public.
- **in force** — ``valid_from ≤ as_of ≤ valid_to`` (both days inclusive; an absent bound is
  open). A query without ``as_of`` finds every document in force.

An item the query may not see is a **leak**; one not in force is **stale**. Neither is ever
evidence: it gains nothing in any measure, and a judgment of such a document for that query
is not counted in R or in the ideal ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.model import AccessTable, Qrels, Query, Span
from retrieval_gate.ranking import IdIndex

NO_DAY = np.iinfo(np.int64).min


@dataclass(frozen=True, eq=False)
class Askers:
    """Per query (in a given order): its scope as a bitset over the table's principals, and
    its day (:data:`NO_DAY` when it has none)."""

    scope: np.ndarray
    as_of: np.ndarray
    unknown: dict[str, tuple[str, ...]]


def askers(table: AccessTable, queries: Sequence[Query]) -> Askers:
    """The scope bitsets and days of ``queries``; ``unknown`` names, per query, the principals
    of its scope that no document's ACL mentions (they grant nothing)."""
    code = {p: i for i, p in enumerate(table.principals)}
    rows: list[int] = []
    codes: list[int] = []
    unknown = {}
    for row, query in enumerate(queries):
        missing = [p for p in query.scope or () if p not in code]
        if missing:
            unknown[query.id] = tuple(missing)
        known = [code[p] for p in query.scope or () if p in code]
        rows.extend([row] * len(known))
        codes.extend(known)
    bits = set_bits(len(queries), table.acl.shape[1], np.array(rows, dtype=np.int64),
                    np.array(codes, dtype=np.int64))
    days = np.array([NO_DAY if q.as_of is None else q.as_of for q in queries], dtype=np.int64)
    return Askers(bits, days, unknown)


@dataclass(frozen=True, eq=False)
class ItemAccess:
    """Per item: whether its asker may see it, whether it is in force on the asker's day, its
    family of versions (−1: none) and its row in the access table (−1: no access data)."""

    visible: np.ndarray
    in_force: np.ndarray
    family: np.ndarray
    row: np.ndarray


def item_access(table: AccessTable, who: Askers, query: np.ndarray, docs: np.ndarray
                ) -> ItemAccess:
    """The access of each item: document ``docs[i]`` (``S``) asked by query ``query[i]`` (a
    position in ``who``). Vectorised: one hash lookup per item, one bitset AND."""
    row = IdIndex(table.ids, keys=table.keys).find(docs) if len(table.ids) else \
        np.full(len(docs), -1, dtype=np.int64)
    known = row >= 0
    at = np.maximum(row, 0)
    shared = (table.acl[at] & who.scope[query]).any(axis=1) if len(table.ids) else \
        np.zeros(len(docs), dtype=bool)
    visible = ~known | table.public[at] | shared
    day = who.as_of[query]
    dated = known & (day != NO_DAY)
    in_force = ~dated | ((table.valid_from[at] <= day) & (day <= table.valid_to[at]))
    family = np.where(known, table.family[at], -1)
    return ItemAccess(visible, in_force, family, row)


def set_bits(n_rows: int, n_words: int, rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """A (rows, words) uint64 bitset with bit ``codes[i]`` of row ``rows[i]`` set."""
    bits = np.zeros((n_rows, n_words), dtype=np.uint64)
    np.bitwise_or.at(bits, (rows, codes // 64),
                     np.left_shift(np.uint64(1), (codes % 64).astype(np.uint64)))
    return bits


def allowed(table: AccessTable, rows: np.ndarray) -> list[tuple[str, ...]]:
    """For each row of the table, the principals that may see its document."""
    if not len(rows):
        return []
    codes = np.arange(len(table.principals))
    words = table.acl[rows][:, codes // 64]
    held = (words >> (codes % 64).astype(np.uint64)) & np.uint64(1)
    return [tuple(table.principals[i] for i in np.flatnonzero(line).tolist()) for line in held]


def access_warnings(table: AccessTable, queries: Sequence[Query], qrels: Qrels) -> list[str]:
    """What ``freeze`` and ``validate`` say about the access data: principals of a scope that
    no ACL mentions (a typo grants nothing), and judgments at or above grade 1 of documents
    the query may not see or that are not in force on its day (usually a labelling slip; they
    are never counted)."""
    out = []
    who = askers(table, queries)
    if who.unknown:
        named = ", ".join(f"{q} ({', '.join(p)})" for q, p in list(who.unknown.items())[:10])
        out.append(f"{len(who.unknown)} {'query has' if len(who.unknown) == 1 else 'queries have'}"
                   f" principals in their scope that no document's ACL names (they grant "
                   f"nothing): {named}")
    position = {q.id: i for i, q in enumerate(queries)}
    pairs = [(position[q], unit.doc if isinstance(unit, Span) else unit)
             for q, labels in _positive(qrels) for unit in labels if q in position]
    if pairs:
        access = item_access(table, who, np.array([p for p, _ in pairs], dtype=np.int64),
                             np.array([d.encode() for _, d in pairs], dtype="S"))
        bad = ~(access.visible & access.in_force)
        if bad.any():
            shown = [f"{queries[pairs[i][0]].id}: {pairs[i][1]} "
                     f"({'not visible' if not access.visible[i] else 'not in force'})"
                     for i in np.flatnonzero(bad)[:10].tolist()]
            out.append(f"{int(bad.sum())} relevant judgments are of documents their query may "
                       "not see or that are not in force on its day — they are never counted "
                       f"(a labelling slip?): {'; '.join(shown)}")
    return out


def _positive(qrels: Qrels) -> list[tuple[str, list[str | Span]]]:
    """Per query, its judged units with grade ≥ 1 (document ids, or spans)."""
    if qrels.spans is not None:
        return [(q, [s for s in spans if s.grade >= 1]) for q, spans in qrels.spans.items()]
    return [(q, [d for d, g in labels.items() if g >= 1]) for q, labels in
            qrels.judgments.items()]
