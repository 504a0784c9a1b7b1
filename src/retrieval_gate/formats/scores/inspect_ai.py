"""inspect_ai's eval logs as per-query scores.

The file. An ``.eval`` log, inspect_ai's default: a zip archive holding ``header.json`` (the
log without its samples: ``version``, ``status``, ``eval`` with ``packages.inspect_ai``,
``plan``, ``results``, ``stats``), one ``samples/<id>_epoch_<n>.json`` per sample and epoch,
and ``summaries.json``, ``reductions.json`` and ``_journal/`` (not read: the summaries shorten
texts). Or a JSON log (``inspect eval --log-format json``): one document with the header's
fields and the samples as a list ``samples``. Log version 2 is read, tested with inspect_ai
0.3.150 and 0.3.200 (their ``.eval`` members are compressed with DEFLATE) and 0.3.285
(Zstandard, which needs Python 3.14 or the package ``zstandard``); any other version is
refused, and so is the log of an eval whose status is not ``success`` (started, cancelled or
failed: its samples are not all there) or that holds no samples (``--no-log-samples``).

Scores. A sample's ``scores`` holds one score per scorer, by the scorer's name as the log
writes it (``match``, ``includes``, ``exact``, ``model_graded_qa``, a custom scorer's function
name), normalised as :mod:`~retrieval_gate.formats.scores.cases` says; a scorer whose value
is an object gives one score per key, ``SCORER.KEY``. Values are read as inspect_ai's
``value_to_float`` (0.3.285) reads them: ``"C"`` 1, ``"P"`` 0.5, ``"I"`` and ``"N"`` 0; true
and false 1 and 0; ``"yes"``/``"true"`` 1 and ``"no"``/``"false"`` 0 in any case; a number, or
a string holding a finite one, as it is. Any other value (a list, another string) is refused,
where inspect_ai would count it as 0 with a warning.

NaN: an unscored sample (a value NaN, as inspect_ai records a grader's answer that holds no
grade), null, a scorer with no score for the sample (the sample stopped with an error before
that scorer ran: the scores recorded before it are read, as inspect_ai's own metrics read
them), and every score of a sample that was invalidated.

Query key: the metadata field ``query_id`` when every sample has one; when none has, the
sample's ``input`` as a string. Each epoch of a sample is one row, with ``samples[i]`` its
epoch (1, 2, ...).

Bounds. A zip archive can unpack to far more than it holds (DEFLATE to 1,032 times, Zstandard
and bzip2 far beyond), and the sizes its headers declare are the writer's word. The members
read (``header.json`` and the samples) are unpacked in chunks of 1 MiB and refused as soon as
they pass a bound, whatever size they declare: each member at most 100 times its compressed
size, all of them together at most 100 times the archive's size, each bound at least 64 MiB
(:data:`~retrieval_gate.core.limits.MAX_UNPACK_RATIO`,
:data:`~retrieval_gate.core.limits.MIN_UNPACK_BYTES`). inspect_ai's logs unpack to 3 to 5
times their size; the bounds keep the memory one member takes and the time all take linear in
the file's size. The members read must lie apart (no two share bytes, as in every archive a zip
program writes): that keeps their compressed sizes within the archive's, and their number
below one per 98 bytes of it (a member's local header and central directory entry, with its
name twice). A member is stored, or compressed with DEFLATE or Zstandard; other methods
(bzip2, LZMA: inspect_ai writes neither, and Python's zipfile unpacks what it reads of them
without a bound) are refused.
"""

from __future__ import annotations

import importlib
import io
import math
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.limits import MAX_UNPACK_RATIO, MIN_UNPACK_BYTES
from retrieval_gate.formats.jsonfmt import loads, path
from retrieval_gate.formats.scores.cases import Case, query_id, require, score_rows
from retrieval_gate.formats.scores.rows import (
    ScoreRows,
    quoted,
    sample_number,
    score_text,
    score_value,
)

LOG_VERSION = 2
_READ = ("an inspect_ai log of version 2 (.eval, or --log-format json; tested with inspect_ai "
         "0.3.150 to 0.3.285)")
