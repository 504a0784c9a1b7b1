"""Ragas scores: the DataFrame of an ``EvaluationResult`` (``result.to_pandas()``) saved with
``to_csv`` (with or without its index column) or ``to_json``: ``orient="records"``, as JSON
Lines (``lines=True``) or one JSON array, or pandas' default layout (``to_json(path)``:
``orient="columns"``, each column an object of its cells by row label) or
``orient="index"`` (each row an object by row label), rows in the order of their labels as
written. Read as written by ragas 0.2 to 0.4; the ragas 0.1 layout
(``question``, ``answer``, ``contexts``, ``ground_truth``) is read too.

The format is told from the content: a file whose first character (after white space) is
``{`` or ``[`` is JSON, any other is CSV (comma-separated, a header line of column names).

Columns:

- ``query_id`` (a column the user adds, ``df.insert(0, "query_id", ids)``): the query id of
  each row; when the file has none, each row is keyed by its question text, ``user_input``
  (``question`` in the 0.1 layout). Some rows with a query id and some without are refused.
- Ragas' own sample fields are never scores: ``user_input``, ``retrieved_contexts``,
  ``reference_contexts``, ``retrieved_context_ids``, ``reference_context_ids``, ``response``,
  ``multi_responses``, ``reference``, ``rubrics``, ``reference_tool_calls``,
  ``reference_topics``, ``persona_name``, ``query_style``, ``query_length``,
  ``synthesizer_name``, and of the 0.1 layout ``question``, ``answer``, ``contexts``,
  ``ground_truth``, ``ground_truths``; nor is the unnamed index column ``to_csv`` writes first.
- Every other column is a score (a metric's name as ragas wrote it, normalised as
  :mod:`~retrieval_gate.formats.scores.cases` says) when it holds numbers: empty cells (CSV)
  and nulls (JSON) are NaN, ``True``/``False`` are 1/0, ``nan`` (CSV) is NaN. A column that
  holds no number at all, only text, lists or objects (a label the user added, a model name)
  is not a score and is passed over; a column holding numbers and also text is refused,
  naming the first cell that is not a number, as is an infinite number.

The file records no ragas version: a file with none of Ragas' own columns is refused, as is a
file with no score column. ``to_json`` writes 10 decimals unless told otherwise
(``double_precision=15``); the values are read as written.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.jsonfmt import document_or_lines, json_lines, path
from retrieval_gate.formats.scores.cases import Case, query_id, score_rows
from retrieval_gate.formats.scores.rows import ScoreRows, as_float, finite, not_a_number, score_text
from retrieval_gate.formats.source import Blob

SAMPLE_FIELDS = frozenset({
    "user_input", "retrieved_contexts", "reference_contexts", "retrieved_context_ids",
    "reference_context_ids", "response", "multi_responses", "reference", "rubrics",
    "reference_tool_calls", "reference_topics", "persona_name", "query_style", "query_length",
    "synthesizer_name"})
"""The columns of ragas' samples (SingleTurnSample, MultiTurnSample, a generated test set)."""
V01_FIELDS = frozenset({"question", "answer", "contexts", "ground_truth", "ground_truths"})
"""The sample columns of ragas 0.1."""
_NOT_SCORES = SAMPLE_FIELDS | V01_FIELDS | {"query_id"}
_INDEX = ""  # the header of the index column to_csv writes first
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_CSV_CONSTANTS = {"": math.nan, "nan": math.nan, "NaN": math.nan, "True": 1.0, "False": 0.0,
                  "inf": math.inf, "-inf": -math.inf}  # as pandas writes them
_EXPECTED = ("give the saved DataFrame of a Ragas evaluation result "
             "(evaluate(...).to_pandas(), saved with to_csv or to_json(orient=\"records\", "
             "lines=True))")

Record = tuple[int | str, dict[str, Any]]  # (line or JSON path, column -> value)


def read(data: bytes, name: str) -> ScoreRows:
    """The scores of a saved Ragas result (see the module docstring)."""
    text = Blob(name, data).text()
    if text.lstrip()[:1] in ("{", "["):
        columns, records = _json_records(score_text(data, name), name)
        number: Callable[[Any], float | None] = _json_number
    else:
        columns, records = _csv_records(text, name)
        number = _csv_number
    if not any(column in SAMPLE_FIELDS or column in V01_FIELDS for column in columns):
        raise InputError(name, "is not a Ragas result: it has none of Ragas' columns "
                         "(user_input, response, reference, retrieved_contexts, ...)", _EXPECTED)
    question = "user_input" if "user_input" in columns or "question" not in columns else \
        "question"
    scores = _scores(columns, records, number, name)
    if not scores:
        raise InputError(name, "has no score column: every column is a Ragas sample field or "
                         "text", "give the DataFrame of evaluate()'s result, which has a "
                         "column of numbers per metric")
    cases = [Case(place, query_id(_cell(record.get("query_id")), name, place),
                  record.get(question), {column: values[i] for column, values in scores.items()})
             for i, (place, record) in enumerate(records)]
    return score_rows(cases, name, "ragas 0.1" if question == "question" else "ragas", "row",
                      "query_id", question)


