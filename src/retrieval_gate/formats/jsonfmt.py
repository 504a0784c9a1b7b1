"""JSON and JSON Lines formats for queries, qrels and runs, and the seeds' fixture files.

Places in a JSON document are named by JSON path (``$["q1"]["d3"]``), places in a JSON Lines
file by line number. Duplicate keys, which ``json`` would silently collapse to the last one,
are errors; so are ids that are not non-empty strings, grades that are not integers and scores
that are not finite numbers.
"""

from __future__ import annotations

import itertools
import json
import json.scanner
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.limits import (
    MAX_GRADE,
    MAX_ID_BYTES,
    MAX_JSON_DEPTH,
    MAX_LATENCY_MS,
    MIN_GRADE,
)
from retrieval_gate.core.model import Qrels, Query, RunRows, Span
from retrieval_gate.formats.source import BOM, Blob, check_utf8, release_pages
from retrieval_gate.formats.trec import (
    CR_FIX,
    CR_PROBLEM,
    GRADE_RANGE_FIX,
    add_judgment,
    grade_range_problem,
)

_DEPTH_STEP = np.zeros(256, dtype=np.int8)
_DEPTH_STEP[[ord("["), ord("{")]] = 1
_DEPTH_STEP[[ord("]"), ord("}")]] = -1
_QUOTE, _BACKSLASH, _NEWLINE = ord('"'), ord("\\"), ord("\n")
_DEPTH_CHUNK = 1 << 16  # bytes scanned at a time: its few arrays stay in the CPU's cache
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LONE_CR = re.compile(r"\r(?!\n|\Z)")
_DEPTH_PROBLEM = f"arrays and objects nest deeper than {MAX_JSON_DEPTH} levels"
_DEPTH_FIX = "no input of the gate needs more than a few levels: check what wrote the file"
_INT_DIGITS = 4300  # Python's default limit on the digits of an int read from text


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


class _OutOfRange(ValueError):
    def __init__(self, literal: str):
        super().__init__(literal)
        self.literal = literal


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) < len(pairs):  # a key repeated: name the first one seen twice
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def _reject_constant(token: str) -> float:
    raise ValueError(f"{token} is not a finite number")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise _OutOfRange(literal)
    return value


_STRICT = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_reject_constant,
                           parse_float=_finite_float)  # the parser _parse uses
_SCAN: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
    cast(Any, _STRICT))  # its scanner: (value, end) of the value at a position


def printable(text: str) -> str:
    """``text`` with lone surrogates (which cannot be written as UTF-8) shown as ``\\udXXX``."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _line_of(text: str, position: int, first_line: int) -> int:
    return first_line + text.count("\n", 0, max(position, 0))


def check_depth(text: str, name: str, first_line: int = 1) -> None:
    """InputError naming the line where arrays and objects nest deeper than
    :data:`~retrieval_gate.core.limits.MAX_JSON_DEPTH`; brackets inside strings do not
    count. Linear in the text and vectorised; nothing is parsed.

    A string runs from a quote to the next quote not escaped by an odd run of backslashes, or
    to the end of its line (a JSON string holds no raw line break, so the parser stops at
    one): exact for every text up to its first syntax error, where the parser stops too."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return
    data = text.encode("utf-8", "surrogatepass")
    array = np.frombuffer(data, dtype=np.uint8)
    depth, in_string, backslashes, start = 0, False, 0, 0
    while start < len(array):
        end = min(start + _DEPTH_CHUNK, len(array))
        if end < len(array):  # end a chunk after a line break when one is in it
            end = data.rfind(b"\n", start, end) + 1 or end
        part = array[start:end]
        levels, in_string, backslashes = _structure_levels(part, in_string, backslashes)
        levels += depth
        deep = np.flatnonzero(levels > MAX_JSON_DEPTH)
        if len(deep):
            line = first_line + data.count(b"\n", 0, start + int(deep[0]))
            raise InputError(name, _DEPTH_PROBLEM, _DEPTH_FIX, line)
        depth, start = int(levels[-1]), end


