"""The DeepEval score reader on DeepEval's own saved test runs (tests/data/scores/deepeval/,
written by make_deepeval.py with deepeval 4.3.1 and 3.9.8: test_run_<timestamp>.json,
.deepeval/.latest_test_run.json and .deepeval/.latest_run_full.json) and on broken ones."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from conftest import DATA
from score_questions import IDS, TEXTS

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.scores import deepeval

SCORES = DATA / "scores"
FIXTURES = SCORES / "deepeval"
NAN = math.nan
# DeepEval's own per-case results (EvaluationResult.test_results[i].metrics_data, printed by
# make_deepeval.py): the score of each metric in the order of IDS; "Context Term Recall"
# failed on p15 (error "ValueError: the retrieval context is empty", score None).
NAMES = ("context_term_recall", "exact_match", "token_f1")
VALUES = np.array([
    [0.7647058823529411, 0.8333333333333334, 0.23076923076923078, 0.9411764705882353, 0.75,
     NAN],  # Context Term Recall
    [0.0, 0.0, 0.0, 1.0, 0.0, 0.0],  # Exact Match
    [0.6666666666666666, 0.6792452830188679, 0.2857142857142857, 1.0, 0.5714285714285714,
     0.5185185185185185],  # Token F1
]).T


def run(file: str = "test_run-ids.json") -> dict:
    return json.loads((FIXTURES / file).read_text("utf-8"))


def read(document: dict | bytes, file: str = "run.json"):
    data = document if isinstance(document, bytes) else json.dumps(document).encode()
    return deepeval.read(data, file)


def refused(document: dict | bytes, file: str = "run.json") -> InputError:
    with pytest.raises(InputError) as caught:
        read(document, file)
    assert "\n" not in str(caught.value)
    return caught.value


@pytest.mark.parametrize("file", ["test_run-ids.json", "test_run-ids-3.9.8.json"])
def test_a_results_folder_run_gives_the_values_deepeval_reported(file):
    """4.3.1 saves the metadata as "metadata", 3.9.8 as "additionalMetadata"."""
    rows = deepeval.read((FIXTURES / file).read_bytes(), file)
    assert rows.names == NAMES
    np.testing.assert_array_equal(rows.values, VALUES)  # exactly, NaN for the error
    assert (rows.keys, rows.by_text) == (IDS, False)
    assert rows.places == tuple(f'$["testCases"][{i}]' for i in range(6))
    assert rows.samples == (None,) * 6
    assert rows.tool == "deepeval"


def test_the_latest_test_run_file_is_keyed_by_input_text():
    rows = deepeval.read((FIXTURES / "latest_test_run.json").read_bytes(), "latest_test_run.json")
    assert rows.by_text
    assert rows.keys == TEXTS
    np.testing.assert_array_equal(rows.values, VALUES)
    assert rows.places[5] == '$["testRunData"]["testCases"][5]'


def test_the_latest_run_full_file_is_the_test_run_itself():
    """.deepeval/.latest_run_full.json (deepeval 4.0.2 on, here 4.3.1's, of a run without
    metadata): the test run object as in test_run_<timestamp>.json, not under "testRunData";
    the same rows as .latest_test_run.json."""
    data = (FIXTURES / "latest_run_full.json").read_bytes()
    assert "testCases" in json.loads(data) and "testRunData" not in json.loads(data)
    rows = deepeval.read(data, "latest_run_full.json")
    wrapped = deepeval.read((FIXTURES / "latest_test_run.json").read_bytes(), "latest.json")
    assert rows.by_text and rows.keys == TEXTS == wrapped.keys
    assert rows.names == NAMES == wrapped.names
    np.testing.assert_array_equal(rows.values, VALUES)
    assert rows.places == tuple(f'$["testCases"][{i}]' for i in range(6))


def test_an_error_recorded_beside_a_score_is_nan_and_booleans_are_numbers():
    document = run()
    first = document["testCases"][0]["metricsData"]
    first[0]["error"] = "TimeoutError"  # Exact Match, with its score still there
    first[1]["score"] = True  # Token F1
    del first[2]["score"]  # Context Term Recall
    document["testCases"][1]["metricsData"] = None
    rows = read(document)
    np.testing.assert_array_equal(rows.values[0], [NAN, NAN, 1.0])
    np.testing.assert_array_equal(rows.values[1], [NAN, NAN, NAN])


def test_a_metric_only_some_cases_have_is_nan_for_the_others():
    document = run()
    document["testCases"][2]["metricsData"] += [{"name": "Answer Relevancy", "score": 0.5},
                                                {"name": "Correctness [GEval]", "score": 0.25}]
    rows = read(document)
    assert rows.names == ("answer_relevancy", "context_term_recall", "correctness_geval",
                          "exact_match", "token_f1")
    np.testing.assert_array_equal(rows.values[:, 0], [NAN, NAN, 0.5, NAN, NAN, NAN])
    np.testing.assert_array_equal(rows.values[:, 2], [NAN, NAN, 0.25, NAN, NAN, NAN])


def test_metric_names_lose_underscores_dots_and_dashes_at_both_ends():
    document = run()
    for test_case in document["testCases"]:
        test_case["metricsData"][0]["name"] = "-Exact Match (v1.)"
    assert read(document).names == ("context_term_recall", "exact_match_v1", "token_f1")


def test_some_cases_with_a_query_id_and_some_without_are_refused():
    document = run()
    del document["testCases"][3]["metadata"]
    assert str(refused(document)) == (
        'run.json:$["testCases"][3]: this test case has no query_id while others have one — '
        "give every test case a query_id, or none (then each is matched by its question text)")


def test_a_truncated_file_is_refused():
    data = (FIXTURES / "test_run-ids.json").read_bytes()
    assert "run.json:1: invalid JSON" in str(refused(data[:len(data) // 2]))


def with_case(change) -> dict:
    document = run()
    change(document["testCases"][4])
    return document


@pytest.mark.parametrize("document, problem", [
    ((SCORES / "ragas" / "result.jsonl").read_bytes(),
     "is not a DeepEval test run: it holds JSON Lines"),
    ((SCORES / "ragas" / "result.csv").read_bytes(),
     "invalid JSON"),
    ({"testRunLink": "https://app.confident-ai.com/x"},
     ("holds only the link to a test run on Confident AI, not its results — give "
      ".deepeval/.latest_run_full.json (deepeval 4.0.2 on), or set DEEPEVAL_RESULTS_FOLDER")),
    ({"testRunData": {"test_cases": []}},
     ('run.json:$["testRunData"]: is not a DeepEval test run: expected a JSON object with '
      '"testCases"')),
    ([1], "is not a DeepEval test run"),
    ({"testCases": []}, "holds no test case"),
    ({**run(), "conversationalTestCases": [{"name": "c", "turns": []}]},
     "holds conversational (multi-turn) test cases"),
    (with_case(lambda c: c["metricsData"][1].update(score="0.5")),
     'run.json:$["testCases"][4]["metricsData"][1]: score \'Token F1\' is "0.5", not a number'),
    (with_case(lambda c: c["metricsData"][1].update(score=10 ** 400)),
     "score 'Token F1' is inf, not a finite number"),
    (with_case(lambda c: c["metricsData"][1].update(name="Exact Match")),
     "metric 'Exact Match' appears twice in the test case"),
    (with_case(lambda c: c["metricsData"][1].update(name="exact_match")),
     'metrics "Exact Match" and "exact_match" both read as score \'exact_match\''),
    (with_case(lambda c: c["metricsData"][1].pop("name")), "a metric of the test case has no name"),
    (with_case(lambda c: c.update(metricsData={})), "metricsData is not a list"),
    (with_case(lambda c: c.update(metadata=["p08"])), "the test case's metadata is not an object"),
    (with_case(lambda c: c.update(metadata={"query_id": 8.5})), "query_id 8.5 is not a non-empty"),
    (with_case(lambda c: c.update(metadata={"query_id": True})), "query_id true is not a non-empty"),
    (with_case(lambda c: c.update(input=["hi"])), "the test case's input is [\"hi\"], not a text"),
    (b'{"testCases": [{"input": "q", "metricsData": [{"name": "m", "score": 1}]}, 2]}',
     'run.json:$["testCases"][1]: a test case is not a JSON object'),
    (b'{"testCases": [{"metricsData": [{"name": "m", "score": 1}]}]}',
     "this test case has neither a query_id nor a question text: input null"),
    (b'{"testCases": [], "testCases": []}', "key 'testCases' appears twice"),
    (b"\xff{}", "run.json:1: invalid UTF-8"),
])
def test_files_that_are_not_deepeval_runs_are_refused(document, problem):
    assert problem in str(refused(copy.deepcopy(document)))


def test_hostile_texts_and_ids_pass_through_unchanged():
    """An input or an id with a line break, a workflow command or HTML is data."""
    text = 'Why?\n::error::<script>alert("x")</script>'
    document = run("latest_test_run.json")
    document["testRunData"]["testCases"][0]["input"] = text
    assert read(document).keys[0] == text
    document = run()
    document["testCases"][0]["metadata"]["query_id"] = text
    assert read(document).keys[0] == text
    document["testCases"][0]["metricsData"][0]["score"] = text
    assert str(refused(document)).endswith(
        'score \'Exact Match\' is "Why?\\n::error::<script>alert(\\"x\\")</script>", not a '
        "number — write the score as a number (empty or null for a failed judgement)")
