"""A target's result for one query → checked rankings, or one clear error naming the query.

**A ranking** is a list (or tuple) of hits, best first. A hit is

- an ``(id, score)`` pair;
- an id alone (a string);
- a dict with ``id`` and, optionally, ``score``, ``doc_id``, ``start`` and ``end`` (code-point
  offsets into the document's text, end exclusive) and ``tokens`` (its size, counted by the
  pipeline's tokenizer); other keys (``text``, metadata) are ignored — the gate does not
  tokenize.

**Scores.** Every hit of a ranking has a finite score, or none has. Scores may not increase
down the ranking: the gate orders a run by score (ties by id, trec_eval's rule), so a
ranking whose scores disagree with its order would be judged in another order than the one the
target returned — refused (a distance: return its negative). A ranking without scores keeps the
target's order: its hit at rank r is written with the score 1/r, strictly decreasing, so no
two of its hits tie. Tied scores the target gives are written as given, and the gate breaks
them by id as it does for every run.

**Ids by evidence unit** (the snapshot's ``chunking.unit``):

- ``document``: a hit names a document — its ``id``, or its ``doc_id`` when it carries one
  (the id is then a chunk's, collapsed to its document);
- ``chunk``: a hit names a chunk of the judged chunking — its ``id``;
- ``span``: a hit is a place: ``doc_id``, ``start`` and ``end`` are required (its ``id``,
  when it gives none, is ``doc[start:end]``).

When the snapshot pins a corpus, every document a hit names must be in it (and a place must
lie inside its text).

**With a chunk table** — the run's own (``gate run --chunks``), else the one a chunk
snapshot pins — the table places every item, as ``gate check`` reads the run: on every unit a
hit names a chunk of the table by its ``id`` (a place or ``doc_id`` is then not required), and a
``doc_id`` or place the hit gives must be the table's for that chunk (else refused: the
retriever and the table disagree on where the chunk lies). So must a token count the hit
carries or the tokenizer gives, since ``gate check`` reads a chunk's tokens from the table
(:func:`require_table_tokens`).

**A result with stages** is a dict of named rankings in pipeline order (``{"candidates": [...],
"reranked": [...], "context": [...]}``); every query must return the same stages.

**Two paths, one result.** A ranking in a common shape — ``(id, score)`` pairs, ids alone, or
dicts with ``id``, ``score`` and ``tokens`` only (no ``doc_id``, ``start``, ``end``) on a document
or chunk snapshot — is checked in one loop with no call per hit (:func:`_common`). At the
first hit it cannot take, the precise path (:func:`_precise`) checks the ranking again hit by
hit: it gives the same items for every ranking the first path accepts, and the message naming
the first problem for a ranking it refuses. (Checking a ranking's ids and scores as whole sets
was measured slower for rankings of 10 to 100 hits: each set costs an allocation.)

Refused, naming the query and what it returned (capped, escaped: ids and texts are user
data): anything else — a result that is not a list or dict of lists, a hit of another kind, an
id that is not a non-empty string of at most 1,024 UTF-8 bytes without NUL, a score that is not
a finite number, scores on some hits only or increasing, an id repeated in one ranking, an id
or place outside the pinned corpus or chunk table, a span hit without its place (or a chunk
of the table), a place that is not the table's.
"""

from __future__ import annotations

import math
import numbers
import reprlib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.limits import MAX_ID_BYTES
from retrieval_gate.core.model import ChunkTable
from retrieval_gate.core.stages import STAGE_NAME
from retrieval_gate.core.untrusted import capped
from retrieval_gate.inputs.snapshot import Snapshot, TestSet

# A checked hit: [id, score or None, doc_id or None, start or None, end or None, tokens or None]
Item = list[Any]
Rankings = list[list[Any]]  # [[stage name or None, [Item, ...]], ...]

# Score types the common path takes (bool, an int subclass, is not among them); any other
# number goes the precise path, which converts it the same way.
_NUMBERS = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})


