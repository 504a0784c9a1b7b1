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

**The journal** lies beside the output, ``RUN.journal``. Its records are written in blocks:
each joins the block in memory, and the block is written and flushed to the operating system
when it holds :data:`BLOCK_BYTES`, and every :data:`BLOCK_SECONDS` by a thread of the
journal's own — so a record reaches the system within 0.2 s of its call's end, however slow
the next call is. A run stopped by Ctrl-C (or an error) writes its last block first and keeps
every answer; SIGTERM and SIGKILL end the process at once and lose the block being gathered:
the answers of at most the last 0.2 s (or 1 MiB of records), which ``--resume`` calls again.
Nothing is forced to the disk (no ``fsync``): a flushed block survives the end of the process,
however it ends, not a crash of the machine. ``--resume`` reads the journal back — refused
when its header names another snapshot fingerprint, target (of chained stages: every stage's;
its code, package and library versions), shard, tokenizer, or another ``batch_size``,
``hits_path`` or ``id_key`` (which decide what a result is and how it is read) — and calls
only the queries it does not answer (failed ones again); a last line cut short by a kill is
dropped. A later record of a query replaces an earlier one. The journal is deleted once the
run and its manifest are written.

**The records stay on disk.** Neither the journal being written nor one read back is held in
memory: a :class:`Held` knows, for each query of the query set by its position, where its last
record's line starts in the file (8 bytes a query), and which queries failed (with their
errors); the records are read back one at a time, in query-set order, when the run is
written. So the memory of a run does not grow with its rankings.

