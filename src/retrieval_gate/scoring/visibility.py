"""Access and time: which items a query's asker may see, and which are in force on its day.

For a query with ``scope`` (the asker's principals) and ``as_of`` (the day it is asked) and a
document with access data (:mod:`retrieval_gate.formats.permissions`):

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

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.model import AccessTable, Qrels, Query, Span
from retrieval_gate.core.ranking import IdIndex
from retrieval_gate.core.sparse import RowSets, shared

NO_DAY = np.iinfo(np.int64).min


@dataclass(frozen=True, eq=False)
class Askers:
    """Per query (in a given order): its scope as the codes of the table's principals it holds
    (one set per query), and its day (:data:`NO_DAY` when it has none)."""

    scope: RowSets
    as_of: np.ndarray
    unknown: dict[str, tuple[str, ...]]


_ASKED: weakref.WeakKeyDictionary[AccessTable, dict[tuple[Query, ...], Askers]] = \
    weakref.WeakKeyDictionary()  # per table, the last query list's askers


def askers(table: AccessTable, queries: Sequence[Query]) -> Askers:
    """The scopes and days of ``queries``; ``unknown`` names, per query, the principals of its
    scope that no document's ACL mentions (they grant nothing). Built once per table and
    query list, and kept while the table lives (both runs of a check, and their judgments, ask
    the same)."""
    known = _ASKED.setdefault(table, {})
    key = tuple(queries)
    found = known.get(key)
    if found is None:
        found = _askers(table, key)
        known.clear()
        known[key] = found
    return found


def _askers(table: AccessTable, queries: tuple[Query, ...]) -> Askers:
    code = {p: i for i, p in enumerate(table.principals)}
    sizes: list[int] = []
    codes: list[int] = []
    unknown = {}
    for query in queries:
        missing = [p for p in query.scope or () if p not in code]
        if missing:
            unknown[query.id] = tuple(missing)
        known = [code[p] for p in query.scope or () if p in code]
        sizes.append(len(known))
        codes.extend(known)
    rows = np.repeat(np.arange(len(queries)), np.array(sizes, dtype=np.int64))
    scope = RowSets.from_pairs(len(queries), rows, np.array(codes, dtype=np.int64))
    days = np.array([NO_DAY if q.as_of is None else q.as_of for q in queries], dtype=np.int64)
    return Askers(scope, days, unknown)


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
    position in ``who``). Vectorised: one hash lookup per item; for an item whose document
    has an ACL, the smaller of its ACL and its asker's scope looked up in the other
    (:func:`~retrieval_gate.core.sparse.shared`)."""
    if not len(table.ids):  # no document has access data: every item public, in force
        every, none = np.ones(len(docs), dtype=bool), np.full(len(docs), -1, dtype=np.int64)
        return ItemAccess(every, every.copy(), none, none.copy())
    row = IdIndex(table.ids, keys=table.keys).find(docs)
    known = row >= 0
    at = np.maximum(row, 0)
    visible = ~known | table.public[at]
    restricted = np.flatnonzero(~visible)
    visible[restricted] = shared(table.acl, row[restricted], who.scope, query[restricted])
    day = who.as_of[query]
    dated = known & (day != NO_DAY)
    in_force = ~dated | ((table.valid_from[at] <= day) & (day <= table.valid_to[at]))
    family = np.where(known, table.family[at], -1)
    return ItemAccess(visible, in_force, family, row)


def allowed(table: AccessTable, rows: np.ndarray) -> list[tuple[str, ...]]:
    """For each row of the table, the principals that may see its document (sorted)."""
    return [tuple(table.principals[i] for i in table.acl.row(r).tolist())
            for r in rows.tolist()]


def access_warnings(table: AccessTable, queries: Sequence[Query], qrels: Qrels,
                    documents: Mapping[str, str] | None = None) -> list[str]:
    """What ``freeze`` and ``validate`` say about the access data: principals of a scope that
    no ACL mentions (a typo grants nothing), and judgments at or above grade 1 of documents
    the query may not see or that are not in force on its day (usually a labelling slip; they
    are never counted). ``documents`` gives the document of each judged chunk (chunk
    judgments); other judgments name their document."""
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
        of = documents or {}
        access = item_access(table, who, np.array([p for p, _ in pairs], dtype=np.int64),
                             np.array([of.get(d, d).encode() for _, d in pairs], dtype="S"))
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
