"""Ranking internals against brute force: the per-query duplicate check, hashing from byte
spans, and the sparse tie permutation."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.core import ranking


def brute_distinct(qcodes: np.ndarray, keys: np.ndarray) -> bool:
    pairs = list(zip(qcodes.tolist(), keys.tolist()))
    return len(set(pairs)) == len(pairs)


@pytest.mark.parametrize("seed", range(40))
def test_all_distinct_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n_queries = int(rng.integers(1, 30))
    counts = rng.integers(0, 40, size=n_queries)
    if seed % 2:
        counts[:] = counts.max()  # equal rankings: the matrix is a reshape
    qcodes = np.repeat(np.arange(n_queries), counts)
    high = rng.integers(0, 3, size=len(qcodes)).astype(np.uint64) << np.uint64(32)
    low = rng.integers(0, 200 if seed % 3 else 5000, size=len(qcodes)).astype(np.uint64)
    keys = high | low  # equal high halves are common: the 64-bit re-check must decide
    if seed % 5 == 0 and len(keys):
        keys[0] = ranking._PAD  # a key equal to the pad takes the global sort
    assert ranking.all_distinct(qcodes, keys) == brute_distinct(qcodes, keys)


def test_hash_spans_equals_hash_ids():
    rng = np.random.default_rng(1)
    ids = [bytes(rng.integers(1, 256, size=int(n)).astype(np.uint8)) for n in
           rng.integers(0, 30, size=300)]
    offsets = np.concatenate(([0], np.cumsum([len(i) for i in ids]))).astype(np.int32)
    data = np.frombuffer(b"".join(ids), dtype=np.uint8)
    expected = ranking.hash_ids(np.array(ids, dtype="S"))
    starts, lengths = offsets[:-1], np.diff(offsets)
    assert np.array_equal(ranking.hash_spans(data, starts, lengths), expected)
    same = ranking.same_as_previous(data, starts, lengths)
    assert same.tolist() == [i > 0 and ids[i] == ids[i - 1] for i in range(len(ids))]


@pytest.mark.parametrize("seed", range(20))
def test_trec_order_matches_sort(seed):
    """Already ordered runs (sparse tie permutation) and shuffled ones (full permutation)
    give trec_eval's order: query, score descending, id descending."""
    rng = np.random.default_rng(seed)
    n = 200
    qcodes = np.sort(rng.integers(0, 5, size=n))
    scores = rng.integers(0, 6, size=n).astype(float)
    ids = np.array([f"d{i}".encode() for i in rng.permutation(n)], dtype="S")
    if seed % 2:  # in (query, score) order: only ties move
        order = np.lexsort((-scores, qcodes))
        qcodes, scores, ids = qcodes[order], scores[order], ids[order]
    else:
        shuffle = rng.permutation(n)
        qcodes, scores, ids = qcodes[shuffle], scores[shuffle], ids[shuffle]
    result = ranking.trec_order(qcodes, scores, ids.__getitem__)
    rows = result.rows(np.arange(n))
    by_id = sorted(range(n), key=lambda r: bytes(ids[r]), reverse=True)  # id descending
    expected = sorted(by_id, key=lambda r: (qcodes[r], -scores[r]))  # stable
    assert [(qcodes[r], scores[r], ids[r]) for r in rows] == \
        [(qcodes[r], scores[r], ids[r]) for r in expected]
    assert np.array_equal(result.arranged(ids), ids[rows])
    assert np.array_equal(result.qcodes, qcodes[rows])