@dataclass(frozen=True)
class HitRules:
    """What a hit must be on this snapshot: its evidence ``unit``, the pinned corpus's
    documents with their text lengths (None: no corpus pinned; a length of -1: no text), the
    chunk table that places the items — each chunk's ``(doc_id, start, end, tokens)`` by id
    (tokens −1: not given), and
    where the table comes from, for messages (None: no table) — and ``source``, the target's
    name for messages."""

    unit: str
    documents: dict[str, int] | None
    table: dict[str, tuple[str, int, int, int]] | None
    table_name: str | None
    source: str

    @staticmethod
    def of(snapshot: Snapshot, test_set: TestSet, source: str,
           chunks: ChunkTable | None = None) -> HitRules:
        """The rules of ``snapshot``; ``chunks`` is the run's own chunk table (``--chunks``),
        which places the items in place of the one a chunk snapshot pins."""
        corpus = test_set.corpus
        documents = None
        if corpus is not None:
            ids = _texts(corpus.ids)
            lengths = (corpus.lengths.tolist() if corpus.lengths is not None
                       else [-1] * len(ids))
            documents = dict(zip(ids, lengths))
        table = chunks if chunks is not None else (
            test_set.chunks if snapshot.unit == "chunk" else None)
        if table is None:
            return HitRules(snapshot.unit, documents, None, None, source)
        places = dict(zip(_texts(table.ids), zip(
            _texts(table.doc), table.start.tolist(), table.end.tolist(), table.tokens.tolist())))
        named = ("the chunk table " + table.source if chunks is not None
                 else "the snapshot's chunk table")
        return HitRules(snapshot.unit, documents, places, named, source)


def _texts(ids: np.ndarray) -> list[str]:
    """The ids of a reader's ``S`` array (UTF-8 bytes) as strings."""
    return [value.decode("utf-8") for value in ids.tolist()]


def rankings_of(result: Any, query_id: str, rules: HitRules) -> Rankings:
    """The checked rankings of one query's ``result``: ``[[None, items]]`` for one ranking,
    ``[[stage, items], ...]`` for named stages (see the module docstring); InputError naming
    the query otherwise."""
    if isinstance(result, (list, tuple)):
        return [[None, _ranking(result, query_id, rules, None)]]
    if isinstance(result, Mapping) and result:
        rankings: Rankings = []
        for name, ranking in result.items():
            if not isinstance(name, str) or not STAGE_NAME.fullmatch(name):
                _refuse(rules, query_id, result, f"stage name {shown(name)} is not a name of "
                        "letters, digits, _ . - (at most 64)", "name each stage as the "
                        "snapshot's pipeline does, e.g. candidates, reranked, context")
            if not isinstance(ranking, (list, tuple)):
                _refuse(rules, query_id, result, f"stage '{name}' is a "
                        f"{type(ranking).__name__}, not a list of hits",
                        "give each stage a list of hits, best first")
            rankings.append([name, _ranking(ranking, query_id, rules, name)])
        return rankings
    _refuse(rules, query_id, result, "that is not a ranking", "return a list of hits, best "
            "first — (id, score) pairs, ids, or dicts with id and score — or a dict of named "
            "stages, each such a list")
    raise AssertionError  # _refuse raised


def _ranking(hits: Any, qid: str, rules: HitRules, stage: str | None) -> list[Item]:
    """One ranking's hits checked (see the module docstring): on the common path when it
    takes them, else on the precise one."""
    common = _common(hits, rules)
    return common if common is not None else _precise(hits, qid, rules, stage)