**A shard file** (``gate run --shard I/N -o FILE``) is a finished journal: its header, then
every query of the shard in query-set order (the journal's lines, copied). ``gate run merge``
reads shard files the same way.
"""

from __future__ import annotations

import json
import os
import threading
from array import array
from collections.abc import Iterator, Sequence
from typing import IO, Any, Protocol

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.untrusted import capped
from retrieval_gate.formats.atomic import Spool, write_texts
from retrieval_gate.formats.source import display_name

VERSION = 1
# What a journal is bound to: its answers came from this snapshot, target (its entry point,
# the version of the package that provides it, the hash of its source file and the
# tokenizer's, the adapted library's version; an endpoint's query string and headers, hashed),
# shard, tokenizer, the run's chunk table (its sha256: the hits were checked against it), and
# the settings that change what an answer is or how it is read — not the
# concurrency, timeout or retries, which a resumed run may change.
BOUND = ("snapshot", "target", "package", "code", "library", "shard", "latency", "tokenizer",
         "request", "chunks")
BOUND_SETTINGS = ("batch_size", "hits_path", "id_key")
BLOCK_BYTES = 1 << 20  # a block of records is written once it holds this many bytes ...
BLOCK_SECONDS = 0.2  # ... and at the latest this long after its first record
_READ_BUFFER = 1 << 20


def journal_path(output: str | os.PathLike[str]) -> str:
    """Where the journal of a run written to ``output`` lies: ``OUTPUT.journal``."""
    return f"{os.fspath(output)}.journal"


# one encoder for every line (json.dumps with options builds one per call); records are trees
# the runner builds, so the check for circular references is left out
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                            check_circular=False)


def record_line(record: dict[str, Any]) -> str:
    """One record (or header) as its JSON line, ``\\n`` included."""
    return _ENCODER.encode(record) + "\n"


class Held:
    """Where the records of a journal or shard file lie (see the module docstring): for the
    query at each position of ``ids``, ``offsets`` holds the byte offset of its last record's
    line in the file at ``path`` (-1: none), and ``failed`` its error when that record is a
    failure; ``others`` lists the ids of records of queries not in ``ids`` (in file order,
    once each); ``header`` is the file's first line, and ``size`` the bytes of its whole lines
    (a torn last line not counted). :meth:`answers` reads the records back."""

    def __init__(self, path: str, ids: Sequence[str], header: dict[str, Any]):
        self.path = path
        self.ids = ids
        self.header = header
        self.offsets = array("q", [-1]) * len(ids)
        self.failed: dict[int, str] = {}
        self.others: dict[str, None] = {}  # an ordered set
        self.count = 0  # queries with a record
        self.size = 0
        self._positions = {qid: i for i, qid in enumerate(ids)}
        self._reader: IO[bytes] | None = None
        self._at = -1  # where the reader stands

    @property
    def answered(self) -> int:
        """How many queries' last record is an answer."""
        return self.count - len(self.failed)

    def note(self, record: dict[str, Any], offset: int) -> None:
        """``record``'s line starts at ``offset``: it replaces the query's earlier record."""
        qid = record["query_id"]
        position = self._positions.get(qid)
        if position is None:
            self.others[qid] = None
            return
        if self.offsets[position] < 0:
            self.count += 1
        self.offsets[position] = offset
        if "failed" in record:
            self.failed[position] = record["failed"]
        else:
            self.failed.pop(position, None)

    def holds(self, qid: str) -> bool:
        """Whether a record of the query ``qid`` was noted already."""
        position = self._positions.get(qid)
        return qid in self.others if position is None else self.offsets[position] >= 0

    def has_answer(self, position: int) -> bool:
        return self.offsets[position] >= 0 and position not in self.failed

    def forget_failures(self) -> None:
        """Take the failed queries for queries without a record (they are called again)."""
        for position in self.failed:
            self.offsets[position] = -1
        self.count -= len(self.failed)
        self.failed.clear()

    def failures(self) -> list[tuple[str, str]]:
        """(query id, error) of every failed query, in query-set order."""
        return [(self.ids[p], self.failed[p]) for p in sorted(self.failed)]

    def line(self, position: int) -> bytes:
        """The last record's line of the query at ``position`` (which has one), as written."""
        offset = self.offsets[position]
        if self._reader is None:
            self._reader = open(self.path, "rb", buffering=_READ_BUFFER)  # noqa: SIM115
        if offset != self._at:
            self._reader.seek(offset)
        data = self._reader.readline()
        self._at = offset + len(data)
        return data

    def answer(self, position: int) -> dict[str, Any] | None:
        """The answered record of the query at ``position``; None when it has none."""
        if not self.has_answer(position):
            return None
        record: dict[str, Any] = json.loads(self.line(position).decode("utf-8"))
        return record

    def answers(self) -> Iterator[dict[str, Any]]:
        """Every answered record, in query-set order, read back one at a time."""
        for position in range(len(self.ids)):
            record = self.answer(position)
            if record is not None:
                yield record

    def close(self) -> None:
        """Close the file the records are read from (opened again when read again)."""
        if self._reader is not None:
            self._reader.close()
            self._reader, self._at = None, -1


class Answers(Protocol):
    """What a run is written from: its queries' ``ids`` (in query-set order), the failed ones,
    and the answered records."""

    ids: Sequence[str]

    def failures(self) -> list[tuple[str, str]]:
        """(query id, error) of every failed query, in query-set order."""

    def answers(self) -> Iterator[dict[str, Any]]:
        """Every answered record, in query-set order (a new iterator each time)."""


class Merged:
    """The records of the N shard files of one run as one :class:`Answers`: ``shards`` in
    shard order, the query at position p (from 0) held by shard (p mod N) + 1."""

    def __init__(self, shards: Sequence[Held]):
        self.ids = shards[0].ids
        self._shards = shards

    def failures(self) -> list[tuple[str, str]]:
        failed = sorted(item for shard in self._shards for item in shard.failed.items())
        return [(self.ids[p], error) for p, error in failed]

    def answers(self) -> Iterator[dict[str, Any]]:
        count = len(self._shards)
        for position in range(len(self.ids)):
            record = self._shards[position % count].answer(position)
            if record is not None:
                yield record

    def close(self) -> None:
        for shard in self._shards:
            shard.close()


def scan(path: str | os.PathLike[str], what: str, ids: Sequence[str],
         torn_tail: bool = False) -> Held:
    """Read a journal or shard file (``what`` names it in messages) line by line into a
    :class:`Held` over the queries ``ids``. With ``torn_tail`` (a journal), a last line without
    its line end — cut short by a kill — is dropped, and a later record of a query replaces
    its earlier one (a retry, a resumed run); without it (a shard file, which holds each
    query's last record once), a query's second record is InputError. Any line that is not a
    record — JSON with NaN or an infinity among them, which gate run never writes — is
    InputError (exit 2) naming the file and line."""
    name = display_name(path)
    try:
        handle = open(path, "rb", buffering=_READ_BUFFER)  # noqa: SIM115
    except FileNotFoundError:
        raise InputError(name, f"{what} not found", "check the path") from None
    except OSError as exc:
        raise InputError(name, f"{what} cannot be read ({type(exc).__name__})",
                         "give a file gate run wrote") from None
    held: Held | None = None
    offset = 0
    with handle:
        for number, data in enumerate(handle, 1):
            if torn_tail and not data.endswith(b"\n"):
                break
            value = _parsed(data, name, number, what)
            if held is None:
                if value.get("gate_run") != VERSION:
                    raise InputError(name, f"is not a {what} of gate run (its first line is "
                                     "no header)", "give a file gate run wrote", 1)
                held = Held(os.fspath(path), ids, value)
            elif not isinstance(value.get("query_id"), str) or not (
                    "failed" in value or "rankings" in value):
                raise InputError(name, f"line {number} is not a query's record",
                                 f"give a {what} gate run wrote, unchanged", number)
            elif not torn_tail and held.holds(value["query_id"]):
                raise InputError(name, f"line {number} holds query "
                                 f"{capped(repr(value['query_id']), 80)} again",
                                 f"give a {what} gate run wrote, unchanged", number)
            else:
                held.note(value, offset)
            offset += len(data)
            held.size = offset
    if held is None:
        raise InputError(name, f"is empty: not a {what} of gate run",
                         "give a file gate run wrote")
    return held


def _not_written(constant: str) -> Any:
    """``NaN``, ``Infinity``: never in a line gate run wrote (its encoder refuses them)."""
    raise ValueError(constant)


def _parsed(data: bytes, name: str, number: int, what: str) -> dict[str, Any]:
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_not_written)
    except UnicodeDecodeError:
        raise InputError(name, f"{what} cannot be read (UnicodeDecodeError)",
                         "give a file gate run wrote") from None
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
                         "library versions; an endpoint's query string and headers), shard, "
                         "tokenizer, chunk table (--chunks) and reading options "
                         "(--batch-size, --hits-path, --id-key), or leave out --resume to start "
                         "over (the journal is then replaced)")


