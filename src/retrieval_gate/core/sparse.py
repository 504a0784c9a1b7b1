"""Sets of non-negative integers per row, stored compressed (CSR): row ``r`` holds
``codes[start[r]:start[r + 1]]``, ascending and distinct. Memory is proportional to the rows and
the integers stored, never to rows × possible integers (an access table's ACLs over its
principals, a query set's scopes).

:func:`shared` says, per pair of rows of two such tables, whether the two sets meet: each pair's
smaller set is looked up in the larger one (a binary search within the larger one's row), so a
set of 200,000 integers met with one of 3 costs 3 searches, not 200,000.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PAIRS_AT_ONCE = 1 << 21  # lookups held in memory at a time by shared()
REPEATS_FROM = 64  # shared() looks a pair up once from this many lookups on


@dataclass(frozen=True, eq=False)
class RowSets:
    """``start`` (int64, one more than the rows, from 0) and ``codes`` (int64; each row's
    ascending and distinct)."""

    start: np.ndarray
    codes: np.ndarray

    def __len__(self) -> int:
        return len(self.start) - 1

    def sizes(self, rows: np.ndarray | None = None) -> np.ndarray:
        """How many integers each row holds (of ``rows``, or every row)."""
        if rows is None:
            return np.diff(self.start)
        return self.start[rows + 1] - self.start[rows]

    def row(self, r: int) -> np.ndarray:
        return self.codes[self.start[r]:self.start[r + 1]]

    def take(self, rows: np.ndarray) -> RowSets:
        """The sets of ``rows``, in that order (a row may be taken twice)."""
        sizes = self.sizes(rows)
        _, at = spread(self.start[rows], sizes)
        return RowSets(_starts(sizes), np.asarray(self.codes)[at])

    def holds(self, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per ``i``: whether row ``rows[i]`` holds ``values[i]``. A binary search within each
        row, all at once: one round per halving of the longest row searched."""
        codes = np.asarray(self.codes)
        lo, end = self.start[rows], self.start[rows + 1]
        hi = end.copy()
        open_ = np.flatnonzero(lo < hi)
        while len(open_):
            mid = (lo[open_] + hi[open_]) // 2
            below = codes[mid] < values[open_]
            lo[open_] = np.where(below, mid + 1, lo[open_])
            hi[open_] = np.where(below, hi[open_], mid)
            open_ = open_[lo[open_] < hi[open_]]
        found = lo < end
        found[found] = codes[lo[found]] == values[found]
        return found

    @staticmethod
    def from_pairs(n_rows: int, rows: np.ndarray, codes: np.ndarray) -> RowSets:
        """``n_rows`` sets holding ``codes[i]`` in row ``rows[i]`` (in any order; repeats kept
        once)."""
        width = int(codes.max()) + 1 if len(codes) else 1
        key = np.sort(rows.astype(np.int64) * width + codes)
        first = np.ones(len(key), dtype=bool)
        first[1:] = key[1:] != key[:-1]
        key = key[first]  # (np.unique: 100x slower on int64 with numpy 2.4)
        row = key // width
        return RowSets(_starts(np.bincount(row, minlength=n_rows)), key - row * width)

    @staticmethod
    def empty(n_rows: int) -> RowSets:
        return RowSets(np.zeros(n_rows + 1, dtype=np.int64), np.zeros(0, dtype=np.int64))

    @staticmethod
    def concat(parts: list[RowSets]) -> RowSets:
        """The rows of ``parts``, one after the other."""
        sizes = np.concatenate([p.sizes() for p in parts])
        return RowSets(_starts(sizes), np.concatenate([np.asarray(p.codes) for p in parts]))


def _starts(sizes: np.ndarray) -> np.ndarray:
    start = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=start[1:])
    return start


def spread(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions ``starts[i] .. starts[i] + lengths[i] - 1`` of every ``i`` in turn, with the
    ``i`` each comes from: ``(owner, position)``."""
    owner = np.repeat(np.arange(len(lengths)), lengths)
    first = np.cumsum(lengths) - lengths
    return owner, np.arange(len(owner)) + np.repeat(starts - first, lengths)


def shared(a: RowSets, a_rows: np.ndarray, b: RowSets, b_rows: np.ndarray) -> np.ndarray:
    """Per ``i``: whether set ``a_rows[i]`` of ``a`` and set ``b_rows[i]`` of ``b`` share an
    integer. Each pair looks its smaller set's integers up in its larger set, at most
    :data:`PAIRS_AT_ONCE` lookups at a time (one pair's may be more): time and memory grow with
    the sum over pairs of the smaller size. Pairs whose smaller set holds more than
    :data:`REPEATS_FROM` integers are looked up once however often they repeat."""
    cost = np.minimum(a.sizes(a_rows), b.sizes(b_rows))
    large = np.flatnonzero(cost > REPEATS_FROM)
    if not len(large):
        return _shared(a, a_rows, b, b_rows)
    out = np.zeros(len(a_rows), dtype=bool)
    small = np.flatnonzero(cost <= REPEATS_FROM)
    out[small] = _shared(a, a_rows[small], b, b_rows[small])
    pair = a_rows[large].astype(np.int64) * len(b) + b_rows[large]
    distinct, again = np.unique(pair, return_inverse=True)
    out[large] = _shared(a, distinct // len(b), b, distinct % len(b))[again.ravel()]
    return out


def _shared(a: RowSets, a_rows: np.ndarray, b: RowSets, b_rows: np.ndarray) -> np.ndarray:
    """:func:`shared`, every pair looked up."""
    a_sizes, b_sizes = a.sizes(a_rows), b.sizes(b_rows)
    from_a = a_sizes <= b_sizes
    cost = np.where(from_a, a_sizes, b_sizes)
    ends = np.cumsum(cost)
    out = np.zeros(len(a_rows), dtype=bool)
    done = 0
    while done < len(cost):
        stop = max(done + 1, int(np.searchsorted(ends, ends[done] - cost[done] + PAIRS_AT_ONCE,
                                                 side="right")))
        part = slice(done, stop)
        for small, small_rows, large, large_rows, pick in (
                (a, a_rows[part], b, b_rows[part], from_a[part]),
                (b, b_rows[part], a, a_rows[part], ~from_a[part])):
            pairs = np.flatnonzero(pick)
            owner, at = spread(small.start[small_rows[pairs]], small.sizes(small_rows[pairs]))
            hit = large.holds(large_rows[pairs][owner], np.asarray(small.codes)[at])
            out[done + pairs[owner[hit]]] = True
        done = stop
    return out
