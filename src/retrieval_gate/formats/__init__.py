"""Layer 2, formats: files → the model, and writing files safely.

Readers: files → the model. The format is detected from the content (a JSON document, JSON
Lines, or TREC text) unless the caller forces it with ``format=``."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar, Union

from retrieval_gate.core.errors import InputError, memory_for
from retrieval_gate.core.exported import exported
from retrieval_gate.core.model import Qrels, Query, RunRows
from retrieval_gate.formats import trec
from retrieval_gate.formats.source import BOM, Blob, read_blob

T = TypeVar("T")
QRELS_FORMATS = ("trec", "json", "jsonl")
RUN_FORMATS = ("trec", "json", "jsonl")
Source = Union[str, "os.PathLike[str]", Blob]
"""A file to read: a path, or a :class:`~retrieval_gate.formats.source.Blob` already read (the
bytes a manifest's hash was checked on)."""


def _json() -> ModuleType:
    """The JSON readers (:mod:`retrieval_gate.formats.jsonfmt`), imported on first use: TREC
    inputs never need them."""
    from retrieval_gate.formats import jsonfmt

    return jsonfmt


def source_blob(source: Source, map_from: int | None = None) -> Blob:
    """``source`` read (once), with content."""
    blob = source if isinstance(source, Blob) else read_blob(source, map_from)
    blob.require_content()
    return blob


def _looks_like_json(data: Any) -> bool:
    """True when the first non-blank character (after a UTF-8 BOM) opens a JSON array or
    object."""
    first = re.match(rb"(?:\xef\xbb\xbf)?\s*(\S)", data[:4096])
    return first is not None and first[1] in (b"{", b"[")


def _check_format(fmt: str | None, allowed: tuple[str, ...], option: str) -> None:
    if fmt is not None and fmt not in allowed:
        raise InputError(option, f"unknown format '{fmt}'", f"use one of {', '.join(allowed)}")


@exported
def read_qrels(source: Source, format: str | None = None) -> Qrels:
    """Qrels as TREC (``qid iter docid grade``), JSONL (``{"query_id","doc_id","grade"}``),
    or JSON (``{"q": {"d": grade}}`` graded, ``{"q": ["d"]}`` binary).

    Out of memory: :class:`~retrieval_gate.core.errors.OutOfMemory` naming the file, and about 8
    times its size for TREC, 14 for JSON (benchmarks/reader_memory.py measured peaks of 7.1
    and 13.8)."""
    _check_format(format, QRELS_FORMATS, "--qrels-format")
    blob = source_blob(source)
    task = f"reading the qrels {blob.name}"
    if format == "trec" or (format is None and not _looks_like_json(blob.data)):
        with memory_for(task, 8 * len(blob)):
            return trec.read_trec_qrels(blob.data, blob.name)
    with memory_for(task, 14 * len(blob)):
        return _from_json(blob, format, _json().qrels_from_jsonl, _json().qrels_from_json)


def _from_json(blob: Blob, format: str | None, from_lines: Callable[..., T],
               from_document: Callable[[Any, str], T]) -> T:
    """A JSON Lines file (``format`` jsonl, or detected) through ``from_lines``, else one JSON
    document through ``from_document``."""
    text = blob.text()
    if format == "jsonl":
        return from_lines(text, blob.name)
    document, lines = _document(text, blob.name, format)  # checks the depth of the whole text
    if lines:
        return from_lines(text, blob.name, depth_checked=True)
    return from_document(document, blob.name)


def _document(text: str, name: str, format: str | None) -> tuple[Any, bool]:
    """(document, False) for a JSON document, (None, True) for JSON Lines when the format is
    detected: several values, or one line shaped as a JSON Lines record (``"query_id"`` with a
    string, which no query of a JSON document maps to); a forced ``json`` is one document."""
    if format == "json":
        return _json().loads(text, name), False
    document, lines = _json().document_or_lines(text, name)
    if isinstance(document, dict) and isinstance(document.get("query_id"), str):
        return None, True
    return document, lines


@exported
def read_run(source: Source, format: str | None = None) -> RunRows:
    """A run as TREC (``qid Q0 docid rank score tag``), JSON (``{"q": {"d": score}}`` or
    ``{"q": ["d1", "d2"]}``), or JSONL (``{"query_id", "items": [{"id", "score"?,
    "doc_id"?}]}``). A large run is memory-mapped, and read with pyarrow when it can be.

    A JSON Lines run (``format`` jsonl, or a file whose first line is a record) is read a
    batch of lines at a time, never as one text.

    Out of memory: :class:`~retrieval_gate.core.errors.OutOfMemory` naming the file, and about 5
    times its size for TREC, 7 for JSON Lines, 15 for a JSON document
    (benchmarks/reader_memory.py measured peaks of 2.9 with pyarrow, 3.5 without, and 6.7 for
    JSON Lines, which read whole took 14.6)."""
    _check_format(format, RUN_FORMATS, "--run-format")
    from retrieval_gate.formats import arrow

    blob = source_blob(source, arrow.MAP_FROM)
    task = f"reading the run {blob.name}"
    if format == "trec" or (format is None and not _looks_like_json(blob.data)):
        with memory_for(task, 5 * len(blob)):
            fast = arrow.read_trec_run(blob, blob.name, detect=format is None)
            return fast if fast is not None else trec.read_trec_run(blob.data, blob.name)
    if format == "jsonl" or (format is None and _starts_with_a_record(blob)):
        with memory_for(task, 7 * len(blob)):
            return _json().run_from_jsonl_batches(blob)
    with memory_for(task, 15 * len(blob)):
        return _from_json(blob, format, _json().run_from_jsonl, _json().run_from_json)


_PEEK = 1 << 20  # bytes looked at for a JSON Lines file's first record


def _starts_with_a_record(blob: Blob) -> bool:
    """Whether the file's first non-blank line (within its first MiB) is a JSON Lines record:
    one JSON object with a string ``query_id`` — which no JSON document's first line is (a
    document's first line is not a whole object unless it is the whole document, and a
    document mapping queries to rankings has no such key). Anything else, or any doubt, is
    left to the reader of the whole text."""
    head = bytes(blob.data[:_PEEK])
    head = head.removeprefix(BOM)
    for raw in head.split(b"\n")[:-1] if len(blob.data) > _PEEK else head.split(b"\n"):
        if raw.strip(b" \t\r"):
            if not raw.lstrip(b" \t").startswith(b"{"):
                return False
            try:
                first = json.loads(raw)
            except (ValueError, RecursionError):  # the whole-text reader names the problem
                return False
            return isinstance(first, dict) and isinstance(first.get("query_id"), str)
    return False


def read_queries(source: Source) -> tuple[Query, ...]:
    """The query set, JSON Lines: ``{"id", "text", "tags", "answerable"}`` per line."""
    blob = source_blob(source)
    return _json().queries_from_jsonl(blob.text(), blob.name)


def read_doc_map(source: Source) -> dict[str, str]:
    """Chunk id → document id, as a JSON object or as two whitespace-separated columns."""
    blob = source_blob(source)
    if _looks_like_json(blob.data):
        return _json().doc_map_from_json(_json().loads(blob.text(), blob.name), blob.name)
    mapping: dict[str, str] = {}
    fix = "a doc map line is 'chunk_id doc_id'"
    for tokens in trec.tokenized(blob.data, blob.name, (0, 1), 2, fix, ids=(0, 1)):
        for chunk, doc, line in zip(trec.field_values(blob.data, tokens, 0),
                                    trec.field_values(blob.data, tokens, 1),
                                    tokens.lines.tolist()):
            if mapping.setdefault(chunk.decode(), doc.decode()) != doc.decode():
                raise InputError(blob.name, f"chunk '{chunk.decode()}' is mapped twice to "
                                 "different documents", "map each chunk to one document", line)
    return mapping


@dataclass(frozen=True)
class Fixture:
    """A self-contained example: qrels and one run (``runs`` maps query → ranking) or several
    named runs (``runs`` maps name → run)."""

    qrels: Qrels
    runs: dict[str, RunRows]
    named: bool


def _is_named_runs(runs: dict[str, Any]) -> bool:
    """True for ``{"A": {q: [ids]}, ...}``: every value is an object whose values are rankings."""
    return all(isinstance(v, dict) and v and all(isinstance(r, (list, dict)) for r in v.values())
               for v in runs.values())


def read_fixture(source: Source) -> Fixture:
    """The seeds' fixture files: ``{"qrels": ..., "runs": {q: ranking}}`` (one run) or
    ``{"qrels": ..., "runs": {"A": {q: ranking}, "B": ...}}`` (named runs)."""
    blob = source_blob(source)
    name = blob.name
    document = _json().loads(blob.text(), name)
    if not isinstance(document, dict) or set(document) != {"qrels", "runs"}:
        raise InputError(name, "is not a fixture (an object with exactly 'qrels' and 'runs')",
                         "give QRELS and RUN as two files, or write the fixture as "
                         '{"qrels": ..., "runs": ...}')
    qrels = _json().qrels_from_json(document["qrels"], f"{name}#qrels")
    runs = document["runs"]
    if not isinstance(runs, dict) or not runs:
        raise InputError(name, "'runs' is not a non-empty object", "see the input formats (docs/concepts/input-formats.md)", '$["runs"]')
    if _is_named_runs(runs):
        return Fixture(qrels, {k: _json().run_from_json(v, f"{name}#runs.{k}")
                               for k, v in runs.items()}, True)
    return Fixture(qrels, {"run": _json().run_from_json(runs, f"{name}#runs")}, False)


def judgment_place(blob: Blob, qid: str, unit: str) -> int | str | None:
    """Where the judgment of ``unit`` for ``qid`` stands in a qrels file: its line (TREC or
    JSON Lines), or its JSON path in a JSON document; None when not found. For messages only:
    the file was read already, and a malformed line is passed over."""
    import json

    from retrieval_gate.formats.jsonfmt import path as json_path

    text = blob.text()
    first = re.match(r"\s*(\S)", text)
    if first is None or first[1] not in "{[":
        for number, line in enumerate(text.split("\n"), 1):
            fields = line.split()
            if len(fields) >= 3 and fields[0] == qid and fields[2] == unit:
                return number
        return None
    for number, line in enumerate(text.split("\n"), 1):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("query_id") == qid \
                and value.get("doc_id") == unit:
            return number
    try:
        document = json.loads(text)
    except ValueError:
        return None
    labels = document.get(qid) if isinstance(document, dict) else None
    if isinstance(labels, list) and unit in labels:
        return json_path(qid, labels.index(unit))
    return json_path(qid, unit)