_AS_WRITTEN = "give the log as inspect_ai wrote it"
_ID = "metadata field query_id"
_ZIP = b"PK\x03\x04"
_ZSTANDARD = 93  # the zip compression method of Zstandard
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... name length, extra length
_CHUNK = 1 << 20  # bytes unpacked at a time
_DAMAGED = (zipfile.BadZipFile, zlib.error, struct.error, EOFError, NotImplementedError,
            RuntimeError, ValueError)  # what unpacking a damaged member raises
_TOO_LARGE = ("give the log as inspect_ai wrote it, or convert a genuine one to JSON: inspect "
              "log convert --to json")
_LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


def read(data: bytes, name: str) -> ScoreRows:
    """The scores of the inspect_ai log ``data`` (the file ``name``); InputError for anything
    else."""
    if data[:4] == _ZIP:
        archive = _Archive(data, name)
        header = _header(archive.document(archive.header), name)
        samples: Iterator[tuple[str, Any]] = (
            (info.filename, archive.document(info)) for info in archive.samples)
    else:
        header = _header(_json(data, name), name)
        listed = require(header.get("samples", []), list, name, path("samples"), "samples",
                         "a list")
        samples = ((path("samples", i), sample) for i, sample in enumerate(listed))
    cases = [_case(sample, name, where) for where, sample in samples]
    if not cases:
        raise InputError(name, "holds no samples (the eval ran with --no-log-samples)",
                         "run the eval with its samples logged")
    return score_rows(cases, name, _producer(header), "sample", _ID, "input")


def _producer(header: dict[str, Any], unknown: str = "inspect_ai (log version 2)") -> str:
    """``inspect_ai VERSION`` as the log records it, else ``unknown``."""
    spec = header["eval"]
    packages = spec.get("packages") if isinstance(spec, dict) else None
    version = packages.get("inspect_ai") if isinstance(packages, dict) else None
    return f"inspect_ai {version}" if isinstance(version, str) and version else unknown


def _json(data: bytes, source: str) -> Any:
    """A JSON document of inspect_ai, which writes a NaN score as the bare word ``NaN``: read
    as null (:func:`~.rows.score_text`); everything else as strictly as any input."""
    return loads(score_text(data, source), source)


def _header(header: Any, source: str) -> dict[str, Any]:
    """The log's header, checked: inspect_ai's, version 2, status success."""
    if not isinstance(header, dict) or "version" not in header or "eval" not in header:
        raise InputError(source, "is not an inspect_ai log (it has no version and eval)",
                         f"give {_READ}")
    version = header["version"]
    if version != LOG_VERSION or isinstance(version, bool):
        raise InputError(source, f"was written by {_producer(header, 'inspect_ai')} with log version "
                         f"{quoted(version)}, which retrieval-gate does not read",
                         f"give {_READ}", path("version"))
    if header.get("status") != "success":
        raise InputError(source, f"is the log of an eval whose status is "
                         f"{quoted(header.get('status'))}, not \"success\": its samples are "
                         "not all there", "give the log of an eval that ran to the end "
                         "(inspect eval-retry completes one)", path("status"))
    return header


