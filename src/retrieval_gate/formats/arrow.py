"""Optional fast path for TREC runs with pyarrow (the ``fast`` extra).

pyarrow's multi-threaded CSV reader splits a run whose fields are separated by single spaces
into columns; anything less regular (tabs, runs of spaces, comments, blank or extra fields)
returns None and the numpy reader in :mod:`retrieval_gate.formats.trec`, which gives exact
error messages, does the work. Both produce the same RunRows.
"""

from __future__ import annotations

import os

import numpy as np

from retrieval_gate.model import RunRows

_MIN_BYTES = 1 << 24  # below this, importing pyarrow costs more than it saves


def read_trec_run(data: bytes, name: str) -> RunRows | None:
    """The run, or None when the file is small, pyarrow is missing (or hidden with the
    environment variable ``RETRIEVAL_GATE_NO_ARROW=1``), or the file needs the general reader
    (which also gives the exact error message for a bad line)."""
    if len(data) < _MIN_BYTES or os.environ.get("RETRIEVAL_GATE_NO_ARROW") == "1":
        return None
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyarrow import csv
    except ImportError:
        return None
    from retrieval_gate.formats.source import check_utf8
    from retrieval_gate.formats.trec import query_codes

    check_utf8(data, name)
    if b"\x00" in data:
        return None
    columns = ["qid", "q0", "docid", "rank", "score", "tag"]
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    try:
        reader = csv.open_csv(
            pa.py_buffer(data),
            read_options=csv.ReadOptions(column_names=columns, block_size=1 << 23),
            parse_options=csv.ParseOptions(delimiter=" ", quote_char=False,
                                           ignore_empty_lines=False),
            convert_options=csv.ConvertOptions(
                column_types={"qid": pa.binary(), "docid": pa.binary(), "score": pa.string()},
                include_columns=["qid", "docid", "score"],
            ),
        )
        for batch in reader:
            qids, items, score_texts = (batch.column(i) for i in range(3))
            for column in (qids, items, score_texts):
                if column.null_count or pc.any(pc.equal(pc.binary_length(column), 0)).as_py():
                    return None
            # Arrow's parser rounds correctly, as strtod does.
            scores = pc.cast(score_texts, pa.float64()).to_numpy()
            if not np.isfinite(scores).all():
                return None
            parts.append((_to_numpy_bytes(qids), _to_numpy_bytes(items), scores))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowCapacityError,
            pa.ArrowNotImplementedError):
        return None
    if not parts:
        return None
    qids, items, scores = (np.concatenate(column) for column in zip(*parts))
    query_ids, qcodes = query_codes(qids)
    if any(q.startswith("#") for q in query_ids):
        return None  # a comment line
    return RunRows(name, query_ids, qcodes, items, scores,
                   np.arange(1, len(qids) + 1, dtype=np.int64))


def _to_numpy_bytes(column) -> np.ndarray:
    """A pyarrow binary array as a numpy ``S`` array, without a Python object per value."""
    from retrieval_gate.formats.trec import gather_bytes

    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)[
        column.offset : column.offset + len(column) + 1].astype(np.int64)
    values = np.frombuffer(column.buffers()[2], dtype=np.uint8)
    return gather_bytes(values, offsets[:-1], offsets[1:])
