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
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.untrusted import capped


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
    """``value`` if it is finite or NaN (a failed judgement); InputError for ±infinity."""
    if math.isinf(value):
        raise InputError(source, f"score '{name}' is {value}, not a finite number",
                         "write a finite score (empty or null for a failed judgement)", where)
    return value


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
