"""Access data → the model: who may see each document, and when it is in force.

JSON Lines, one document per line — the pinned permissions file, or the corpus file itself:

    {"id": "acme-travel-2025", "acl": ["acme"], "valid_from": "2025-01-01",
     "valid_to": "2026-12-31", "supersedes": "acme-travel-2023"}

- ``acl``: the principals allowed to see the document (any one suffices; each a non-empty
  string without NUL); absent: public. An empty list: nobody may. ``null`` is an error: it
  would otherwise read as absent, making a document public by a slip (failing open).
- ``valid_from`` / ``valid_to``: ISO dates ``YYYY-MM-DD``, both inclusive; absent or ``null``:
  unbounded. ``valid_from`` after ``valid_to`` is an error.
- ``supersedes``: the id of the older version this document replaces (absent or ``null``:
  none); documents linked this way form one *family* (used by ``MixedVersions``). A document
  named by ``supersedes`` belongs to its family whether or not it has a line: without one (in
  either file) it is public and always in force. The links form no cycle: a document that
  supersedes itself, or a chain of them that comes back to its first, is an error naming the
  cycle (``'a' supersedes 'b' supersedes 'a'``) at the line of its first link.

A document without any of these keys is public and always in force, and needs no line. Ids are
distinct; a large file is read once per machine and kept in the gate's cache
(:mod:`~retrieval_gate.formats.cache`), like a corpus. The file is parsed a batch of lines at a
time into arrays; ACLs are held sparsely, as each document's set of principal codes.

**Two files.** A permissions file pinned beside a JSON Lines corpus that has access data of its
own is merged with it per document and per field: a document's ``acl``, ``valid_from``,
``valid_to`` and ``supersedes`` each come from the permissions file's line for it when that
line has the field (not null), else from the corpus's line. The merged record is checked like a
line (``valid_from`` from one file after ``valid_to`` from the other is an error naming both),
and families are formed from the merged links: a cycle that only the two files' links form
together is an error at the permissions file's line, naming where each link comes from. Each
file is parsed and cached on its own (by its own hash), and the two are merged after loading.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from retrieval_gate.core.errors import InputError, memory_for
from retrieval_gate.core.model import AccessTable
from retrieval_gate.core.ranking import IdIndex, hash_ids
from retrieval_gate.core.sparse import RowSets
from retrieval_gate.formats import Source, cache, source_blob
from retrieval_gate.formats.corpus import holds_documents, joined_ids
from retrieval_gate.formats.source import Blob, read_blob, search_released

ACCESS_KEYS = ("acl", "valid_from", "valid_to", "supersedes")
_ANY_KEY = re.compile(b'"(?:' + b"|".join(k.encode() for k in ACCESS_KEYS) + b')"')
NO_START = np.iinfo(np.int64).min
NO_END = np.iinfo(np.int64).max
NONE = b""  # no supersedes
# The cache entry of one file: its table (ACLs as sets of principal codes), and per row what
# it supersedes and its line. Entries of the kinds "access" (the table alone) and
# "access-fields" (ACLs as dense bitsets) are never read.
_KIND = "access-csr"
_ROWS = ("ids", "keys", "public", "valid_from", "valid_to", "family", "supersedes", "lines")
_ARRAYS = (*_ROWS, "acl_start", "acl_codes", "principals")
_CACHED = {"ids": ("S", 1), "keys": ("u8", 1), "public": ("u1", 1), "valid_from": ("i8", 1),
           "valid_to": ("i8", 1), "family": ("i8", 1), "supersedes": ("S", 1),
           "lines": ("i8", 1), "acl_start": ("i8", 1), "acl_codes": ("i8", 1),
           "principals": ("u1", 1)}
_SHOWN_LINKS = 8  # links of a supersedes cycle named in its error
# Bytes of the file parsed at a time: a batch's objects take about ten times its bytes (1 M
# short lines of ACLs at 4 MiB a batch: 430 MiB at the peak of the parse; at 32 MiB, 820 MiB).
_BATCH_BYTES = 1 << 22


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
    own = _read(source_blob(source, map_from=1 << 24))  # a large file: mapped, read in parts
    base = None if under is None else _corpus_fields(under)
    return own.table if base is None else _merge(own, base).table


def read_corpus_access(source: Source) -> AccessTable | None:
    """The access data of a JSON Lines corpus, or None when it has none."""
    fields = _corpus_fields(source)
    return None if fields is None else fields.table


def _corpus_fields(source: Source) -> _Fields | None:
    """A corpus's access data; None when it is empty, a list of ids, or no access key appears
    in it (a large corpus is memory-mapped and searched, not parsed)."""
    blob = source if isinstance(source, Blob) else read_blob(source, map_from=1 << 24)
    if not holds_documents(blob) or not has_access_data(blob):
        return None
    fields = _read(blob)
    return fields if len(fields.table.ids) else None


def _read(blob: Blob) -> _Fields:
    """A file's access data, from its cache entry when it has one (else parsed, and stored)."""
    cached = cache.load(_KIND, blob, _ARRAYS, expect=_CACHED, valid=_complete)
    if cached is not None:
        text = cached["principals"].tobytes().decode()
        return _Fields(AccessTable(blob.name, cached["ids"], cached["keys"],
                                   tuple(text.split("\x00")) if text else (),
                                   RowSets(cached["acl_start"], cached["acl_codes"]),
                                   cached["public"].astype(bool), cached["valid_from"],
                                   cached["valid_to"], cached["family"]),
                       cached["supersedes"], cached["lines"])
    # peak memory: 5.2 times the file (benchmarks/reader_memory.py)
    with memory_for(f"reading the access data in {blob.name}", 6 * len(blob)):
        fields = _parse(blob)
    table = fields.table
    cache.store(_KIND, blob, {
        "ids": table.ids, "keys": table.keys, "public": table.public.astype(np.uint8),
        "valid_from": table.valid_from, "valid_to": table.valid_to, "family": table.family,
        "supersedes": fields.supersedes, "lines": fields.lines, "acl_start": table.acl.start,
        "acl_codes": table.acl.codes,
        # principals never hold NUL: one UTF-8 text, NUL between them
        "principals": np.frombuffer("\x00".join(table.principals).encode(), dtype=np.uint8)})
    return fields


