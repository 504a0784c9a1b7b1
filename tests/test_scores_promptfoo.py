"""The promptfoo reader on promptfoo's own JSON output (tests/data/scores/promptfoo, written by
promptfoo 0.123.1 and 0.120.0; see its README) and on damaged or foreign files."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scorecheck
from conftest import DATA
from scorecheck import QUESTIONS

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.scores import promptfoo

FIXTURES = DATA / "scores" / "promptfoo"
NAN = math.nan
# each fixture written by two versions: NAME.json by 0.123.1, NAME-0.120.0.json by 0.120.0
VERSIONS = [pytest.param("", "0.123.1", id="0.123.1"),
            pytest.param("-0.120.0", "0.120.0", id="0.120.0")]


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def edited(name: str, change: Callable[[dict[str, Any]], object]) -> bytes:
    """The fixture ``name`` with ``change`` applied to its parsed document."""
    document = json.loads(fixture(name))
    change(document)
    return json.dumps(document).encode()


def results(document: dict[str, Any]) -> list[dict[str, Any]]:
    return document["results"]["results"]


def table(rows, names: tuple[str, ...]) -> np.ndarray:
    return np.array([[row[name] for name in names] for row in rows], dtype=float)


def refused(data: bytes, *parts: str, where: object = None) -> InputError:
    return scorecheck.refused(promptfoo.read, data, "scores.json", *parts, where=where)


@pytest.mark.parametrize("suffix, version", VERSIONS)
def test_ids_fixture_gives_the_metrics_promptfoo_wrote(suffix, version):
    rows = promptfoo.read(fixture(f"ids{suffix}.json"), "ids.json")
    assert rows.tool == f"promptfoo {version}"
    assert rows.keys == ("p01", "p02", "p03", "p04", "p05", "p06") and not rows.by_text
    assert rows.samples == (None,) * 6
    assert rows.places == tuple(f'$["results"]["results"][{i}]' for i in range(6))
    # "Mentions finally" is normalised; the equals assertion has no metric, so no name
    assert rows.names == ("else_clause", "length.ratio", "mentions_finally", "promptfoo.pass",
                          "promptfoo.score", "reference_overlap", "reference_words",
                          "says-return")
    # namedScores, score and success of each result as promptfoo wrote them in ids.json; for
    # p04 its javascript and python assertions raised (promptfoo scored them 0, the test 0.3486)
    expected = [
        {"Mentions finally": 1, "else_clause": 0, "says-return": 1, "length.ratio": 1,
         "reference_overlap": 0.8, "reference_words": 0.5, "score": 0.7571428571428571,
         "pass": 0},
        {"Mentions finally": 1, "else_clause": 0, "says-return": 1, "length.ratio": 0.75,
         "reference_overlap": 0.6, "reference_words": 0.5, "score": 0.6928571428571428,
         "pass": 0},
        {"Mentions finally": 0, "else_clause": 0, "says-return": 0, "length.ratio": 0.94,
         "reference_overlap": 0.45454545454545453, "reference_words": 1.1,
         "score": 0.49922077922077923, "pass": 0},
        {"Mentions finally": 0, "else_clause": 1, "says-return": 0, "length.ratio": 0.44,
         "reference_overlap": NAN, "reference_words": NAN, "score": NAN, "pass": NAN},
        {"Mentions finally": 0, "else_clause": 1, "says-return": 0, "length.ratio": 0.77,
         "reference_overlap": 0.6666666666666666, "reference_words": 0.6,
         "score": 0.5766666666666665, "pass": 0},
        {"Mentions finally": 0, "else_clause": 0, "says-return": 0, "length.ratio": 0.9,
         "reference_overlap": 0.5, "reference_words": 0.6, "score": 0.42857142857142855,
         "pass": 0},
    ]
    columns = ("else_clause", "length.ratio", "Mentions finally", "pass", "score",
               "reference_overlap", "reference_words", "says-return")
    np.testing.assert_array_equal(rows.values, table(expected, columns))
    assert rows.values.dtype == np.float64


@pytest.mark.parametrize("suffix, version", VERSIONS)
def test_text_fixture_is_keyed_by_the_var_query_and_an_error_is_nan(suffix, version):
    rows = promptfoo.read(fixture(f"text{suffix}.json"), "text.json")
    assert rows.tool == f"promptfoo {version}"
    assert rows.by_text
    assert rows.keys == tuple(QUESTIONS[f"p0{i}"] for i in range(1, 7))
    assert rows.names == ("mentions_function", "promptfoo.pass", "promptfoo.score", "words")
    # as in text.json; p04's transform failed: failureReason 2, namedScores {}, score 0
    expected = [[1, 1, 0.975, 0.95], [0, 0, 0.325, 0.65], [0, 0, 0.425, 0.85],
                [NAN, NAN, NAN, NAN], [0, 0, 0.375, 0.75], [1, 1, 0.9, 0.8]]
    np.testing.assert_array_equal(rows.values, np.array(expected))


@pytest.mark.parametrize("suffix, version", VERSIONS)
def test_repeated_tests_are_samples_in_file_order(suffix, version):
    rows = promptfoo.read(fixture(f"repeat{suffix}.json"), "repeat.json")
    assert rows.tool == f"promptfoo {version}"
    assert rows.keys == ("p01", "p01", "p02", "p02", "p03", "p03")
    assert rows.samples == (None,) * 6
    assert rows.names == ("length_ratio", "mentions_finally", "promptfoo.pass",
                          "promptfoo.score")
    # as in repeat.json (the echo provider answers each repetition alike)
    expected = [[1.1, 1, 1, 1.05]] * 2 + [[0.75, 1, 1, 0.875]] * 2 + [[0.94, 0, 0, 0.47]] * 2
    np.testing.assert_array_equal(rows.values, np.array(expected))


@pytest.mark.parametrize("name", ["ids", "text", "repeat"])
def test_promptfoo_0_120_0_and_0_123_1_give_the_same_rows(name):
    """The same configs run by both versions: the same results, read alike (the raised
    assertions' reasons, the errored test), bar the version named."""
    old = promptfoo.read(fixture(f"{name}-0.120.0.json"), f"{name}.json")
    new = promptfoo.read(fixture(f"{name}.json"), f"{name}.json")
    assert (old.keys, old.by_text, old.samples, old.places, old.names) == \
        (new.keys, new.by_text, new.samples, new.places, new.names)
    np.testing.assert_array_equal(old.values, new.values)
    assert json.loads(fixture(f"{name}-0.120.0.json"))["results"]["version"] == 3


HOSTILE = "p01\n::error::<b>x</b> & \u2028 \"quoted\" NaN"


def test_a_hostile_id_or_text_passes_through_unchanged():
    def hostile_id(document):
        results(document)[0]["vars"]["query_id"] = HOSTILE

    assert promptfoo.read(edited("ids.json", hostile_id), "x.json").keys[0] == HOSTILE

    def hostile_text(document):
        results(document)[1]["vars"]["query"] = HOSTILE

    assert promptfoo.read(edited("text.json", hostile_text), "x.json").keys[1] == HOSTILE


def test_null_and_boolean_metric_values():
    def change(document):
        results(document)[0]["namedScores"].update({"else_clause": None, "says-return": True})

    rows = promptfoo.read(edited("ids.json", change), "x.json")
    first = dict(zip(rows.names, rows.values[0]))
    assert math.isnan(first["else_clause"]) and first["says-return"] == 1.0


def test_a_metric_only_some_tests_have_is_nan_for_the_others():
    def change(document):
        results(document)[2]["namedScores"]["only here"] = 0.25

    rows = promptfoo.read(edited("repeat.json", change), "x.json")
    column = rows.values[:, rows.names.index("only_here")]
    np.testing.assert_array_equal(column, [NAN, NAN, 0.25, NAN, NAN, NAN])


def test_bad_files_are_refused_with_one_line():
    data = fixture("ids.json")
    refused(data[: len(data) // 2], "invalid JSON")
    refused(b"", "empty")
    refused(b"\xff\xfe{}", "invalid UTF-8")
    refused(b"[1, 2]", "is not promptfoo's JSON output")
    inspect_log = {"version": 2, "status": "success", "eval": {}, "samples": []}
    refused(json.dumps(inspect_log).encode(), "is not promptfoo's JSON output")
    refused((DATA / "scores" / "inspect_ai" / "ids.eval").read_bytes(), "is a zip archive")
    lines = b"\n".join(json.dumps(r).encode() for r in results(json.loads(data)))
    refused(lines, "is JSON Lines", "promptfoo eval -o results.json")


@pytest.mark.parametrize(("data", "said"), [
    (b"[PROMPT] answer,[VARS] query_id,Status\nhello,q1,PASS\n",
     "is promptfoo's CSV output (promptfoo eval -o results.csv)"),
    (b"evalId: eval-abc\nresults:\n  version: 3\n",
     "is promptfoo's YAML output (promptfoo eval -o results.yaml)"),
    (b"---\nevalId: eval-abc\n", "is promptfoo's YAML output"),
])
def test_promptfoo_s_other_outputs_are_named_with_the_one_to_use(data, said):
    """promptfoo's -o results.csv and -o results.yaml: named as such, with the JSON output
    to write instead — not "invalid JSON"."""
    refused(data, said, "which records no format version",
            "write promptfoo's JSON output instead: promptfoo eval -o results.json")


def test_an_unknown_results_version_is_refused():
    def change(document):
        document["results"]["version"] = 4

    refused(edited("ids.json", change), "was written by promptfoo 0.123.1 (results version 4)"
            ", which retrieval-gate does not read", "results version 3",
            where='$["results"]["version"]')


@pytest.mark.parametrize("field, value, message", [
    ("namedScores", {"else_clause": "high"}, 'score \'else_clause\' is "high", not a number'),
    ("namedScores", [], "namedScores [] is not an object"),
    ("score", "0.5", 'score \'promptfoo.score\' is "0.5", not a number'),
    ("score", 10 ** 400, "score 'promptfoo.score' is inf, not a finite number"),
    ("success", 1, "success 1 is not true or false"),
    ("failureReason", 3, "failureReason 3 is not 0, 1 or 2"),
    ("vars", "p01", 'vars "p01" is not an object'),
    ("promptIdx", "0", 'promptIdx "0" is not a whole number'),
])
def test_a_field_of_the_wrong_kind_is_refused(field, value, message):
    def change(document):
        results(document)[1][field] = value

    refused(edited("ids.json", change), message, where='$["results"]["results"][1]')


def test_ids_on_some_tests_only_are_refused_naming_the_first_without():
    def change(document):
        del results(document)[2]["vars"]["query_id"]
        del results(document)[4]["vars"]["query_id"]

    refused(edited("ids.json", change), "this test has no var query_id while others have one",
            where='$["results"]["results"][2]')


def test_an_id_that_is_not_a_string_is_refused_and_a_whole_number_is_read_as_its_digits():
    def change(document):
        results(document)[0]["vars"]["query_id"] = 17.5

    refused(edited("ids.json", change), "var query_id 17.5 is not a non-empty string")

    def numeric(document):
        results(document)[0]["vars"]["query_id"] = 17

    assert promptfoo.read(edited("ids.json", numeric), "scores.json").keys[0] == "17"


def test_without_ids_a_test_needs_the_var_query():
    def change(document):
        del results(document)[3]["vars"]["query"]

    refused(edited("text.json", change), "var query null is not a non-empty string",
            where='$["results"]["results"][3]')


def test_several_prompts_or_providers_are_refused():
    def change(document):
        results(document)[3]["promptIdx"] = 1

    refused(edited("ids.json", change), "more than one prompt or provider",
            where='$["results"]["results"][3]')


def test_colliding_metric_names_are_refused():
    def collide(document):
        results(document)[0]["namedScores"]["MENTIONS  FINALLY"] = 1

    refused(edited("ids.json", collide), '"Mentions finally" and "MENTIONS  FINALLY" both '
            "read as score 'mentions_finally'")

    def reserved(document):
        results(document)[0]["namedScores"]["promptfoo.score"] = 1

    refused(edited("ids.json", reserved), "has the name of the test's own score")

    def empty(document):
        results(document)[0]["namedScores"]["()"] = 1

    refused(edited("ids.json", empty), 'score name "()" reads as "", not a letter or digit')

    def long(document):
        results(document)[0]["namedScores"]["x " * 40] = 1

    refused(edited("ids.json", long), "followed by at most 63 letters")


def test_no_results_is_refused():
    def change(document):
        document["results"]["results"] = []

    refused(edited("ids.json", change), "holds no test")


def test_damaged_files_give_only_input_errors():
    data = fixture("repeat.json")
    for cut in range(0, len(data), 997):
        with pytest.raises(InputError):
            promptfoo.read(data[:cut], "cut.json")
