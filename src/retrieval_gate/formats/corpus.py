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
from retrieval_gate.formats import Source, cache, source_blob, trec
from retrieval_gate.formats.source import Blob
from retrieval_gate.model import ChunkTable, Corpus
from retrieval_gate.ranking import hash_ids

_ID_LIST_FIX = "a corpus id list has one document id per line"


def read_corpus(source: Source) -> Corpus:
    """The corpus file: JSON Lines documents, or a list of ids (see the module docstring). A
    large corpus is read from its cache entry when it has one (:mod:`~retrieval_gate.formats.
    cache`), and leaves one when it has not."""
    blob = source_blob(source)
    cached = cache.load("corpus", blob, ("ids", "keys", "lengths"))
    if cached is not None and len(cached["ids"]) == len(cached["keys"]) and len(
            cached["lengths"]) in (0, len(cached["ids"])):
        lengths = None if len(cached["lengths"]) == 0 else cached["lengths"]
        return Corpus(blob.name, cached["ids"], lengths, cached["keys"])
    if re.match(rb"(?:\xef\xbb\xbf)?\s*\{", blob.data[:4096]) is None:
        corpus = _id_list(blob)
    else:
        corpus = _documents(blob)
    cache.store("corpus", blob, {"ids": corpus.ids, "keys": corpus.keys, "lengths":
                                 np.zeros(0, np.int64) if corpus.lengths is None
                                 else corpus.lengths})
    return corpus


def _id_list(blob: Blob) -> Corpus:
    parts = [(trec.gather_bytes(t.buf, t.starts[0], t.ends[0]), t.lines)
             for t in trec.tokenized(blob.data, blob.name, (0,), 1, _ID_LIST_FIX, ids=(0,))]
    width = max(part.dtype.itemsize for part, _ in parts)
    ids = np.concatenate([part.astype(f"S{width}") for part, _ in parts])
    return _indexed(blob.name, ids, None, np.concatenate([lines for _, lines in parts]))


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
    with_text = np.array(lengths, dtype=np.int64)
    if (with_text < 0).any() and not (with_text < 0).all():
        line = numbers[int(np.flatnonzero(with_text < 0)[0])]
        raise InputError(blob.name, "a document has no 'text' while others have one",
                         "give every document its text, or none (a list of ids)", line)
    return _indexed(blob.name, np.array(ids, dtype="S"),
                    None if (with_text < 0).all() else with_text, np.array(numbers))


def _indexed(name: str, ids: np.ndarray, lengths: np.ndarray | None, lines: np.ndarray
             ) -> Corpus:
    """The corpus in hash order; InputError naming the second line of an id given twice."""
    keys = hash_ids(ids)
    order = np.argsort(keys, kind="stable")
    keys, ids, lines = keys[order], ids[order], lines[order]
    pair = _repeated(ids, keys[1:] == keys[:-1])
    if pair is not None:
        first, second = sorted(int(lines[i]) for i in pair)
        raise InputError(name, f"document '{ids[pair[0]].decode(errors='replace')}' is listed "
                         f"twice (also line {first})", "list each document once", second)
    return Corpus(name, ids, None if lengths is None else lengths[order], keys)


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
    start, end, tokens = np.array(places, dtype=np.int64).reshape(-1, 3).T.copy()
    return ChunkTable(blob.name, array, np.array(docs, dtype="S"), start, end, tokens,
                      np.array(numbers, dtype=np.int64))


def _require_distinct(ids: np.ndarray, lines: np.ndarray, name: str, what: str) -> None:
    """InputError naming the second line of the first id given twice."""
    order = np.argsort(ids, kind="stable")
    repeated = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if len(repeated):
        first, second = order[repeated[0]], order[repeated[0] + 1]
        raise InputError(name, f"{what} '{ids[second].decode()}' is listed twice (also line "
                         f"{int(lines[first])})", f"list each {what} once", int(lines[second]))
