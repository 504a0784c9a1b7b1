"""The run files ``gate run`` writes, from the queries' checked records, streamed to disk.

**JSON Lines** (any name not ending in ``.trec``): one line per answered query, in query-set
order — ``{"query_id": "q1", "items": [{"id": "d3", "score": 12.5}, ...], "latency_ms":
41.5}``; an item also carries ``doc_id``, ``start``, ``end`` and ``tokens`` when its hit gave
them. A hit without a score is written with 1/rank (see :mod:`retrieval_gate.runner.hits`).
``latency_ms`` is rounded to the microsecond.

**TREC** (a name ending in ``.trec``): ``qid Q0 id rank score gate-run`` lines. TREC has no
place for a cost, a ``doc_id``, a place or an empty ranking: the latencies are not written
(said on standard error by the command line), and hits carrying the others, ids holding white
space and query ids starting with ``#`` (a comment in TREC) are refused — write JSON Lines.

**Stages**: one file per stage, in pipeline order. The last stage is ``RUN`` itself; stage
``S`` before it goes to ``RUN``'s name with ``.S`` before its suffix (``run.jsonl`` →
``run.candidates.jsonl``). A call that returns every stage is timed once, and its latency is
written on the last stage only; chained stages (:mod:`retrieval_gate.runner.chain`) are timed
one by one, and each stage's file carries its own (the run manifest's ``costs`` say which
stages carry a latency).

A file's items carry a ``doc_id`` on every item or on none (the run formats' rule): on a
document snapshot an item without one is written with its own id as its document; on the
other units a file mixing them is refused, naming the first query without. The same holds for
places.

**Streaming.** :class:`RunFiles` takes the records one at a time, in query-set order, and
writes each query's lines to the files' spools (:class:`~retrieval_gate.formats.atomic.Spool`)
at once, so no file's text is ever held whole. The stages are checked as the records come
(refused at the first query whose stages differ from the first's); what can only be known of
a whole file is checked at the end (:meth:`RunFiles.finish`), file by file in stage order:
the ``doc_id`` and place rule, then what TREC cannot hold (the first query, in query-set
order) — the messages a file held whole would give. A document snapshot's file found to mix
items with and without ``doc_id`` is written again from the records, read a second time (the
one case that reads them twice).
"""

from __future__ import annotations

import json
import operator
import os
import re
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.atomic import Spool
from retrieval_gate.runner.hits import shown

TREC_TAG = "gate-run"
# the lines are trees built here: no check for circular references
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, check_circular=False)
_TREC_UNSAFE = re.compile(r"\s")


def is_trec(output: str | os.PathLike[str]) -> bool:
    """Whether ``output`` is written as TREC: its name ends in ``.trec``."""
    return os.fspath(output).endswith(".trec")


def stage_files(output: str | os.PathLike[str], stages: Sequence[str]) -> list[Path]:
    """The file of each stage (see the module docstring); ``[output]`` without stages."""
    path = Path(output)
    if not stages:
        return [path]
    before = [path.with_name(f"{path.stem}.{name}{path.suffix}") for name in stages[:-1]]
    return [*before, path]


class RunFiles:
    """The run files of the answered records given to :meth:`add` one at a time, in query-set
    order, each file written to its spool as the records come (see the module docstring)."""

    def __init__(self, output: str | os.PathLike[str], unit: str, source: str):
        self.output, self.unit, self.source = output, unit, source
        self.trec = is_trec(output)
        self._names: list[str | None] | None = None
        self.first: str | None = None  # the first record's query id
        self._files: list[_File] = []

    @property
    def stages(self) -> list[str]:
        """The stage names the records give, in order (empty: one ranking, or no record)."""
        return [] if self._names is None or self._names == [None] else [
            str(n) for n in self._names]

    def add(self, record: dict[str, Any]) -> None:
        """Write one answered record's lines; InputError naming it when its stages are not
        the first record's."""
        names = [name for name, _ in record["rankings"]]
        if self._names is None:
            self._names, self.first = names, record["query_id"]
            self._open()
        elif names != self._names:
            raise InputError(self.source, f"query {shown(record['query_id'])} returned the "
                             f"stages {_stages(names)}, and query {shown(self.first)} "
                             f"{_stages(self._names)}", "return the same stages, in the same "
                             "order, for every query")
        last = len(self._files) - 1
        for index, (_, items) in enumerate(record["rankings"]):
            self._files[index].add(record["query_id"], items,
                                   _latency(record, index, index == last))

    def finish(self, again: Callable[[], Iterator[dict[str, Any]]]) -> list[tuple[Path, Spool]]:
        """Check each file whole (see the module docstring; ``again`` gives the records once
        more, for a file written again) and return (file, its spool), in stage order."""
        if not self._files:
            self._open()
        for index, file in enumerate(self._files):
            file.finish(partial(self._rows, again, index))
        return [(file.path, file.spool) for file in self._files]

    def _rows(self, again: Callable[[], Iterator[dict[str, Any]]], index: int
              ) -> Iterator[tuple[str, list[list[Any]], float | None]]:
        """The rows of file ``index`` — (query id, items, latency or None) — read again."""
        last = index == len(self._files) - 1
        for record in again():
            yield (record["query_id"], record["rankings"][index][1],
                   _latency(record, index, last))

    def discard(self) -> None:
        """Delete every spool not yet written into place."""
        for file in self._files:
            file.spool.discard()

    def _open(self) -> None:
        stages = self.stages
        for index, path in enumerate(stage_files(self.output, stages)):
            self._files.append(_File(path, self, stages[index] if stages else None))


_DOC = operator.itemgetter(2)
_START = operator.itemgetter(3)
Rows = Callable[[], Iterator[tuple[str, list[list[Any]], float | None]]]