def _precise(hits: Any, qid: str, rules: HitRules, stage: str | None) -> list[Item]:
    """One ranking's hits checked one by one, each problem named (see the module docstring)."""
    items: list[Item] = []
    seen: set[str] = set()
    scored = None
    last = math.inf
    by_id, documents = rules.unit == "document", rules.documents  # the common case, inline
    for rank, hit in enumerate(hits, 1):
        item = _item(hit, qid, rules, stage, rank)
        score = item[1]
        if scored is None:
            scored = score is not None
        elif scored != (score is not None):
            _refuse(rules, qid, hits, f"{_where(stage, rank)} has {'no ' if scored else ''}"
                    f"score and hit 1 {'has' if scored else 'has none'}", "give every hit "
                    "a score, or none (the order is then the ranking)")
        if score is not None:
            if not math.isfinite(score):
                _refuse(rules, qid, hits, f"{_where(stage, rank)} has score {score}, not a "
                        "finite number", "return finite scores (or none: the order is then "
                        "the ranking)")
            if score > last:
                _refuse(rules, qid, hits, f"{_where(stage, rank)} scores {score!r}, above "
                        f"hit {rank - 1}'s {last!r}: the gate ranks by score", "return the "
                        "hits best first with scores that do not increase (a distance: "
                        "return its negative), or without scores")
            last = score
        if item[0] in seen:
            _refuse(rules, qid, hits, f"id {shown(item[0])} twice (again at "
                    f"{_where(stage, rank)})", "return each id once per ranking")
        seen.add(item[0])
        if not (by_id and rules.table is None and item[2] is None and item[3] is None and (
                documents is None or item[0] in documents)):
            _in_snapshot(item, qid, rules, stage, rank, hits)
        items.append(item)
    return items


def _common(hits: Any, rules: HitRules) -> list[Item] | None:
    """The items of a ranking in a common shape (see the module docstring), checked in one
    loop without a call per hit; None at the first hit of another shape or that fails a check.
    Conservative: a ranking it accepts is one the precise path accepts, with the same items
    (an id over 256 characters or a ``doc_id`` key set to None are left to the precise
    path)."""
    if rules.table is not None:
        known: Mapping[str, Any] | None = rules.table
    elif rules.unit == "span":
        return None
    else:
        known = rules.documents if rules.unit == "document" else None
    items: list[Item] = []
    seen: set[str] = set()
    scored = None
    last = math.inf
    for hit in hits:
        kind = type(hit)
        tokens = None
        if kind is tuple or kind is list:
            if len(hit) != 2 or hit[1] is None:  # a pair's score is required
                return None
            ident, score = hit
        elif kind is str:
            ident, score = hit, None
        elif kind is dict:
            if "doc_id" in hit or "start" in hit or "end" in hit:
                return None
            ident, score, tokens = hit.get("id"), hit.get("score"), hit.get("tokens")
            if tokens is not None and (type(tokens) is not int or tokens < 0):
                return None
        else:
            return None
        if type(ident) is not str or ident in seen or not 0 < len(ident) <= MAX_ID_BYTES // 4 \
                or (known is not None and ident not in known):
            return None
        if score is not None:
            if type(score) is not float:
                if type(score) not in _NUMBERS:
                    return None
                try:
                    score = float(score)
                except OverflowError:  # an int beyond float64
                    return None
            if not score <= last:  # an increase, or NaN
                return None
            last = score
        if scored is None:
            scored = score is not None
        elif scored != (score is not None):
            return None
        seen.add(ident)
        items.append([ident, score, None, None, None, tokens])
    if "\x00" in "".join(seen) or (scored and not (math.isfinite(items[0][1])
                                                   and math.isfinite(last))):
        return None
    return items


def _item(hit: Any, qid: str, rules: HitRules, stage: str | None, rank: int) -> Item:
    """One hit of any accepted kind as an :data:`Item`, its values checked for type."""
    where = _where(stage, rank)
    if isinstance(hit, str):
        return [_id(hit, "id", qid, rules, where, hit), None, None, None, None, None]
    if isinstance(hit, (tuple, list)):
        if len(hit) != 2:
            _refuse(rules, qid, hit, f"{where} has {len(hit)} values, not (id, score)",
                    "return (id, score) pairs, ids, or dicts with id and score")
        return [_id(hit[0], "id", qid, rules, where, hit), _score(hit[1], qid, rules, where,
                                                                   hit), None, None, None, None]
    if isinstance(hit, Mapping):
        return _dict_item(hit, qid, rules, where)
    _refuse(rules, qid, hit, f"{where} is a {type(hit).__name__}", "return (id, score) pairs, "
            "ids, or dicts with id and score (and optional doc_id, start, end, tokens)")
    raise AssertionError  # _refuse raised