class _Archive:
    """An ``.eval`` archive, its members read within the module docstring's bounds."""

    def __init__(self, data: bytes, source: str):
        self.data, self.source = data, source
        self.zip, members = _members(data, source)
        self.header = members["header.json"]
        self.samples = [info for member, info in members.items()
                        if member.startswith("samples/") and member.endswith(".json")]
        _apart([self.header, *self.samples], data, source)
        self.budget = max(MIN_UNPACK_BYTES, MAX_UNPACK_RATIO * len(data))
        self.left = self.budget  # of the budget, what the members not yet read may unpack to

    def document(self, info: zipfile.ZipInfo) -> Any:
        """The JSON document of the member ``info``; InputError if it passes a bound."""
        where = f"{self.source}:{info.filename}"
        own = max(MIN_UNPACK_BYTES, MAX_UNPACK_RATIO * info.compress_size)
        try:
            raw = _unpacked(self.zip, info, self.data, min(own, self.left), where)
        except _DAMAGED as exc:
            raise InputError(where, f"cannot be unpacked ({exc})", _AS_WRITTEN) from None
        if raw is None and own <= self.left:
            raise InputError(where, f"unpacks to more than {own:,} bytes ({MAX_UNPACK_RATIO} "
                             f"times its {info.compress_size:,} compressed bytes, at least "
                             f"{MIN_UNPACK_BYTES:,}), where inspect_ai's members unpack to a "
                             "few times their size", _TOO_LARGE)
        if raw is None:
            raise InputError(where, f"with the members read before it, unpacks to more than "
                             f"{self.budget:,} bytes ({MAX_UNPACK_RATIO} times the archive's "
                             f"{len(self.data):,} bytes, at least {MIN_UNPACK_BYTES:,}), where "
                             "inspect_ai's logs unpack to a few times their size", _TOO_LARGE)
        self.left -= len(raw)
        return _json(raw, where)


