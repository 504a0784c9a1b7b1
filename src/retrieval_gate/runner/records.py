"""One query's journal record, from what its call returned; and what the run's latencies are.

An answered query's record (see :mod:`retrieval_gate.runner.journal`) is one of:

- ``{"query_id", "rankings", "latency_ms"}``: its rankings, checked
  (:mod:`retrieval_gate.runner.hits`) and with a tokenizer counted
  (:mod:`retrieval_gate.runner.tokens`); ``latency_ms`` the wall time of its call, or with
  ``--batch-size`` of the batch call that answered it;
- the same with ``"latency": "reported"``: ``latency_ms`` is the one the batch function
  reported for the query (below);
- ``{"query_id", "rankings", "stage_latency_ms": [...]}``: chained stages
  (:mod:`retrieval_gate.runner.chain`), each stage's own time in pipeline order;
- any of them with ``"counted": true`` when the tokenizer counted the text of at least one of
  its hits (:mod:`retrieval_gate.runner.tokens`).

**A reported latency.** A batch function may return, for a query, ``{"hits": RESULT,
"latency_ms": N}``: RESULT a ranking or a dict of named stages, N the milliseconds the query
took by the function's own clock, a finite number ≥ 0. A result with a key ``latency_ms`` is
read this way only — any key beside ``hits`` and ``latency_ms``, or a latency that is not such
a number, is refused, so it is never taken for a dict of stages (a stage named ``latency_ms``
would be ambiguous: refused too). An unbatched call is timed by the runner: a result that
reports its latency is refused. Every query of a run reports its latency or none does
(:func:`latency_kind`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

from retrieval_gate.core.errors import InputError
from retrieval_gate.runner.chain import Staged
from retrieval_gate.runner.hits import HitRules, rankings_of, require_table_tokens, shown
from retrieval_gate.runner.tokens import Tokenizer, count_tokens

REPORTED = "reported"
_FORM = '{"hits": [...], "latency_ms": 12.5}'


def record_of(qid: str, result: Any, latency_ms: float, rules: HitRules,
              tokenizer: Tokenizer | None, batched: bool) -> dict[str, Any]:
    """The record of query ``qid`` whose call returned ``result`` (one query's share of it)
    after ``latency_ms``; InputError naming the query for a result that is not a ranking
    (see the module docstring)."""
    if isinstance(result, Staged):
        if result.error is not None:
            raise result.error
        staged: dict[str, Any] = {"query_id": qid, "rankings": result.rankings,
                                  "stage_latency_ms": list(result.latencies)}
        if result.counted:
            staged["counted"] = True
        return staged
    record: dict[str, Any] = {"query_id": qid}
    if isinstance(result, Mapping) and "latency_ms" in result:
        result, latency_ms = _reported(result, qid, rules, batched)
        record["latency"] = REPORTED
    record["rankings"] = rankings_of(result, qid, rules)
    record["latency_ms"] = latency_ms
    if tokenizer is not None:
        counted = 0
        for (stage, items), hits in zip(record["rankings"], _rankings(result)):
            counted += count_tokens(hits, items, tokenizer, qid, stage, rules.source)
        if counted:
            record["counted"] = True
    require_table_tokens(record["rankings"], qid, rules)
    return record


def _reported(result: Mapping[str, Any], qid: str, rules: HitRules, batched: bool
              ) -> tuple[Any, float]:
    """(hits, latency) of a result that reports its latency; InputError otherwise."""
    def refuse(problem: str, fix: str) -> NoReturn:
        raise InputError(rules.source, f"query {shown(qid)} returned {shown(result)}: "
                         f"{problem}", fix)

    if not batched:
        refuse("it reports its latency_ms, and gate run times each call itself",
               "return the hits alone (a batch function, --batch-size, may report each "
               f"query's latency as {_FORM})")
    if set(result) != {"hits", "latency_ms"}:
        refuse("a result with latency_ms is the query's hits with its reported latency, and "
               "it has other keys", f"return {_FORM} (a pipeline stage may not be named "
               "latency_ms)")
    value = result["latency_ms"]
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
            math.isfinite(float(value)) and float(value) >= 0):
        refuse("its latency_ms is not a number of milliseconds ≥ 0", f"return {_FORM}")
    return result["hits"], float(value)


def _rankings(result: Any) -> list[Any]:
    """A checked result's raw rankings, in the order of its checked ones."""
    return list(result.values()) if isinstance(result, Mapping) else [result]


def latency_kind(answered: Iterable[dict[str, Any]], kind: str, source: str) -> str:
    """What the run's ``latency_ms`` measure: ``reported`` when every answered record reports
    its latency, else ``kind`` (``call``, ``batch`` or ``stage``: what the runner timed);
    InputError naming the first query without a reported latency when some have one. One
    pass over ``answered`` (records read back from the journal, one at a time)."""
    reported = total = 0
    lacking: str | None = None
    for record in answered:
        total += 1
        if record.get("latency") == REPORTED:
            reported += 1
        elif lacking is None:
            lacking = record["query_id"]
    if not reported:
        return kind
    if lacking is not None:
        raise InputError(source, f"{reported} of {total} queries report their latency_ms and "
                         f"query {shown(lacking)} does not: a run's latencies are all reported "
                         "or all timed by gate run", f"return {_FORM} for every query, or the "
                         "hits alone for every query (leave out --resume to start over)")
    return REPORTED
