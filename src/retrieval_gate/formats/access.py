"""Access data → the model: who may see each document, and when it is in force.

JSON Lines, one document per line — the pinned permissions file, or the corpus file itself:

    {"id": "acme-travel-2025", "acl": ["acme"], "valid_from": "2025-01-01",
     "valid_to": "2026-12-31", "supersedes": "acme-travel-2023"}

- ``acl``: the principals allowed to see the document (any one suffices); absent: public. An
  empty list: nobody may.
- ``valid_from`` / ``valid_to``: ISO dates ``YYYY-MM-DD``, both inclusive; absent: unbounded.
  ``valid_from`` after ``valid_to`` is an error.
- ``supersedes``: the id of the older version this document replaces; documents linked this
  way form one *family* (used by ``MixedVersions``). A document named by ``supersedes`` belongs
  to its family whether or not it has a line: without one (in either file) it is public
  and always in force.

A document without any of these keys is public and always in force, and needs no line. Ids are
distinct; a large file is read once per machine and kept in the gate's cache
(:mod:`~retrieval_gate.formats.cache`), like a corpus.

**Two files.** A permissions file pinned beside a JSON Lines corpus that has access data of its
own is merged with it per document and per field: a document's ``acl``, ``valid_from``,
``valid_to`` and ``supersedes`` each come from the permissions file's line for it when that
line has the field (not null), else from the corpus's line. The merged record is checked like a
line (``valid_from`` from one file after ``valid_to`` from the other is an error naming both),
and families are formed from the merged links. Each file is parsed and cached on its own (by
its own hash), and the two are merged after loading.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import numpy as np

from retrieval_gate.access import set_bits
from retrieval_gate.errors import InputError, memory_for
from retrieval_gate.formats import Source, cache, source_blob
from retrieval_gate.formats.source import Blob, read_blob, search_released
from retrieval_gate.model import AccessTable
from retrieval_gate.ranking import IdIndex, hash_ids

ACCESS_KEYS = ("acl", "valid_from", "valid_to", "supersedes")
_ANY_KEY = re.compile(b'"(?:' + b"|".join(k.encode() for k in ACCESS_KEYS) + b')"')
NO_START = np.iinfo(np.int64).min
NO_END = np.iinfo(np.int64).max
NONE = b""  # no supersedes
# The cache entry of one file: its table, and per row what it supersedes and its line. The
# kind was "access" while entries held the table alone (no row for a document only named by
# supersedes): those are never read.
_KIND = "access-fields"
_ARRAYS = ("ids", "keys", "acl", "public", "valid_from", "valid_to", "family", "supersedes",
           "lines", "principals")
_CACHED = {"ids": ("S", 1), "keys": ("u8", 1), "acl": ("u8", 2), "public": ("u1", 1),
           "valid_from": ("i8", 1), "valid_to": ("i8", 1), "family": ("i8", 1),
           "supersedes": ("S", 1), "lines": ("i8", 1), "principals": ("S", 1)}


@dataclass(frozen=True, eq=False)
class _Fields:
    """One file's access data: its table — a row per document with a line, and per document
    named by a ``supersedes`` and without a line (no field of its own) — and per row the id
    it supersedes (:data:`NONE`: none) and its line (0: no line)."""

    table: AccessTable
    supersedes: np.ndarray
    lines: np.ndarray


def has_access_data(blob: Blob) -> bool:
    """Whether a JSON Lines corpus may hold access data (one of its keys appears at all),
    found in one pass of a regular expression over the bytes (``in`` on a memory-mapped
    file walks it one byte object at a time: 1.4 s a key for 70 MB, against 0.02 s for all)."""
    return search_released(blob.data, _ANY_KEY)


def read_access(source: Source, under: Source | None = None) -> AccessTable:
    """The access data of a JSON Lines file (see the module docstring), from its cache entry
    when it has one. With ``under`` (the corpus beneath a pinned permissions file), each
    document's record is merged per field: ``source``'s line's field when it has it, else
    ``under``'s; InputError when a merged record's ``valid_from`` is after its ``valid_to``."""
    own = _read(source_blob(source))
    base = None if under is None else _corpus_fields(under)
    return own.table if base is None else _merge(own, base).table


def read_corpus_access(source: Source) -> AccessTable | None:
    """The access data of a JSON Lines corpus, or None when it has none."""
    fields = _corpus_fields(source)
    return None if fields is None else fields.table


def _corpus_fields(source: Source) -> _Fields | None:
    """A corpus's access data; None when it is empty or no access key appears in it (a large
    corpus is memory-mapped and searched, not parsed)."""
    blob = source if isinstance(source, Blob) else read_blob(source, map_from=1 << 24)
    if blob.data[:1] == b"" or not has_access_data(blob):
        return None
    fields = _read(blob)
    return fields if len(fields.table.ids) else None


def _read(blob: Blob) -> _Fields:
    """A file's access data, from its cache entry when it has one (else parsed, and stored)."""
    cached = cache.load(_KIND, blob, _ARRAYS, expect=_CACHED, valid=lambda a: (
        len({len(a[k]) for k in _ARRAYS[:-1]}) == 1
        and a["acl"].shape[1] == _words(len(a["principals"]))))
    if cached is not None:
        principals = tuple(p.decode() for p in cached["principals"].tolist())
        return _Fields(AccessTable(blob.name, cached["ids"], cached["keys"], principals,
                                   cached["acl"], cached["public"].astype(bool),
                                   cached["valid_from"], cached["valid_to"], cached["family"]),
                       cached["supersedes"], cached["lines"])
    # peak memory: 13.4 times the file (benchmarks/reader_memory.py)
    with memory_for(f"reading the access data in {blob.name}", 14 * len(blob)):
        fields = _parse(blob)
    table = fields.table
    cache.store(_KIND, blob, {
        "ids": table.ids, "keys": table.keys, "acl": table.acl,
        "public": table.public.astype(np.uint8), "valid_from": table.valid_from,
        "valid_to": table.valid_to, "family": table.family, "supersedes": fields.supersedes,
        "lines": fields.lines,
        "principals": np.array([p.encode() for p in table.principals] or [b""], dtype="S")
        [:len(table.principals)]})
    return fields


