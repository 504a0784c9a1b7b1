"""Per-query scores as read from one file, before they meet the snapshot.

Every score reader — the native JSON Lines and CSV files and each evaluation tool's own output
(Ragas, DeepEval, promptfoo, inspect_ai) — returns :class:`ScoreRows`; matching the rows with
the snapshot's queries, averaging repeated samples and the policy for failed scores are one
step after it, the same for every reader.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.limits import MAX_SCORE
from retrieval_gate.core.untrusted import capped
from retrieval_gate.formats.source import Blob


@dataclass(frozen=True)
class ScoreRows:
    """The scores of one file, one row per line (or per case or sample of a tool's output).

    ``keys[i]`` is row ``i``'s query id, or, when ``by_text`` is true, the query's text as the
    tool recorded it (matched exactly, whole string, against the snapshot's query texts; a
    text that two queries share is refused there). ``places[i]`` is where the row is in the
    file, for error messages: a line number, or a JSON path / record name inside a document.
    ``samples[i]`` is the row's sample number when the file numbers its samples, else None
    (several rows of one query are then its samples in file order). ``names`` are the score
    names, sorted; ``values`` is ``len(keys) × len(names)`` float64 with NaN where the row
    has no value for a score: null, a judge's failure, an absent key or an empty cell. Every
    other value is finite. ``tool`` names the producer and the version of its format
    (``"ragas 0.2.15"``, ``"native"``).
    """

    keys: tuple[str, ...]
    by_text: bool
    places: tuple[int | str, ...]
    samples: tuple[int | None, ...]
    names: tuple[str, ...]
    values: np.ndarray
    tool: str


SCORE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A score's name, as written after ``score:`` in a measure: a letter or digit, then up to 63
letters, digits, ``_``, ``.`` or ``-``."""
MAX_SAMPLE = 1_000_000
"""The largest sample number a score file may give."""


def quoted(value: object) -> str:
    """A value of a file as a message shows it: JSON, at most 60 characters."""
    return capped(json.dumps(value, ensure_ascii=False), 60)


def check_score_name(name: object, source: str, where: int | str,
                     written: str | None = None) -> str:
    """``name`` if it is a valid score name (:data:`SCORE_NAME`); else InputError. ``written``
    is the tool's own name that ``name`` was made from, shown in the message when given."""
    if not isinstance(name, str) or not SCORE_NAME.fullmatch(name):
        shown = (f"{quoted(name)} is" if written is None
                 else f"{quoted(written)} reads as {quoted(name)},")
        raise InputError(source, f"score name {shown} not a letter or digit followed by at most "
                         "63 letters, digits, '_', '.' or '-'",
                         "rename the score (it is written after score: in a gate)", where)
    return name


def score_value(value: object, name: str, source: str, where: int | str) -> float:
    """A score's value as float64: a finite number, true/false as 1/0, null (or NaN) as NaN (a
    judge that failed); InputError for anything else (:func:`not_a_number`, :func:`finite`)."""
    if value is None:
        return math.nan
    if not isinstance(value, (bool, int, float)):
        raise not_a_number(value, name, source, where)
    return finite(as_float(value), name, source, where)


def as_float(value: float) -> float:
    """A JSON number (an int of any size, a float, a bool) as a float; ±infinity for an int
    beyond the range of float64."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def finite(value: float, name: str, source: str, where: int | str) -> float:
    """``value`` if it is NaN (a failed judgement) or finite within ±:data:`MAX_SCORE`;
    InputError otherwise."""
    if math.isinf(value):
        raise InputError(source, f"score '{name}' is {value}, not a finite number",
                         "write a finite score (empty or null for a failed judgement)", where)
    if abs(value) > MAX_SCORE:
        raise InputError(source, f"score '{name}' is {value!r}, beyond ±{MAX_SCORE:.0e}",
                         "write scores on a judge's scale (a probability, points, a count)",
                         where)
    return value


def score_text(data: bytes, name: str) -> str:
    """A JSON score file's text (strict UTF-8, a BOM dropped) with every bare ``NaN`` outside
    strings read as ``null``: Python's ``json.dumps`` and some tools write a failed score so,
    and a failed score is what it means. ``Infinity`` stays an error."""
    text = Blob(name, data).text()
    if "NaN" in text:
        text = _STRING_OR_NAN.sub(lambda m: "null" if m[0] == "NaN" else m[0], text)
    return text


_STRING_OR_NAN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|\bNaN\b')  # a whole string, or NaN


def check_samples(keys: Sequence[str], samples: Sequence[int | None],
                  places: Sequence[int | str], source: str, what: str) -> None:
    """InputError at the first ``what`` (a line, a case) without a sample number in a file that
    numbers its samples, or that repeats a (query, sample) pair."""
    numbered = {s is not None for s in samples}
    if len(numbered) > 1:
        raise InputError(source, f"this {what} has no sample number, others have one",
                         f"give every {what} a sample number, or none",
                         places[list(samples).index(None)])
    if True not in numbered:
        return
    seen: set[tuple[str, int | None]] = set()
    for key, sample, place in zip(keys, samples, places):
        if (key, sample) in seen:
            raise InputError(source, f"query {key} sample {sample} is given twice",
                             "give each sample of a query once", place)
        seen.add((key, sample))


def dense(given: Sequence[Mapping[str, float]], names: Sequence[str],
          places: Sequence[int | str], source: str, what: str) -> np.ndarray:
    """``len(given) × len(names)`` float64, each row's scores in its columns and NaN where a row
    has none. A file whose rows give few of its names each would make a matrix far larger than
    the file (10,000 lines of one name each: 10⁸ cells): refused at its sparsest row when the
    cells exceed four times the values given (and 65,536)."""
    filled = sum(len(row) for row in given)
    if len(given) * len(names) > 4 * filled + 65_536:
        sparse = min(range(len(given)), key=lambda r: len(given[r]))
        raise InputError(source, f"the file names {len(names)} scores, and this {what} gives "
                         f"{len(given[sparse])} of them", f"give every {what} the same scores "
                         "(null where the judge failed)", places[sparse])
    column = {name: j for j, name in enumerate(names)}
    values = np.full((len(given), len(names)), np.nan)
    if filled:
        rows = np.repeat(np.arange(len(given)), [len(row) for row in given])
        columns = np.fromiter((column[n] for row in given for n in row), np.int64, filled)
        values[rows, columns] = np.fromiter((v for row in given for v in row.values()),
                                            np.float64, filled)
    return values


def not_a_number(value: object, name: str, source: str, where: int | str) -> InputError:
    """The error for a score whose value (as the file writes it) is not a number."""
    return InputError(source, f"score '{name}' is {quoted(value)}, not a number",
                      "write the score as a number (empty or null for a failed judgement)",
                      where)


def sample_number(value: object, source: str, where: int | str) -> int:
    """A sample number: an integer in [0, :data:`MAX_SAMPLE`]; else InputError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SAMPLE:
        raise InputError(source, f"sample {quoted(value)} is not a whole number from 0 to "
                         f"{MAX_SAMPLE}", "number the samples of a query 0, 1, 2, ...", where)
    return value


def score_id(value: object, source: str, where: int | str, id_field: str = "query_id") -> str:
    """A query id as a score file gives it: a non-empty string of at most
    :data:`~retrieval_gate.core.limits.MAX_ID_BYTES` bytes, or a whole number — tools write
    numeric ids as JSON numbers (``"query_id": 1``) — read as its decimal digits (``"1"``; a
    bool is not one); InputError otherwise."""
    from retrieval_gate.formats.jsonfmt import check_id

    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # its digits, held to an id's length like any id
    return check_id(value, source, where, id_field)
