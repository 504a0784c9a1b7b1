"""The native score files: JSON Lines and CSV, one line per query (or per query and sample).

JSON Lines: ``{"query_id": "q1", "scores": {"faithfulness": 0.82, "correct": 1}, "sample": 0}``
— ``query_id`` a non-empty string (or a whole number, read as its digits), ``scores`` an object of score name → number (``true`` and
``false`` read as 1 and 0, ``null`` as a failed judgement), ``sample`` optional; any other key
(the answer, the judge's reasons) is kept out of the way. CSV: a header with a ``query_id``
column, optionally a ``sample`` column, and one column per score; an empty cell (or ``null``,
``nan``) is a failed judgement. A line of a query already given with the same sample (or,
without sample numbers, a query given twice in a file that numbers its samples) is an error
at that line; lines of one query without ``sample`` are its samples in file order.
"""

from __future__ import annotations

import csv
import io
import math
import re

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.scores import TOOLS
from retrieval_gate.formats.scores.rows import (
    ScoreRows,
    check_samples,
    check_score_name,
    dense,
    finite,
    not_a_number,
    sample_number,
    score_id,
    score_text,
    score_value,
)
from retrieval_gate.formats.source import check_utf8

_FAILED = {"", "null", "nan", "none"}  # CSV cells of a failed judgement (case-insensitive)


def read_jsonl(data: bytes, name: str) -> ScoreRows:
    """The rows of a native JSON Lines score file; InputError naming the line of any fault."""
    from retrieval_gate.formats.jsonfmt import json_lines, path

    text = score_text(data, name)
    keys: list[str] = []
    places: list[int | str] = []
    samples: list[int | None] = []
    given: list[dict[str, float]] = []
    at_sample = path("sample")  # where in its line a bad sample number is
    for line, obj in json_lines(text, name):
        if "query_id" not in obj:
            raise InputError(name, 'the line has no "query_id": it is not a line of scores',
                             'write {"query_id": ..., "scores": {...}} on every line, or, for '
                             "a tool's output, name its format with --scores-format "
                             f"({', '.join(TOOLS)})", line)
        keys.append(score_id(obj.get("query_id"), name, line, "query_id"))
        scores = obj.get("scores")
        if not isinstance(scores, dict) or not scores:
            raise InputError(name, 'the line has no "scores" object', 'write "scores": '
                             '{"NAME": VALUE, ...} on every line', line)
        given.append({check_score_name(k, name, line): score_value(v, k, name, line)
                      for k, v in scores.items()})
        samples.append(sample_number(obj["sample"], name, f"{line} {at_sample}")
                       if "sample" in obj else None)
        places.append(line)
    return _rows(keys, places, samples, given, name, "native JSON Lines")


def read_csv(data: bytes, name: str) -> ScoreRows:
    """The rows of a native CSV score file; InputError naming the line and column of any
    fault."""
    check_utf8(data, name)
    text = str(data, "utf-8").removeprefix("\ufeff")
    bare = re.search("\r(?!\n)", text)
    if bare is not None:
        raise InputError(name, "a line ends with a bare carriage return (\\r)",
                         "save the file with \\n or \\r\\n line ends",
                         text.count("\n", 0, bare.start()) + 1)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None or "query_id" not in header:
            raise InputError(name, "the header has no query_id column", "start the CSV with "
                             "a header: query_id, then one column per score (and optionally "
                             "sample)", 1)
        names = [c for c in header if c not in ("query_id", "sample")]
        if len(set(header)) != len(header):
            raise InputError(name, "a column is named twice in the header",
                             "name each column once", 1)
        for column in names:
            check_score_name(column, name, 1)
        if not names:
            raise InputError(name, "the header names no score column",
                             "add one column per score after query_id", 1)
        where = {c: i for i, c in enumerate(header)}
        keys: list[str] = []
        places: list[int | str] = []
        samples: list[int | None] = []
        given: list[dict[str, float]] = []
        for cells in reader:
            line = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise InputError(name, f"the line has {len(cells)} cells, the header "
                                 f"{len(header)}", "give every line one cell per column", line)
            qid = cells[where["query_id"]]
            if not qid or "\x00" in qid:
                raise InputError(name, "query_id is empty", "give every line its query id",
                                 line)
            keys.append(qid)
            given.append({c: _cell(cells[where[c]], c, name, line) for c in names})
            samples.append(_sample_cell(cells[where["sample"]], name, line)
                           if "sample" in where else None)
            places.append(line)
    except csv.Error as exc:
        raise InputError(name, f"not valid CSV ({exc})", "quote cells that hold commas, "
                         "quotes or line ends", reader.line_num) from None
    return _rows(keys, places, samples, given, name, "native CSV")


def _cell(text: str, score: str, name: str, line: int) -> float:
    """A CSV cell's score: a finite number, true/false as 1/0, empty/null/nan as a failed
    judgement (NaN)."""
    word = text.strip().lower()
    if word in _FAILED:
        return math.nan
    if word in ("true", "false"):
        return float(word == "true")
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value) or "_" in text:
        raise not_a_number(text, score, name, line)
    return finite(value, score, name, line)


def _sample_cell(text: str, name: str, line: int) -> int | None:
    """A CSV sample number: ASCII digits (no sign, ``_`` or other scripts' digits); an empty
    cell is none."""
    if not text.strip():
        return None
    value: object = int(text) if re.fullmatch(r"[0-9]{1,7}", text.strip()) else text
    return sample_number(value, name, line)


def _rows(keys: list[str], places: list[int | str], samples: list[int | None],
          given: list[dict[str, float]], name: str, tool: str) -> ScoreRows:
    """The rows with every score name as a column (NaN where a line lacks it); InputError at
    the line of a repeated (query, sample), of a file that numbers some samples only, or of a
    line that gives few of the file's scores (:func:`~.rows.dense`)."""
    if not keys:
        raise InputError(name, "the file holds no score line", "write one line per query")
    check_samples(keys, samples, places, name, "line")
    names = tuple(sorted({n for scores in given for n in scores}))
    values = dense(given, names, places, name, "line")
    return ScoreRows(tuple(keys), False, tuple(places), tuple(samples), names, values, tool)
