"""The Ragas score reader on Ragas' own saved results (tests/data/scores/ragas/, written by
make_ragas.py with ragas 0.3.9, which 0.4.3 writes byte for byte, and 0.2.15) and on broken
ones."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import DATA
from score_questions import IDS, QUESTIONS, TEXTS

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats.scores import ragas

SCORES = DATA / "scores"
FIXTURES = SCORES / "ragas"
NAN = math.nan
# Ragas' own per-case scores (EvaluationResult.scores, printed by make_ragas.py), one list per
# metric in the order of IDS, under the names ragas gave the columns.
RAGAS = {
    "exact_match": [0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
    "string_present": [0.0, 0.0, 0.0, 1.0, 1.0, 0.0],
    "non_llm_string_similarity": [0.5333333333333333, 0.5035460992907801, 0.23750000000000004,
                                  1.0, 0.4375, 0.48484848484848486],
    "String similarity (Jaro-Winkler)": [0.863974358974359, 0.7655811384541616,
                                         0.5474903474903474, 1.0, 0.8875, 0.697566801015077],
    "bleu_score": [0.24014973510773416, 0.45827145383864426, 0.026737051824471048,
                   1.0000000000000004, 0.89483931681437, 0.20465180429465676],
    "rouge_score(mode=fmeasure)": [0.5714285714285713, 0.6792452830188679, 0.19047619047619047,
                                   1.0, 0.5714285714285715, 0.5925925925925926],
    "non_llm_context_recall": [1.0, 0.6666666666666666, 0.0, 0.6666666666666666, 0.5, NAN],
    "non_llm_context_precision_with_reference": [0.9999999999, 0.99999999995, 0.0,
                                                 0.99999999995, 0.9999999999, 0.0],
    "id_based_context_recall": [0.5, 0.5, 0.0, 0.6666666666666666, 0.5, 0.0],
}
# The score names the reader gives them: kept, or normalised when they hold other characters.
NAMES = {"String similarity (Jaro-Winkler)": "string_similarity_jaro-winkler",
         "rouge_score(mode=fmeasure)": "rouge_score_mode_fmeasure"}


def expected() -> tuple[tuple[str, ...], np.ndarray]:
    named = {NAMES.get(raw, raw): values for raw, values in RAGAS.items()}
    names = tuple(sorted(named))
    return names, np.array([named[n] for n in names]).T


def read(file: str, data: bytes | None = None):
    return ragas.read((FIXTURES / file).read_bytes() if data is None else data, file)


def refused(data: bytes | str, file: str = "scores.csv") -> InputError:
    with pytest.raises(InputError) as caught:
        ragas.read(data.encode() if isinstance(data, str) else data, file)
    assert "\n" not in str(caught.value)
    return caught.value


@pytest.mark.parametrize("file, by_text, places", [
    ("result.csv", True, (2, 3, 4, 5, 6, 7)),
    ("result-ids.csv", False, (2, 3, 4, 5, 6, 7)),
])
def test_csv_gives_the_values_ragas_reported(file, by_text, places):
    rows = read(file)
    names, values = expected()
    assert rows.names == names
    np.testing.assert_array_equal(rows.values, values)  # exactly, NaN where ragas had nan
    assert rows.by_text is by_text
    assert rows.keys == (TEXTS if by_text else IDS)
    assert rows.places == places
    assert rows.samples == (None,) * 6
    assert rows.tool == "ragas"


def test_ragas_0_2_results_are_read():
    """ragas 0.2.15 wrote the same values, without the metric it did not have yet."""
    rows = read("result-0.2.15.csv")
    names, values = expected()
    kept = [i for i, name in enumerate(names) if name != "id_based_context_recall"]
    assert rows.names == tuple(names[i] for i in kept)
    np.testing.assert_array_equal(rows.values, values[:, kept])
    assert rows.keys == TEXTS


@pytest.mark.parametrize("file, by_text", [("result.jsonl", True), ("result-ids.jsonl", False)])
def test_json_lines_give_the_values_to_the_ten_decimals_pandas_wrote(file, by_text):
    """to_json writes 10 decimals by default: the values are those, read as written."""
    rows = read(file)
    names, values = expected()
    assert rows.names == names
    np.testing.assert_allclose(rows.values, values, rtol=0, atol=1e-10)
    assert np.isnan(rows.values[5, names.index("non_llm_context_recall")])
    assert rows.keys == (TEXTS if by_text else IDS)
    assert rows.places == (1, 2, 3, 4, 5, 6)


def test_a_json_array_of_records_is_read_too():
    """to_json(orient="records") without lines=True: one array, places by JSON path."""
    lines = (FIXTURES / "result-ids.jsonl").read_text("utf-8").splitlines()
    rows = read("result.json", ("[" + ",".join(lines) + "]").encode())
    assert rows.keys == IDS
    assert rows.places == tuple(f"$[{i}]" for i in range(6))
    np.testing.assert_array_equal(rows.values, read("result-ids.jsonl").values)


@pytest.mark.parametrize(("file", "where"), [("result-columns.json", '$["*"]["{}"]'),
                                           ("result-index.json", '$["{}"]')])
def test_pandas_default_and_index_layouts_are_read(file, where):
    """``df.to_json(path)`` (pandas' default: orient="columns", each column an object of its
    cells by row label) and ``orient="index"``, written by pandas 3.1.1 from the DataFrame
    of result.jsonl: the same rows, in the order of their labels."""
    rows = read(file)
    same = read("result.jsonl")
    assert rows.names == same.names and rows.keys == same.keys == TEXTS
    np.testing.assert_array_equal(rows.values, same.values)
    assert rows.places == tuple(where.format(i) for i in range(6))


@pytest.mark.parametrize(("content", "problem"), [
    (b'{"user_input": {"0": "q", "1": "r"}, "faithfulness": {"0": 1}}',
     "column 'faithfulness' has no cell for row '1'"),
    (b'{"0": {"faithfulness": 1}}', "it has none of Ragas' columns"),
])
def test_a_pandas_layout_with_a_gap_or_no_ragas_column_is_refused(content, problem):
    assert problem in str(refused(content, "r.json"))


def test_a_bom_and_crlf_line_ends_are_read():
    data = (FIXTURES / "result-ids.csv").read_bytes()
    rows = read("result.csv", b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"))
    np.testing.assert_array_equal(rows.values, read("result-ids.csv").values)
    assert rows.places == (2, 3, 4, 5, 6, 7)


def test_the_ragas_0_1_columns_are_read():
    """Hand-written in ragas 0.1's layout (question/answer/contexts/ground_truth)."""
    rows = read("v01.csv", b'question,answer,contexts,ground_truth,faithfulness,'
                b'answer_relevancy\n"Is `a < b < c` the same as `a < b and b < c`?",Yes,'
                b'"[\'x\']",Yes,1.0,0.75\nWhat is the difference between `is` and `==`?,'
                b'None,[],Identity,,0.25\n')
    assert rows.tool == "ragas 0.1"
    assert rows.keys == (QUESTIONS["p08"], QUESTIONS["p15"])
    assert rows.names == ("answer_relevancy", "faithfulness")
    np.testing.assert_array_equal(rows.values, [[0.75, 1.0], [0.25, NAN]])


