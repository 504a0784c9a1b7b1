"""promptfoo's JSON output (``promptfoo eval -o results.json``) as per-query scores.

The file. The document promptfoo writes for an output path ending in ``.json``:
``{"evalId", "results": {"version": 3, "timestamp", "prompts", "results": [...], "stats"},
"config", "metadata": {"promptfooVersion", ...}, ...}``. Results version 3 is read (tested with
promptfoo 0.120.0 and 0.123.1); any other version is refused, and so is promptfoo's JSON Lines
output (``-o results.jsonl``), which records none. Each element of ``results.results`` is one
test run once on one prompt and provider; a file holding more than one prompt or provider
(``promptIdx``) is refused: one score file holds the answers of one system.

Scores of a test (``namedScores``, ``score``, ``success``, ``failureReason`` and
``gradingResult.componentResults``):

- each ``namedScores`` key: the score of the test's assertions whose ``metric`` is that name
  (their weighted mean, as promptfoo computes it); an assertion without a ``metric`` has no
  score of its own;
- ``promptfoo.score``: the test's own ``score``, the weighted mean of all its assertions;
- ``promptfoo.pass``: 1 when the test passed, 0 when it failed.

Metric names are normalised as :mod:`~retrieval_gate.formats.scores.cases` says
(``Mentions finally`` is ``score:mentions_finally``); a metric named ``promptfoo.score`` or
``promptfoo.pass`` is refused.

A failed judgement is NaN: every score of a test promptfoo records as an error
(``failureReason`` 2: the provider, a transform or the grading failed), and the metric of an
assertion whose code raised — a ``javascript`` assertion's reason starting ``Custom function
threw error:``, a ``python`` one's ``Python code execution failed:`` — which promptfoo counts as
a score of 0; ``promptfoo.score`` and ``promptfoo.pass`` are then NaN too. A metric a test does
not have (its assertions are the test's own) and a null are NaN as well.

Query key: the var ``query_id`` when every test has one; when none has, the var ``query`` (the
question as the test gives it, not the prompt rendered around it). Several results of one
query — ``promptfoo eval --repeat N``, or several tests naming one query — are its samples, in
file order (promptfoo does not number them).
"""

from __future__ import annotations

import math
import re
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.jsonfmt import document_or_lines, path
from retrieval_gate.formats.scores.cases import Case, query_id, require, score_name, score_rows
from retrieval_gate.formats.scores.rows import ScoreRows, quoted, score_text, score_value

FORMAT_VERSION = 3
SCORE, PASS = "promptfoo.score", "promptfoo.pass"
_READ = ("promptfoo's JSON output of results version 3 (promptfoo eval -o results.json; "
         "tested with promptfoo 0.120.0 and 0.123.1)")
_ERROR = 2  # failureReason: 0 passed, 1 an assertion failed, 2 an error
_RAISED = ("Custom function threw error:", "Python code execution failed:")
_ID = "var query_id"


_YAML_KEY = re.compile(rb"[A-Za-z_][\w-]*:(\s|$)")
_JSON_ARRAY = re.compile(rb'\[\s*($|["\[\]{}\d\-tfn])')  # a CSV header may open with [PROMPT]


def _other_output(data: bytes, name: str) -> str | None:
    """Which of promptfoo's other outputs a file that is no JSON looks like — ``-o
    results.csv`` (a header row of comma-separated names) or ``-o results.yaml`` (``key:``
    lines or ``---``) — by its first non-blank line and its name; None when it opens as JSON
    does (``{``, or ``[`` and a JSON value: read on) or looks like neither."""
    first = next((line.strip() for line in data[:1 << 16].lstrip(b"\xef\xbb\xbf").splitlines()
                  if line.strip()), b"")
    if first[:1] == b"{" or _JSON_ARRAY.match(first):
        return None
    lower = name.lower()
    if lower.endswith((".yaml", ".yml")) or first == b"---" or _YAML_KEY.match(first):
        return "promptfoo's YAML output (promptfoo eval -o results.yaml)"
    if lower.endswith(".csv") or b"," in first:
        return "promptfoo's CSV output (promptfoo eval -o results.csv)"
    return None


