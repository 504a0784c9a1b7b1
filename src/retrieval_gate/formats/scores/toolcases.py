"""What the readers of evaluation tools' outputs share: the cases read from a tool's file, the
query key of each, score names usable after ``score:``, and the :class:`ScoreRows` they make.

Query key. A case names its query by an explicit ``query_id`` field (a promptfoo var, an
inspect_ai metadata field). When every case has one, the rows are keyed by id; when none has,
by the case's text (``by_text``); a file where some cases have one and others not is refused,
naming the first case without it.

Score names. A tool's name that is already a score name
(:data:`~retrieval_gate.formats.scores.rows.SCORE_NAME`: a letter or digit, then up to 63
letters, digits, ``_``, ``.`` or ``-``) is kept as it is written. Any other name is
lower-cased, each run of characters other than ``a-z 0-9 _ . -`` becomes ``_``, and ``_``,
``.`` and ``-`` at either end are dropped: ``Mentions finally`` is ``mentions_finally``,
``Answer (GEval)`` is ``answer_geval``. Two names that become the same, and a name that is
still not a score name (nothing left, or longer than 64 characters), are refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.jsonfmt import check_id
from retrieval_gate.formats.scores.rows import SCORE_NAME, ScoreRows

_OTHER = re.compile(r"[^a-z0-9_.-]+")


def score_name(raw: str) -> str:
    """``raw`` as a name usable after ``score:`` (see the module docstring), not checked."""
    if SCORE_NAME.fullmatch(raw):
        return raw
    return _OTHER.sub("_", raw.lower()).strip("_.-")


def quoted(value: Any, limit: int = 60) -> str:
    """A value from the file as JSON text of at most ``limit`` characters, for a message."""
    return json.dumps(value, ensure_ascii=False)[:limit]


def require(value: Any, kind: type | tuple[type, ...], source: str, where: int | str,
            what: str, expected: str) -> Any:
    """``value`` if it is of ``kind`` (a bool is not an int here); else InputError saying that
    ``what`` is not ``expected``."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool)):
        return value
    raise InputError(source, f"{what} {quoted(value)} is not {expected}",
                     "give the file as the tool wrote it", where)


@dataclass
class Case:
    """One case (one sample of one case) of a tool's output: its ``query_id`` or None, its
    text or None, where it is in the file, its sample number or None, and its scores by the
    tool's own names (NaN for a failed judgement)."""

    query_id: Any
    text: Any
    place: str
    sample: int | None = None
    scores: dict[str, float] = field(default_factory=dict)


def score_rows(cases: list[Case], source: str, tool: str, id_field: str, text_field: str
               ) -> ScoreRows:
    """The rows of ``cases`` (at least one). ``id_field`` and ``text_field`` name where the
    tool keeps the id and the text (``"var query_id"``, ``"input"``), for messages."""
    if not cases:
        raise InputError(source, "holds no cases", "give the output of a run that scored "
                         "at least one case")
    with_id = [case.query_id is not None for case in cases]
    by_text = not any(with_id)
    if not by_text and not all(with_id):
        first = cases[with_id.index(False)]
        raise InputError(source, f"this case has no {id_field}, while others have one",
                         f"give {id_field} to every case, or to none (the cases are then "
                         f"matched by {text_field})", first.place)
    keys = tuple(_text(case.text, source, case.place, text_field) if by_text
                 else check_id(case.query_id, source, case.place, id_field) for case in cases)
    names = _names((raw for case in cases for raw in case.scores), source)
    order = sorted(set(names.values()))
    column = {raw: order.index(name) for raw, name in names.items()}
    values = np.full((len(cases), len(order)), np.nan)
    for row, case in enumerate(cases):
        for raw, value in case.scores.items():
            values[row, column[raw]] = value
    return ScoreRows(keys=keys, by_text=by_text, places=tuple(case.place for case in cases),
                     samples=tuple(case.sample for case in cases), names=tuple(order),
                     values=values, tool=tool)


def _text(value: Any, source: str, where: str, text_field: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(source, f"{text_field} {quoted(value)} is not a non-empty string, and "
                         "the cases have no query_id", "give every case a query_id, or a "
                         f"question as {text_field}", where)
    return value


def _names(raws: Iterable[str], source: str) -> dict[str, str]:
    """Each raw score name's name after ``score:``; InputError for a collision or a name that
    is not a score name."""
    names: dict[str, str] = {}
    by_name: dict[str, str] = {}
    for raw in raws:
        if raw in names:
            continue
        name = score_name(raw)
        if not SCORE_NAME.fullmatch(name):
            raise InputError(source, f"score name {quoted(raw)} reads as {quoted(name)}, not a "
                             "letter or digit followed by at most 63 letters, digits, '_', '.' "
                             "or '-'", "rename the score in the tool")
        other = by_name.setdefault(name, raw)
        if other != raw:
            raise InputError(source, f"scores {quoted(other)} and {quoted(raw)} both read as "
                             f"score:{name}", "rename one of them in the tool")
        names[raw] = name
    return names
