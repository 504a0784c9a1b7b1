"""Access data → the model: who may see each document, and when it is in force.

JSON Lines, one document per line — the pinned permissions file, or the corpus file itself:

    {"id": "acme-travel-2025", "acl": ["acme"], "valid_from": "2025-01-01",
     "valid_to": "2026-12-31", "supersedes": "acme-travel-2023"}

- ``acl``: the principals allowed to see the document (any one suffices); absent: public. An
  empty list: nobody may.
- ``valid_from`` / ``valid_to``: ISO dates ``YYYY-MM-DD``, both inclusive; absent: unbounded.
  ``valid_from`` after ``valid_to`` is an error.
- ``supersedes``: the id of the older version this document replaces; documents linked this
  way form one *family* (used by ``MixedVersions``).

A document without any of these keys is public and always in force, and needs no line. Ids are
distinct; a large file is read once per machine and kept in the gate's cache
(:mod:`~retrieval_gate.formats.cache`), like a corpus.
"""

from __future__ import annotations

import numpy as np

from retrieval_gate.access import set_bits
from retrieval_gate.errors import InputError
from retrieval_gate.formats import Source, cache, source_blob
from retrieval_gate.formats.source import Blob
from retrieval_gate.model import AccessTable
from retrieval_gate.ranking import hash_ids

ACCESS_KEYS = ("acl", "valid_from", "valid_to", "supersedes")
NO_START = np.iinfo(np.int64).min
NO_END = np.iinfo(np.int64).max
_ARRAYS = ("ids", "keys", "acl", "public", "valid_from", "valid_to", "family", "principals")


def has_access_data(blob: Blob) -> bool:
    """Whether a JSON Lines corpus may hold access data (one of its keys appears at all)."""
    return any(f'"{key}"'.encode() in blob.data for key in ACCESS_KEYS)


def read_access(source: Source) -> AccessTable:
    """The access data of a JSON Lines file (see the module docstring), from its cache entry
    when it has one."""
    blob = source_blob(source)
    cached = cache.load("access", blob, _ARRAYS)
    if cached is not None and len({len(cached[k]) for k in _ARRAYS[:-1] if k != "acl"}) == 1:
        principals = tuple(p.decode() for p in cached["principals"].tolist())
        return AccessTable(blob.name, cached["ids"], cached["keys"], principals,
                           cached["acl"], cached["public"].astype(bool), cached["valid_from"],
                           cached["valid_to"], cached["family"])
    table = _parse(blob)
    cache.store("access", blob, {
        "ids": table.ids, "keys": table.keys, "acl": table.acl,
        "public": table.public.astype(np.uint8), "valid_from": table.valid_from,
        "valid_to": table.valid_to, "family": table.family,
        "principals": np.array([p.encode() for p in table.principals] or [b""], dtype="S")
        [:len(table.principals)]})
    return table


def _parse(blob: Blob) -> AccessTable:
    from retrieval_gate.formats.jsonfmt import check_id, iso_day, json_lines

    ids: list[bytes] = []
    acls: list[tuple[str, ...] | None] = []
    starts: list[int] = []
    ends: list[int] = []
    older: list[str | None] = []
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
        older.append(None if supersedes is None else check_id(supersedes, blob.name, line,
                                                               "supersedes"))
        lines.append(line)
    principals = tuple(sorted({p for acl in acls if acl for p in acl}))
    code = {p: i for i, p in enumerate(principals)}
    pairs = [(row, code[p]) for row, acl in enumerate(acls) for p in acl or ()]
    at = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    bits = set_bits(len(ids), max(1, (len(principals) + 63) // 64), at[:, 0], at[:, 1])
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
    family = _families([i.decode() for i in ids], older)
    return AccessTable(blob.name, ids_sorted, keys[order], principals, bits[order],
                       np.array([a is None for a in acls], dtype=bool)[order],
                       np.array(starts, dtype=np.int64)[order],
                       np.array(ends, dtype=np.int64)[order], family[order])


def _families(ids: list[str], older: list[str | None]) -> np.ndarray:
    """A family number per document linked by ``supersedes`` (either side), −1 for none."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    for doc, old in zip(ids, older):
        if old is not None:
            parent.setdefault(doc, doc)
            parent.setdefault(old, old)
            parent[root(doc)] = root(old)
    numbers: dict[str, int] = {}
    return np.array([numbers.setdefault(root(d), len(numbers)) if d in parent else -1
                     for d in ids], dtype=np.int64)
