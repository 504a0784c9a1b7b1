"""Optional fast path for large TREC runs with pyarrow (the ``fast`` extra).

The file is memory-mapped (not copied) and taken only if its layout is plain: valid UTF-8, no
white space but spaces and ``\\n``, no NUL, not a JSON document (unless the format is forced),
and, as pyarrow's CSV reader splits it, exactly six non-empty fields per line. Anything else
(tabs, runs of spaces, blank lines, comments, extra fields, scores that are not finite
numbers) returns None, and the numpy reader in :mod:`retrieval_gate.formats.trec`, which gives
exact error messages, does the work. Both produce the same rows.

Item ids are copied out of Arrow's buffers into one byte buffer with offsets, hashed from
there once, and gathered into numpy ``S`` arrays only for the rows ranking asks for
(:class:`~retrieval_gate.formats.trec.ByteSpans`). An id longer than the documented limit, or
a leading BOM, also leaves the file to the numpy reader. Query ids become codes block by block (a run lists a query's lines
together), without a Python object per line.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

import numpy as np

from retrieval_gate.core.limits import MAX_ID_BYTES
from retrieval_gate.core.model import RowLines, RunRows
from retrieval_gate.core.ranking import hash_spans, same_as_previous
from retrieval_gate.formats.source import BOM, Blob, read_blob, release_pages
from retrieval_gate.formats.trec import ByteSpans, byte_ranges

_MIN_BYTES = 1 << 24  # below this, importing pyarrow costs more than it saves
MAP_FROM = _MIN_BYTES  # runs this large are memory-mapped rather than copied
_BLOCK = 1 << 22  # bytes per CSV block (the unit of work of a thread)
_REGION = 1 << 25  # bytes of whole lines parsed at a time
_COLUMNS = ["qid", "q0", "docid", "rank", "score", "tag"]


def available() -> bool:
    """True when pyarrow can be imported and is not hidden with the environment variable
    ``RETRIEVAL_GATE_NO_ARROW=1``."""
    if os.environ.get("RETRIEVAL_GATE_NO_ARROW") == "1":
        return False
    try:
        import pyarrow  # noqa: F401 — only to learn whether the fast path is available
    except ImportError:
        return False
    return True


def read_trec_run(source: Blob | str | os.PathLike[str], name: str, detect: bool
                  ) -> RunRows | None:
    """The run in ``source`` (a file read once, or a path), or None when the file is small,
    pyarrow is missing (or hidden), the file looks like JSON while ``detect`` is set, or it
    needs the general reader (which also gives the exact error message for a bad line)."""
    blob = source if isinstance(source, Blob) else read_blob(source, _MIN_BYTES)
    if len(blob) < _MIN_BYTES or not available():
        return None
    data = blob.data
    if detect and data[:1] in (b"{", b"["):
        return None  # JSON (a run the fast path takes never starts with white space)
    if data[: len(BOM)] == BOM or not plain_bytes(data):
        return None
    return _read_columns(data, name)


def plain_bytes(mapped: bytes | mmap.mmap) -> bool:
    """True when the only white space is spaces and ``\\n`` (no tab, carriage return,
    vertical tab or form feed, which pyarrow would not split on as trec_eval does), there is no
    NUL byte, and the bytes are valid UTF-8."""
    if any(mapped.find(byte) >= 0 for byte in (b"\x00", b"\t", b"\r", b"\x0b", b"\x0c")):
        return False
    if int(np.frombuffer(mapped, dtype=np.uint8).max()) >= 128:
        try:
            str(mapped, "utf-8")
        except UnicodeDecodeError:
            return False
    return True


def _read_table(region: Any) -> Any:
    """A pyarrow buffer of whole lines as a pyarrow table, split by pyarrow's CSV reader on all
    cores: six columns split on single spaces, ids as bytes (copied out of ``region``), scores
    as float64 (parsed with correct rounding, as strtod does); an empty field is a null, "nan"
    is NaN and "NA" an error."""
    import pyarrow as pa
    from pyarrow import csv

    return csv.read_csv(
        region,
        read_options=csv.ReadOptions(column_names=_COLUMNS, block_size=_BLOCK),
        parse_options=csv.ParseOptions(delimiter=" ", quote_char=False, ignore_empty_lines=False),
        convert_options=csv.ConvertOptions(
            column_types={**dict.fromkeys(_COLUMNS, pa.binary()), "score": pa.float64()},
            strings_can_be_null=True, null_values=[""],
        ),
    )


def _read_columns(mapped: bytes | mmap.mmap, name: str) -> RunRows | None:
    """Split a run with pyarrow's CSV reader, a region of whole lines at a time; None if a line
    does not have six non-empty fields (a blank line, a leading, trailing or doubled space), an
    id is longer than :data:`~retrieval_gate.core.limits.MAX_ID_BYTES`, a score is not a
    finite number, or a line is a comment.

    While the rows of one region are stored, pyarrow already splits the next one (in a second
    thread, as both release the GIL); a region's pages are released once it is split."""
    from concurrent.futures import Future, ThreadPoolExecutor

    import pyarrow as pa

    whole = pa.py_buffer(mapped)

    def split(region: tuple[int, int]) -> Any:
        start, end = region
        table = _read_table(whole.slice(start, end - start))
        release_pages(mapped, start, end)
        return table

    columns = _Columns(len(mapped))
    regions = byte_ranges(mapped, _REGION)
    try:
        with ThreadPoolExecutor(1) as ahead:
            pending: Future[Any] | None = ahead.submit(split, next(regions))  # not empty
            while pending is not None:
                table = pending.result()
                following = next(regions, None)
                pending = None if following is None else ahead.submit(split, following)
                if any(column.null_count for column in table.columns):
                    return None
                for batch in table.to_batches():
                    if not columns.add(batch):
                        return None
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowCapacityError,
            pa.ArrowNotImplementedError):
        return None
    return columns.run_rows(name)