def _said(value: Any) -> str:
    """A header value for a message: a library as ``name version``."""
    if isinstance(value, dict) and set(value) == {"name", "version"}:
        return f"{value['name']} {value['version']}"
    return str(value)


class Journal:
    """The journal being written (see the module docstring): a header, then one record per
    query, in blocks; :attr:`held` says where each query's last record lies."""

    def __init__(self, path: str, header: dict[str, Any], ids: Sequence[str],
                 kept: Held | None):
        """Open the journal at ``path`` for the queries ``ids``: continue ``kept`` (a journal
        read back; its torn last line cut off first), else start one with ``header``."""
        self.path = path
        self._file: IO[bytes]
        if kept is None:
            self._file = open(path, "wb")  # noqa: SIM115
            self.held = Held(path, ids, header)
            self._file.write(record_line(header).encode("utf-8"))
            self._file.flush()
        else:
            os.truncate(path, kept.size)  # a torn last line
            self._file = open(path, "ab")  # noqa: SIM115
            self.held = kept
        self._end = os.fstat(self._file.fileno()).st_size
        self._block: list[bytes] = []
        self._size = 0
        self._failure: OSError | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._flusher = threading.Thread(target=self._flush_every, name="gate-run-journal",
                                         daemon=True)
        self._flusher.start()

    def add(self, record: dict[str, Any]) -> None:
        """Add one record to the block (written once the block is full, or within
        :data:`BLOCK_SECONDS`). A write that failed (a full disk) raises its OSError here."""
        data = record_line(record).encode("utf-8")
        with self._lock:
            self._raise_failure()
            self.held.note(record, self._end)
            self._end += len(data)
            self._block.append(data)
            self._size += len(data)
            if self._size >= BLOCK_BYTES:
                self._write()

    def close(self) -> None:
        """Write the last block and close the file (nothing more once closed)."""
        self._stop.set()
        if self._flusher.is_alive():
            self._flusher.join()
        with self._lock:
            if self._file.closed:
                return
            try:
                self._write()
            finally:
                self._file.close()
            self._raise_failure()

    def _flush_every(self) -> None:
        """The thread that writes the block every :data:`BLOCK_SECONDS`; a failed write is
        kept for the caller's next :meth:`add` or :meth:`close`."""
        while not self._stop.wait(BLOCK_SECONDS):
            with self._lock:
                try:
                    self._write()
                except OSError as exc:
                    self._failure = exc
                    return

    def _write(self) -> None:
        """Write the block and flush it to the operating system (the lock held)."""
        if self._block:
            self._file.write(b"".join(self._block))
            self._file.flush()
            self._block.clear()
            self._size = 0

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure


def write_shard(output: str | os.PathLike[str], header: dict[str, Any], held: Held) -> None:
    """Write the shard file of a finished journal: ``header`` (this run's), then the last
    record of every query in query-set order, each line as the journal holds it."""
    spool = Spool(output)
    try:
        spool.write(record_line(header).encode("utf-8"))
        for position in range(len(held.ids)):
            if held.offsets[position] >= 0:
                spool.write(held.line(position))
    except BaseException:
        spool.discard()
        raise
    write_texts([(output, spool)])