def _dict_item(hit: Mapping[str, Any], qid: str, rules: HitRules, where: str) -> Item:
    """A dict hit: ``id`` (for a span, ``doc[start:end]`` when absent), ``score``, ``doc_id``,
    ``start`` and ``end`` (together), ``tokens``."""
    doc = None if hit.get("doc_id") is None else _id(hit["doc_id"], "doc_id", qid, rules,
                                                     where, hit)
    start = end = None
    if "start" in hit or "end" in hit:
        start, end = (_count(hit.get(k), k, qid, rules, where, hit) for k in ("start", "end"))
        if end <= start:
            _refuse(rules, qid, hit, f"{where} ends at {end}, not after its start {start}",
                    "give start < end (code points, end exclusive)")
        if doc is None:
            _refuse(rules, qid, hit, f"{where} has start and end but no doc_id",
                    "give the document the offsets point into as doc_id")
    if "id" not in hit and rules.unit == "span" and doc is not None and start is not None:
        ident = f"{doc}[{start}:{end}]"
    else:
        ident = _id(hit.get("id"), "id", qid, rules, where, hit)
    score = None if hit.get("score") is None else _score(hit["score"], qid, rules, where, hit)
    tokens = (None if hit.get("tokens") is None
              else _count(hit["tokens"], "tokens", qid, rules, where, hit))
    return [ident, score, doc, start, end, tokens]


def _in_snapshot(item: Item, qid: str, rules: HitRules, stage: str | None, rank: int,
                 hits: Any) -> None:
    """The hit names what the snapshot's unit judges, inside the pinned corpus or chunk
    table (see the module docstring)."""
    ident, _, doc, start, end, _ = item
    where = _where(stage, rank)
    if rules.table is not None:
        _in_table(item, qid, rules, where, hits)
        return
    if rules.unit == "span" and start is None:
        _refuse(rules, qid, hits, f"{where} has no place: the snapshot judges spans",
                "give each hit doc_id, start and end (code points into the document's "
                "text, end exclusive), or its chunk id with the chunk table (--chunks)")
    if rules.unit == "chunk" and doc is None:
        return
    if rules.documents is None:
        return
    document = doc if doc is not None else ident
    length = rules.documents.get(document)
    if length is None:
        _refuse(rules, qid, hits, f"{where} names document {shown(document)}, which is not in "
                "the snapshot's corpus", "retrieve from the pinned corpus only (ids of its "
                "documents, or doc_id for a chunk's document)")
    if end is not None and length is not None and 0 <= length < end:
        _refuse(rules, qid, hits, f"{where} ends at {end}, past the {length} characters of "
                f"document {shown(document)}", "give offsets into the pinned corpus text "
                "(code points, end exclusive)")


def _in_table(item: Item, qid: str, rules: HitRules, where: str, hits: Any) -> None:
    """The hit names a chunk of the table, and any ``doc_id`` or place it gives is the
    table's (see the module docstring)."""
    assert rules.table is not None
    ident, _, doc, start, end, _ = item
    placed = rules.table.get(ident)
    if placed is None:
        other = unicodedata.normalize("NFC", ident)
        other = other if other in rules.table else unicodedata.normalize("NFD", ident)
        hint = (" (the table holds it in another Unicode normalization: write the ids alike)"
                if other != ident and other in rules.table else "")
        _refuse(rules, qid, hits, f"{where}, {shown(ident)}, is not a chunk of "
                f"{rules.table_name}{hint}", "return chunk ids of that chunking (the table "
                "places them)")
        raise AssertionError  # _refuse raised
    if (doc is not None and doc != placed[0]) or (start is not None
                                                   and (start, end) != placed[1:3]):
        said = f"{shown(doc)}" + ("" if start is None else f" at {start}:{end}")
        _refuse(rules, qid, hits, f"{where} places chunk {shown(ident)} in {said}, and "
                f"{rules.table_name} in {shown(placed[0])} at {placed[1]}:{placed[2]}",
                "return the chunk's id alone (the table places it), or give the chunk table "
                "the retriever was built on")


