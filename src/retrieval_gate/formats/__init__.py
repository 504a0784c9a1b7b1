"""Readers: files → the model. The format is detected from the content (a JSON document, JSON
Lines, or TREC text) unless the caller forces it with ``format=``."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from retrieval_gate.errors import InputError
from retrieval_gate.formats import trec
from retrieval_gate.formats.source import read_bytes, read_text
from retrieval_gate.model import Qrels, Query, RunRows

QRELS_FORMATS = ("trec", "json", "jsonl")
RUN_FORMATS = ("trec", "json", "jsonl")


def _json() -> ModuleType:
    """The JSON readers (:mod:`retrieval_gate.formats.jsonfmt`), imported on first use: TREC
    inputs never need them."""
    from retrieval_gate.formats import jsonfmt

    return jsonfmt


def _detect(data: bytes) -> str:
    """'json', 'jsonl' or 'trec' from the first non-blank character and the document's shape."""
    first = re.match(rb"\s*(\S)", data)
    if first is not None and first[1] in (b"{", b"["):
        text = data.decode("utf-8", errors="replace")
        return "jsonl" if _json().is_json_lines(text) else "json"
    return "trec"


def _check_format(fmt: str | None, allowed: tuple[str, ...], option: str) -> None:
    if fmt is not None and fmt not in allowed:
        raise InputError(option, f"unknown format '{fmt}'", f"use one of {', '.join(allowed)}")


def read_qrels(path: str | os.PathLike[str], format: str | None = None) -> Qrels:
    """Qrels as TREC (``qid iter docid grade``), JSONL (``{"query_id","doc_id","grade"}``),
    or JSON (``{"q": {"d": grade}}`` graded, ``{"q": ["d"]}`` binary)."""
    _check_format(format, QRELS_FORMATS, "--qrels-format")
    name = str(path)
    data = read_bytes(path)
    fmt = format or _detect(data)
    if fmt == "trec":
        return trec.read_trec_qrels(data, name)
    text = read_text(path)
    if fmt == "jsonl":
        return _json().qrels_from_jsonl(text, name)
    return _json().qrels_from_json(_json().loads(text, name), name)


def read_run(path: str | os.PathLike[str], format: str | None = None) -> RunRows:
    """A run as TREC (``qid Q0 docid rank score tag``), JSON (``{"q": {"d": score}}`` or
    ``{"q": ["d1", "d2"]}``), or JSONL (``{"query_id", "items": [{"id", "score"?,
    "doc_id"?}]}``)."""
    _check_format(format, RUN_FORMATS, "--run-format")
    name = str(path)
    if format in (None, "trec"):
        from retrieval_gate.formats import arrow

        fast = arrow.read_trec_run(path, name, detect=format is None)
        if fast is not None:
            return fast
    data = read_bytes(path)
    fmt = format or _detect(data)
    if fmt == "trec":
        return trec.read_trec_run(data, name)
    text = read_text(path)
    if fmt == "jsonl":
        return _json().run_from_jsonl(text, name)
    return _json().run_from_json(_json().loads(text, name), name)


def read_queries(path: str | os.PathLike[str]) -> tuple[Query, ...]:
    """The query set, JSON Lines: ``{"id", "text", "tags", "answerable"}`` per line."""
    return _json().queries_from_jsonl(read_text(path), str(path))


def read_doc_map(path: str | os.PathLike[str]) -> dict[str, str]:
    """Chunk id → document id, as a JSON object or as two whitespace-separated columns."""
    name = str(path)
    data = read_bytes(path)
    if _detect(data) == "json":
        return _json().doc_map_from_json(_json().loads(read_text(path), name), name)
    (chunks, docs), lines = trec.read_fields(data, name, (0, 1), 2, "a doc map line is "
                                             "'chunk_id doc_id'")
    mapping: dict[str, str] = {}
    for chunk, doc, line in zip(chunks.tolist(), docs.tolist(), lines.tolist()):
        if mapping.setdefault(chunk.decode(), doc.decode()) != doc.decode():
            raise InputError(name, f"chunk '{chunk.decode()}' is mapped twice to different "
                             "documents", "map each chunk to one document", line)
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


def read_fixture(path: str | os.PathLike[str]) -> Fixture:
    """The seeds' fixture files: ``{"qrels": ..., "runs": {q: ranking}}`` (one run) or
    ``{"qrels": ..., "runs": {"A": {q: ranking}, "B": ...}}`` (named runs)."""
    name = str(path)
    document = _json().loads(read_text(path), name)
    if not isinstance(document, dict) or set(document) != {"qrels", "runs"}:
        raise InputError(name, "is not a fixture (an object with exactly 'qrels' and 'runs')",
                         "give QRELS and RUN as two files, or write the fixture as "
                         '{"qrels": ..., "runs": ...}')
    qrels = _json().qrels_from_json(document["qrels"], f"{name}#qrels")
    runs = document["runs"]
    if not isinstance(runs, dict) or not runs:
        raise InputError(name, "'runs' is not a non-empty object", "see the README", '$["runs"]')
    if _is_named_runs(runs):
        return Fixture(qrels, {k: _json().run_from_json(v, f"{name}#runs.{k}")
                               for k, v in runs.items()}, True)
    return Fixture(qrels, {"run": _json().run_from_json(runs, f"{name}#runs")}, False)
