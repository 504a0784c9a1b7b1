"""TREC text formats: runs (``qid Q0 docid rank score tag``) and qrels (``qid iter docid grade``).

Parsing follows trec_eval 10: fields are separated by any white space; fields after the ones
the format names are ignored; a line whose first non-blank character is ``#`` is a comment (a
``#`` elsewhere is part of an id); blank lines are skipped; the rank column and the ``iter``
column are ignored. Unlike trec_eval, a non-numeric or non-finite score and a non-integer
grade are errors instead of silent zeros.

The tokenizer is vectorised with numpy and works through the file in chunks of a few MiB, so a
7-million-line run is parsed without a Python loop per line and in bounded memory.
"""

from __future__ import annotations

import mmap
import re

import numpy as np

from retrieval_gate.errors import InputError
from retrieval_gate.formats.source import check_utf8
from retrieval_gate.model import Qrels, RunRows

_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b" \t\n\r\x0b\x0c")] = True
_CHUNK = 1 << 23
_PARSE_CHUNK = 1 << 20  # scores parsed at a time
_RUN_FIX = "a TREC run line is 'qid Q0 docid rank score tag'"
_QRELS_FIX = "a TREC qrels line is 'qid iter docid grade'"
_INTEGER = re.compile(rb"[+-]?[0-9]+")


def byte_ranges(data: bytes | mmap.mmap, size: int = _CHUNK):
    """(start, end) byte ranges of about ``size`` bytes that end at a line break."""
    start = 0
    while start < len(data):
        end = min(start + size, len(data))
        if end < len(data):
            newline = data.find(b"\n", end - 1)
            end = len(data) if newline < 0 else newline + 1
        yield start, end
        start = end


def gather_bytes(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The byte strings buf[starts[i]:ends[i]] as a numpy ``S`` array (vectorised, one pass
    per byte position; positions every string has need no mask)."""
    lengths = ends - starts
    if not len(lengths):
        return np.zeros(0, dtype="S1")
    width, shortest = max(int(lengths.max()), 1), int(lengths.min())
    out = np.zeros((len(starts), width), dtype=np.uint8)
    for j in range(width):
        if j < shortest:
            out[:, j] = buf[starts + j]
        else:
            rows = np.flatnonzero(lengths > j)
            out[rows, j] = buf[starts[rows] + j]
    return out.view(f"S{width}").ravel()


def read_fields(data: bytes, name: str, fields: tuple[int, ...], needed: int, fix: str
                ) -> tuple[list[np.ndarray], np.ndarray]:
    """Split a whitespace-separated text file into the requested fields of every data line.

    Returns one ``S`` array per index in ``fields`` and the 1-based line number of each data
    line. A data line with fewer than ``needed`` fields, or a NUL byte, is an InputError.
    """
    check_utf8(data, name)
    columns: list[list[np.ndarray]] = [[] for _ in fields]
    line_numbers: list[np.ndarray] = []
    first_line = 1
    for start, end in byte_ranges(data):
        buf = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
        newlines = buf == 10
        n_lines = int(newlines.sum()) + (0 if buf[-1] == 10 else 1)
        if (buf == 0).any():
            line = first_line + int(newlines[: int(np.argmax(buf == 0))].sum())
            raise InputError(name, "contains a NUL byte", "remove it; ids are text", line)
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
        for column, field in zip(columns, fields):
            index = first_token[data_lines] + field
            column.append(gather_bytes(buf, token_starts[index], token_ends[index]))
        line_numbers.append(data_lines + first_line)
        first_line += n_lines - (0 if buf[-1] == 10 else 1)
    if not line_numbers or not sum(len(x) for x in line_numbers):
        raise InputError(name, "has no data lines, only comments", "give a file with content")
    return [np.concatenate(c) for c in columns], np.concatenate(line_numbers)


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


def parse_scores(texts: np.ndarray, lines: np.ndarray, name: str) -> np.ndarray:
    """Scores as float64 (correctly rounded, as strtod); a non-numeric, NaN or infinite score
    is an InputError. Plain decimals are parsed a million at a time, which bounds the memory
    of the parser's per-digit temporaries."""
    scores = np.empty(len(texts), dtype=np.float64)
    parsed = np.empty(len(texts), dtype=bool)
    for start in range(0, len(texts), _PARSE_CHUNK):
        part = slice(start, start + _PARSE_CHUNK)
        scores[part], parsed[part] = _parse_plain_decimals(texts[part])
    rest = np.flatnonzero(~parsed)
    try:
        scores[rest] = texts[rest].astype(np.float64)
    except ValueError:
        for text, line in zip(texts[rest].tolist(), lines[rest].tolist()):
            try:
                float(text)
            except ValueError:
                raise InputError(name, f"score '{text.decode()}' is not a number",
                                 "write the retrieval score as a decimal number", line) from None
        raise
    bad = np.flatnonzero(~np.isfinite(scores))
    if len(bad):
        i = int(bad[0])
        raise InputError(name, f"score '{texts[i].decode()}' is not finite",
                         "write a finite retrieval score (no NaN or infinity)", int(lines[i]))
    return scores


def query_codes(qids: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """Distinct query ids (first-appearance order) and each row's index into them.

    Runs list a query's lines together, so the work is per block of equal ids, not per row."""
    if not len(qids):
        return (), np.zeros(0, dtype=np.int64)
    block_starts = np.flatnonzero(np.concatenate(([True], qids[1:] != qids[:-1])))
    codes: dict[bytes, int] = {}
    block_codes = [codes.setdefault(q, len(codes)) for q in qids[block_starts].tolist()]
    lengths = np.diff(np.append(block_starts, len(qids)))
    return tuple(q.decode() for q in codes), np.repeat(np.array(block_codes), lengths)


def read_trec_run(data: bytes, name: str) -> RunRows:
    """A TREC run: ``qid Q0 docid rank score tag [ignored ...]``."""
    (qids, items, score_texts), lines = read_fields(data, name, (0, 2, 4), 6, _RUN_FIX)
    scores = parse_scores(score_texts, lines, name)
    query_ids, qcodes = query_codes(qids)
    return RunRows(name, query_ids, qcodes, items, scores, lines)


def read_trec_qrels(data: bytes, name: str) -> Qrels:
    """TREC qrels: ``qid iter docid grade [ignored ...]``; grades are integers. A (query, item)
    pair judged twice with different grades is an error; an exact repeat is accepted."""
    (qids, items, grades), lines = read_fields(data, name, (0, 2, 3), 4, _QRELS_FIX)
    judgments: dict[str, dict[str, int]] = {}
    first_lines: dict[str, int | str] = {}
    for qid, item, grade, line in zip(qids.tolist(), items.tolist(), grades.tolist(),
                                      lines.tolist()):
        if not _INTEGER.fullmatch(grade):
            raise InputError(name, f"grade '{grade.decode()}' is not an integer",
                             "write relevance grades as whole numbers (e.g. 0, 1, 2, 3)", line)
        add_judgment(judgments, first_lines, qid.decode(), item.decode(), int(grade), name, line)
    return Qrels(name, judgments, first_lines)


def add_judgment(judgments: dict[str, dict[str, int]], first_lines: dict[str, int | str],
                 qid: str, item: str, grade: int, name: str, where: int | str) -> None:
    """Record one judgment, refusing a conflicting repeat of the same (query, item)."""
    per_query = judgments.setdefault(qid, {})
    first_lines.setdefault(qid, where)
    previous = per_query.setdefault(item, grade)
    if previous != grade:
        raise InputError(name, f"query '{qid}', item '{item}' is judged {previous} and again "
                         f"{grade}", "keep one judgment per (query, item)", where)