def _structure_levels(part: np.ndarray, in_string: bool, backslashes: int
                      ) -> tuple[np.ndarray, bool, int]:
    """The nesting level after each byte of ``part`` (brackets in strings do not count),
    relative to its start, and the state at its end: inside a string, and the number of
    backslashes it ends with. ``in_string`` and ``backslashes`` are the state it starts in."""
    n = len(part)
    positions = np.arange(n, dtype=np.int32)
    quotes = np.flatnonzero(part == _QUOTE)
    backslash = part == _BACKSLASH
    # a quote after a backslash is escaped when the run of backslashes before it is odd
    after_backslash = quotes[backslash[quotes - 1] & (quotes > 0)]
    if len(quotes) and quotes[0] == 0 and backslashes:
        after_backslash = np.concatenate(([0], after_backslash))
    if len(after_backslash):
        last_other = np.maximum.accumulate(np.where(backslash, -1, positions))
        prior = last_other[np.maximum(after_backslash - 1, 0)]
        run = np.where((prior < 0) | (after_backslash == 0), after_backslash + backslashes,
                       after_backslash - 1 - prior)
        quotes = np.setdiff1d(quotes, after_backslash[run % 2 == 1], assume_unique=True)
    toggles = np.zeros(n, dtype=np.int32)
    toggles[quotes] = 1
    count = np.cumsum(toggles, dtype=np.int32)
    line_start = np.maximum.accumulate(np.where(part == _NEWLINE, positions, -1))
    before = np.where(line_start >= 0, count[np.maximum(line_start, 0)], -int(in_string))
    inside = ((count - before) & 1).astype(bool)
    steps = _DEPTH_STEP[part]
    steps[inside] = 0
    others = np.flatnonzero(~backslash)
    trailing = n - 1 - int(others[-1]) if len(others) else n + backslashes
    return (np.cumsum(steps, dtype=np.int64), bool(inside[-1]) if n else in_string,
            trailing)


def check_line_ends(text: str, name: str, first_line: int = 1) -> None:
    """InputError for a carriage return that is neither followed by a line feed nor the last
    character: line-based files end lines with ``\\n`` or ``\\r\\n``. ``first_line``: the
    number of the text's first line in its file."""
    if "\r" in text:
        lone = _LONE_CR.search(text)
        if lone is not None:
            raise InputError(name, CR_PROBLEM, CR_FIX, _line_of(text, lone.start(), first_line))