def read(data: bytes, name: str) -> ScoreRows:
    """The scores of promptfoo's JSON output ``data`` (the file ``name``); InputError for
    anything else."""
    if data[:4] == b"PK\x03\x04":
        raise InputError(name, "is a zip archive (an inspect_ai .eval log?), not promptfoo's "
                         "JSON output", f"give {_READ}")
    other = _other_output(data, name)
    if other is not None:
        raise InputError(name, f"is {other}, which records no format version", "write "
                         "promptfoo's JSON output instead: promptfoo eval -o results.json")
    document, lines = document_or_lines(score_text(data, name), name)
    if lines:
        raise InputError(name, "is JSON Lines (promptfoo's -o results.jsonl output), which "
                         "records no format version", "write promptfoo's JSON output instead: "
                         "promptfoo eval -o results.json")
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, dict) or "version" not in results:
        raise InputError(name, "is not promptfoo's JSON output (it has no results.version)",
                         f"give {_READ}")
    if results["version"] != FORMAT_VERSION or isinstance(results["version"], bool):
        raise InputError(name, f"was written by {_producer(document)} (results version "
                         f"{quoted(results['version'])}), which retrieval-gate does not read",
                         f"give {_READ}", path("results", "version"))
    where = path("results", "results")
    tests = require(results.get("results"), list, name, where, "results.results", "a list")
    cases = [_case(test, name, path("results", "results", i)) for i, test in enumerate(tests)]
    _one_column(tests, name)
    return score_rows(cases, name, _producer(document), "test", _ID, "var query")


def _producer(document: dict[str, Any]) -> str:
    """``promptfoo VERSION`` as the file records it, or ``promptfoo``."""
    metadata = document.get("metadata")
    version = metadata.get("promptfooVersion") if isinstance(metadata, dict) else None
    return f"promptfoo {version}" if isinstance(version, str) and version else "promptfoo"


def _case(test: Any, source: str, where: str) -> Case:
    """One test's query id, text and scores."""
    test = require(test, dict, source, where, "the result", "an object")
    variables = require(test.get("vars", {}), dict, source, where, "vars", "an object")
    identifier = query_id(variables.get("query_id"), source, where, _ID)
    reason = test.get("failureReason")
    if reason not in (0, 1, 2) or isinstance(reason, bool):
        raise InputError(source, f"failureReason {quoted(reason)} is not 0, 1 or 2",
                         f"give {_READ}", where)
    text = variables.get("query")
    if reason == _ERROR:
        return Case(where, identifier, text, {SCORE: math.nan, PASS: math.nan})
    named = require(test.get("namedScores", {}), dict, source, where, "namedScores",
                    "an object")
    scores: dict[str, float] = {}
    for metric, value in named.items():
        if score_name(metric) in (SCORE, PASS):
            raise InputError(source, f"metric {quoted(metric)} has the name of the test's own "
                             "score", "rename the metric in the promptfoo config", where)
        scores[metric] = score_value(value, metric, source, where)
    scores[SCORE] = score_value(test.get("score"), SCORE, source, where)
    scores[PASS] = float(require(test.get("success"), bool, source, where, "success",
                                 "true or false"))
    raised = _raised(test.get("gradingResult"), source, where)
    if raised:
        scores.update(dict.fromkeys([SCORE, PASS, *(m for m in raised if m)], math.nan))
    return Case(where, identifier, text, scores)


def _raised(grading: Any, source: str, where: str) -> list[str | None]:
    """The metric (None for an assertion without one) of each assertion whose code raised."""
    if grading is None:
        return []
    grading = require(grading, dict, source, where, "gradingResult", "an object")
    components = require(grading.get("componentResults", []), list, source, where,
                         "gradingResult.componentResults", "a list")
    out = []
    for component in components:
        component = require(component, dict, source, where, "a component result",
                            "an object")
        reason = component.get("reason")
        if isinstance(reason, str) and reason.startswith(_RAISED):
            assertion = require(component.get("assertion") or {}, dict, source, where,
                                "an assertion", "an object")
            metric = assertion.get("metric")
            out.append(require(metric, str, source, where, "metric", "a string")
                       if metric is not None else None)
    return out


def _one_column(tests: list[dict[str, Any]], source: str) -> None:
    """InputError unless every result has the same ``promptIdx`` (one prompt and provider)."""
    columns = [require(test.get("promptIdx"), int, source, path("results", "results", i),
                       "promptIdx", "a whole number") for i, test in enumerate(tests)]
    for i, column in enumerate(columns):
        if column != columns[0]:
            raise InputError(source, "holds the results of more than one prompt or provider",
                             "run one prompt on one provider per score file (promptfoo eval "
                             "--filter-prompts, --filter-providers)",
                             path("results", "results", i))