def _complete(cached: Mapping[str, np.ndarray]) -> bool:
    """Whether the arrays of a cache entry fit together."""
    rows = len(cached["ids"])
    return (all(len(cached[k]) == rows for k in _ROWS) and len(cached["acl_start"]) == rows + 1
            and int(cached["acl_start"][-1]) == len(cached["acl_codes"]))


@dataclass(frozen=True, eq=False)
class _Lines:
    """The documents of a batch of lines that have access data, in file order: id, whether
    the ACL is absent (public), the number of principals of each ACL and their codes (the
    parse's own numbering, in order of first sight), days, what each supersedes, line."""

    ids: np.ndarray
    public: np.ndarray
    sizes: np.ndarray
    codes: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    supersedes: np.ndarray
    lines: np.ndarray


def _parse(blob: Blob) -> _Fields:
    """A file's access data, parsed a batch of lines at a time into arrays (the file's text and
    objects are never all held at once; a principal is held once, with its code)."""
    from retrieval_gate.formats.jsonfmt import json_line_batches

    code: dict[str, int] = {}
    parts = [_parse_lines(batch.numbers, batch.objects, code, blob.name)
             for batch in json_line_batches(blob, _BATCH_BYTES)] or [
        _parse_lines([], [], code, blob.name)]  # no line at all (a byte-order mark alone)
    ids = joined_ids([part.ids for part in parts])
    lines = np.concatenate([part.lines for part in parts])
    principals = tuple(sorted(code))
    rank = np.empty(len(code), dtype=np.int64)  # the parse's code → the sorted principal's
    rank[np.fromiter(map(code.__getitem__, principals), np.int64, len(code))] = np.arange(
        len(code))
    del code
    sizes = np.concatenate([part.sizes for part in parts])
    acl = RowSets.from_pairs(len(ids), np.repeat(np.arange(len(ids)), sizes),
                             rank[np.concatenate([part.codes for part in parts])])
    keys = hash_ids(ids)
    order = np.argsort(keys, kind="stable")
    ids_sorted = ids[order]
    repeated = np.flatnonzero(ids_sorted[1:] == ids_sorted[:-1])
    if len(repeated):
        where = sorted((lines[order[repeated[0]]], lines[order[repeated[0] + 1]]))
        raise InputError(blob.name, f"document '{ids_sorted[repeated[0]].decode()}' is listed "
                         f"twice (also line {where[0]})", "give each document's access data "
                         "once", where[1])
    supersedes = np.concatenate([part.supersedes for part in parts])
    cycle = _cycle(ids, supersedes, lines)
    if cycle is not None:
        raise _cycle_error(blob.name, int(lines[cycle[0]]), _chain(ids, cycle))
    return _assemble(blob.name, ids, principals, acl,
                     np.concatenate([part.public for part in parts]),
                     np.concatenate([part.valid_from for part in parts]),
                     np.concatenate([part.valid_to for part in parts]), supersedes, lines)