class _Columns:
    """The per-row arrays of a run being read, allocated once for the most lines the file can
    hold (a line has at least 12 bytes; ids take fewer bytes than the file) and filled batch by
    batch: pages never written never become resident."""

    def __init__(self, size: int):
        capacity = size // 12 + 1
        self.qcodes = np.empty(capacity, dtype=np.int32)
        self.scores = np.empty(capacity, dtype=np.float64)
        self.hashes = np.empty(capacity, dtype=np.uint64)
        self.id_bytes = np.empty(size, dtype=np.uint8)
        self.id_offsets = np.zeros(capacity + 1, dtype=np.int32 if size < 2**31 else np.int64)
        self.codes: dict[bytes, int] = {}  # query id -> code, in order of first appearance
        self.n = 0  # rows filled

    def add(self, batch: Any) -> bool:
        """Append a record batch of the CSV reader (columns qid, docid, score, ...); False
        (nothing appended) when an id is longer than the limit."""
        qids, qid_offsets = _buffers(batch.column("qid"))
        data, offsets = _buffers(batch.column("docid"))
        if len(batch) and max(int(np.diff(qid_offsets).max()),
                              int(np.diff(offsets).max())) > MAX_ID_BYTES:
            return False
        rows = slice(self.n, self.n + len(batch))
        self.qcodes[rows] = self._query_codes(qids, qid_offsets)
        self.scores[rows] = batch.column("score").to_numpy()
        self.hashes[rows] = hash_spans(data, offsets[:-1], np.diff(offsets))
        first = self.id_offsets[self.n]
        self.id_bytes[first : first + len(data)] = data
        self.id_offsets[self.n + 1 : self.n + len(batch) + 1] = offsets[1:] + first
        self.n += len(batch)
        return True

    def _query_codes(self, data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The code of each row's query id: rows split into blocks of equal ids (compared byte
        for byte; a run lists a query's lines together), each block's id looked up once."""
        firsts = np.flatnonzero(~same_as_previous(data, offsets[:-1], np.diff(offsets)))
        codes = [self.codes.setdefault(data[offsets[i] : offsets[i + 1]].tobytes(),
                                       len(self.codes)) for i in firsts.tolist()]
        return np.repeat(np.array(codes, dtype=np.int32),
                         np.diff(np.append(firsts, len(offsets) - 1)))

    def run_rows(self, name: str) -> RunRows | None:
        """The rows read; None for no row, a non-finite score, or a comment line."""
        n = self.n
        query_ids = tuple(q.decode() for q in self.codes)
        if not n or not np.isfinite(self.scores[:n]).all() or any(
                q.startswith("#") for q in query_ids):
            return None
        items = ByteSpans(self.id_bytes, self.id_offsets[: n + 1], self.hashes[:n])
        return RunRows(name, query_ids, self.qcodes[:n], items, self.scores[:n], RowLines(n))


def _buffers(column: Any) -> tuple[np.ndarray, np.ndarray]:
    """(data, offsets) of a pyarrow binary array, as numpy views, with offsets starting at 0
    and data starting at the array's first value."""
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)[
        column.offset : column.offset + len(column) + 1]
    values = np.frombuffer(column.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    return values, offsets - offsets[0]
