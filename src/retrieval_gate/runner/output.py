"""The text of the run files ``gate run`` writes, from the queries' checked records.

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
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.runner.hits import shown

TREC_TAG = "gate-run"
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
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


def stage_names(records: Sequence[dict[str, Any]], source: str) -> list[str]:
    """The stage names every answered record gives, in order (empty: one ranking);
    InputError naming the first query whose stages differ from the first query's."""
    first: list[str | None] | None = None
    first_id = ""
    for record in records:
        names = [name for name, _ in record["rankings"]]
        if first is None:
            first, first_id = names, record["query_id"]
        elif names != first:
            raise InputError(source, f"query {shown(record['query_id'])} returned the stages "
                             f"{_stages(names)}, and query {shown(first_id)} "
                             f"{_stages(first)}", "return the same stages, in the same order, "
                             "for every query")
    return [] if first is None or first == [None] else [str(n) for n in first]


def _stages(names: Sequence[str | None]) -> str:
    return "one ranking" if names == [None] else ", ".join(str(n) for n in names)


def run_texts(records: Sequence[dict[str, Any]], output: str | os.PathLike[str], unit: str,
              source: str) -> list[tuple[Path, str]]:
    """(file, text) of every run file for the answered ``records`` (in query-set order)."""
    names = stage_names(records, source)
    files = stage_files(output, names)
    trec = is_trec(output)
    texts = []
    for index, file in enumerate(files):
        last = index == len(files) - 1
        rows = [(r["query_id"], r["rankings"][index][1], _latency(r, index, last))
                for r in records]
        _consistent(rows, unit, source, None if not names else names[index])
        texts.append((file, _trec(rows, source) if trec else _jsonl(rows)))
    return texts


def _latency(record: dict[str, Any], index: int, last: bool) -> float | None:
    """The latency written on stage ``index`` of a record: its own stage's for chained stages
    (``stage_latency_ms``), else the call's on the last stage only."""
    staged = record.get("stage_latency_ms")
    if staged is not None:
        return float(staged[index])
    return record["latency_ms"] if last else None


def _consistent(rows: list[tuple[str, list[list[Any]], float | None]], unit: str,
                source: str, stage: str | None) -> None:
    """A file's items carry doc_id and places on all or none (see the module docstring); on a
    document snapshot, a missing doc_id becomes the item's own id."""
    for field, index in (("doc_id", 2), ("place (start, end)", 3)):
        given = {item[index] is not None for _, items, _ in rows for item in items}
        if len(given) < 2:
            continue
        if index == 2 and unit == "document":
            for _, items, _ in rows:
                for item in items:
                    if item[2] is None:
                        item[2] = item[0]
            continue
        without = next(qid for qid, items, _ in rows
                       if any(item[index] is None for item in items))
        within = "" if stage is None else f" in stage '{stage}'"
        raise InputError(source, f"query {shown(without)} returned hits without a {field}"
                         f"{within}, and other hits have one", f"give every hit a {field}, or "
                         "none (a run file holds it for every item or for none)")


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


def _jsonl(rows: list[tuple[str, list[list[Any]], float | None]]) -> str:
    """The JSON Lines text of one file (see the module docstring)."""
    lines = []
    for qid, items, latency in rows:
        written = [written_item(item, rank) for rank, item in enumerate(items, 1)]
        line: dict[str, Any] = {"query_id": qid, "items": written}
        if latency is not None:
            line["latency_ms"] = round(latency, 3)
        lines.append(_ENCODER.encode(line))
    return "\n".join(lines) + "\n" if lines else ""


def _trec(rows: list[tuple[str, list[list[Any]], float | None]], source: str) -> str:
    """The TREC text of one file; InputError for what TREC cannot hold."""
    lines = []
    for qid, items, _ in rows:
        if qid.startswith("#") or _TREC_UNSAFE.search(qid):
            _no_trec(source, f"query id {shown(qid)} starts with # or holds white space, which "
                     "TREC cannot hold")
        if not items:
            _no_trec(source, f"query {shown(qid)} returned no hits, and a TREC run cannot hold "
                     "an empty ranking")
        for rank, (ident, score, doc, start, _, _) in enumerate(items, 1):
            if doc is not None or start is not None:
                _no_trec(source, f"query {shown(qid)} returned hits with a doc_id or a place, "
                         "which TREC cannot hold")
            if _TREC_UNSAFE.search(ident):
                _no_trec(source, f"query {shown(qid)} returned id {shown(ident)}, which holds "
                         "white space (TREC separates its fields by white space)")
            value = 1 / rank if score is None else score
            lines.append(f"{qid} Q0 {ident} {rank} {value!r} {TREC_TAG}\n")
    return "".join(lines)


def _no_trec(source: str, problem: str) -> None:
    raise InputError(source, problem, "write the run as JSON Lines (an output name not ending "
                     "in .trec)")