def require_table_tokens(rankings: Rankings, qid: str, rules: HitRules) -> None:
    """With a chunk table, InputError at the first item whose token count — the hit's own,
    or the tokenizer's — is not the table's: ``gate check`` reads a chunk's tokens from the
    table, so the run's count would be replaced without a word (budgets and context costs
    then measure the table's)."""
    if rules.table is None:
        return
    for stage, items in rankings:
        for rank, item in enumerate(items, 1):
            ident, tokens = item[0], item[5]
            table = rules.table[ident][3]
            if tokens is None or tokens == table:
                continue
            said = "gives none" if table < 0 else f"gives {table}"
            raise InputError(rules.source, f"query {shown(qid)} returned {_where(stage, rank)}, "
                             f"chunk {shown(ident)}, with {tokens} tokens, and "
                             f"{rules.table_name} {said}: gate check reads a chunk's tokens "
                             "from the table", "give the table the pipeline's counts (its "
                             "tokens), or leave the counts out of the hits (and --tokenizer)")


def _id(value: Any, what: str, qid: str, rules: HitRules, where: str, hit: Any) -> str:
    """A hit's id (or doc_id): a non-empty string without NUL of at most 1,024 UTF-8 bytes."""
    if not isinstance(value, str) or not value or "\x00" in value:
        _refuse(rules, qid, hit, f"{where}'s {what} is not a non-empty string",
                f"return each {what} as a string (str(...) of a number)")
    if len(value) > MAX_ID_BYTES // 4 and len(value.encode("utf-8")) > MAX_ID_BYTES:
        _refuse(rules, qid, hit, f"{where}'s {what} is longer than {MAX_ID_BYTES} bytes",
                "map long ids to short ones")
    return value


def _score(value: Any, qid: str, rules: HitRules, where: str, hit: Any) -> float:
    """A hit's score as a float64 (numpy numbers too; an int beyond float64 is refused here,
    other finiteness is checked by the caller)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        _refuse(rules, qid, hit, f"{where}'s score is not a number", "return scores as "
                "numbers (or none: the order is then the ranking)")
    try:
        return float(value)
    except OverflowError:
        _refuse(rules, qid, hit, f"{where}'s score is beyond a float64's range", "return "
                "finite scores (or none: the order is then the ranking)")
        raise AssertionError from None  # _refuse raised


def _count(value: Any, what: str, qid: str, rules: HitRules, where: str, hit: Any) -> int:
    """A hit's ``start``, ``end`` or ``tokens``: a whole number ≥ 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        _refuse(rules, qid, hit, f"{where}'s {what} is not a whole number ≥ 0",
                f"give {what} as a whole number")
    return int(value)


def _where(stage: str | None, rank: int) -> str:
    return f"hit {rank}" if stage is None else f"hit {rank} of stage '{stage}'"


class _Shown(reprlib.Repr):
    """A bounded display of what a target returned that runs none of its code: containers,
    strings and numbers are shown (cut short), any other object by its type's name."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxstring, self.maxother = 3, 60, 40
        self.maxlist = self.maxtuple = self.maxdict = 4

    def repr_instance(self, x: Any, level: int) -> str:
        if isinstance(x, (numbers.Number, type(None))):
            return capped(repr(x), self.maxother)
        return f"<{type(x).__name__}>"


_SHOWN = _Shown()


def shown(value: Any) -> str:
    """``value`` for a message: bounded, safe (see :class:`_Shown`), at most 160 characters."""
    try:
        return capped(_SHOWN.repr(value), 160)
    except Exception:  # noqa: BLE001 — a hostile container may fail to be shown
        return f"<{type(value).__name__}>"


def _refuse(rules: HitRules, qid: str, returned: Any, problem: str, fix: str) -> None:
    """Raise the InputError for query ``qid``: ``TARGET: query 'q' returned VALUE: problem —
    fix``."""
    raise InputError(rules.source, f"query {shown(qid)} returned {shown(returned)}: {problem}",
                     fix)
