"""What every evaluation tool's score reader does once it has the tool's cases: their keys,
their score names and the table of values (:class:`~.rows.ScoreRows`).

A reader turns each case (a row, a test case, a test, a sample) into a :class:`Case`: where it
is in the file, its explicit query id (checked with :func:`query_id`; None when it has none),
its input text as the file gives it, its sample number and its scores by the tool's own metric
names, each a finite float or NaN for a failed judgement (:func:`~.rows.score_value`).
:func:`score_rows` does the rest, the same way for every tool:

- Keys: by query id when every case has one; by input text when no case has one (each text
  must then be a non-empty string); an InputError naming the first case without one when some
  have one.
- Names: a tool's name that is already a score name (:data:`~.rows.SCORE_NAME`: a letter or
  digit, then up to 63 letters, digits, ``_``, ``.`` or ``-``) is kept as it is written. Any
  other is lower-cased, each run of characters other than ``a-z 0-9 _ . -`` becomes one
  ``_``, and ``_``, ``.`` and ``-`` at either end are dropped (``Answer Relevancy`` →
  ``answer_relevancy``, ``rouge_score(mode=fmeasure)`` → ``rouge_score_mode_fmeasure``,
  ``_private`` → ``private``). Two of a file's names that read the same, and a name that is
  still not a score name (nothing left, or longer than 64 characters), are refused. Names are
  sorted; a case without a value for a name has NaN.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.scores.rows import (
    SCORE_NAME,
    ScoreRows,
    check_samples,
    check_score_name,
    dense,
    quoted,
    score_id,
)

_OTHER = re.compile(r"[^a-z0-9_.-]+")


@dataclass(frozen=True)
class Case:
    """One case (one sample of one case) of a tool's output: ``place`` (a line number or a JSON
    path), ``query_id`` (None when it has none), ``text`` (the input text as the file gives it,
    None when absent; a key only when it is a non-empty string), ``scores`` (the tool's metric
    name → finite float or NaN) and ``sample`` (its sample number, None when the tool numbers
    none)."""

    place: int | str
    query_id: str | None
    text: object
    scores: dict[str, float] = field(default_factory=dict)
    sample: int | None = None


def score_name(raw: str) -> str:
    """``raw`` as a name usable after ``score:`` (see the module docstring), not checked."""
    if SCORE_NAME.fullmatch(raw):
        return raw
    return _OTHER.sub("_", raw.lower()).strip("_.-")


def query_id(value: object, source: str, where: int | str, id_field: str = "query_id"
             ) -> str | None:
    """A case's explicit query id, kept in the file as ``id_field``: None for None (absent),
    else ``value`` (see :func:`score_id`)."""
    return None if value is None else score_id(value, source, where, id_field)



def require(value: Any, kind: type | tuple[type, ...], source: str, where: int | str,
            what: str, expected: str) -> Any:
    """``value`` if it is of ``kind`` (a bool is not an int here); else InputError saying that
    ``what`` is not ``expected``."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool)):
        return value
    raise InputError(source, f"{what} {quoted(value)} is not {expected}",
                     "give the file as the tool wrote it", where)


def score_rows(cases: Sequence[Case], source: str, tool: str, what: str, id_field: str,
               text_field: str) -> ScoreRows:
    """The :class:`ScoreRows` of ``cases`` (in file order), read from ``source`` by ``tool``.
    For messages, ``what`` names a case ("row", "test case"), ``id_field`` and ``text_field``
    where the tool keeps its query id and its text ("var query_id", "input")."""
    if not cases:
        raise InputError(source, f"holds no {what}", f"give a file with at least one {what}")
    without = [case for case in cases if case.query_id is None]
    if without and len(without) < len(cases):
        raise InputError(source, f"this {what} has no {id_field} while others have one",
                         f"give every {what} a {id_field}, or none (then each is matched by "
                         "its question text)", without[0].place)
    by_text = bool(without)
    keys: list[str] = []
    for case in cases:
        key = case.text if by_text else case.query_id
        if not isinstance(key, str) or not key:
            raise InputError(source, f"this {what} has neither a {id_field} nor a question "
                             f"text: {text_field} {quoted(case.text)} is not a non-empty "
                             "string", f"give every {what} a {id_field}, or its question text "
                             f"as {text_field}", case.place)
        keys.append(key)
    names, columns = _names(cases, source)
    places = [case.place for case in cases]
    samples = [case.sample for case in cases]
    check_samples(keys, samples, places, source, what)
    given = [{names[columns[raw]]: value for raw, value in case.scores.items()}
             for case in cases]
    values = dense(given, names, places, source, what)
    return ScoreRows(keys=tuple(keys), by_text=by_text,
                     places=tuple(case.place for case in cases),
                     samples=tuple(case.sample for case in cases), names=names, values=values,
                     tool=tool)


def _names(cases: Sequence[Case], source: str) -> tuple[tuple[str, ...], dict[str, int]]:
    """The sorted score names of ``cases`` and each tool name's column among them; InputError
    for a name that is not a score name or two that read the same."""
    first: dict[str, str] = {}  # score name -> the tool's name it was read from
    read: set[str] = set()  # the tool's names read so far
    for case in cases:
        for raw in case.scores:
            if raw in read:
                continue
            read.add(raw)
            name = score_name(raw)
            if name in first:
                raise InputError(source, f"metrics {quoted(first[name])} and {quoted(raw)} "
                                 f"both read as score '{name}'", "give the metrics names that "
                                 "differ in more than case and punctuation", case.place)
            check_score_name(name, source, case.place, written=raw)
            first[name] = raw
    names = tuple(sorted(first))
    column = {name: i for i, name in enumerate(names)}
    return names, {raw: column[name] for name, raw in first.items()}