def test_names_lose_underscores_dots_and_dashes_at_both_ends():
    """The score name rule of every tool: a name that is not a score name is lower-cased, runs
    of other characters become _, and _ . - are dropped at both ends; one too long is refused."""
    rows = read("r.csv", b"user_input,Recall (v2.),_private,Exact-Match\nq,0.5,1,0\n")
    assert rows.names == ("Exact-Match", "private", "recall_v2")
    assert "followed by at most 63 letters" in str(refused(b"user_input," + b"x" * 65 +
                                                           b"\nq,1\n"))


def with_column(header: str, cells: list[str], file: str = "result-ids.csv") -> bytes:
    """The fixture with one more column at the end."""
    lines = (FIXTURES / file).read_text("utf-8").splitlines()
    return "\n".join(f"{line},{cell}" for line, cell in zip(lines, [header, *cells])).encode()


def test_a_column_of_text_is_not_a_score_and_is_passed_over():
    rows = read("result.csv", with_column("model", ["gpt-x", "", "gpt-x", "gpt-y", "a", "b"]))
    assert rows.names == expected()[0]


def test_booleans_and_nan_cells_are_scores():
    rows = read("result.csv", with_column("correct", ["True", "False", "nan", "", "1", "0.5"]))
    np.testing.assert_array_equal(rows.values[:, rows.names.index("correct")],
                                  [1, 0, NAN, NAN, 1, 0.5])
    lines = (FIXTURES / "result-ids.jsonl").read_text("utf-8").splitlines()
    lines[0] = lines[0][:-1] + ',"correct":true}'
    rows = read("result.jsonl", "\n".join(lines).encode())
    np.testing.assert_array_equal(rows.values[:, rows.names.index("correct")], [1] + [NAN] * 5)