def _parse_lines(numbers: list[int], objects: list[dict[str, Any]], code: dict[str, int],
                 name: str) -> _Lines:
    """The lines ``numbers`` (objects ``objects``) that have access data, checked; principals
    not yet in ``code`` are added to it."""
    from retrieval_gate.formats.jsonfmt import check_id, iso_day

    ids: list[bytes] = []
    acls: list[list[str]] = []
    public: list[bool] = []
    starts: list[int] = []
    ends: list[int] = []
    older: list[bytes] = []
    lines: list[int] = []
    for line, obj in zip(numbers, objects):
        if obj.keys().isdisjoint(ACCESS_KEYS):
            continue
        ids.append(check_id(obj.get("id"), name, line, "id").encode())
        acl = obj.get("acl")
        if acl is None and "acl" in obj:
            raise InputError(name, "'acl' is null", 'leave "acl" out for a public document, '
                             'write "acl": [] for a document nobody may see, or list the '
                             "principals allowed to see it", line)
        if acl is not None and (not isinstance(acl, list) or not all(
                isinstance(p, str) and p and "\x00" not in p for p in acl)):
            raise InputError(name, "'acl' is not a list of principals",
                             'write "acl": ["acme", "acme-finance"], or leave it out for a '
                             "public document", line)
        acls.append(acl or [])
        public.append(acl is None)
        start = NO_START if obj.get("valid_from") is None else iso_day(
            obj["valid_from"], name, line, "valid_from")
        end = NO_END if obj.get("valid_to") is None else iso_day(
            obj["valid_to"], name, line, "valid_to")
        if start > end:
            raise InputError(name, "valid_from is after valid_to",
                             "give the first and the last day the document is in force", line)
        starts.append(start)
        ends.append(end)
        supersedes = obj.get("supersedes")
        older.append(NONE if supersedes is None else check_id(
            supersedes, name, line, "supersedes").encode())
        lines.append(line)
    held = list(chain.from_iterable(acls))
    for principal in set(held).difference(code):  # codes in any order: sorted at the end
        code[principal] = len(code)
    return _Lines(np.array(ids, dtype="S") if ids else np.zeros(0, dtype="S1"),
                  np.array(public, dtype=bool), np.fromiter(map(len, acls), np.int64, len(acls)),
                  np.fromiter(map(code.__getitem__, held), np.int64, len(held)),
                  np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64),
                  np.array(older, dtype="S") if older else np.zeros(0, dtype="S1"),
                  np.array(lines, dtype=np.int64))


