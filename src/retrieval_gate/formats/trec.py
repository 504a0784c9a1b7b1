"""TREC text formats: runs (``qid Q0 docid rank score tag``) and qrels (``qid iter docid grade``).

Parsing follows trec_eval 10: fields are separated by any white space; fields after the ones
the format names are ignored; a line whose first non-blank character is ``#`` is a comment (a
``#`` elsewhere is part of an id); blank lines are skipped; the rank column and the ``iter``
column are ignored. Unlike trec_eval, a score that is not a plain decimal or scientific
number (``1_000``, ``0x1p3``, ``nan``, ``inf``) and a grade that is not an integer in the
documented range are errors instead of silent zeros or overflows; so are a carriage return that
does not end a line and an id longer than the documented limit.

The tokenizer is vectorised with numpy and works through the file in chunks of a few MiB, so a
7-million-line run is parsed without a Python loop per line and in bounded memory; item ids are
copied side by side into one buffer, so time and memory stay linear in the file's size however
long one id is.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.limits import MAX_GRADE, MAX_ID_BYTES, MIN_GRADE
from retrieval_gate.core.model import Qrels, RunRows
from retrieval_gate.core.ranking import hash_spans, same_as_previous
from retrieval_gate.formats.source import BOM, check_utf8, release_pages

_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b" \t\n\r\x0b\x0c")] = True
_NUMBER_CHARS = np.zeros(256, dtype=bool)
_NUMBER_CHARS[list(b"0123456789.+-eE\x00")] = True  # NUL: the padding of an S array
_CHUNK = 1 << 23
_PARSE_CHUNK = 1 << 20  # scores parsed at a time
_SHORT_NUMBER = 32  # longer score tokens are parsed one by one (rare; keeps arrays narrow)
_RUN_FIX = "a TREC run line is 'qid Q0 docid rank score tag'"
_QRELS_FIX = "a TREC qrels line is 'qid iter docid grade'"
_INTEGER = re.compile(rb"[+-]?[0-9]+")
_NUMBER = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FINITE = re.compile(rb"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
CR_PROBLEM = "a carriage return (\\r) that does not end a line"
CR_FIX = ("end lines with \\n or \\r\\n (convert old Mac line ends with: tr '\\r' '\\n' "
          "< FILE)")


def byte_ranges(data: bytes | mmap.mmap, size: int = _CHUNK, start: int = 0):
    """(start, end) byte ranges of about ``size`` bytes that end at a line break."""
    while start < len(data):
        end = min(start + size, len(data))
        if end < len(data):
            newline = data.find(b"\n", end - 1)
            end = len(data) if newline < 0 else newline + 1
        yield start, end
        start = end


def gather_bytes(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The byte strings buf[starts[i]:ends[i]] as a numpy ``S`` array as wide as the longest.

    Strings of similar lengths are copied one byte position at a time over all of them;
    strings of very unequal lengths byte by byte, so the time is linear in the size of the
    result either way."""
    lengths = ends - starts
    n = len(lengths)
    if not n:
        return np.zeros(0, dtype="S1")
    width, shortest, total = max(int(lengths.max()), 1), int(lengths.min()), int(lengths.sum())
    out = np.zeros((n, width), dtype=np.uint8)
    if n * width <= 2 * total + n:
        for j in range(width):
            if j < shortest:
                out[:, j] = buf[starts + j]
            else:
                rows = np.flatnonzero(lengths > j)
                out[rows, j] = buf[starts[rows] + j]
    else:
        row = np.repeat(np.arange(n), lengths)
        position = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out.reshape(-1)[row * width + position] = buf[starts[row] + position]
    return out.view(f"S{width}").ravel()


