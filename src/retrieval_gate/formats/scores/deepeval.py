"""DeepEval scores: the test run ``deepeval.evaluate(...)`` saves, either the
``test_run_<timestamp>.json`` it writes into ``DEEPEVAL_RESULTS_FOLDER`` (a test run object),
``.deepeval/.latest_run_full.json`` (the same object, written after every run from deepeval
4.0.2 on, whether or not ``DEEPEVAL_RESULTS_FOLDER`` is set) or ``.deepeval/.latest_test_run.json``
(the same object under ``"testRunData"``). Checked on the files of deepeval 3.9.8, 3.9.9 and
4.3.1; by their source, earlier 3.x versions save the same fields. With
``DEEPEVAL_LOCAL_STORE=sqlite`` (4.3.1) DeepEval writes a SQLite ``deepeval.db`` instead of the
first two, which is not read.

Structure read: ``{"testCases": [{"input": "...", "metricsData": [{"name": "...", "score":
0.5, "error": "..."}, ...], "metadata": {"query_id": "..."}}, ...]}``; every other field is
passed over.

- Query id: the test case's metadata field ``query_id`` (``LLMTestCase(metadata={"query_id":
  ...})``; deepeval before 3.9.9 saves the metadata as ``additionalMetadata``). When no test
  case has one, each is keyed by its ``input`` text.
- Scores: one per metric, named by the metric's ``name`` as DeepEval writes it (``Exact
  Match``, ``Answer Relevancy``, ``Correctness [GEval]``), normalised as
  :mod:`~retrieval_gate.formats.scores.cases` says (``exact_match``). A metric whose
  evaluation failed on a test case (DeepEval records an ``error``, with
  ``ErrorConfig(ignore_errors=True)``), or whose score is null or absent, is NaN for it; so is
  a metric a test case does not have; true/false are 1/0. One metric name twice in a test
  case is refused.
- Refused: a file holding only the link to a run on Confident AI (``"testRunLink"``), a test
  run with conversational test cases (multi-turn; not read), anything without ``testCases``.
  Metrics of trace spans (component-level evaluation) are not read.

The file records no DeepEval version; a file without the structure above is refused.
"""

from __future__ import annotations

import math
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.jsonfmt import document_or_lines, path
from retrieval_gate.formats.scores.cases import Case, query_id, score_rows
from retrieval_gate.formats.scores.rows import ScoreRows, quoted, score_text, score_value

_EXPECTED = ("give the test run DeepEval saved: test_run_<timestamp>.json of "
             "DEEPEVAL_RESULTS_FOLDER, .deepeval/.latest_run_full.json or "
             ".deepeval/.latest_test_run.json")


def read(data: bytes, name: str) -> ScoreRows:
    """The scores of a saved DeepEval test run (see the module docstring)."""
    document, lines = document_or_lines(score_text(data, name), name)
    if lines:
        raise InputError(name, "is not a DeepEval test run: it holds JSON Lines, not one JSON "
                         "object", _EXPECTED)
    keys: tuple[str, ...] = ()
    if isinstance(document, dict) and "testRunData" in document:
        keys, document = ("testRunData",), document["testRunData"]
    elif isinstance(document, dict) and "testRunLink" in document:
        raise InputError(name, "holds only the link to a test run on Confident AI, not its "
                         "results", "give .deepeval/.latest_run_full.json (deepeval 4.0.2 on), "
                         "or set DEEPEVAL_RESULTS_FOLDER and give the "
                         "test_run_<timestamp>.json DeepEval writes there")
    if not isinstance(document, dict) or not isinstance(document.get("testCases"), list):
        raise InputError(name, "is not a DeepEval test run: expected a JSON object with "
                         "\"testCases\"", _EXPECTED, path(*keys))
    if document.get("conversationalTestCases"):
        raise InputError(name, "holds conversational (multi-turn) test cases, which "
                         "retrieval-gate does not read", "evaluate single-turn LLMTestCases",
                         path(*keys, "conversationalTestCases"))
    cases = [_case(test_case, name, (*keys, "testCases", i))
             for i, test_case in enumerate(document["testCases"])]
    return score_rows(cases, name, "deepeval", "test case", "query_id", "input")


def _case(test_case: Any, name: str, keys: tuple[str | int, ...]) -> Case:
    """One test case: its query id, input and scores."""
    where = path(*keys)
    if not isinstance(test_case, dict):
        raise InputError(name, "a test case is not a JSON object", _EXPECTED, where)
    text = test_case.get("input")
    if text is not None and not isinstance(text, str):
        raise InputError(name, f"the test case's input is {quoted(text)}, not a text",
                         _EXPECTED, path(*keys, "input"))
    field = "metadata" if "metadata" in test_case else "additionalMetadata"
    metadata = test_case.get(field)
    if metadata is not None and not isinstance(metadata, dict):
        raise InputError(name, f"the test case's {field} is not an object", "give metadata "
                         "as a dict", path(*keys, field))
    identifier = query_id((metadata or {}).get("query_id"), name, path(*keys, field, "query_id"))
    metrics = test_case.get("metricsData")
    metrics = [] if metrics is None else metrics
    if not isinstance(metrics, list):
        raise InputError(name, "the test case's metricsData is not a list", _EXPECTED,
                         path(*keys, "metricsData"))
    scores: dict[str, float] = {}
    for j, metric in enumerate(metrics):
        at = path(*keys, "metricsData", j)
        if not isinstance(metric, dict) or not isinstance(metric.get("name"), str):
            raise InputError(name, "a metric of the test case has no name", _EXPECTED, at)
        metric_name = metric["name"]
        if metric_name in scores:
            raise InputError(name, f"metric '{metric_name}' appears twice in the test case",
                             "give the test case's metrics distinct names", at)
        scores[metric_name] = (math.nan if metric.get("error") is not None
                               else score_value(metric.get("score"), metric_name, name, at))
    return Case(where, identifier, text, scores)