def _parse(blob: Blob) -> _Fields:
    from retrieval_gate.formats.jsonfmt import check_id, iso_day, json_lines

    ids: list[bytes] = []
    acls: list[tuple[str, ...] | None] = []
    starts: list[int] = []
    ends: list[int] = []
    older: list[bytes] = []
    lines: list[int] = []
    for line, obj in json_lines(blob.text(), blob.name):
        if not any(key in obj for key in ACCESS_KEYS):
            continue
        ids.append(check_id(obj.get("id"), blob.name, line, "id").encode())
        acl = obj.get("acl")
        if acl is not None and (not isinstance(acl, list) or not all(
                isinstance(p, str) and p for p in acl)):
            raise InputError(blob.name, "'acl' is not a list of principals",
                             'write "acl": ["acme", "acme-finance"], or leave it out for a '
                             "public document", line)
        acls.append(None if acl is None else tuple(acl))
        start = NO_START if obj.get("valid_from") is None else iso_day(
            obj["valid_from"], blob.name, line, "valid_from")
        end = NO_END if obj.get("valid_to") is None else iso_day(
            obj["valid_to"], blob.name, line, "valid_to")
        if start > end:
            raise InputError(blob.name, "valid_from is after valid_to",
                             "give the first and the last day the document is in force", line)
        starts.append(start)
        ends.append(end)
        supersedes = obj.get("supersedes")
        older.append(NONE if supersedes is None else check_id(
            supersedes, blob.name, line, "supersedes").encode())
        lines.append(line)
    principals = tuple(sorted({p for acl in acls if acl for p in acl}))
    code = {p: i for i, p in enumerate(principals)}
    pairs = [(row, code[p]) for row, acl in enumerate(acls) for p in acl or ()]
    at = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    bits = set_bits(len(ids), _words(len(principals)), at[:, 0], at[:, 1])
    array = np.array(ids, dtype="S") if ids else np.zeros(0, dtype="S1")
    keys = hash_ids(array)
    order = np.argsort(keys, kind="stable")
    ids_sorted = array[order]
    repeated = np.flatnonzero(ids_sorted[1:] == ids_sorted[:-1])
    if len(repeated):
        where = sorted((lines[order[repeated[0]]], lines[order[repeated[0] + 1]]))
        raise InputError(blob.name, f"document '{ids_sorted[repeated[0]].decode()}' is listed "
                         f"twice (also line {where[0]})", "give each document's access data "
                         "once", where[1])
    return _assemble(blob.name, array, principals, bits,
                     np.array([a is None for a in acls], dtype=bool),
                     np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64),
                     np.array(older, dtype="S") if older else np.zeros(0, dtype="S1"),
                     np.array(lines, dtype=np.int64))


