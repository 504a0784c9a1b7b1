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

import re

import numpy as np

from retrieval_gate.errors import InputError
from retrieval_gate.formats import Source, source_blob, trec
from retrieval_gate.formats.source import Blob
from retrieval_gate.model import ChunkTable, Corpus

_ID_LIST_FIX = "a corpus id list has one document id per line"


def read_corpus(source: Source) -> Corpus:
    """The corpus file: JSON Lines documents, or a list of ids (see the module docstring)."""
    blob = source_blob(source)
    if re.match(rb"(?:\xef\xbb\xbf)?\s*\{", blob.data[:4096]) is None:
        return _id_list(blob)
    return _documents(blob)


def _id_list(blob: Blob) -> Corpus:
    parts = [(trec.gather_bytes(t.buf, t.starts[0], t.ends[0]), t.lines)
             for t in trec.tokenized(blob.data, blob.name, (0,), 1, _ID_LIST_FIX, ids=(0,))]
    width = max(part.dtype.itemsize for part, _ in parts)
    ids = np.concatenate([part.astype(f"S{width}") for part, _ in parts])
    _require_distinct(ids, np.concatenate([lines for _, lines in parts]), blob.name, "document")
    return Corpus(blob.name, ids, None)


def _documents(blob: Blob) -> Corpus:
    from retrieval_gate.formats.jsonfmt import check_id, json_lines

    ids: list[bytes] = []
    lengths: list[int] = []
    numbers: list[int] = []
    for line, obj in json_lines(blob.text(), blob.name):
        ids.append(check_id(obj.get("id"), blob.name, line, "id").encode())
        text = obj.get("text")
        if text is not None and not isinstance(text, str):
            raise InputError(blob.name, "'text' is not a string",
                             "write the document's text as a JSON string", line)
        lengths.append(-1 if text is None else len(text))
        numbers.append(line)
    array = np.array(ids, dtype="S")
    _require_distinct(array, np.array(numbers), blob.name, "document")
    with_text = np.array(lengths, dtype=np.int64)
    if (with_text < 0).all():
        return Corpus(blob.name, array, None)
    if (with_text < 0).any():
        line = numbers[int(np.flatnonzero(with_text < 0)[0])]
        raise InputError(blob.name, "a document has no 'text' while others have one",
                         "give every document its text, or none (a list of ids)", line)
    return Corpus(blob.name, array, with_text)


def read_chunk_table(source: Source) -> ChunkTable:
    """A chunk table (see the module docstring)."""
    from retrieval_gate.formats.jsonfmt import check_id, json_lines, offsets, whole_number

    blob = source_blob(source)
    ids: list[bytes] = []
    docs: list[bytes] = []
    places: list[tuple[int, int, int]] = []
    numbers: list[int] = []
    for line, obj in json_lines(blob.text(), blob.name):
        ids.append(check_id(obj.get("id"), blob.name, line, "id").encode())
        docs.append(check_id(obj.get("doc_id"), blob.name, line, "doc_id").encode())
        start, end = offsets(obj, blob.name, line, "the chunk")
        tokens = obj.get("tokens")
        places.append((start, end, -1 if tokens is None else
                       whole_number(tokens, "tokens", blob.name, line)))
        numbers.append(line)
    array = np.array(ids, dtype="S")
    _require_distinct(array, np.array(numbers), blob.name, "chunk")
    columns = np.array(places, dtype=np.int64).reshape(-1, 3).T.copy()
    return ChunkTable(blob.name, array, np.array(docs, dtype="S"), *columns)


def _require_distinct(ids: np.ndarray, lines: np.ndarray, name: str, what: str) -> None:
    """InputError naming the second line of the first id given twice."""
    order = np.argsort(ids, kind="stable")
    repeated = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if len(repeated):
        first, second = order[repeated[0]], order[repeated[0] + 1]
        raise InputError(name, f"{what} '{ids[second].decode()}' is listed twice (also line "
                         f"{int(lines[first])})", f"list each {what} once", int(lines[second]))
