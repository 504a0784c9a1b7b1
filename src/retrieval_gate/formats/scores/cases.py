"""What every evaluation tool's score reader does once it has the tool's cases: their keys,
their score names and the table of values (:class:`~.rows.ScoreRows`).

A reader turns each case (a row, a test case, a sample) into a :class:`Case`: where it is in
the file, its explicit ``query_id`` (None when it has none), its input text (None when the tool
records none or it is not a string) and its scores by the tool's own metric names, each a
finite float or NaN for a failed judgement. :func:`score_rows` does the rest, the same way for
every tool:

- Keys: by ``query_id`` when every case has one; by input text when no case has one; an
  InputError naming the first case without one when some have one.
- Names: a tool's name made only of ``A-Z a-z 0-9 _ . -`` is kept as it is; any other is
  lower-cased and each run of other characters becomes one ``_``, with none at either end
  (``Answer Relevancy`` → ``answer_relevancy``, ``rouge_score(mode=fmeasure)`` →
  ``rouge_score_mode_fmeasure``). Two of a file's names that read the same, or a name with no
  letter or digit, are refused. Names are sorted; a case without a value for a name has NaN.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.untrusted import capped
from retrieval_gate.formats.jsonfmt import check_id
from retrieval_gate.formats.scores.rows import ScoreRows

_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_OTHER = re.compile(r"[^a-z0-9_.-]+")


@dataclass(frozen=True)
class Case:
    """One case of a tool's output: ``place`` (a line number or a JSON path), ``query_id``
    (checked with :func:`query_id`), ``text`` (the input text, None when there is no usable
    one) and ``scores`` (the tool's metric name → finite float or NaN)."""

    place: int | str
    query_id: str | None
    text: str | None
    scores: Mapping[str, float]


def score_name(raw: str) -> str:
    """The name a tool's metric has after ``score:`` (see the module docstring); "" when it
    has no character that can be kept."""
    if _NAME.fullmatch(raw):
        return raw
    return _OTHER.sub("_", raw.lower()).strip("_")


def query_id(value: object, source: str, where: int | str) -> str | None:
    """A case's explicit query id: None for None (absent), else ``value`` if it is a non-empty
    string of at most :data:`~retrieval_gate.core.limits.MAX_ID_BYTES` bytes; InputError
    otherwise."""
    return None if value is None else check_id(value, source, where, "query_id")


def quoted(value: object) -> str:
    """A value of the file as a message shows it: JSON, at most 60 characters."""
    return capped(json.dumps(value, ensure_ascii=False), 60)


def not_a_number(source: str, metric: str, value: object, where: int | str) -> InputError:
    """The error for a score value that is not a number."""
    return InputError(source, f"score '{metric}' is {quoted(value)}, not a number",
                      "write the score as a number (empty or null for a failed judgement)",
                      where)


def as_float(value: float) -> float:
    """A JSON number (an int of any size, a float, a bool) as a float; ±infinity for an int
    beyond the range of float64."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def finite(value: float, source: str, metric: str, where: int | str) -> float:
    """``value`` if it is finite or NaN (a failed judgement); InputError for ±infinity."""
    if math.isinf(value):
        raise InputError(source, f"score '{metric}' is {value}, not a finite number",
                         "write a finite score (empty or null for a failed judgement)", where)
    return value


def score_rows(cases: Sequence[Case], source: str, tool: str, what: str,
               no_text: Callable[[Case], InputError]) -> ScoreRows:
    """The :class:`ScoreRows` of ``cases`` (in file order), read from ``source`` by ``tool``.
    ``what`` names a case in messages ("row", "test case"); ``no_text`` is the error for a
    case that has neither a query id nor a usable text when the cases are keyed by text."""
    if not cases:
        raise InputError(source, f"holds no {what}", f"give a file with at least one {what}")
    without = [case for case in cases if case.query_id is None]
    if without and len(without) < len(cases):
        raise InputError(source, f"this {what} has no query_id while others have one",
                         f"give every {what} a query_id, or none (then each is matched by "
                         "its question text)", without[0].place)
    by_text = bool(without)
    keys: list[str] = []
    for case in cases:
        key = case.text if by_text else case.query_id
        if key is None:
            raise no_text(case)
        keys.append(key)
    names, columns = _names(cases, source)
    values = np.full((len(cases), len(names)), np.nan)
    for row, case in enumerate(cases):
        for raw, value in case.scores.items():
            values[row, columns[raw]] = value
    return ScoreRows(keys=tuple(keys), by_text=by_text,
                     places=tuple(case.place for case in cases),
                     samples=(None,) * len(cases), names=names, values=values, tool=tool)


def _names(cases: Sequence[Case], source: str) -> tuple[tuple[str, ...], dict[str, int]]:
    """The sorted score names of ``cases`` and each raw name's column among them."""
    first: dict[str, tuple[str, int | str]] = {}  # score name -> (raw name, where first seen)
    for case in cases:
        for raw in case.scores:
            name = score_name(raw)
            seen = first.setdefault(name, (raw, case.place))
            if not name:
                raise InputError(source, f"metric name {quoted(raw)} has no letter or digit",
                                 "give the metric a name with letters or digits", case.place)
            if seen[0] != raw:
                raise InputError(source, f"metrics {quoted(seen[0])} and {quoted(raw)} both "
                                 f"read as score '{name}'", "give the metrics names that "
                                 "differ in more than case and punctuation", case.place)
    names = tuple(sorted(first))
    column = {name: i for i, name in enumerate(names)}
    return names, {raw: column[name] for name, (raw, _) in first.items()}
