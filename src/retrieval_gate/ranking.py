"""From a run as read to a ranked run: trec_eval's order, duplicates, chunk-to-document collapse.

Order (trec_eval ``comp_sim_docno``): score descending as float64, ties broken by item id
descending in byte order (``d9`` before ``d10``); the rank column and file order play no part.
A run without scores (an explicit list) keeps its list order.

Equality of (query, item) pairs is found with a vectorised 64-bit hash of the ids, and every
hash match is confirmed on the ids themselves, so the result is exact.
"""

from __future__ import annotations

import numpy as np

from retrieval_gate.errors import InputError
from retrieval_gate.model import RankedRun, RunRows

_MIX = np.uint64(0x9E3779B97F4A7C15)
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_HASH_CHUNK = 1 << 20


def _mix(h: np.ndarray, word: np.ndarray) -> np.ndarray:
    """One step of the hash: fold an eight-byte word into ``h``; an all-zero word (padding
    past the end of the id) leaves ``h`` unchanged, so the hash of an id does not depend on the
    width of the array that holds it."""
    mixed = (h ^ word) * _FNV_PRIME
    mixed ^= mixed >> np.uint64(29)
    return np.where(word != 0, mixed, h)


def hash_ids(ids: np.ndarray, salt: np.ndarray | None = None) -> np.ndarray:
    """A 64-bit hash of each byte string of an ``S`` array, mixed with an optional integer
    ``salt`` per row (the query), computed eight bytes at a time. Equal ids hash equally
    whatever the widths of their arrays (``S2`` or ``S9``)."""
    width = ids.dtype.itemsize
    words = -(-width // 8)
    out = np.empty(len(ids), dtype=np.uint64)
    raw = ids.view(np.uint8).reshape(len(ids), width)
    for start in range(0, len(ids), _HASH_CHUNK):
        block = raw[start : start + _HASH_CHUNK]
        padded = np.zeros((len(block), words * 8), dtype=np.uint8)
        padded[:, :width] = block
        h = np.full(len(block), _FNV_OFFSET, dtype=np.uint64)
        for word in padded.view(np.uint64).T:
            h = _mix(h, word)
        out[start : start + _HASH_CHUNK] = h
    if salt is not None:
        out ^= (salt.astype(np.uint64) + np.uint64(1)) * _MIX
    return out


def first_occurrences(qcodes: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Boolean mask, True for the first row (in array order) of each distinct (query, id)."""
    keys = hash_ids(ids, qcodes)
    keep = np.ones(len(ids), dtype=bool)
    if len(keys) < 2 or (np.diff(np.sort(keys)) != 0).all():
        return keep  # the usual case, settled without an index sort
    order = np.argsort(keys, kind="stable")
    same = keys[order[1:]] == keys[order[:-1]]
    earlier, later = order[:-1][same], order[1:][same]
    if not ((qcodes[earlier] == qcodes[later]) & (ids[earlier] == ids[later])).all():
        return _first_occurrences_exact(qcodes, ids)  # a hash collision: settle it exactly
    keep[later] = False
    return keep


def _first_occurrences_exact(qcodes: np.ndarray, ids: np.ndarray) -> np.ndarray:
    seen: set[tuple[int, bytes]] = set()
    keep = np.zeros(len(ids), dtype=bool)
    for row, pair in enumerate(zip(qcodes.tolist(), ids.tolist())):
        if pair not in seen:
            seen.add(pair)
            keep[row] = True
    return keep


def trec_order(qcodes: np.ndarray, scores: np.ndarray | None, ids: np.ndarray) -> np.ndarray:
    """Row permutation: by query code, then score descending, then id descending (bytes)."""
    if scores is None:
        return np.argsort(qcodes, kind="stable")
    same_query = qcodes[1:] == qcodes[:-1]
    in_order = (qcodes[1:] >= qcodes[:-1]).all() and (
        ~same_query | (scores[1:] <= scores[:-1])
    ).all()
    perm = np.arange(len(qcodes)) if in_order else np.lexsort((-scores, qcodes))
    q, s = qcodes[perm], scores[perm]
    tied = (q[1:] == q[:-1]) & (s[1:] == s[:-1])
    if tied.any():
        in_group = np.zeros(len(perm), dtype=bool)
        in_group[:-1] |= tied
        in_group[1:] |= tied
        rows = np.flatnonzero(in_group)
        group = np.cumsum(np.concatenate(([True], ~tied)))[rows]
        within = np.lexsort((ids[perm[rows]], -group))[::-1]  # group ascending, id descending
        perm[rows] = perm[rows][within]
    return perm


def rank_run(rows: RunRows, duplicates: str = "error",
             doc_map: dict[str, str] | None = None, depth: int | None = None) -> RankedRun:
    """Order each query's items (trec_eval's rule), apply the duplicates policy, then collapse
    items to documents (``doc_map`` or the items' own ``doc_id``), keeping each document's
    first (best) rank. An item missing from ``doc_map`` is an error. With ``depth``, only the
    first ``depth`` items of each query are kept (after all checks, which see every item)."""
    perm = trec_order(rows.qcodes, rows.scores, rows.items)
    identity = bool((perm == np.arange(len(perm))).all())

    def arranged(values: np.ndarray | None) -> np.ndarray | None:
        return values if values is None or identity else values[perm]

    qcodes, items, lines, scores = (arranged(v) for v in
                                    (rows.qcodes, rows.items, rows.lines, rows.scores))
    keep = first_occurrences(qcodes, items)
    if not keep.all() and duplicates == "error":
        row = int(np.flatnonzero(~keep)[0])
        raise InputError(rows.source, f"item '{items[row].decode()}' appears twice in the "
                         f"ranking of query '{rows.query_ids[qcodes[row]]}'",
                         "remove the repeat, or pass --duplicates first to keep its best rank",
                         None if lines is None else int(lines[row]))
    docs = items
    if doc_map is not None or rows.doc_ids is not None:
        docs = arranged(rows.doc_ids) if rows.doc_ids is not None else items
        if doc_map is not None:
            docs = _map_documents(docs, doc_map, rows.source, lines)
        keep &= first_occurrences(qcodes, docs)
    if depth is not None:
        starts = np.searchsorted(qcodes, np.arange(len(rows.query_ids)))
        position = np.cumsum(keep) - 1  # rank among the kept rows, counted over all queries
        first_kept = np.concatenate(([0], np.cumsum(keep)))[starts]
        keep &= position - first_kept[qcodes] < depth
    if not keep.all():
        qcodes, docs = qcodes[keep], docs[keep]
        lines = None if lines is None else lines[keep]
        scores = None if scores is None else scores[keep]
    offsets = np.searchsorted(qcodes, np.arange(len(rows.query_ids) + 1))
    return RankedRun(rows.source, rows.query_ids, offsets, docs, scores, lines)


def _map_documents(items: np.ndarray, doc_map: dict[str, str], source: str,
                   lines: np.ndarray | None) -> np.ndarray:
    distinct, inverse = np.unique(items, return_inverse=True)
    mapped = []
    for i, item in enumerate(distinct.tolist()):
        doc = doc_map.get(item.decode())
        if doc is None:
            row = int(np.flatnonzero(inverse == i)[0])
            raise InputError(source, f"item '{item.decode()}' is not in the doc map",
                             "add it to the --doc-map file", None if lines is None
                             else int(lines[row]))
        mapped.append(doc.encode())
    return np.array(mapped, dtype="S")[inverse.ravel()]