def _cell(value: Any) -> Any:
    """A CSV cell or JSON value, with the empty cell as None (absent)."""
    return None if value == "" else value


def _scores(columns: list[str], records: list[Record], number: Callable[[Any], float | None],
            name: str) -> dict[str, list[float]]:
    """Each score column's values, row by row (see the module docstring for which columns are
    scores)."""
    out: dict[str, list[float]] = {}
    for column in columns:
        if column in _NOT_SCORES or column == _INDEX:
            continue
        values = [number(record.get(column)) for _, record in records]
        numbers = [value for value in values if value is not None]
        if len(numbers) == len(values):
            out[column] = [finite(value, column, name, place)
                           for value, (place, _) in zip(numbers, records)]
        elif any(not math.isnan(value) for value in numbers):
            place, record = records[values.index(None)]
            raise not_a_number(record.get(column), column, name, place)
    return out


def _csv_number(cell: Any) -> float | None:
    """A CSV cell's score: a number (``inf`` too, refused later), NaN (empty, ``nan``), 1/0
    (``True``/``False``), or None for text; a column absent from a row (``None``) is NaN."""
    if cell is None:
        return math.nan
    constant = _CSV_CONSTANTS.get(cell)
    if constant is not None:
        return constant
    return float(cell) if _NUMBER.fullmatch(cell) else None


def _json_number(value: Any) -> float | None:
    """A JSON value's score: a number, NaN (null or absent), 1/0 (true/false), or None for
    text, a list or an object."""
    if value is None:
        return math.nan
    if isinstance(value, (bool, int, float)):
        return as_float(value)
    return None


def _json_records(text: str, name: str) -> tuple[list[str], list[Record]]:
    """The columns (in order of first appearance) and records of JSON Lines, a JSON array of
    objects, or one JSON object (a one-line JSON Lines file)."""
    document, lines = document_or_lines(text, name)
    if lines:
        records: list[Record] = list(json_lines(text, name, depth_checked=True))
    elif isinstance(document, dict):
        records = _pandas_records(document, name) or [(1, document)]
    elif isinstance(document, list):
        records = []
        for i, item in enumerate(document):
            if not isinstance(item, dict):
                raise InputError(name, "is not a Ragas result: an item of the array is not an "
                                 "object", _EXPECTED, path(i))
            records.append((path(i), item))
    else:
        raise InputError(name, "is not a Ragas result: the JSON is neither records nor lines "
                         "of objects", _EXPECTED)
    if not records:
        raise InputError(name, "holds no row", "give a file with at least one row")
    columns = list(dict.fromkeys(column for _, record in records for column in record))
    return columns, records


def _pandas_records(document: dict[str, Any], name: str) -> list[Record] | None:
    """The rows of a DataFrame saved with pandas' ``to_json`` in its default layout
    (``orient="columns"``: each column an object of its cells by row label) or with
    ``orient="index"`` (each row an object of its cells, by row label), in the order of the
    row labels as written; None for a document in neither layout (a one-row record)."""
    values = list(document.values())
    if not values or not all(isinstance(value, dict) for value in values):
        return None
    known = SAMPLE_FIELDS | V01_FIELDS
    if any(key in known for key in document):  # columns: {"user_input": {"0": ...}, ...}
        labels = list(dict.fromkeys(label for cells in values for label in cells))
        for column, cells in document.items():
            missing = [label for label in labels if label not in cells]
            if missing:
                raise InputError(name, f"column '{column}' has no cell for row "
                                 f"'{missing[0]}'", "save the DataFrame whole (to_json writes "
                                 "every cell of every column)", path(column))
        return [(path("*", label), {column: cells[label] for column, cells in document.items()})
                for label in labels]
    if any(key in known for row in values for key in row):  # index: {"0": {"user_input": ...}}
        return [(path(label), row) for label, row in document.items()]
    return None


def _csv_records(text: str, name: str) -> tuple[list[str], list[Record]]:
    """The header and the rows of a CSV file, each row with the line it starts on."""
    if csv.field_size_limit() < len(text):
        csv.field_size_limit(len(text))  # a cell may hold long contexts
    rows = _csv_rows(text, name)
    _, header = next(rows, (1, []))
    seen: set[str] = set()
    for i, column in enumerate(header):
        if column in seen:
            raise InputError(name, f"column '{column}' appears twice in the header",
                             "give each column once", 1)
        if column == _INDEX and i:
            raise InputError(name, f"column {i + 1} of the header has no name",
                             "name every column but the index", 1)
        seen.add(column)
    records: list[Record] = []
    for line, cells in rows:
        if len(cells) != len(header):
            raise InputError(name, f"the row has {len(cells)} cells, the header has {len(header)}",
                             "give every row one cell per column (is the file complete?)", line)
        records.append((line, dict(zip(header, cells))))
    if not records:
        raise InputError(name, "holds a header but no row", "give a file with at least one row")
    return header, records


def _csv_rows(text: str, name: str) -> Iterator[tuple[int, list[str]]]:
    """The non-blank rows of a CSV text, each with the line it starts on."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    start = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(name, f"invalid CSV ({exc})", "fix the CSV quoting (is the file "
                             "complete?)", start) from None
        if cells:
            yield start, cells
        start = reader.line_num + 1