def _members(data: bytes, source: str) -> tuple[zipfile.ZipFile, dict[str, zipfile.ZipInfo]]:
    """The ``.eval`` archive and its members by name (a name written twice: the last)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise InputError(source, f"is not a readable zip archive ({exc})", _AS_WRITTEN) from None
    members = {info.filename: info for info in archive.infolist()}
    if "header.json" not in members:
        problem = ("has no header.json: its eval has not finished" if "_journal/start.json" in
                   members else "is a zip archive without header.json, not an inspect_ai log")
        raise InputError(source, problem, f"give {_READ}")
    return archive, members


def _apart(members: list[zipfile.ZipInfo], data: bytes, source: str) -> None:
    """InputError unless the ``members`` of the archive ``data`` lie apart: each one's local
    header and compressed bytes end before the next one's header begins. Entries that share
    bytes (a zip bomb's way to unpack the same bytes many times over) are refused."""
    end, before = 0, None
    for info in sorted(members, key=lambda info: info.header_offset):
        where = f"{source}:{info.filename}"
        try:
            start = _data_start(info, data)
        except _DAMAGED as exc:
            raise InputError(where, f"cannot be unpacked ({exc})", _AS_WRITTEN) from None
        if before is not None and info.header_offset < end:
            raise InputError(where, f"shares bytes of the archive with the member "
                             f"{quoted(before.filename)}, as no zip program writes",
                             _AS_WRITTEN)
        end, before = start + info.compress_size, info


def _data_start(info: zipfile.ZipInfo, data: bytes) -> int:
    """Where the compressed bytes of the member ``info`` begin in the archive ``data``: after
    its local header, whose name and extra field are as long as the header says."""
    if info.header_offset < 0:
        raise zipfile.BadZipFile("bad local file header offset")
    signature, name_length, extra_length = _LOCAL_HEADER.unpack_from(data, info.header_offset)
    if signature != _ZIP:
        raise zipfile.BadZipFile("bad local file header")
    return info.header_offset + _LOCAL_HEADER.size + name_length + extra_length


def _unpacked(archive: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes, limit: int,
              where: str) -> bytes | None:
    """The bytes of the member ``info``, or None as soon as more than ``limit`` came out."""
    if info.compress_type == _ZSTANDARD:
        return _unzstd(info, data, limit, where)
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise InputError(where, f"is compressed with the zip method {info.compress_type}, not "
                         "DEFLATE or Zstandard as inspect_ai writes", _AS_WRITTEN)
    with archive.open(info) as member:
        return _at_most(member.read, limit)


def _at_most(read: Callable[[int], bytes], limit: int) -> bytes | None:
    """What ``read(n)`` (at most ``n`` bytes a call, empty at the end) gives until its end, or
    None once it has given more than ``limit`` bytes: never more than ``limit + 1`` are held."""
    parts, size = [], 0
    while size <= limit and (part := read(min(_CHUNK, limit + 1 - size))):
        parts.append(part)
        size += len(part)
    return b"".join(parts) if size <= limit else None


def _unzstd(info: zipfile.ZipInfo, data: bytes, limit: int, where: str) -> bytes | None:
    """A member compressed with Zstandard, as :func:`_unpacked` gives it, its size and CRC-32
    checked as zipfile checks them (zipfile reads Zstandard from Python 3.14 on, but unpacks
    each block of compressed bytes it reads whole, without a bound)."""
    start = _data_start(info, data)
    reader, damaged = _zstd_reader(data[start:start + info.compress_size], where)
    try:
        raw = _at_most(reader.read, limit)
    except damaged as exc:
        raise zipfile.BadZipFile(str(exc)) from None
    if raw is not None and (len(raw) != info.file_size or zlib.crc32(raw) != info.CRC):
        raise zipfile.BadZipFile("its size or CRC-32 is not the one recorded")
    return raw


def _zstd_reader(packed: bytes, where: str) -> tuple[Any, tuple[type[Exception], ...]]:
    """A reader of the Zstandard frames ``packed`` whose ``read(n)`` gives at most ``n`` bytes,
    and the errors it raises on damaged frames: Python's own (from 3.14 on, when built with
    Zstandard), else the package zstandard's."""
    try:
        zstd: Any = importlib.import_module("compression.zstd")
        return zstd.ZstdFile(io.BytesIO(packed)), (zstd.ZstdError, EOFError)
    except ImportError:
        pass
    try:
        zstandard: Any = importlib.import_module("zstandard")
    except ImportError:
        raise InputError(where, "is compressed with Zstandard, which Python reads from 3.14 "
                         "on, or with the package zstandard", "pip install zstandard, or "
                         "convert the log: inspect log convert --to json") from None
    reader = zstandard.ZstdDecompressor().stream_reader(packed, read_across_frames=True)
    return reader, (zstandard.ZstdError,)


def _case(sample: Any, source: str, where: str) -> Case:
    """One sample's query id, input, epoch and scores."""
    sample = require(sample, dict, source, where, "the sample", "an object")
    metadata = require(_given(sample, "metadata"), dict, source, where, "metadata",
                       "an object")
    epoch = require(sample.get("epoch"), int, source, where, "epoch", "a whole number")
    identifier = query_id(metadata.get("query_id"), source, where, _ID)
    scorers = require(_given(sample, "scores"), dict, source, where, "scores", "an object")
    scores: dict[str, float] = {}
    for scorer, score in scorers.items():
        score = require(score, dict, source, where, f"score {quoted(scorer)}", "an object")
        value = score.get("value")
        named = ({f"{scorer}.{key}": item for key, item in value.items()}
                 if isinstance(value, dict) else {scorer: value})
        for name, item in named.items():
            if name in scores:
                raise InputError(source, f"two scores of the sample are named {quoted(name)}",
                                 "rename one of the scorers", where)
            scores[name] = _float(item, source, where, name)
    if sample.get("invalidation") is not None:
        scores = dict.fromkeys(scores, math.nan)
    return Case(where, identifier, sample.get("input"), scores,
                sample_number(epoch, source, where))


def _given(sample: dict[str, Any], field: str) -> Any:
    """The sample's ``field``, an empty object when it is absent or null."""
    value = sample.get(field)
    return {} if value is None else value


def _float(value: Any, source: str, where: str, name: str) -> float:
    """A score value as inspect_ai's ``value_to_float`` reads it (see the module docstring);
    null and NaN are NaN."""
    if isinstance(value, str):
        if value in _LETTERS:
            return _LETTERS[value]
        if value.lower() in _WORDS:
            return _WORDS[value.lower()]
        try:
            found = float(value)
        except ValueError:
            found = math.nan
        if math.isfinite(found):
            return found
    elif value is None or isinstance(value, (int, float)):
        return score_value(value, name, source, where)
    raise InputError(source, f"score {quoted(name)} has the value {quoted(value)}, which is "
                     "not a number, a letter C, P, I or N, yes, no, true or false",
                     "score with values inspect_ai reads as numbers", where)