def test_a_score_that_is_not_a_number_is_refused():
    error = refused(with_column("correct", ["1", "0", "high", "1", "0", "1"]))
    assert str(error) == ("scores.csv:4: score 'correct' is \"high\", not a number — write the "
                          "score as a number (empty or null for a failed judgement)")
    lines = (FIXTURES / "result-ids.jsonl").read_text("utf-8").splitlines()
    lines[2] = lines[2].replace('"exact_match":0.0', '"exact_match":"0.0"')
    assert str(refused("\n".join(lines), "r.jsonl")).startswith(
        "r.jsonl:3: score 'exact_match' is \"0.0\", not a number")


def test_an_infinite_score_is_refused():
    error = refused(with_column("correct", ["1", "0", "inf", "1", "0", "1"]))
    assert "scores.csv:4: score 'correct' is inf, not a finite number" in str(error)
    lines = (FIXTURES / "result-ids.jsonl").read_text("utf-8").splitlines()
    lines[1] = lines[1].replace('"exact_match":0.0', '"exact_match":' + "9" * 400)
    assert "r.jsonl:2: score 'exact_match' is inf" in str(refused("\n".join(lines), "r.jsonl"))


def test_some_rows_with_a_query_id_and_some_without_are_refused():
    lines = (FIXTURES / "result-ids.csv").read_text("utf-8").splitlines()
    lines[3] = lines[3].removeprefix("p04")
    assert str(refused("\n".join(lines))) == (
        "scores.csv:4: this row has no query_id while others have one — give every row a "
        "query_id, or none (then each is matched by its question text)")


def test_a_truncated_file_is_refused_naming_the_line():
    data = (FIXTURES / "result-ids.csv").read_bytes()
    assert str(refused(data[:-40])).startswith("scores.csv:7: the row has 13 cells, the header "
                                               "has 17 — ")
    quoted_cut = data[:data.index(b"\np01,") + 30]  # inside the question's quotes
    assert str(refused(quoted_cut)) == ("scores.csv:2: invalid CSV (unexpected end of data) — fix "
                                        "the CSV quoting (is the file complete?)")
    data = (FIXTURES / "result.jsonl").read_bytes()
    assert str(refused(data[:-40], "r.jsonl")).startswith("r.jsonl:6: invalid JSON")


@pytest.mark.parametrize("content, problem", [
    ((SCORES / "deepeval" / "test_run-ids.json").read_bytes(),
     "is not a Ragas result: it has none of Ragas' columns"),
    (b"q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\n", "is not a Ragas result"),
    (b"query_id,faithfulness\nq1,0.5\n", "is not a Ragas result"),
    (b"user_input,response\nq,a\n", "has no score column"),
    (b"user_input,response\n", "holds a header but no row"),
    (b"[]", "holds no row"),
    (b"[1, 2]", "is not a Ragas result: an item of the array is not an object"),
    (b"user_input,faithfulness,faithfulness\nq,1,1\n", "column 'faithfulness' appears twice"),
    (b"user_input,,faithfulness\nq,1,1\n", "column 2 of the header has no name"),
    (b"user_input,faithfulness\n\"q\"x,1\n", "invalid CSV"),
    (b"user_input,Exact Match,exact_match\nq,1,1\n",
     "metrics \"Exact Match\" and \"exact_match\" both read as score 'exact_match'"),
    (b"user_input,(!)\nq,1\n", 'score name "(!)" reads as "", not a letter or digit'),
    (b"user_input,faithfulness\n,1\n", "this row has neither a query_id nor a question text"),
    (b'{"user_input": [{"content": "hi", "type": "human"}], "topic_adherence": 1}',
     "this row has neither a query_id nor a question text: user_input [{"),
    (b'{"query_id": 7.5, "user_input": "q", "faithfulness": 1}', "query_id 7.5 is not a non-empty"),
    (b"user_input,faithfulness\nq,\xff\n", "scores.csv:2: invalid UTF-8"),
    (b"  \n", "the file is empty"),
])
def test_files_that_are_not_ragas_results_are_refused(content, problem):
    assert problem in str(refused(content))


def test_hostile_texts_and_ids_pass_through_unchanged():
    """A question or an id with a line break, a workflow command or HTML is data: the key is
    the text itself, whole."""
    text = 'Why?\n::error::<script>alert("x")</script>'
    record = {"user_input": text, "response": "a", "faithfulness": 0.5}
    rows = read("r.jsonl", json.dumps(record).encode())
    assert rows.keys == (text,)
    rows = read("r.csv", f'query_id,user_input,faithfulness\n"{text.replace(chr(34), 2 * chr(34))}'
                         f'",q,0.5\n'.encode())
    assert rows.keys == (text,) and not rows.by_text
    error = refused(f'user_input,faithfulness\nq,1\nr,"{text.replace(chr(34), 2 * chr(34))}"\n')
    assert str(error).startswith('scores.csv:3: score \'faithfulness\' is "Why?\\n::error::<script>')
