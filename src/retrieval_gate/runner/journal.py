"""The journal of a run in progress, and shard files: what each query gave, one JSON line each.

Both are JSON Lines. The first line is the header, ``{"gate_run": 1, "snapshot": FINGERPRINT,
"target": "module:function", "shard": "I/N" or null, ...}`` — the snapshot and the target the
records belong to; each further line is one query's record, written as soon as its call
returned:

- ``{"query_id": "q1", "rankings": [[STAGE or null, [[id, score, doc_id, start, end,
  tokens], ...]], ...], "latency_ms": 12.5}`` — answered (its hits as checked, ``null`` where
  a hit gave no value); chained stages give ``"stage_latency_ms": [...]`` instead, and a
  reported latency adds ``"latency": "reported"`` (:mod:`retrieval_gate.runner.records`);
- ``{"query_id": "q1", "failed": "TimeoutError: ..."}`` — failed after every retry.

**The journal** lies beside the output, ``RUN.journal``, flushed after every record, so that a
run killed in any way (Ctrl-C, SIGTERM, SIGKILL, a lost machine) keeps every answer it got.
``--resume`` reads it back — refused when its header names another snapshot fingerprint,
target (of chained stages: every stage's; its code, package and library versions), shard,
tokenizer, or another ``batch_size``, ``hits_path`` or ``id_key`` (which decide what a result
is and how it is read) — and calls only the queries it does not answer (failed ones again); a
last line cut short by the kill is dropped. A later record of a query replaces an earlier
one. The journal is deleted once the run and its manifest are written.

**A shard file** (``gate run --shard I/N -o FILE``) is a finished journal: its header, then
every query of the shard in query-set order. ``gate run merge`` reads shard files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.untrusted import capped
from retrieval_gate.formats.source import display_name

VERSION = 1
# What a journal is bound to: its answers came from this snapshot, target (its entry point,
# the version of the package that provides it, the hash of its source file, the adapted
# library's version), shard, tokenizer, and the settings that change what an answer is or how
# it is read — not the concurrency, timeout or retries, which a resumed run may change.
BOUND = ("snapshot", "target", "package", "code", "library", "shard", "latency", "tokenizer")
BOUND_SETTINGS = ("batch_size", "hits_path", "id_key")


def journal_path(output: str | os.PathLike[str]) -> str:
    """Where the journal of a run written to ``output`` lies: ``OUTPUT.journal``."""
    return f"{os.fspath(output)}.journal"


def record_line(record: dict[str, Any]) -> str:
    """One record (or header) as its JSON line, ``\\n`` included."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")) + "\n"


@dataclass(frozen=True)
class Records:
    """A journal or shard file read: its header and each query's last record, by query id."""

    header: dict[str, Any]
    records: dict[str, dict[str, Any]]


def read_records(path: str | os.PathLike[str], what: str, torn_tail: bool = False) -> Records:
    """Read a journal or shard file (``what`` names it in messages). With ``torn_tail`` (a
    journal), a last line without its line end — cut short by a kill — is dropped; otherwise
    any line that is not a record is InputError (exit 2) naming the file and line."""
    name = display_name(path)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise InputError(name, f"{what} not found", "check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(name, f"{what} cannot be read ({type(exc).__name__})",
                         "give a file gate run wrote") from None
    lines = text.split("\n")
    if torn_tail or lines[-1] == "":
        lines = lines[:-1]
    header: dict[str, Any] | None = None
    records: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(lines, 1):
        value = _parsed(line, name, number, what)
        if header is None:
            if value.get("gate_run") != VERSION:
                raise InputError(name, f"is not a {what} of gate run (its first line is no "
                                 "header)", "give a file gate run wrote", 1)
            header = value
            continue
        if not isinstance(value.get("query_id"), str) or not (
                "failed" in value or "rankings" in value):
            raise InputError(name, f"line {number} is not a query's record",
                             f"give a {what} gate run wrote, unchanged", number)
        records[value["query_id"]] = value
    if header is None:
        raise InputError(name, f"is empty: not a {what} of gate run",
                         "give a file gate run wrote")
    return Records(header, records)


def _parsed(line: str, name: str, number: int, what: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise InputError(name, f"line {number} is not JSON written by gate run",
                         f"give a {what} gate run wrote, unchanged", number)
    return value


def require_bound(found: dict[str, Any], expected: dict[str, Any], name: str) -> None:
    """InputError (exit 2) unless the journal's header ``found`` agrees with ``expected`` on
    every key of :data:`BOUND` and :data:`BOUND_SETTINGS`: its answers belong to another
    run."""
    differ = [(key, found.get(key), expected.get(key)) for key in BOUND
              if found.get(key) != expected.get(key)]
    settings = [found.get("settings"), expected.get("settings")]
    mine, theirs = (s if isinstance(s, dict) else {} for s in settings)
    differ += [(key, mine.get(key), theirs.get(key)) for key in BOUND_SETTINGS
               if mine.get(key) != theirs.get(key)]
    if differ:
        said = "; ".join(f"{key} {capped(_said(was), 80)} (this run: {capped(_said(now), 80)})"
                         for key, was, now in differ)
        raise InputError(name, f"the journal belongs to another run: {said}",
                         "resume with the same snapshot, target (its code, package and "
                         "library versions), shard, tokenizer and reading options "
                         "(--batch-size, --hits-path, --id-key), or leave out --resume to "
                         "start over (the journal is then replaced)")


def _said(value: Any) -> str:
    """A header value for a message: a library as ``name version``."""
    if isinstance(value, dict) and set(value) == {"name", "version"}:
        return f"{value['name']} {value['version']}"
    return str(value)


class Journal:
    """The journal being written: a header, then one record per query, each flushed."""

    def __init__(self, path: str, header: dict[str, Any], kept: Records | None):
        """Open the journal at ``path``: continue ``kept`` (a journal read back; its torn
        last line cut off first), else start one with ``header``."""
        self.path = path
        self._file: IO[str]
        if kept is None:
            self._file = open(path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
            self.add(header)
        else:
            _cut_torn_tail(path)
            self._file = open(path, "a", encoding="utf-8", newline="\n")  # noqa: SIM115

    def add(self, record: dict[str, Any]) -> None:
        """Append one record and flush it to the operating system (it survives a kill of this
        process)."""
        self._file.write(record_line(record))
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def remove(self) -> None:
        """Close and delete the journal (the run it was for is written)."""
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def _cut_torn_tail(path: str) -> None:
    """Truncate ``path`` after its last line end (a kill may have cut the last line short)."""
    with open(path, "rb+") as handle:
        data = handle.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            handle.truncate(end)


def shard_text(header: dict[str, Any], records: Iterator[dict[str, Any]]) -> str:
    """A shard file: the header, then the records given (in query-set order)."""
    return record_line(header) + "".join(record_line(r) for r in records)