def compact(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """The byte strings buf[starts[i]:ends[i]] side by side: (data, offsets), string ``i``
    being ``data[offsets[i]:offsets[i + 1]]``. Linear in their total length."""
    lengths = ends - starts
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(total)
    return buf[index], offsets


@dataclass(frozen=True, eq=False)
class ByteSpans:
    """Item ids as one byte buffer: id ``i`` is ``data[offsets[i]:offsets[i + 1]]``, with its
    hash computed when read (:class:`~retrieval_gate.core.model.ItemIds`). Memory is linear in the
    ids' total length, however unequal their lengths."""

    data: np.ndarray
    offsets: np.ndarray
    row_hashes: np.ndarray

    def __len__(self) -> int:
        return len(self.row_hashes)

    def hashes(self) -> np.ndarray:
        return self.row_hashes

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The ids of ``rows`` as a numpy ``S`` array, without a Python object per value."""
        rows = np.asarray(rows)
        return gather_bytes(self.data, self.offsets[rows], self.offsets[rows + 1])


@dataclass(frozen=True, eq=False)
class Tokens:
    """The requested fields of the data lines of one region of whole lines: ``buf`` the
    region's bytes, ``starts[f]``/``ends[f]`` the byte range of field ``f`` in each data line
    (relative to ``buf``), ``offset`` the region's position in the file and ``lines`` the
    1-based line number of each data line."""

    buf: np.ndarray
    offset: int
    starts: list[np.ndarray]
    ends: list[np.ndarray]
    lines: np.ndarray


def tokenized(data: bytes | mmap.mmap, name: str, fields: tuple[int, ...], needed: int,
              fix: str, ids: tuple[int, ...]) -> Iterator[Tokens]:
    """Split a whitespace-separated text file, a region of a few MiB at a time, into the
    requested ``fields`` of every data line (a leading UTF-8 BOM is skipped). The pages of a
    memory-mapped file are released once a region has been used.

    InputError for the file not being UTF-8, a NUL byte, a carriage return that does not end a
    line (old Mac line ends would otherwise read as one long line), a data line with fewer than
    ``needed`` fields, a field listed in ``ids`` longer than
    :data:`~retrieval_gate.core.limits.MAX_ID_BYTES`, or no data line at all. Every check
    is vectorised: linear in the file's size."""
    check_utf8(data, name)
    first_line = 1
    found = False
    for start, end in byte_ranges(data, start=len(BOM) if data[: len(BOM)] == BOM else 0):
        buf = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
        newlines = buf == 10
        n_lines = int(newlines.sum()) + (0 if buf[-1] == 10 else 1)
        _refuse_byte(buf == 0, newlines, first_line, name, "contains a NUL byte",
                     "remove it; ids are text")
        carriage = buf == 13
        carriage[:-1] &= buf[1:] != 10
        carriage[-1] = False  # the file's last byte (a region ends at a line feed or the end)
        _refuse_byte(carriage, newlines, first_line, name, CR_PROBLEM, CR_FIX)
        padded = np.ones(len(buf) + 2, dtype=np.int8)
        padded[1:-1] = _WHITESPACE[buf]
        edges = np.diff(padded)
        token_starts = np.flatnonzero(edges == -1)
        token_ends = np.flatnonzero(edges == 1)
        token_line = np.cumsum(newlines, dtype=np.int32)[token_starts]
        counts = np.bincount(token_line, minlength=n_lines)
        first_token = np.cumsum(counts) - counts
        has_tokens = np.flatnonzero(counts)
        comment = buf[token_starts[first_token[has_tokens]]] == ord("#")
        data_lines = has_tokens[~comment]
        short = data_lines[counts[data_lines] < needed]
        if len(short):
            line = int(short[0])
            raise InputError(name, f"{counts[line]} field(s), {needed} needed", fix,
                             first_line + line)
        index = [first_token[data_lines] + field for field in fields]
        starts = [token_starts[i] for i in index]
        ends = [token_ends[i] for i in index]
        for field, s, e in zip(fields, starts, ends):
            if field in ids:
                too_long = np.flatnonzero(e - s > MAX_ID_BYTES)
                if len(too_long):
                    row = int(too_long[0])
                    raise InputError(name, f"an id of {int(e[row] - s[row])} bytes is longer "
                                     f"than {MAX_ID_BYTES} bytes", "shorten the ids (or map "
                                     "long ids to short ones)", first_line + int(data_lines[row]))
        found = found or bool(len(data_lines))
        yield Tokens(buf, start, starts, ends, data_lines + first_line)
        release_pages(data, start, end)
        first_line += n_lines - (0 if buf[-1] == 10 else 1)
    if not found:
        raise InputError(name, "has no data lines, only comments", "give a file with content")


def _refuse_byte(bad: np.ndarray, newlines: np.ndarray, first_line: int, name: str,
                 problem: str, fix: str) -> None:
    if bad.any():
        line = first_line + int(newlines[: int(np.argmax(bad))].sum())
        raise InputError(name, problem, fix, line)


def field_values(data: bytes | mmap.mmap, tokens: Tokens, field: int) -> list[bytes]:
    """The values of one requested field (its index in ``fields``) as Python byte strings."""
    offset = tokens.offset
    return [data[offset + s : offset + e] for s, e in zip(tokens.starts[field].tolist(),
                                                           tokens.ends[field].tolist())]


_POWERS_OF_TEN = np.array([float(10**i) for i in range(23)])


def _parse_plain_decimals(texts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised parse of ``[+-]digits[.digits]`` with at most 15 digits: (values, parsed).

    With at most 15 digits the digits form an integer m < 2^53 and the value is m / 10^f with
    f ≤ 15, a quotient of two exactly representable numbers, which IEEE division rounds
    correctly: the result equals strtod's. Other spellings (exponents, long mantissas, nan)
    are left for the general parser (``parsed`` False)."""
    n, width = len(texts), texts.dtype.itemsize
    chars = texts.view(np.uint8).reshape(n, width)
    sign = (chars[:, 0] == ord("-")) | (chars[:, 0] == ord("+"))
    mantissa = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int64)
    fraction = np.zeros(n, dtype=np.int64)
    dot = np.zeros(n, dtype=bool)
    parsed = np.ones(n, dtype=bool)
    for j in range(width):
        c = chars[:, j]
        active = c != 0
        if j == 0:
            active &= ~sign
        is_digit = active & (c >= ord("0")) & (c <= ord("9"))
        is_dot = active & (c == ord("."))
        parsed &= ~(active & ~is_digit & ~is_dot) & ~(is_dot & dot)
        mantissa = np.where(is_digit, mantissa * 10 + (c.astype(np.int64) - ord("0")), mantissa)
        digits += is_digit
        fraction += is_digit & dot
        dot |= is_dot
    parsed &= (digits >= 1) & (digits <= 15)
    values = mantissa / _POWERS_OF_TEN[np.minimum(fraction, 22)]
    return np.where(chars[:, 0] == ord("-"), -values, values), parsed


def _not_a_number(text: bytes, name: str, line: int) -> InputError:
    shown = text.decode()[:40] + ("…" if len(text) > 40 else "")
    return InputError(name, f"score '{shown}' is not a number", "write the retrieval score as "
                      "a decimal number such as 12.5, -3 or 1.5e-3", line)


def _parse_number(text: bytes, name: str, line: int) -> float:
    """One score token: ``[+-]digits[.digits][e[+-]digits]`` (also ``.5`` and ``5.``),
    correctly rounded; no underscore, hexadecimal, ``inf`` or ``nan`` spelling."""
    if _NON_FINITE.fullmatch(text):
        raise InputError(name, f"score '{text.decode()}' is not finite",
                         "write a finite retrieval score (no NaN or infinity)", line)
    if not _NUMBER.fullmatch(text):
        raise _not_a_number(text, name, line)
    return float(text)


def parse_scores(texts: np.ndarray, lines: np.ndarray, name: str) -> np.ndarray:
    """Scores as float64 (correctly rounded, as strtod): each must be a plain decimal or
    scientific number (:func:`_parse_number`); a NaN or infinite score is an InputError. Plain
    decimals are parsed a million at a time, which bounds the memory of the parser's per-digit
    temporaries; other spellings are checked character by character, vectorised."""
    scores = np.empty(len(texts), dtype=np.float64)
    parsed = np.empty(len(texts), dtype=bool)
    for start in range(0, len(texts), _PARSE_CHUNK):
        part = slice(start, start + _PARSE_CHUNK)
        scores[part], parsed[part] = _parse_plain_decimals(texts[part])
    rest = np.flatnonzero(~parsed)
    chars = texts[rest].view(np.uint8).reshape(len(rest), texts.dtype.itemsize)
    try:
        if not _NUMBER_CHARS[chars].all():
            raise ValueError
        scores[rest] = texts[rest].astype(np.float64)
    except ValueError:
        for text, line in zip(texts[rest].tolist(), lines[rest].tolist()):
            _parse_number(text, name, line)
        raise
    _require_finite(scores, texts, lines, name)
    return scores


def _require_finite(scores: np.ndarray, texts: np.ndarray, lines: np.ndarray, name: str
                    ) -> None:
    bad = np.flatnonzero(~np.isfinite(scores))
    if len(bad):
        i = int(bad[0])
        raise InputError(name, f"score '{texts[i].decode()[:40]}' is not finite (beyond "
                         "float64)",
                         "write a finite retrieval score (no NaN or infinity)", int(lines[i]))


def _scores(data: bytes | mmap.mmap, tokens: Tokens, field: int, name: str) -> np.ndarray:
    """The scores of a region: short tokens parsed vectorised, long ones one by one."""
    starts, ends = tokens.starts[field], tokens.ends[field]
    long = ends - starts > _SHORT_NUMBER
    scores = np.empty(len(starts), dtype=np.float64)
    short = np.flatnonzero(~long)
    scores[short] = parse_scores(gather_bytes(tokens.buf, starts[short], ends[short]),
                                 tokens.lines[short], name)
    for row in np.flatnonzero(long).tolist():
        text = data[tokens.offset + int(starts[row]) : tokens.offset + int(ends[row])]
        scores[row] = _parse_number(text, name, int(tokens.lines[row]))
        _require_finite(scores[row : row + 1], np.array([text]), tokens.lines[row : row + 1],
                        name)
    return scores


def _query_codes(tokens: Tokens, codes: dict[bytes, int]) -> np.ndarray:
    """Each data line's query code (``codes`` maps query id → code, in order of first
    appearance, and grows). Runs list a query's lines together, so the work is per block of
    equal ids, not per line."""
    starts, ends = tokens.starts[0], tokens.ends[0]
    firsts = np.flatnonzero(~same_as_previous(tokens.buf, starts, ends - starts))
    block = [codes.setdefault(tokens.buf[s:e].tobytes(), len(codes))
             for s, e in zip(starts[firsts].tolist(), ends[firsts].tolist())]
    return np.repeat(np.array(block, dtype=np.int64),
                     np.diff(np.append(firsts, len(starts))))


def read_trec_run(data: bytes | mmap.mmap, name: str) -> RunRows:
    """A TREC run: ``qid Q0 docid rank score tag [ignored ...]``. Item ids are kept side by
    side in one buffer (:class:`ByteSpans`) and hashed from there.

    The per-row arrays are allocated once for the most data lines the file can hold (a data
    line has at least 12 bytes with its line break; ids take fewer bytes than the file) and
    filled region by region: pages never written never become resident, and nothing is
    concatenated at the end."""
    capacity = len(data) // 11 + 1
    qcodes = np.empty(capacity, dtype=np.int64)
    scores = np.empty(capacity, dtype=np.float64)
    hashes = np.empty(capacity, dtype=np.uint64)
    lines = np.empty(capacity, dtype=np.int64)
    offsets = np.zeros(capacity + 1, dtype=np.int64)
    ids = np.empty(len(data), dtype=np.uint8)
    codes: dict[bytes, int] = {}
    n = 0
    for tokens in tokenized(data, name, (0, 2, 4), 6, _RUN_FIX, ids=(0, 2)):
        rows = slice(n, n + len(tokens.lines))
        qcodes[rows] = _query_codes(tokens, codes)
        chunk_ids, chunk_offsets = compact(tokens.buf, tokens.starts[1], tokens.ends[1])
        first = int(offsets[n])
        ids[first : first + len(chunk_ids)] = chunk_ids
        offsets[n + 1 : rows.stop + 1] = chunk_offsets[1:] + first
        hashes[rows] = hash_spans(chunk_ids, chunk_offsets[:-1], np.diff(chunk_offsets))
        scores[rows] = _scores(data, tokens, 2, name)
        lines[rows] = tokens.lines
        n = rows.stop
    items = ByteSpans(ids[: int(offsets[n])], offsets[: n + 1], hashes[:n])
    query_ids = tuple(q.decode() for q in codes)
    return RunRows(name, query_ids, qcodes[:n], items, scores[:n], lines[:n])


def read_trec_qrels(data: bytes | mmap.mmap, name: str) -> Qrels:
    """TREC qrels: ``qid iter docid grade [ignored ...]``; grades are integers in
    [MIN_GRADE, MAX_GRADE]. A (query, item) pair judged twice with different grades is an
    error; an exact repeat is accepted."""
    judgments: dict[str, dict[str, int]] = {}
    first_lines: dict[str, int | str] = {}
    for tokens in tokenized(data, name, (0, 2, 3), 4, _QRELS_FIX, ids=(0, 2)):
        for qid, item, grade, line in zip(field_values(data, tokens, 0),
                                          field_values(data, tokens, 1),
                                          field_values(data, tokens, 2),
                                          tokens.lines.tolist()):
            if not _INTEGER.fullmatch(grade):
                shown = grade.decode()[:40]
                raise InputError(name, f"grade '{shown}' is not an integer", "write relevance "
                                 "grades as whole numbers (e.g. 0, 1, 2, 3)", line)
            value = int(grade) if len(grade) <= 8 else None
            if value is None or not MIN_GRADE <= value <= MAX_GRADE:
                raise InputError(name, grade_range_problem(grade.decode()), GRADE_RANGE_FIX,
                                 line)
            add_judgment(judgments, first_lines, qid.decode(), item.decode(), value, name,
                         line)
    return Qrels(name, judgments, first_lines)


GRADE_RANGE_FIX = "write relevance grades as small whole numbers (e.g. 0, 1, 2, 3)"


def grade_range_problem(text: str) -> str:
    """The problem of a grade outside [MIN_GRADE, MAX_GRADE] (long ones shortened)."""
    shown = text if len(text) <= 24 else f"{text[:12]}… ({len(text)} characters)"
    return f"grade {shown} is outside {MIN_GRADE}..{MAX_GRADE}"


def add_judgment(judgments: dict[str, dict[str, int]], first_lines: dict[str, int | str],
                 qid: str, item: str, grade: int, name: str, where: int | str) -> None:
    """Record one judgment, refusing a conflicting repeat of the same (query, item)."""
    per_query = judgments.setdefault(qid, {})
    first_lines.setdefault(qid, where)
    previous = per_query.setdefault(item, grade)
    if previous != grade:
        raise InputError(name, f"query '{qid}', item '{item}' is judged {previous} and again "
                         f"{grade}", "keep one judgment per (query, item)", where)
