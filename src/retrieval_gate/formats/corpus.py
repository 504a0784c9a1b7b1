"""The corpus and chunk tables → the model.

**Corpus** (the pinned universe of documents), either

- JSON Lines, one document per line: ``{"id": "d1", "text": "..."}`` (``text`` is needed for
  span judgments, whose offsets it bounds; other fields — a title, access data — are kept for
  later use and ignored here), or
- a list of ids, one per line (the first white-space separated field of each line, further
  fields ignored; ``#`` comments and blank lines as in TREC files): enough to check that every
  item of a run is a document of the corpus, not to check offsets.

**Chunk table** (a run's chunking), JSON Lines, one chunk per line:
``{"id": "d1#0", "doc_id": "d1", "start": 0, "end": 812, "tokens": 150}`` — ``start`` and
``end`` are code-point offsets into the document's text, end exclusive, ``0 ≤ start < end``;
``tokens`` (optional) is the chunk's size as the pipeline's tokenizer counted it.

Ids are distinct in both; a repeated id is an error naming both lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval_gate.core.errors import InputError, memory_for
from retrieval_gate.core.limits import MAX_ID_BYTES
from retrieval_gate.core.model import ChunkTable, Corpus
from retrieval_gate.core.ranking import IdIndex, hash_ids
from retrieval_gate.formats import Source, cache, source_blob, trec
from retrieval_gate.formats.source import Blob

if TYPE_CHECKING:
    from retrieval_gate.formats.jsonfmt import LineBatch

_ID_LIST_FIX = "a corpus id list has one document id per line"


_DOCUMENTS = re.compile(rb"(?:\xef\xbb\xbf)?\s*\{")
_KIND = "corpus-lines"  # entries of ids, hashes, lengths and line places ("corpus": no places)
_ARRAYS = ("ids", "keys", "lengths", "places")
_CACHED = {"ids": ("S", 1), "keys": ("u8", 1), "lengths": ("i8", 1), "places": ("i8", 1)}


def read_corpus(source: Source) -> Corpus:
    """The corpus file: JSON Lines documents, or a list of ids (see the module docstring). A
    large corpus is read from its cache entry when it has one (:mod:`~retrieval_gate.formats.
    cache`), and leaves one when it has not."""
    blob = source_blob(source, map_from=1 << 24)  # a large corpus: mapped, not copied
    cached = cache.load(_KIND, blob, _ARRAYS, expect=_CACHED, valid=lambda a: (
        len(a["keys"]) == len(a["ids"])
        and len(a["lengths"]) == len(a["places"]) in (0, len(a["ids"]))))
    if cached is not None:
        if len(cached["lengths"]) == 0:
            return Corpus(blob.name, cached["ids"], None, cached["keys"], None)
        return Corpus(blob.name, cached["ids"], cached["lengths"], cached["keys"],
                      cached["places"])
    documents = holds_documents(blob)
    # peak memory: 1.06 times the file for documents, 6.9 for ids (benchmarks/reader_memory.py)
    with memory_for(f"reading the corpus {blob.name}", (1.1 if documents else 7) * len(blob)):
        corpus = _documents(blob) if documents else _id_list(blob)
    none = np.zeros(0, np.int64)
    cache.store(_KIND, blob, {"ids": corpus.ids, "keys": corpus.keys,
                              "lengths": none if corpus.lengths is None else corpus.lengths,
                              "places": none if corpus.places is None else corpus.places})
    return corpus


def holds_documents(blob: Blob) -> bool:
    """Whether a corpus file is JSON Lines documents (its first character, after a byte-order
    mark and white space, opens an object) rather than a list of ids."""
    return _DOCUMENTS.match(blob.data[:4096]) is not None


def _id_list(blob: Blob) -> Corpus:
    parts = [(trec.gather_bytes(t.buf, t.starts[0], t.ends[0]), t.lines)
             for t in trec.tokenized(blob.data, blob.name, (0,), 1, _ID_LIST_FIX, ids=(0,))]
    lines = np.concatenate([lines for _, lines in parts])
    return _indexed(blob, joined_ids([part for part, _ in parts]), None, None,
                    lambda i: int(lines[i]))


def _documents(blob: Blob) -> Corpus:
    """JSON Lines documents, parsed a batch of lines at a time into arrays (the file's text
    and objects are never all held at once)."""
    from retrieval_gate.formats.jsonfmt import json_line_batches

    ids: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    places: list[np.ndarray] = []
    for batch in json_line_batches(blob):
        ids.append(_batch_ids(batch, blob.name))
        sizes = [len(t) if type(t) is str else -1 if t is None else -2
                 for t in (obj.get("text") for obj in batch.objects)]
        if -2 in sizes:
            raise InputError(blob.name, "'text' is not a string",
                             "write the document's text as a JSON string",
                             batch.numbers[sizes.index(-2)])
        lengths.append(np.array(sizes, dtype=np.int64))
        places.append(batch.starts)
    all_ids = joined_ids(ids)
    del ids
    with_text = np.concatenate(lengths)
    place = np.concatenate(places)
    missing = with_text < 0
    if missing.any() and not missing.all():
        raise InputError(blob.name, "a document has no 'text' while others have one",
                         "give every document its text, or none (a list of ids)",
                         _line_at(blob, int(place[np.flatnonzero(missing)[0]])))
    return _indexed(blob, all_ids, None if missing.all() else with_text, place,
                    lambda i: _line_at(blob, int(place[i])))


def _batch_ids(batch: LineBatch, name: str) -> np.ndarray:
    """The ``id`` of each line of a batch (``S``); InputError, at its line, for the first that
    :func:`~retrieval_gate.formats.jsonfmt.check_id` refuses. Checked for the whole batch at
    once, and one by one only to name the line at fault."""
    from retrieval_gate.formats.jsonfmt import check_id

    values: list[Any] = [obj.get("id") for obj in batch.objects]
    if all(type(v) is str and v for v in values):
        encoded = [v.encode() for v in values]
        array = np.array(encoded, dtype="S")
        if array.dtype.itemsize <= MAX_ID_BYTES and b"\0" not in b"".join(encoded):
            return array
    for line, value in zip(batch.numbers, values):
        check_id(value, name, line, "id")
    raise AssertionError("an id check_id accepts was refused")  # pragma: no cover


def _line_at(blob: Blob, place: int) -> int:
    """The number (from 1) of the line of ``blob`` that starts at byte ``place``."""
    return int(np.count_nonzero(np.frombuffer(blob.data, dtype=np.uint8, count=place)
                                == ord("\n"))) + 1


def document_texts(corpus: Corpus, blob: Blob, docs: Iterable[str]) -> dict[str, str]:
    """The text of each of ``docs`` in a JSON Lines corpus read from ``blob``, each from its
    own line (found by the document's place, then parsed): nothing else of the file is read.
    A document that is not in the corpus, or has no text, is left out (as is one whose line
    does not hold it, which a corpus read from ``blob`` never has)."""
    wanted = sorted(set(docs))
    if corpus.places is None or not wanted:
        return {}
    rows = IdIndex(corpus.ids, keys=corpus.keys).find(np.array([d.encode() for d in wanted],
                                                                 dtype="S"))
    found: dict[str, str] = {}
    for doc, row in zip(wanted, rows.tolist()):
        if row < 0:
            continue
        start = int(corpus.places[row])
        end = blob.data.find(b"\n", start)
        try:
            value = json.loads(bytes(blob.data[start:None if end < 0 else end]))
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("id") == doc and isinstance(
                value.get("text"), str):
            found[doc] = value["text"]
    return found


def _indexed(blob: Blob, ids: np.ndarray, lengths: np.ndarray | None,
             places: np.ndarray | None, line_of: Callable[[int], int]) -> Corpus:
    """The corpus in hash order; InputError naming the second line of an id given twice
    (``line_of``: the line of the id at a position of ``ids`` as given)."""
    keys = hash_ids(ids)
    order = np.argsort(keys, kind="stable")
    keys, ids = keys[order], ids[order]
    pair = _repeated(ids, keys[1:] == keys[:-1])
    if pair is not None:
        first, second = sorted(line_of(int(order[i])) for i in pair)
        raise InputError(blob.name, f"document '{ids[pair[0]].decode(errors='replace')}' is listed "
                         f"twice (also line {first})", "list each document once", second)
    if lengths is None or places is None:
        return Corpus(blob.name, ids, None, keys, None)
    return Corpus(blob.name, ids, lengths[order], keys, places[order])


def _repeated(ids: np.ndarray, clash: np.ndarray) -> tuple[int, int] | None:
    """Positions of two equal ids, or None; ``ids`` are in hash order and ``clash`` marks
    neighbours with equal hashes."""
    same = np.flatnonzero(clash & (ids[1:] == ids[:-1]))
    if len(same):
        return int(same[0]), int(same[0]) + 1
    if clash.any():  # different ids sharing a hash may stand between two equal ones
        seen: dict[bytes, int] = {}
        for i, value in enumerate(ids.tolist()):
            if seen.setdefault(value, i) != i:
                return seen[value], i
    return None


def read_chunk_table(source: Source) -> ChunkTable:
    """A chunk table (see the module docstring), parsed a batch of lines at a time into
    arrays."""
    from retrieval_gate.formats.jsonfmt import LineBatch, json_line_batches

    blob = source_blob(source, map_from=1 << 24)
    none = LineBatch([], [], np.zeros(0, dtype=np.int64))  # a table of no chunk (a BOM alone)
    parts = [_chunk_rows(batch, blob.name) for batch in json_line_batches(blob)] or [
        _chunk_rows(none, blob.name)]
    ids, docs = (joined_ids([part[i] for part in parts]) for i in (0, 1))
    start, end, tokens, lines = (np.concatenate([part[i] for part in parts]) for i in range(2, 6))
    _require_distinct(ids, lines, blob.name, "chunk")
    return ChunkTable(blob.name, ids, docs, start, end, tokens, lines)


def _chunk_rows(batch: LineBatch, name: str) -> tuple[np.ndarray, ...]:
    """A batch of chunk-table lines as arrays: ids, documents, starts, ends, tokens (−1: not
    given) and line numbers."""
    from retrieval_gate.formats.jsonfmt import check_id, offsets, whole_number

    ids: list[bytes] = []
    docs: list[bytes] = []
    places: list[tuple[int, int, int]] = []
    for line, obj in zip(batch.numbers, batch.objects):
        ids.append(check_id(obj.get("id"), name, line, "id").encode())
        docs.append(check_id(obj.get("doc_id"), name, line, "doc_id").encode())
        if "text" in obj and "start" not in obj and "end" not in obj:
            raise InputError(name, "the chunk has its text but no place (start, end)",
                             f"find each chunk in its document first: gate chunks locate "
                             f"--chunks {name} --corpus CORPUS -o TABLE", line)
        start, end = offsets(obj, name, line, "the chunk")
        tokens = obj.get("tokens")
        places.append((start, end, -1 if tokens is None else
                       whole_number(tokens, "tokens", name, line)))
    start, end, tokens = np.array(places, dtype=np.int64).reshape(-1, 3).T
    return (np.array(ids, dtype="S"), np.array(docs, dtype="S"), start, end, tokens,
            np.array(batch.numbers, dtype=np.int64))


def joined_ids(parts: list[np.ndarray]) -> np.ndarray:
    """Byte-string arrays of any widths, concatenated at the widest."""
    width = max(part.dtype.itemsize for part in parts)
    return np.concatenate([part.astype(f"S{width}", copy=False) for part in parts])


def _require_distinct(ids: np.ndarray, lines: np.ndarray, name: str, what: str) -> None:
    """InputError naming the second line of the first id given twice."""
    order = np.argsort(ids, kind="stable")
    repeated = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if len(repeated):
        first, second = order[repeated[0]], order[repeated[0] + 1]
        raise InputError(name, f"{what} '{ids[second].decode()}' is listed twice (also line "
                         f"{int(lines[first])})", f"list each {what} once", int(lines[second]))
