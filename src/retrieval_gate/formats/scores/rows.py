"""Per-query scores as read from one file, before they meet the snapshot.

Every score reader — the native JSON Lines and CSV files and each evaluation tool's own output
(Ragas, DeepEval, promptfoo, inspect_ai) — returns :class:`ScoreRows`; matching the rows with
the snapshot's queries, averaging repeated samples and the policy for failed scores are one
step after it, the same for every reader.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