def _surrogate_path(value: Any, keys: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """The JSON path of the first string (or key) holding a lone surrogate, or None."""
    if isinstance(value, str):
        return keys if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if _SURROGATE.search(key):
                return (*keys, key)
            found = _surrogate_path(item, (*keys, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _surrogate_path(item, (*keys, i))
            if found is not None:
                return found
    return None


class _LinesFollow(Exception):
    """The text holds more than one JSON value: it is JSON Lines."""


def _parse(text: str, name: str, line: int | None, lines_follow: bool = False) -> Any:
    """json.loads, strictly: no duplicate keys, no NaN/Infinity, numbers within float64, no
    lone surrogate; errors name the line (``line`` for one line of a JSON Lines file). With
    ``lines_follow``, a second value after the first raises :class:`_LinesFollow`."""
    first = 1 if line is None else line
    try:
        value = _STRICT.decode(text)
    except _DuplicateKey as exc:
        raise InputError(name, f"key '{printable(exc.key)}' appears twice in one object",
                         "keep each key once", line) from None
    except _OutOfRange as exc:
        raise InputError(name, f"number {exc.literal[:40]} is beyond the range of a float64 "
                         "(about ±1.8e308)", "write a finite number",
                         _line_of(text, text.find(exc.literal), first)) from None
    except json.JSONDecodeError as exc:
        if lines_follow and exc.msg == "Extra data":
            raise _LinesFollow from None
        where = exc.lineno if line is None else line
        raise InputError(name, f"invalid JSON ({exc.msg}, column {exc.colno})",
                         "fix the JSON syntax", where) from None
    except ValueError as exc:
        long_int = re.search(f"[0-9]{{{_INT_DIGITS + 1},}}", text)
        if long_int is not None:
            raise InputError(name, f"an integer of {long_int.end() - long_int.start()} digits "
                             "is out of range", "write numbers within the ranges of the "
                             "input formats (docs/concepts/input-formats.md)", _line_of(text, long_int.start(), first)) from None
        raise InputError(name, str(exc), "write finite numbers", line) from None
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        found = _surrogate_path(value)
        if found is not None:
            place = printable(path(*found))
            problem = "holds a lone surrogate escape (\\ud800-\\udfff), which is not text"
            fix = "write the character itself, or a complete surrogate pair"
            if line is None:
                raise InputError(name, f"the string {problem}", fix, place)
            raise InputError(name, f"the string at {place} {problem}", fix, line)
    return value


def loads(text: str, name: str, line: int | None = None) -> Any:
    """Parse one JSON document strictly: nesting at most
    :data:`~retrieval_gate.core.limits.MAX_JSON_DEPTH`, no duplicate keys, no NaN/Infinity,
    numbers within float64, no lone surrogate escape; errors name the line or the JSON path."""
    check_depth(text, name, 1 if line is None else line)
    return _parse(text, name, line)


def document_or_lines(text: str, name: str) -> tuple[Any, bool]:
    """``(document, False)`` for a text that is one JSON document, ``(None, True)`` for JSON
    Lines (several JSON values, one per line); the document is parsed as :func:`loads` does."""
    check_depth(text, name)
    try:
        return _parse(text, name, None, lines_follow=True), False
    except _LinesFollow:
        return None, True


def json_lines(text: str, name: str, depth_checked: bool = False, first_line: int = 1):
    """(line number, object) for every non-blank line of a JSON Lines file. Lines end at
    ``\\n`` only (U+2028 and U+2029 are characters of a string, as in JSON), a ``\\r``
    before it is dropped, and a ``\\r`` anywhere else is an error. ``depth_checked``: the
    caller has passed the whole text through :func:`check_depth` already; ``first_line``: the
    number of the text's first line in its file (a part of a larger file)."""
    check_line_ends(text, name, first_line)
    numbered = [(number, line) for number, line in enumerate(text.split("\n"), first_line)
                if line.strip(" \t\r")]
    # Each line scanned as one object by the strict parser's own scanner, whose objects'
    # nesting is then measured; any doubt — an error, a line that is not exactly one object —
    # and the text's nesting is checked before the lines are parsed one by one, which also
    # finds the exact line and message of the error.
    values = _objects(numbered, text)
    if values is not None:
        deep = None if depth_checked else _first_too_deep(text, values)
        if deep is not None:
            raise InputError(name, _DEPTH_PROBLEM, _DEPTH_FIX, numbered[deep][0])
        yield from zip((number for number, _ in numbered), values)
        return
    if not depth_checked:
        check_depth(text, name, first_line)
    for number, line in numbered:
        value = _parse(line, name, number)
        if not isinstance(value, dict):
            raise InputError(name, "line is not a JSON object",
                             "write one JSON object per line", number)
        yield number, value


def _objects(numbered: list[tuple[int, str]], text: str) -> list[dict[str, Any]] | None:
    """Each line's object, when every line is exactly one JSON object that :func:`_parse`
    accepts (white space around it aside); None at any doubt. The scanner of the strict parser
    reads each line where it starts, so a line holding two objects, or an object spread over
    two lines, is never taken for two lines of one object each."""
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        return None  # _parse names the string
    values: list[dict[str, Any]] = []
    append = values.append
    try:
        for _, line in numbered:
            value, end = _SCAN(line, 0 if line[:1] == "{" else
                               len(line) - len(line.lstrip(" \t\n\r")))
            if end != len(line) and line[end:].strip(" \t\r") or type(value) is not dict:
                return None
            append(value)
    except (ValueError, RecursionError, StopIteration):
        return None
    return values


def _first_too_deep(text: str, values: list[dict[str, Any]]) -> int | None:
    """The position of the first of ``values`` (the objects parsed from ``text``, one a line)
    whose arrays and objects nest deeper than
    :data:`~retrieval_gate.core.limits.MAX_JSON_DEPTH` (the object itself is one level), or
    None. When the text holds no more brackets than objects, none nests at all."""
    if text.count("{") + text.count("[") == len(values):
        return None
    for position, value in enumerate(values):
        if _levels(value) > MAX_JSON_DEPTH:
            return position
    return None


def _levels(value: Any) -> int:
    """How deep arrays and objects nest in a parsed value: 0 for a scalar, 1 for ``[]``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if type(item) is dict else item if type(item) is list else None
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children
                     if type(child) is dict or type(child) is list)
    return deepest


BATCH_BYTES = 1 << 22  # bytes of a JSON Lines file parsed at a time by json_line_batches


@dataclass(frozen=True, eq=False)
class LineBatch:
    """Consecutive non-blank lines of a JSON Lines file: per line its number (from 1), its
    object, and where it starts in the file's bytes (``starts``, int64 byte offsets)."""

    numbers: list[int]
    objects: list[dict[str, Any]]
    starts: np.ndarray


def json_line_batches(blob: Blob, batch_bytes: int | None = None) -> Iterator[LineBatch]:
    """The lines of a JSON Lines file as :func:`json_lines` reads them — the same objects, the
    same rules, each error naming its line (of a file with several faults, the first batch
    holding one reports its own first) — a batch of about ``batch_bytes`` (default
    :data:`BATCH_BYTES`) at a time (whole lines;
    a longer line is a batch of its own), so that a large file (memory-mapped) is never held
    as one text nor all its objects at once. The pages of the mapped file a batch was read
    from are released from resident memory once it is parsed. InputError for an empty file."""
    blob.require_content()
    data, name = blob.data, blob.name
    batch_bytes = batch_bytes or BATCH_BYTES
    start = len(BOM) if data[:len(BOM)] == BOM else 0
    first_line = 1
    while start < len(data):
        end = min(start + batch_bytes, len(data))
        if end < len(data):
            cut = data.rfind(b"\n", start, end)
            end = cut + 1 if cut >= 0 else (data.find(b"\n", end) + 1 or len(data))
        part = bytes(data[start:end])
        check_utf8(part, name, first_line)
        numbers: list[int] = []
        objects: list[dict[str, Any]] = []
        for number, obj in json_lines(str(part, "utf-8"), name, first_line=first_line):
            numbers.append(number)
            objects.append(obj)
        breaks = np.flatnonzero(np.frombuffer(part, dtype=np.uint8) == _NEWLINE)
        line_starts = np.concatenate(([0], breaks + 1)).astype(np.int64) + start
        release_pages(data, start, end)
        if numbers:
            yield LineBatch(numbers, objects,
                            line_starts[np.array(numbers, dtype=np.int64) - first_line])
        first_line += len(breaks)
        start = end


def path(*keys: str | int) -> str:
    """The JSON path of a place in a document: ``$["q1"][3]`` (keys written as JSON strings)."""
    return "$" + "".join(f"[{k}]" if isinstance(k, int) else f"[{json.dumps(k, ensure_ascii=False)}]"
                         for k in keys)


def check_id(value: Any, name: str, where: int | str, what: str) -> str:
    """``value`` if it is a non-empty string without NUL of at most
    :data:`~retrieval_gate.core.limits.MAX_ID_BYTES` UTF-8 bytes; else InputError."""
    if not isinstance(value, str) or not value or "\x00" in value:
        raise InputError(name, f"{what} {json.dumps(value)[:60]} is not a non-empty string",
                         f"write the {what} as a non-empty JSON string", where)
    if len(value) > MAX_ID_BYTES // 4 and len(value.encode("utf-8")) > MAX_ID_BYTES:
        raise InputError(name, f"{what} of {len(value.encode('utf-8'))} bytes is longer than "
                         f"{MAX_ID_BYTES} bytes", f"shorten the {what} (or map long ids to short "
                         "ones)", where)
    return value


def check_grade(value: Any, name: str, where: int | str) -> int:
    """``value`` if it is an integer grade in [MIN_GRADE, MAX_GRADE]; else InputError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(name, f"grade {json.dumps(value)[:40]} is not an integer",
                         "write relevance grades as whole numbers (e.g. 0, 1, 2, 3)", where)
    if not MIN_GRADE <= value <= MAX_GRADE:
        raise InputError(name, grade_range_problem(str(value)), GRADE_RANGE_FIX, where)
    return value


def check_score(value: Any, name: str, where: int | str) -> float:
    """``value`` as a float64 if it is a finite JSON number; else InputError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(name, f"score {json.dumps(value)[:40]} is not a number",
                         "write the retrieval score as a JSON number", where)
    try:
        score = float(value)
    except OverflowError:
        score = math.inf
    if not math.isfinite(score):
        shown = str(value) if isinstance(value, float) else f"of {len(str(value))} digits"
        raise InputError(name, f"score {shown} is not a finite float64",
                         "write a finite retrieval score (no NaN or infinity)", where)
    return score


def _require_object(value: Any, name: str, what: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        raise InputError(name, f"{what} is not a non-empty JSON object", "see the input "
                         "formats (docs/concepts/input-formats.md)", path())
    return value


def qrels_from_json(document: Any, name: str) -> Qrels:
    """``{"q": {"d": grade}}`` (graded) or ``{"q": ["d1", "d2"]}`` (binary, grade 1)."""
    judgments: dict[str, dict[str, int]] = {}
    first: dict[str, int | str] = {}
    for qid, labels in _require_object(document, name, "the qrels").items():
        check_id(qid, name, path(qid), "query id")
        judgments[qid] = {}
        first[qid] = path(qid)
        if isinstance(labels, dict):
            pairs = [(d, check_grade(g, name, path(qid, d))) for d, g in labels.items()]
        elif isinstance(labels, list):
            pairs = [(d, 1) for d in labels]
        else:
            raise InputError(name, "judgments are neither an object of grades nor a list of "
                             "ids", 'write {"doc": grade, ...} or ["doc", ...]', path(qid))
        for i, (doc, grade) in enumerate(pairs):
            where = path(qid, doc) if isinstance(labels, dict) else path(qid, i)
            check_id(doc, name, where, "item id")
            add_judgment(judgments, first, qid, doc, grade, name, where)
    return Qrels(name, judgments, first)


def qrels_from_jsonl(text: str, name: str, depth_checked: bool = False) -> Qrels:
    """One judgment per line: ``{"query_id", "doc_id", "grade", "fact"?}`` judges a document
    (or chunk) by id; with ``"start"`` and ``"end"`` (code-point offsets into the document's
    text, end exclusive) it judges that span of it. A file holds one kind or the other. Spans
    of one query may not overlap (split or merge them: a passage is judged once).

    Repeats follow one rule for every unit (a span is the item ``doc[start:end]``): a (query,
    item) judged again with the same grade and fact is one judgment; with another grade or
    another fact (or none), an error."""
    judgments: dict[str, dict[str, int]] = {}
    first: dict[str, int | str] = {}
    facts: dict[str, dict[str, str]] = {}
    stated: dict[tuple[str, str], str | None] = {}  # (query, item) → its fact, for repeats
    spans: dict[str, list[tuple[Span, int]]] = {}
    kind: bool | None = None  # True: spans
    for line, obj in json_lines(text, name, depth_checked):
        qid = check_id(obj.get("query_id"), name, line, "query_id")
        doc = check_id(obj.get("doc_id"), name, line, "doc_id")
        grade = check_grade(obj.get("grade"), name, line)
        fact = None if obj.get("fact") is None else check_id(obj["fact"], name, line, "fact")
        is_span = "start" in obj or "end" in obj
        if kind is not None and is_span != kind:
            raise InputError(name, "judges a span while earlier lines judge ids, or the other "
                             "way round", "judge spans (start, end) or ids in one file, not "
                             "both", line)
        kind = is_span
        if not is_span:
            add_judgment(judgments, first, qid, doc, grade, name, line)
            _same_fact(stated, qid, doc, fact, name, line)
            if fact is not None:
                facts.setdefault(qid, {})[doc] = fact
            continue
        start, end = offsets(obj, name, line, "the span")
        span = Span(doc, start, end, grade, fact)
        repeat = span.key in judgments.get(qid, {})
        add_judgment(judgments, first, qid, span.key, grade, name, line)
        _same_fact(stated, qid, span.key, fact, name, line)
        if not repeat:
            spans.setdefault(qid, []).append((span, line))
    if not kind:
        return Qrels(name, judgments, first, facts=facts)
    for qid, given in spans.items():
        _require_apart(given, qid, name)
    return Qrels(name, judgments, first,
                 spans={q: tuple(span for span, _ in given) for q, given in spans.items()})


def _same_fact(stated: dict[tuple[str, str], str | None], qid: str, item: str,
               fact: str | None, name: str, line: int) -> None:
    """Record the fact of (``qid``, ``item``), refusing a repeat that states another one."""
    previous = stated.setdefault((qid, item), fact)
    if previous != fact:
        shown = ["none" if f is None else f"'{f}'" for f in (previous, fact)]
        raise InputError(name, f"query '{qid}', item '{item}' states fact {shown[0]} and "
                         f"again {shown[1]}", "keep one judgment per (query, item)", line)


def whole_number(value: Any, key: str, name: str, line: int | str) -> int:
    """``value`` if it is a whole number ≥ 0 below 2**62 (an offset, a token count)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 62:
        raise InputError(name, f"'{key}' {json.dumps(value)[:30]} is not a whole number ≥ 0",
                         f"write '{key}' as a non-negative integer", line)
    return value


def offsets(obj: dict[str, Any], name: str, line: int, what: str) -> tuple[int, int]:
    """``what``'s ``start`` and ``end`` (code points into a document's text, end exclusive):
    both given, whole numbers, ``start < end``."""
    for key in ("start", "end"):
        if key not in obj:
            raise InputError(name, f"{what} has no '{key}'", "give start and end together "
                             "(code-point offsets into the document's text)", line)
    start = whole_number(obj["start"], "start", name, line)
    end = whole_number(obj["end"], "end", name, line)
    if end <= start:
        raise InputError(name, f"{what} ends at {end}, not after its start {start}",
                         "give start < end (code points, end exclusive)", line)
    return start, end


def _require_apart(given: list[tuple[Span, int]], qid: str, name: str) -> None:
    """InputError when two spans of query ``qid`` share a character."""
    ordered = sorted(given, key=lambda pair: (pair[0].doc, pair[0].start, pair[0].end))
    for (a, line_a), (b, line_b) in itertools.pairwise(ordered):
        if a.doc == b.doc and b.start < a.end:
            raise InputError(name, f"query '{qid}': span {b.key} overlaps span {a.key} (line "
                             f"{line_a})", "split or merge them: each passage of a document "
                             "is judged once", line_b)


class _RunBuilder:
    """Collects rows of a run given per query, then freezes them into RunRows."""

    def __init__(self, name: str, with_lines: bool):
        self.name = name
        self.query_ids: dict[str, int] = {}
        self.qcodes: list[int] = []
        self.items: list[bytes] = []
        self.scores: list[float | None] = []
        self.doc_ids: list[bytes] = []
        self.places: list[tuple[int, int, int]] = []  # start, end, tokens; −1 when not given
        self.lines: list[int] | None = [] if with_lines else None
        self.latency: dict[int, float] = {}
        self.abstained: dict[int, bool] = {}

    def add_query(self, qid: str, where: int | str) -> int:
        if qid in self.query_ids:
            raise InputError(self.name, f"query '{qid}' is given twice",
                             "give each query's ranking once", where)
        return self.query_ids.setdefault(qid, len(self.query_ids))

    def add(self, code: int, item: str, score: float | None, doc_id: str | None,
            line: int | None, place: tuple[int, int, int] = (-1, -1, -1)) -> None:
        self.qcodes.append(code)
        self.items.append(item.encode())
        self.scores.append(score)
        self.doc_ids.append(b"" if doc_id is None else doc_id.encode())
        self.places.append(place)
        if self.lines is not None:
            self.lines.append(line or 0)

    def build(self) -> RunRows:
        scored = {s is not None for s in self.scores}
        if len(scored) > 1:
            raise InputError(self.name, "some items have a score and others do not",
                             "give every item a score, or none (order = list order)")
        has_doc_ids = any(self.doc_ids)
        if has_doc_ids and not all(self.doc_ids):
            raise InputError(self.name, "some items carry a doc_id and others do not",
                             "give every item a doc_id, or none")
        places = np.array(self.places, dtype=np.int64).reshape(-1, 3)
        placed = places[:, 0] >= 0
        if placed.any() and not placed.all():
            raise InputError(self.name, "some items carry start and end and others do not",
                             "give every item its place (doc_id, start, end), or none")
        with_places = bool(len(placed)) and bool(placed.all())
        tokens = places[:, 2] if (places[:, 2] >= 0).any() else None
        latency = self._per_query(self.latency, "has no latency_ms, and others do",
                                  "record latency_ms for every query of the run, or for none")
        abstained = self._per_query(self.abstained, "has no abstained decision, and others "
                                    "do", "record abstained (true or false) for every query "
                                    "of the run, or for none")
        return RunRows(
            self.name,
            tuple(self.query_ids),
            np.array(self.qcodes, dtype=np.int64),
            np.array(self.items, dtype="S") if self.items else np.zeros(0, dtype="S1"),
            np.array(self.scores, dtype=np.float64) if scored == {True} else None,
            None if self.lines is None else np.array(self.lines, dtype=np.int64),
            np.array(self.doc_ids, dtype="S") if has_doc_ids else None,
            places[:, 0].copy() if with_places else None,
            places[:, 1].copy() if with_places else None,
            None if tokens is None else tokens.copy(),
            latency,
            None if abstained is None else abstained.astype(bool),
        )

    def _per_query(self, given: dict[int, Any], problem: str, fix: str) -> np.ndarray | None:
        """A value every query gives, or none does (None): in query order; InputError naming
        the first query without one when some give it."""
        if not given:
            return None
        if len(given) != len(self.query_ids):
            missing = next(q for i, q in enumerate(self.query_ids) if i not in given)
            raise InputError(self.name, f"query '{missing}' {problem}", fix)
        return np.array([given[i] for i in range(len(self.query_ids))])


def run_from_json(document: Any, name: str) -> RunRows:
    """``{"q": {"d": score}}`` (order from scores) or ``{"q": ["d1", "d2"]}`` (explicit)."""
    builder = _RunBuilder(name, with_lines=False)
    for qid, ranking in _require_object(document, name, "the run").items():
        code = builder.add_query(check_id(qid, name, path(qid), "query id"), path(qid))
        if isinstance(ranking, dict):
            for doc, score in ranking.items():
                check_id(doc, name, path(qid, doc), "item id")
                builder.add(code, doc, check_score(score, name, path(qid, doc)), None, None)
        elif isinstance(ranking, list):
            for i, doc in enumerate(ranking):
                builder.add(code, check_id(doc, name, path(qid, i), "item id"), None, None, None)
        else:
            raise InputError(name, "ranking is neither an object of scores nor a list of ids",
                             'write {"doc": score, ...} or ["doc", ...]', path(qid))
    return builder.build()


def run_from_jsonl(text: str, name: str, depth_checked: bool = False) -> RunRows:
    """One ``{"query_id", "items": [{"id", "score"?, "doc_id"?, "start"?, "end"?,
    "tokens"?}, ...], "latency_ms"?, "abstained"?}`` object per line (``depth_checked`` as
    for :func:`json_lines`)."""
    builder = _RunBuilder(name, with_lines=True)
    for line, obj in json_lines(text, name, depth_checked):
        _run_line(builder, line, obj, name)
    return builder.build()


def run_from_jsonl_batches(blob: Blob, batch_bytes: int | None = None) -> RunRows:
    """:func:`run_from_jsonl` of a whole file, read a batch of lines at a time
    (:func:`json_line_batches`, ``batch_bytes`` at a time): the same rows and the same errors,
    but only one batch's objects are ever held (a run of 10⁵ queries × 100 items read whole
    held about 15 times its size in them), and the file is never decoded as one text."""
    builder = _RunBuilder(blob.name, with_lines=True)
    for batch in json_line_batches(blob, batch_bytes):
        for line, obj in zip(batch.numbers, batch.objects):
            _run_line(builder, line, obj, blob.name)
    return builder.build()


def _run_line(builder: _RunBuilder, line: int, obj: dict[str, Any], name: str) -> None:
    """Add one JSON Lines run record (see :func:`run_from_jsonl`) to ``builder``."""
    code = builder.add_query(check_id(obj.get("query_id"), name, line, "query_id"), line)
    if "latency_ms" in obj:
        builder.latency[code] = _latency(obj["latency_ms"], name, line)
    if "abstained" in obj:
        if not isinstance(obj["abstained"], bool):
            raise InputError(name, "'abstained' is not true or false",
                             'write "abstained": true when the system declines to answer',
                             line)
        builder.abstained[code] = obj["abstained"]
    items = obj.get("items")
    if not isinstance(items, list):
        raise InputError(name, "'items' is missing or not a list",
                         'write "items": [{"id": ..., "score": ...}, ...]', line)
    for item in items:
        if not isinstance(item, dict):
            raise InputError(name, "an item is not an object",
                             'write items as {"id": ..., "score": ...}', line)
        score = None if "score" not in item else check_score(item["score"], name, line)
        doc_id = None if "doc_id" not in item else check_id(item["doc_id"], name, line,
                                                            "doc_id")
        builder.add(code, check_id(item.get("id"), name, line, "item id"), score, doc_id,
                    line, _place(item, doc_id, name, line))


def _latency(value: Any, name: str, line: int) -> float:
    """A query's ``latency_ms``: a number from 0 to :data:`MAX_LATENCY_MS` (a larger one, summed
    over a pipeline's stages or in the cost statistics, could overflow to infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            0 <= value <= MAX_LATENCY_MS):
        raise InputError(name, f"latency_ms {printable(str(value))[:30]} is not a number of "
                         f"milliseconds from 0 to {MAX_LATENCY_MS:,.0f}",
                         'write "latency_ms": 12.5, or leave it out', line)
    return float(value)


def _place(item: dict[str, Any], doc_id: str | None, name: str, line: int
           ) -> tuple[int, int, int]:
    """An item's (start, end, tokens), −1 for what it does not give; start and end come
    together, with a doc_id."""
    tokens = item.get("tokens")
    count = -1 if tokens is None else whole_number(tokens, "tokens", name, line)
    if "start" not in item and "end" not in item:
        return -1, -1, count
    if doc_id is None:
        raise InputError(name, "an item has start and end but no doc_id",
                         "give the document the offsets point into as doc_id", line)
    return (*offsets(item, name, line, "an item"), count)


def iso_day(value: Any, name: str, line: int, key: str) -> int:
    """An ISO date ``YYYY-MM-DD`` as its proleptic Gregorian ordinal; InputError otherwise."""
    import datetime as dt

    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return dt.date.fromisoformat(value).toordinal()
        except ValueError:
            pass
    raise InputError(name, f"{key} {json.dumps(value)[:40]} is not a date",
                     f'write "{key}": "2026-03-01" (YYYY-MM-DD)', line)


def queries_from_jsonl(text: str, name: str) -> tuple[Query, ...]:
    """One ``{"id", "text"?, "tags"?, "answerable"?, "facts"?, "scope"?, "as_of"?}`` object per
    line."""
    seen: dict[str, Query] = {}
    for line, obj in json_lines(text, name):
        qid = check_id(obj.get("id"), name, line, "id")
        if qid in seen:
            raise InputError(name, f"query '{qid}' is listed twice", "list each query once",
                             line)
        seen[qid] = _query(qid, obj, name, line)
    if not seen:
        raise InputError(name, "lists no queries", "give one JSON object per line")
    return tuple(seen.values())


def _labels(value: Any, distinct: bool = False) -> bool:
    """Whether ``value`` is a list of non-empty strings (each once, with ``distinct``)."""
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value) and (
        not distinct or len(set(value)) == len(value))


def _query(qid: str, obj: dict[str, Any], name: str, line: int) -> Query:
    """The query of one line of a query set (its fields checked, InputError naming the
    line)."""
    text_value, tags = obj.get("text", ""), obj.get("tags", [])
    answerable, facts, scope = obj.get("answerable", True), obj.get("facts"), obj.get("scope")
    if not isinstance(text_value, str):
        raise InputError(name, "'text' is not a string", "write the query text", line)
    if not _labels(tags):
        raise InputError(name, "'tags' is not a list of strings",
                         'write "tags": ["paraphrase", ...]', line)
    if not isinstance(answerable, bool):
        raise InputError(name, "'answerable' is not true or false",
                         'write "answerable": true or false', line)
    if facts is not None and not _labels(facts, distinct=True):
        raise InputError(name, "'facts' is not a list of distinct fact labels",
                         'write "facts": ["f1", "f2"] (the facts an answer needs)', line)
    if scope is not None and not _labels(scope):
        raise InputError(name, "'scope' is not a list of principals",
                         'write "scope": ["acme", "acme-finance"] (the asker\'s groups)', line)
    as_of = obj.get("as_of")
    return Query(qid, text_value, tuple(tags), answerable,
                 None if facts is None else tuple(facts),
                 None if scope is None else tuple(sorted(set(scope))),
                 None if as_of is None else iso_day(as_of, name, line, "as_of"))


def doc_map_from_json(document: Any, name: str) -> dict[str, str]:
    """``{"chunk id": "doc id", ...}``."""
    return {check_id(k, name, path(k), "chunk id"): check_id(v, name, path(k), "doc id")
            for k, v in _require_object(document, name, "the doc map").items()}