def _words(n_principals: int) -> int:
    """uint64 words of an ACL bitset over ``n_principals``."""
    return max(1, (n_principals + 63) // 64)


def _assemble(source: str, ids: np.ndarray, principals: tuple[str, ...], acl: np.ndarray,
              public: np.ndarray, valid_from: np.ndarray, valid_to: np.ndarray,
              supersedes: np.ndarray, lines: np.ndarray) -> _Fields:
    """Rows of distinct documents, in any order → a table in hash order, with a row (no field:
    public, always in force) for each document named by ``supersedes`` that has none, and
    every row's family."""
    named = supersedes[supersedes != NONE]
    extra = np.unique(named[IdIndex(ids).find(named) < 0]) if len(named) else named
    if len(extra):
        n = len(extra)
        ids = np.concatenate([ids, extra])
        acl = np.concatenate([acl, np.zeros((n, acl.shape[1]), dtype=acl.dtype)])
        public = np.concatenate([public, np.ones(n, dtype=bool)])
        valid_from = np.concatenate([valid_from, np.full(n, NO_START, dtype=np.int64)])
        valid_to = np.concatenate([valid_to, np.full(n, NO_END, dtype=np.int64)])
        supersedes = np.concatenate([supersedes, np.full(n, NONE, dtype="S1")])
        lines = np.concatenate([lines, np.zeros(n, dtype=np.int64)])
    keys = hash_ids(ids)
    order = np.argsort(keys, kind="stable")
    ids, keys, supersedes = ids[order], keys[order], supersedes[order]
    table = AccessTable(source, ids, keys, principals, acl[order], public[order],
                        valid_from[order], valid_to[order], _families(ids, keys, supersedes))
    return _Fields(table, supersedes, lines[order])


def _families(ids: np.ndarray, keys: np.ndarray, supersedes: np.ndarray) -> np.ndarray:
    """A family number per row (ids in hash order, ``keys`` their hashes), the documents linked
    by ``supersedes`` either way forming one (every named document has a row); −1 for a
    document linked to none. Families are numbered in the order of their first row."""
    family = np.full(len(ids), -1, dtype=np.int64)
    child = np.flatnonzero(supersedes != NONE)
    if not len(child):
        return family
    parent = IdIndex(ids, keys=keys).find(supersedes[child])
    label = _components(len(ids), child, parent)
    linked = np.zeros(len(ids), dtype=bool)
    linked[child] = linked[parent] = True
    family[linked] = np.unique(label[linked], return_inverse=True)[1].ravel()
    return family


def _components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The connected components of ``n`` nodes joined by the edges ``a[i]``–``b[i]``: per node
    the smallest node of its component. Vectorised: each round hooks every root onto the
    smallest root it shares an edge with, then points every node at its root (pointer jumping);
    the number of trees at least halves each round."""
    label = np.arange(n, dtype=np.int64)
    while True:
        low = np.minimum(label[a], label[b])
        hooked = label.copy()
        np.minimum.at(hooked, label[a], low)
        np.minimum.at(hooked, label[b], low)
        while True:
            jumped = hooked[hooked]
            if np.array_equal(jumped, hooked):
                break
            hooked = jumped
        if np.array_equal(hooked, label):
            return label
        label = hooked


def _merge(own: _Fields, base: _Fields) -> _Fields:
    """``own`` (the permissions file) over ``base`` (the corpus), per document and per field:
    ``own``'s field where its row has it, else ``base``'s. Vectorised over documents."""
    mine, theirs = own.table, base.table
    at = IdIndex(mine.ids, keys=mine.keys).find(theirs.ids)  # base row → own row, −1 none
    matched = np.flatnonzero(at >= 0)
    partner = np.full(len(mine.ids), -1, dtype=np.int64)
    partner[at[matched]] = matched
    has = partner >= 0
    p = np.maximum(partner, 0)
    principals = tuple(sorted(set(mine.principals) | set(theirs.principals)))
    own_acl, base_acl = _recoded(mine, principals), _recoded(theirs, principals)
    take_acl = mine.public & has & ~theirs.public[p]
    acl = np.where(take_acl[:, None], base_acl[p], own_acl)
    take_from = has & (mine.valid_from == NO_START)
    take_to = has & (mine.valid_to == NO_END)
    valid_from = np.where(take_from, theirs.valid_from[p], mine.valid_from)
    valid_to = np.where(take_to, theirs.valid_to[p], mine.valid_to)
    crossed = np.flatnonzero(valid_from > valid_to)
    if len(crossed):
        row = int(crossed[np.argmin(own.lines[crossed])])
        _crossed(own, base, row, int(partner[row]), bool(take_from[row]))
    supersedes = np.where(has & (own.supersedes == NONE), base.supersedes[p], own.supersedes)
    rest = np.flatnonzero(at < 0)
    return _assemble(
        f"{mine.source} over {theirs.source}", np.concatenate([mine.ids, theirs.ids[rest]]),
        principals, np.concatenate([acl, base_acl[rest]]),
        np.concatenate([mine.public & ~take_acl, theirs.public[rest]]),
        np.concatenate([valid_from, theirs.valid_from[rest]]),
        np.concatenate([valid_to, theirs.valid_to[rest]]),
        np.concatenate([supersedes, base.supersedes[rest]]),
        np.concatenate([own.lines, base.lines[rest]]))


def _crossed(own: _Fields, base: _Fields, row: int, other: int, from_base: bool) -> None:
    """InputError for a merged record whose valid_from (from one file) is after its valid_to
    (from the other), at the permissions file's line, naming the corpus's."""
    mine, theirs = own.table, base.table
    start = theirs.valid_from[other] if from_base else mine.valid_from[row]
    end = mine.valid_to[row] if from_base else theirs.valid_to[other]
    where = f"{theirs.source}:{int(base.lines[other])}"
    raise InputError(
        mine.source, f"document '{mine.ids[row].decode(errors='replace')}': valid_from "
        f"{_iso(start)} ({where if from_base else 'this line'}) is after valid_to {_iso(end)} "
        f"({'this line' if from_base else where})", "give the first and the last day the "
        "document is in force (the permissions file's fields win over the corpus's, per field)",
        int(own.lines[row]))


def _iso(day: int) -> str:
    return dt.date.fromordinal(int(day)).isoformat()


def _recoded(table: AccessTable, principals: tuple[str, ...]) -> np.ndarray:
    """The table's ACL bitsets over ``principals`` (a superset of its own). Vectorised over the
    set bits: one round per bit of the fullest word (an ACL's few principals, a round each)."""
    if table.principals == principals:
        return np.asarray(table.acl)
    code = {p: i for i, p in enumerate(principals)}
    new = np.array([code[p] for p in table.principals] + [0], dtype=np.int64)
    rows, words = np.nonzero(table.acl)
    values = np.asarray(table.acl)[rows, words]
    held_rows, held_codes = [], []
    while len(values):
        lowest = values & (~values + np.uint64(1))  # the lowest set bit of each word
        held_rows.append(rows)
        held_codes.append(words * 64 + np.frexp(lowest.astype(np.float64))[1] - 1)
        values = values ^ lowest
        more = values != 0
        rows, words, values = rows[more], words[more], values[more]
    at = np.concatenate(held_codes) if held_codes else np.zeros(0, dtype=np.int64)
    return set_bits(len(table.ids), _words(len(principals)),
                    np.concatenate(held_rows) if held_rows else at, new[at])
