"""From a run as read to a ranked run: trec_eval's order, duplicates, chunk-to-document collapse.

Order (trec_eval ``comp_sim_docno``): score descending as float64, ties broken by item id
descending in byte order (``d9`` before ``d10``); the rank column and file order play no part.
A run without scores (an explicit list) keeps its list order.

Equality of (query, item) pairs is found with a vectorised 64-bit hash of the ids, and every
hash match is confirmed on the ids themselves, so the result is exact. Item ids are gathered
into numpy ``S`` arrays only for the rows that need them (tie breaks, hash matches, messages
and the rows kept), so a reader may hand them over lazily (:class:`~retrieval_gate.core.model.ItemIds`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.model import ItemIds, Places, RankedRun, RunRows
from retrieval_gate.core.stages import StageContract

_MIX = np.uint64(0x9E3779B97F4A7C15)
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_HASH_CHUNK = 1 << 20
_SORT_BLOCK = 1 << 16  # keys sorted per block of queries in all_distinct
_PAD = np.uint64(0xFFFFFFFFFFFFFFFF)  # fills the unused cells of the per-query key matrix
# _BYTE_MASKS[r]: a word keeping its first r bytes (in memory order) and zeroing the rest
_BYTE_MASKS = np.frombuffer(b"".join(bytes([255] * r + [0] * (8 - r)) for r in range(9)),
                            dtype=np.uint64)

Fetch = Callable[[np.ndarray], np.ndarray]  # row indices -> their ids as an ``S`` array


def _mix(h: np.ndarray, word: np.ndarray) -> np.ndarray:
    """One step of the hash: fold an eight-byte word into ``h``; an all-zero word (padding
    past the end of the id) leaves ``h`` unchanged, so the hash of an id does not depend on the
    width of the array that holds it."""
    mixed = (h ^ word) * _FNV_PRIME
    mixed ^= mixed >> np.uint64(29)
    return np.where(word != 0, mixed, h)


def salted(keys: np.ndarray, salt: np.ndarray) -> np.ndarray:
    """``keys`` mixed with an integer per row (the query), so that equal ids of different
    queries get different keys."""
    return keys ^ (salt.astype(np.uint64) + np.uint64(1)) * _MIX


def hash_ids(ids: np.ndarray, salt: np.ndarray | None = None) -> np.ndarray:
    """A 64-bit hash of each byte string of an ``S`` array, mixed with an optional integer
    ``salt`` per row (the query), computed eight bytes at a time. Equal ids hash equally
    whatever the widths of their arrays (``S2`` or ``S9``), and as :func:`hash_spans`."""
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
    return out if salt is None else salted(out, salt)


def span_words(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray
               ) -> Iterator[tuple[np.ndarray | None, np.ndarray]]:
    """``(rows, word)`` for ``j`` = 0, 8, 16, ... until the longest of the byte strings
    ``data[starts[i]:starts[i] + lengths[i]]`` ends: ``word`` holds bytes ``j`` to ``j + 7``
    (zero past the string's end) of the strings ``rows`` — every string when ``rows`` is None,
    else (an index array) only those longer than ``j``. These are the words :func:`hash_ids`
    reads from an ``S`` array, read straight from ``data``.

    Strings of similar lengths are read all together, word by word; when their lengths are
    very unequal (one long id among short ones), they are ordered by length once and word ``j``
    reads only the strings longer than ``j``, so the work is linear in their total length."""
    n = len(starts)
    if not n:
        return
    longest, shortest = int(lengths.max()), int(lengths.min())
    padded = np.zeros(len(data) + 8, dtype=np.uint8)  # every read stays in bounds
    padded[: len(data)] = data
    # words[i] is the eight bytes at padded[i:i + 8] (an unaligned view, no copy)
    words = np.ndarray((len(data) + 1,), dtype=np.uint64, buffer=padded, strides=(1,))
    n_words = -(-longest // 8)
    if n * n_words <= 2 * int(((lengths + 7) // 8).sum()) + n:
        for j in range(0, longest, 8):
            word = words[np.minimum(starts + j, len(data))]
            if j + 8 > shortest:  # keep each string's own bytes only
                word &= _BYTE_MASKS[np.clip(lengths - j, 0, 8)]
            yield None, word
        return
    order = np.argsort(lengths, kind="stable")[::-1]  # longest first
    descending = -lengths[order]
    for j in range(0, longest, 8):
        rows = order[: int(np.searchsorted(descending, -j, side="left"))]
        yield rows, words[starts[rows] + j] & _BYTE_MASKS[np.minimum(lengths[rows] - j, 8)]


def hash_spans(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`hash_ids` of the byte strings ``data[starts[i]:starts[i] + lengths[i]]``,
    computed from their :func:`span_words`: no ``S`` array is built."""
    h = np.full(len(starts), _FNV_OFFSET, dtype=np.uint64)
    for rows, word in span_words(data, starts, lengths):
        if rows is None:
            h = _mix(h, word)
        else:
            h[rows] = _mix(h[rows], word)
    return h


def same_as_previous(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per byte string (as :func:`span_words`): True when it equals the string before it, byte
    for byte (False for the first)."""
    same = np.zeros(len(lengths), dtype=bool)
    same[1:] = lengths[1:] == lengths[:-1]
    previous = np.zeros(len(lengths), dtype=np.uint64)  # each row's word, for its successor
    for rows, word in span_words(data, starts, lengths):
        if rows is None:
            same[1:] &= word[1:] == word[:-1]
        else:  # a row equal in length to the one before is active exactly when that one is
            previous[rows] = word
            later = rows[rows > 0]
            later = later[same[later]]
            same[later] &= previous[later] == previous[later - 1]
    return same


def item_hashes(items: np.ndarray | ItemIds) -> np.ndarray:
    """:func:`hash_ids` of every item id, unsalted."""
    return hash_ids(items) if isinstance(items, np.ndarray) else items.hashes()


def take_items(items: np.ndarray | ItemIds, rows: np.ndarray) -> np.ndarray:
    """The ids of ``rows`` as an ``S`` array."""
    return items[rows] if isinstance(items, np.ndarray) else items.take(rows)


class IdIndex:
    """Exact lookup of ids: for each wanted id (``S`` array), its position among the indexed
    ``ids``, or −1. With ``salt`` (an integer per id, such as the query), a wanted id matches
    only an indexed id of the same salt. Ids are found by their 64-bit hashes, and every match
    is confirmed on the ids themselves; when a match fails to confirm — a wanted id shares its
    hash with an indexed id it is not, or with the first of several indexed ids sharing one —
    a dictionary settles it. Indexed (salt, id) pairs must be distinct."""

    def __init__(self, ids: np.ndarray, salt: np.ndarray | None = None,
                 keys: np.ndarray | None = None):
        """``keys``, when given, are the ids' unsalted :func:`hash_ids` already sorted, with
        ``ids`` in the same order (a corpus read from its cache): nothing is computed."""
        self.ids = ids
        self.salt = salt
        if keys is None:
            keys = hash_ids(ids, salt)
            self.order: np.ndarray | None = np.argsort(keys, kind="stable")
            self.keys = keys[self.order]
        else:
            self.order, self.keys = None, keys  # ids already in key order

    def __len__(self) -> int:
        return len(self.ids)

    def find(self, ids: np.ndarray, salt: np.ndarray | None = None) -> np.ndarray:
        """The position of each of ``ids`` (with its ``salt``) among the indexed ids, −1 for
        an id not indexed."""
        found = np.full(len(ids), -1, dtype=np.int64)
        if not len(ids) or not len(self.ids):
            return found
        keys = hash_ids(ids, salt)
        # Sorted needles: numpy's binary search starts each one from the last, so a large
        # index (a memory-mapped corpus) is walked once instead of probed at random.
        needles = np.argsort(keys)
        at = np.empty(len(keys), dtype=np.int64)
        at[needles] = np.minimum(np.searchsorted(self.keys, keys[needles]), len(self.keys) - 1)
        candidates = np.flatnonzero(self.keys[at] == keys)
        match = at[candidates] if self.order is None else self.order[at[candidates]]
        exact = self.ids[match] == ids[candidates]
        if salt is not None and self.salt is not None:
            exact &= self.salt[match] == salt[candidates]
        found[candidates[exact]] = match[exact]
        if not exact.all():
            return self._find_exactly(ids, salt)
        return found

    def _find_exactly(self, ids: np.ndarray, salt: np.ndarray | None) -> np.ndarray:
        def pairs(values: np.ndarray, salts: np.ndarray | None) -> list[tuple[int, bytes]]:
            codes = [0] * len(values) if salts is None else salts.tolist()
            return list(zip(codes, values.tolist()))
        table = {pair: i for i, pair in enumerate(pairs(self.ids, self.salt))}
        return np.array([table.get(pair, -1) for pair in pairs(ids, salt)], dtype=np.int64)


def all_distinct(qcodes: np.ndarray, keys: np.ndarray) -> bool:
    """True when no two rows of one query share a key (``qcodes`` non-decreasing); False may
    also mean a hash collision, which :func:`first_occurrences` settles exactly.

    The keys of each query form one row of a matrix (padded with ``_PAD``), checked a block of
    rows at a time by :func:`_rows_distinct`: many small sorts in cache instead of one large
    one. When padding would more than double the data (very unequal rankings), or a key equals
    the pad, all keys are sorted at once instead, salted with their query."""
    if len(keys) < 2:
        return True
    codes = np.arange(int(qcodes[-1]) + 2, dtype=qcodes.dtype)  # same dtype: no copy of qcodes
    counts = np.diff(np.searchsorted(qcodes, codes))
    width = int(counts.max())
    if len(counts) * width > 2 * len(keys) or (keys == _PAD).any():
        ordered = np.sort(salted(keys, qcodes))
        return not (ordered[1:] == ordered[:-1]).any()
    if len(counts) * width == len(keys):  # rankings of equal length: already a matrix
        matrix = keys.reshape(len(counts), width)
    else:
        matrix = np.full((len(counts), width), _PAD)
        starts = np.cumsum(counts) - counts
        matrix[qcodes, np.arange(len(keys)) - starts[qcodes]] = keys
    step = max(_SORT_BLOCK // width, 1)
    high = np.empty((min(step, len(counts)), width), dtype=np.uint32)  # reused: no new pages
    return all(_rows_distinct(matrix[start : start + step], high)
               for start in range(0, len(counts), step))


def _rows_distinct(rows: np.ndarray, high: np.ndarray) -> bool:
    """True when no row of ``rows`` holds a key twice (``_PAD`` cells aside). The high 32 bits
    of the keys are sorted first (twice as fast as 64 bits), into the buffer ``high``; only
    rows with a repeat there, a rare hash coincidence or padding, are sorted in full."""
    part = high[: len(rows)]
    part[...] = rows >> np.uint64(32)
    part.sort(axis=1)
    suspects = np.flatnonzero((part[:, 1:] == part[:, :-1]).any(axis=1))
    if not len(suspects):
        return True
    full = np.sort(rows[suspects], axis=1)
    return not ((full[:, 1:] == full[:, :-1]) & (full[:, 1:] != _PAD)).any()


def first_occurrences(qcodes: np.ndarray, keys: np.ndarray, fetch: Fetch) -> np.ndarray:
    """Boolean mask, True for the first row (in array order) of each distinct (query, id).

    ``keys`` are the rows' unsalted id hashes and ``fetch`` gives the ids of given rows, with
    which every hash match is confirmed."""
    keep = np.ones(len(keys), dtype=bool)
    if all_distinct(qcodes, keys):
        return keep  # the usual case, settled without an index sort
    keys = salted(keys, qcodes)
    order = np.argsort(keys, kind="stable")
    same = keys[order[1:]] == keys[order[:-1]]
    earlier, later = order[:-1][same], order[1:][same]
    if not ((qcodes[earlier] == qcodes[later]) & (fetch(earlier) == fetch(later))).all():
        # a hash collision: settle it exactly
        return _first_occurrences_exact(qcodes, fetch(np.arange(len(keys))))
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


@dataclass(frozen=True, eq=False)
class TrecOrder:
    """A run's rows in trec_eval's order.

    - ``perm``: the row at each ordered position, or None when only ``moved`` positions differ
      from the input order (and none when ``moved`` is None too);
    - ``moved`` / ``moved_rows``: with ``perm`` None, the positions (ascending) whose rows are
      not the input's rows there, and those rows (the tie breaks of an ordered run);
    - ``qcodes`` / ``scores``: per ordered position (``scores`` None for an explicit order);
    - ``local``: only rows of equal query and score change places, so every per-query set of
      rows, and ``qcodes`` and ``scores`` themselves, are as in the input.
    """

    perm: np.ndarray | None
    qcodes: np.ndarray
    scores: np.ndarray | None
    local: bool
    moved: np.ndarray | None = None
    moved_rows: np.ndarray | None = None

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """The input rows at ordered ``positions``."""
        if self.perm is not None:
            return self.perm[positions]
        if self.moved is None or not len(positions):
            return positions
        assert self.moved_rows is not None  # set together with moved
        at = np.minimum(np.searchsorted(self.moved, positions), len(self.moved) - 1)
        hit = self.moved[at] == positions
        return np.where(hit, self.moved_rows[at], positions)

    def arranged(self, values: np.ndarray) -> np.ndarray:
        """A per-row array in the order."""
        if self.perm is not None:
            return values[self.perm]
        if self.moved is None:
            return values
        out = values.copy()
        out[self.moved] = values[self.moved_rows]
        return out


def trec_order(qcodes: np.ndarray, scores: np.ndarray | None, fetch: Fetch) -> TrecOrder:
    """Order by query code, then score descending, then id descending (bytes); without scores,
    by query code, keeping the list order. ``fetch`` gives the ids of tied rows."""
    grouped = bool((qcodes[1:] >= qcodes[:-1]).all())
    if scores is None:
        if grouped:
            return TrecOrder(None, qcodes, None, True)
        stable = np.argsort(qcodes, kind="stable")
        return TrecOrder(stable, qcodes[stable], None, False)
    in_order = grouped and bool((~(qcodes[1:] == qcodes[:-1]) | (scores[1:] <= scores[:-1])
                                 ).all())
    perm: np.ndarray | None = None if in_order else np.lexsort((-scores, qcodes))
    q, s = (qcodes, scores) if perm is None else (qcodes[perm], scores[perm])
    tied = (q[1:] == q[:-1]) & (s[1:] == s[:-1])
    if not tied.any():
        return TrecOrder(perm, q, s, in_order)
    in_group = np.zeros(len(q), dtype=bool)
    in_group[:-1] |= tied
    in_group[1:] |= tied
    rows = np.flatnonzero(in_group)
    group = np.cumsum((rows == 0) | ~tied[rows - 1])  # a group starts after an untied row
    sources = rows if perm is None else perm[rows]
    within = sources[np.lexsort((fetch(sources), -group))[::-1]]  # group up, id down
    if perm is not None:
        perm[rows] = within
        return TrecOrder(perm, q, s, False)
    return TrecOrder(None, q, s, True, rows, within)


def _within_depth(qcodes: np.ndarray, kept: np.ndarray | None, depth: int, n_queries: int
                  ) -> np.ndarray:
    """Positions of the first ``depth`` kept rows of each query (``kept``: the kept positions,
    None for all; ``qcodes`` non-decreasing)."""
    codes = qcodes if kept is None else qcodes[kept]
    starts = np.searchsorted(codes, np.arange(n_queries + 1, dtype=codes.dtype))
    counts = np.minimum(np.diff(starts), depth)
    before = np.cumsum(counts) - counts
    first = np.repeat(starts[:-1] - before, counts) + np.arange(int(counts.sum()))
    return first if kept is None else kept[first]


def rank_run(rows: RunRows, duplicates: str = "error",
             doc_map: dict[str, str] | None = None, depth: int | None = None,
             repeat_fix: str = "remove the repeat", collapse: bool = True,
             limit: StageContract | None = None) -> RankedRun:
    """Order each query's items (trec_eval's rule), apply the duplicates policy, then, with
    ``collapse``, collapse items to documents (``doc_map`` or the items' own ``doc_id``),
    keeping each document's first (best) rank; without it, items stay items and their places
    (when the rows have them) are kept beside them. An item missing from ``doc_map`` is an
    error. With ``depth``, only the first ``depth`` items of each query are kept (after all
    checks, which see every item). ``repeat_fix`` is the advice of the error for a repeated
    item under ``duplicates="error"`` (it depends on where the policy was set). ``limit``, a
    pipeline stage's contract, keeps only what the stage passes on — its first ``cutoff``
    items and, of those, the ones within its token ``budget`` (see
    :mod:`retrieval_gate.core.stages`) — before items collapse to documents."""
    items = rows.items
    order = trec_order(rows.qcodes, rows.scores, lambda r: take_items(items, r))
    qcodes = order.qcodes

    def fetch(positions: np.ndarray) -> np.ndarray:
        return take_items(items, order.rows(positions))

    def line(position: int) -> int | None:
        return None if rows.lines is None else int(rows.lines[order.rows(np.array([position]))[0]])

    keep = _first_items(rows, order, fetch, line, duplicates, repeat_fix)  # None: all kept
    if limit is not None and (limit.cutoff is not None or limit.budget is not None):
        keep = _within_contract(rows, order, keep, limit, len(rows.query_ids))
    docs = None  # ordered document ids, when they differ from the item ids
    if collapse and (doc_map is not None or rows.doc_ids is not None):
        docs = (order.arranged(rows.doc_ids) if rows.doc_ids is not None
                else fetch(np.arange(len(qcodes))))
        if doc_map is not None:
            docs = _map_documents(docs, doc_map, rows.source, line)
        doc_keep = first_occurrences(qcodes, hash_ids(docs), docs.__getitem__)
        keep = doc_keep if keep is None else keep & doc_keep
    kept = None if keep is None or keep.all() else np.flatnonzero(keep)
    if depth is not None:
        kept = _within_depth(qcodes, kept, depth, len(rows.query_ids))
    kept_qcodes, scores, lines, docs = _kept(rows, order, kept, docs, fetch)
    offsets = np.searchsorted(kept_qcodes, np.arange(len(rows.query_ids) + 1,
                                                     dtype=kept_qcodes.dtype))
    tokens = None
    if not collapse and rows.tokens is not None:
        tokens = rows.tokens[order.rows(np.arange(len(qcodes)) if kept is None else kept)]
    return RankedRun(rows.source, rows.query_ids, offsets, docs, scores, lines,
                     None if collapse else _places(rows, order, kept), tokens)


def _kept(rows: RunRows, order: TrecOrder, kept: np.ndarray | None, docs: np.ndarray | None,
          fetch: Fetch) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray]:
    """The query codes, scores, lines and document ids of the ordered rows ``kept`` (None:
    all): ``docs`` when the documents differ from the items (ordered), else the items'
    ids, fetched."""
    if kept is None:
        every = np.arange(len(order.qcodes))
        return (order.qcodes, order.scores,
                None if rows.lines is None else rows.lines[order.rows(every)],
                fetch(every) if docs is None else docs)
    return (order.qcodes[kept], None if order.scores is None else order.scores[kept],
            None if rows.lines is None else rows.lines[order.rows(kept)],
            fetch(kept) if docs is None else docs[kept])


def _within_contract(rows: RunRows, order: TrecOrder, keep: np.ndarray | None,
                     limit: StageContract, n_queries: int) -> np.ndarray:
    """The ordered rows a stage passes on: of the kept rows (``keep``, None: all), each
    query's first ``limit.cutoff``, and of those the prefix whose tokens add up to at most
    ``limit.budget``. A budget needs every such item's token count (InputError otherwise);
    a stage that passes on no item needs none."""
    qcodes = order.qcodes
    mask = np.ones(len(qcodes), dtype=bool) if keep is None else keep.copy()
    starts = np.searchsorted(qcodes, np.arange(n_queries + 1, dtype=qcodes.dtype))
    if limit.cutoff is not None:
        seen = np.cumsum(mask)
        before = np.concatenate(([0], seen))[starts[:-1]]
        mask &= (seen - np.repeat(before, np.diff(starts))) <= limit.cutoff
    if limit.budget is not None and mask.any():
        given = None if rows.tokens is None else order.arranged(rows.tokens)
        if given is None or (given[mask] < 0).any():
            raise InputError(rows.source, f"stage '{limit.name}' has a budget of "
                             f"{limit.budget:,} tokens, and "
                             f"{'its items carry' if given is None else 'some of its items carry'}"
                             " no token count", 'give each item "tokens" (JSON Lines items) or '
                             "give the run a chunk table with tokens (counted by the pipeline's "
                             "tokenizer)")
        spent = np.cumsum(np.where(mask, given, 0))
        before = np.concatenate(([0], spent))[starts[:-1]]
        mask &= (spent - np.repeat(before, np.diff(starts))) <= limit.budget
    return mask


def _places(rows: RunRows, order: TrecOrder, kept: np.ndarray | None) -> Places | None:
    """The places of the ranked rows (``kept`` positions, None for all), when the run has
    them."""
    if rows.doc_ids is None or rows.starts is None or rows.ends is None:
        return None
    source = order.rows(np.arange(len(order.qcodes)) if kept is None else kept)
    tokens = (np.full(len(source), -1, dtype=np.int64) if rows.tokens is None
              else rows.tokens[source])
    return Places(rows.doc_ids[source], rows.starts[source], rows.ends[source], tokens)


def _first_items(rows: RunRows, order: TrecOrder, fetch: Fetch,
                 line: Callable[[int], int | None], duplicates: str, repeat_fix: str
                 ) -> np.ndarray | None:
    """The duplicates policy on the ordered rows: None when no item repeats within a query,
    else the mask of first occurrences (policy ``first``); a repeat under policy ``error`` is
    an InputError naming the later occurrence. ``fetch`` and ``line`` take ordered positions."""
    hashes = item_hashes(rows.items)
    if all_distinct(order.qcodes, hashes if order.local else order.arranged(hashes)):
        return None
    keep = first_occurrences(order.qcodes, order.arranged(hashes), fetch)
    if duplicates == "error":
        first = int(np.flatnonzero(~keep)[0])
        raise InputError(rows.source, f"item '{fetch(np.array([first]))[0].decode()}' appears "
                         f"twice in the ranking of query '{rows.query_ids[order.qcodes[first]]}'",
                         repeat_fix,
                         line(first))
    return keep


def _map_documents(items: np.ndarray, doc_map: dict[str, str], source: str,
                   line: Callable[[int], int | None]) -> np.ndarray:
    distinct, inverse = np.unique(items, return_inverse=True)
    mapped = []
    for i, item in enumerate(distinct.tolist()):
        doc = doc_map.get(item.decode())
        if doc is None:
            row = int(np.flatnonzero(inverse == i)[0])
            raise InputError(source, f"item '{item.decode()}' is not in the doc map",
                             "add it to the --doc-map file", line(row))
        mapped.append(doc.encode())
    return np.array(mapped, dtype="S")[inverse.ravel()]