def _assemble(source: str, ids: np.ndarray, principals: tuple[str, ...], acl: RowSets,
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
        acl = RowSets.concat([acl, RowSets.empty(n)])
        public = np.concatenate([public, np.ones(n, dtype=bool)])
        valid_from = np.concatenate([valid_from, np.full(n, NO_START, dtype=np.int64)])
        valid_to = np.concatenate([valid_to, np.full(n, NO_END, dtype=np.int64)])
        supersedes = np.concatenate([supersedes, np.full(n, NONE, dtype="S1")])
        lines = np.concatenate([lines, np.zeros(n, dtype=np.int64)])
    keys = hash_ids(ids)
    order = np.argsort(keys, kind="stable")
    ids, keys, supersedes = ids[order], keys[order], supersedes[order]
    table = AccessTable(source, ids, keys, principals, acl.take(order), public[order],
                        valid_from[order], valid_to[order], _families(ids, keys, supersedes))
    return _Fields(table, supersedes, lines[order])


def _cycle(ids: np.ndarray, supersedes: np.ndarray, first: np.ndarray) -> list[int] | None:
    """A cycle of ``supersedes`` links among the rows (``ids`` distinct): its rows in link
    order, from the row of the smallest ``first`` on any cycle; None when there is none.

    Each document supersedes at most one, so the m rows with a link are followed all at once,
    the steps doubling each round (pointer jumping): after ⌈log2 m⌉ + 1 rounds or fewer, every
    row has either left the linked rows (its chain ends) or landed on a cycle, and each cycle's
    rows are all landed on (the steps only turn a cycle round)."""
    child = np.flatnonzero(supersedes != NONE)
    m = len(child)
    if not m:
        return None
    parent = IdIndex(ids).find(supersedes[child])
    position = np.full(len(ids), m, dtype=np.int64)  # a row's position among the m; m: none
    position[child] = np.arange(m)
    step = np.append(np.where(parent >= 0, position[np.maximum(parent, 0)], m), m)
    jump, steps = step, 1
    while not (jump[:m] == m).all():
        if steps >= m:
            on = np.unique(jump[:m][jump[:m] < m])
            start = int(on[np.argmin(first[child[on]])])
            cycle = [start]
            while int(step[cycle[-1]]) != start:
                cycle.append(int(step[cycle[-1]]))
            return child[cycle].tolist()
        jump, steps = jump[jump], 2 * steps
    return None


def _chain(ids: np.ndarray, cycle: list[int], notes: list[str] | None = None) -> str:
    """``'a' supersedes 'b' supersedes 'a'``: the first links of a cycle of rows, each followed
    by its note (where the link comes from), if any."""
    names = [f"'{ids[r].decode(errors='replace')}'" for r in cycle]
    shown = min(len(cycle), _SHOWN_LINKS)
    text = names[0] + "".join(f" supersedes {names[(k + 1) % len(cycle)]}"
                              f"{'' if notes is None else ' ' + notes[k]}" for k in range(shown))
    return text if shown == len(cycle) else f"{text} supersedes … ({len(cycle)} documents)"


def _cycle_error(source: str, line: int, chain_text: str) -> InputError:
    return InputError(source, f"the supersedes links form a cycle: {chain_text}",
                      "remove the link that closes it (a document supersedes an older version "
                      "only)", line)


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
    ``own``'s field where its row has it, else ``base``'s. Vectorised over documents.
    InputError for a record in force on no day, or for a cycle of ``supersedes`` links that
    the two files form together (each file alone has none)."""
    mine, theirs = own.table, base.table
    at = IdIndex(mine.ids, keys=mine.keys).find(theirs.ids)  # base row → own row, −1 none
    matched = np.flatnonzero(at >= 0)
    partner = np.full(len(mine.ids), -1, dtype=np.int64)
    partner[at[matched]] = matched
    has = partner >= 0
    p = np.maximum(partner, 0)
    principals = tuple(sorted(set(mine.principals) | set(theirs.principals)))
    both = RowSets.concat([_recoded(mine, principals), _recoded(theirs, principals)])
    take_acl = mine.public & has & ~theirs.public[p]
    take_from = has & (mine.valid_from == NO_START)
    take_to = has & (mine.valid_to == NO_END)
    valid_from = np.where(take_from, theirs.valid_from[p], mine.valid_from)
    valid_to = np.where(take_to, theirs.valid_to[p], mine.valid_to)
    crossed = np.flatnonzero(valid_from > valid_to)
    if len(crossed):
        row = int(crossed[np.argmin(own.lines[crossed])])
        _crossed(own, base, row, int(partner[row]), bool(take_from[row]))
    linked = own.supersedes != NONE
    supersedes = np.where(has & ~linked, base.supersedes[p], own.supersedes)
    rest = np.flatnonzero(at < 0)
    ids = np.concatenate([mine.ids, theirs.ids[rest]])
    supersedes = np.concatenate([supersedes, base.supersedes[rest]])
    from_own = np.concatenate([linked, np.zeros(len(rest), dtype=bool)])
    link_line = np.concatenate([np.where(linked, own.lines, base.lines[p]), base.lines[rest]])
    cycle = _cycle(ids, supersedes, np.where(from_own, link_line, NO_END))
    if cycle is not None:
        _merged_cycle(own, base, cycle, ids, from_own, link_line)
    n = len(mine.ids)
    return _assemble(
        f"{mine.source} over {theirs.source}", ids, principals,
        both.take(np.concatenate([np.where(take_acl, n + p, np.arange(n)), n + rest])),
        np.concatenate([mine.public & ~take_acl, theirs.public[rest]]),
        np.concatenate([valid_from, theirs.valid_from[rest]]),
        np.concatenate([valid_to, theirs.valid_to[rest]]), supersedes,
        np.concatenate([own.lines, base.lines[rest]]))


def _merged_cycle(own: _Fields, base: _Fields, cycle: list[int], ids: np.ndarray,
                  from_own: np.ndarray, link_line: np.ndarray) -> None:
    """InputError for a cycle of the merged links (rows of ``ids``), at the permissions file's
    line of its first link, naming where each link comes from."""
    line = int(link_line[cycle[0]])
    notes = [("this line" if int(link_line[r]) == line else f"line {int(link_line[r])}")
             if from_own[r] else f"{base.table.source}:{int(link_line[r])}" for r in cycle]
    raise _cycle_error(own.table.source, line,
                       _chain(ids, cycle, [f"({note})" for note in notes]))


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


def _recoded(table: AccessTable, principals: tuple[str, ...]) -> RowSets:
    """The table's ACLs as codes of ``principals`` (sorted, a superset of its own): each code
    mapped, the order within each ACL kept."""
    if table.principals == principals:
        return table.acl
    code = {p: i for i, p in enumerate(principals)}
    new = np.fromiter(map(code.__getitem__, table.principals), np.int64, len(table.principals))
    return RowSets(table.acl.start, new[table.acl.codes])