class _File:
    """One run file being written: its spool, what its items carry (for the ``doc_id`` and
    place rule), and the first problem TREC has with it."""

    def __init__(self, path: Path, files: RunFiles, stage: str | None):
        self.path, self.files, self.stage = path, files, stage
        self.spool = Spool(path)
        self.given: dict[int, set[bool]] = {2: set(), 3: set()}  # doc_id, start: given or not
        self.without: dict[int, str] = {}  # the first query with an item without one
        self.problem: InputError | None = None
        self.fill = False

    def add(self, qid: str, items: list[list[Any]], latency: float | None) -> None:
        """Note whether the query's items carry a ``doc_id`` and a place, and write its
        lines."""
        placed = False
        for index, column in ((2, _DOC), (3, _START)):
            values = set(map(column, items))
            if None in values:
                self.given[index].add(False)
                self.without.setdefault(index, qid)
            if values - {None}:
                self.given[index].add(True)
                placed = True
        self.write(qid, items, latency, placed)

    def write(self, qid: str, items: list[list[Any]], latency: float | None,
              placed: bool = True) -> None:
        """Write the query's lines (its items' missing ``doc_id`` first filled in, when the
        file is written again to be filled); TREC's first problem is kept, not raised.
        ``placed`` False says that no item carries a ``doc_id`` or place."""
        if self.fill:
            for item in items:
                if item[2] is None:
                    item[2] = item[0]
        if not self.files.trec:
            self.spool.write(_jsonl(qid, items, latency).encode("utf-8"))
        elif self.problem is None:
            try:
                self.spool.write(_trec(qid, items, self.files.source, placed).encode("utf-8"))
            except InputError as exc:
                self.problem = exc

    def finish(self, rows: Rows) -> None:
        """The ``doc_id`` and place rule, then TREC's first problem (see the module
        docstring); the file is written again when its ``doc_id`` must be filled in."""
        for field, index in (("doc_id", 2), ("place (start, end)", 3)):
            if len(self.given[index]) < 2:
                continue
            if index == 2 and self.files.unit == "document":
                self._again(rows)
                continue
            within = "" if self.stage is None else f" in stage '{self.stage}'"
            raise InputError(self.files.source, f"query {shown(self.without[index])} returned "
                             f"hits without a {field}{within}, and other hits have one",
                             f"give every hit a {field}, or none (a run file holds it for "
                             "every item or for none)")
        if self.problem is not None:
            raise self.problem
        self.spool.close()

    def _again(self, rows: Rows) -> None:
        """Write the file again from the records, each item's missing ``doc_id`` filled in."""
        self.spool.discard()
        self.spool = Spool(self.path)
        self.problem, self.fill = None, True
        for qid, items, latency in rows():
            self.write(qid, items, latency)


def _stages(names: Sequence[str | None]) -> str:
    return "one ranking" if names == [None] else ", ".join(str(n) for n in names)


def _latency(record: dict[str, Any], index: int, last: bool) -> float | None:
    """The latency written on stage ``index`` of a record: its own stage's for chained stages
    (``stage_latency_ms``), else the call's on the last stage only."""
    staged = record.get("stage_latency_ms")
    if staged is not None:
        return float(staged[index])
    return record["latency_ms"] if last else None


def written_item(checked: list[Any], rank: int) -> dict[str, Any]:
    """A checked hit at ``rank`` as a JSON Lines item: ``id``, ``score`` (1/rank for a hit
    without one), and ``doc_id``, ``start`` and ``end``, ``tokens`` when it has them."""
    ident, score, doc, start, end, tokens = checked
    item: dict[str, Any] = {"id": ident, "score": 1 / rank if score is None else score}
    if doc is not None:
        item["doc_id"] = doc
    if start is not None:
        item["start"], item["end"] = start, end
    if tokens is not None:
        item["tokens"] = tokens
    return item


def _jsonl(qid: str, items: list[list[Any]], latency: float | None) -> str:
    """One query's JSON Lines line (see the module docstring)."""
    written = [written_item(item, rank) for rank, item in enumerate(items, 1)]
    line: dict[str, Any] = {"query_id": qid, "items": written}
    if latency is not None:
        line["latency_ms"] = round(latency, 3)
    return _ENCODER.encode(line) + "\n"


def _trec(qid: str, items: list[list[Any]], source: str, placed: bool) -> str:
    """One query's TREC lines; InputError for what TREC cannot hold (its checks made once for
    the whole ranking — ``placed`` False: no item carries a ``doc_id`` or place —, then hit
    by hit only to name the first problem)."""
    if qid.startswith("#") or _TREC_UNSAFE.search(qid):
        _no_trec(source, f"query id {shown(qid)} starts with # or holds white space, which "
                 "TREC cannot hold")
    if not items:
        _no_trec(source, f"query {shown(qid)} returned no hits, and a TREC run cannot hold "
                 "an empty ranking")
    if placed or _TREC_UNSAFE.search("".join([item[0] for item in items])):
        for ident, _, doc, start, _, _ in items:
            if doc is not None or start is not None:
                _no_trec(source, f"query {shown(qid)} returned hits with a doc_id or a place, "
                         "which TREC cannot hold")
            if _TREC_UNSAFE.search(ident):
                _no_trec(source, f"query {shown(qid)} returned id {shown(ident)}, which holds "
                         "white space (TREC separates its fields by white space)")
    return "".join([f"{qid} Q0 {ident} {rank} {1 / rank if score is None else score!r} "
                    f"{TREC_TAG}\n" for rank, (ident, score, _, _, _, _) in enumerate(items, 1)])


def _no_trec(source: str, problem: str) -> None:
    raise InputError(source, problem, "write the run as JSON Lines (an output name not ending "
                     "in .trec)")
