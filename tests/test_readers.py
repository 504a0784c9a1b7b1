"""Readers: the numpy TREC tokenizer and the optional pyarrow path give identical rows, and
format detection picks the right reader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats import read_qrels, read_run, trec
from retrieval_gate.formats.source import read_bytes

ROOT = Path(__file__).parent.parent
RUNS = ROOT / "examples" / "cranfield" / "runs"
TREC = Path(__file__).parent / "data" / "trec_eval"


def same_rows(a, b) -> None:
    assert a.query_ids == b.query_ids
    for field in ("qcodes", "items", "scores", "lines"):
        assert np.array_equal(materialised(getattr(a, field)),
                              materialised(getattr(b, field))), field


def materialised(values):
    """An array as is; lazily held item ids (ItemIds) as an ``S`` array, RowLines as lines."""
    if isinstance(values, np.ndarray):
        return values
    rows = np.arange(len(values))
    return values.take(rows) if hasattr(values, "take") else values[rows]


@pytest.fixture
def arrow(monkeypatch):
    """The pyarrow reader, used for files of any size."""
    module = pytest.importorskip("retrieval_gate.formats.arrow")
    pytest.importorskip("pyarrow")
    monkeypatch.setattr(module, "_MIN_BYTES", 0)
    monkeypatch.delenv("RETRIEVAL_GATE_NO_ARROW", raising=False)
    return module


@pytest.mark.parametrize("run", ["dense.trec", "hybrid.trec", "bm25-titles.trec"])
def test_arrow_reader_matches_numpy_reader(arrow, run):
    fast = arrow.read_trec_run(RUNS / run, run, detect=True)
    assert fast is not None
    same_rows(fast, trec.read_trec_run(read_bytes(RUNS / run), run))


def test_arrow_ids_hash_as_the_numpy_ids(arrow, tmp_path):
    """Hashes taken from Arrow's buffers equal hash_ids of the same ids in an S array, for
    ids of every length around the eight-byte word size, ASCII or not."""
    from retrieval_gate.core.ranking import hash_ids

    ids = [("x" * n + "é" * (n % 3)) for n in range(1, 20)] + ["a", "Z9", "é"]
    (tmp_path / "r").write_text("".join(f"q Q0 {d} 1 1.0 t\n" for d in ids), encoding="utf-8")
    fast = arrow.read_trec_run(tmp_path / "r", "r", detect=True)
    expected = np.array([d.encode() for d in ids], dtype="S")
    assert np.array_equal(fast.items.take(np.arange(len(ids))), expected)
    assert np.array_equal(fast.items.hashes(), hash_ids(expected))


def test_arrow_reader_query_codes_and_order(arrow, tmp_path):
    """Query ids that share long prefixes, differ only in length or in their ninth byte, and
    come back after another query get the numpy reader's codes; ranking both gives the same
    ranked run (ties broken by id, duplicates refused)."""
    from retrieval_gate.core.ranking import rank_run

    qids = ["query-000001", "query-000002", "q", "query-000001", "qq", "query-0000010"]
    lines = [f"{q} Q0 d{i % 7}x{'y' * (i % 11)} {i} {float(i % 3)} t\n"
             for q in qids for i in range(9)]
    (tmp_path / "r").write_text("".join(lines))
    fast = arrow.read_trec_run(tmp_path / "r", "r", detect=True)
    slow = trec.read_trec_run(read_bytes(tmp_path / "r"), "r")
    same_rows(fast, slow)
    with pytest.raises(InputError, match="appears twice"):
        rank_run(fast)
    a, b = rank_run(fast, "first", depth=4), rank_run(slow, "first", depth=4)
    assert np.array_equal(a.offsets, b.offsets) and np.array_equal(a.docs, b.docs)
    assert np.array_equal(a.lines, b.lines) and np.array_equal(a.scores, b.scores)


def test_arrow_reader_leaves_irregular_files_to_the_numpy_reader(arrow, tmp_path):
    for irregular in (b"q Q0 a 1 1.0 t\n# comment x y z w v\n",  # comment with six fields
                      b"q\tQ0\ta\t1\t1.0\tt\n",  # tabs
                      b"q Q0 a\tb 1 1.0 t\n",  # a tab inside a field: two fields
                      b"q Q0 a 1 1.0 t\r\n",  # carriage return
                      b"q  a 1 1.0 t\n",  # an empty field: five fields, not six
                      b" q Q0 a 1 1.0\n",  # leading space
                      b"q Q0 a 1 1.0 t \n",  # trailing space
                      b"q Q0 a 1 1.0 t\n\nq Q0 b 1 1.0 t\n",  # blank line
                      b"q Q0 a 1 1.0 t junk\n",  # extra field
                      b"q Q0 a 1 abc t\n",  # bad score: the numpy reader names the line
                      b"q Q0 a 1 nan t\n",
                      b"q Q0 a 1 NA t\n",
                      b"q Q0 a\xff 1 1.0 t\n",  # invalid UTF-8
                      b"q Q0 a\x00 1 1.0 t\n"):
        (tmp_path / "r").write_bytes(irregular)
        assert arrow.read_trec_run(tmp_path / "r", "r", detect=True) is None, irregular
    (tmp_path / "r").write_bytes(b'{"k": [1, 2, 3, 4.5 ]}\n')  # JSON, yet six fields
    assert arrow.read_trec_run(tmp_path / "r", "r", detect=True) is None
    assert arrow.read_trec_run(tmp_path / "r", "r", detect=False) is not None  # forced TREC


def test_small_chunks_keep_line_numbers(monkeypatch):
    monkeypatch.setattr(trec, "_CHUNK", 64)
    data = read_bytes(TREC / "results.test")
    rows = trec.read_trec_run(data, "results.test")
    monkeypatch.undo()
    same_rows(rows, trec.read_trec_run(data, "results.test"))
    assert rows.lines[-1] == data.count(b"\n")


def test_format_detection(tmp_path):
    (tmp_path / "q.jsonl").write_text('{"query_id": "q", "doc_id": "a", "grade": 2}\n'
                                      '{"query_id": "q", "doc_id": "b", "grade": 0}\n')
    (tmp_path / "q.json").write_text('{"q": {"a": 2, "b": 0}}')
    (tmp_path / "q.txt").write_text("q 0 a 2\nq 0 b 0\n")
    for name in ("q.jsonl", "q.json", "q.txt"):
        assert read_qrels(tmp_path / name).judgments == {"q": {"a": 2, "b": 0}}
    (tmp_path / "r.json").write_text('{"q": {"a": 1.0, "b": 2.0}}')
    (tmp_path / "r.txt").write_text("q Q0 a 1 1.0 t\nq Q0 b 2 2.0 t\n")
    for name in ("r.json", "r.txt"):
        run = read_run(tmp_path / name)
        assert materialised(run.items).tolist() == [b"a", b"b"]
        assert run.scores.tolist() == [1.0, 2.0]
    forced = read_run(tmp_path / "r.txt", format="trec")
    assert forced.query_ids == ("q",)


def test_judgments_found_whatever_the_id_widths(tmp_path):
    """Run ids longer than eight bytes next to short ones must still find a short id's grade
    (the id hash once depended on the width of the array holding the id)."""
    from retrieval_gate import ScoringPolicy, parse_measures, score_run

    (tmp_path / "qrels").write_text("q 0 00 1\n")
    (tmp_path / "run").write_text("q Q0 00 1 0.0 t\nq Q0 0éééé 2 0.0 t\n", encoding="utf-8")
    scores = score_run(read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run"),
                       parse_measures(["P@2"]), ScoringPolicy())
    assert scores.per_query() == {"q": {"P@2": 0.5}}


def _jsonl_run(queries: int) -> str:
    """A JSON Lines run whose lines carry every field the reader knows."""
    lines = []
    for q in range(queries):
        items = [{"id": f"c{q}-{i}", "score": 10.0 - i / 3, "doc_id": f"d{q % 7}",
                  "start": i * 5, "end": i * 5 + 4, "tokens": i + 1} for i in range(q % 5)]
        lines.append(json.dumps({"query_id": f"q{q}", "items": items, "latency_ms": q / 8,
                                 "abstained": q % 3 == 0}))
    return "\n".join(lines) + "\n"


def test_a_json_lines_run_read_in_batches_is_the_run_read_whole(tmp_path):
    """The batched reader (what read_run uses for a JSON Lines run) gives the whole-text
    reader's rows, array for array, for a file of many batches; a fault in a later batch is
    named by its line in the file, with the same words."""
    from retrieval_gate.formats.jsonfmt import run_from_jsonl, run_from_jsonl_batches
    from retrieval_gate.formats.source import Blob

    text = _jsonl_run(600)
    blob = Blob("run.jsonl", text.encode())
    whole, batched = run_from_jsonl(text, "run.jsonl"), run_from_jsonl_batches(blob, 2048)
    (tmp_path / "run.jsonl").write_text(text)
    for field in ("query_ids", "qcodes", "items", "scores", "lines", "doc_ids", "starts",
                  "ends", "tokens", "latency_ms", "abstained"):
        expected, got = getattr(whole, field), getattr(batched, field)
        if isinstance(expected, np.ndarray):
            assert np.array_equal(expected, got), field
        else:
            assert expected == got, field
    np.testing.assert_array_equal(read_run(tmp_path / "run.jsonl").items, whole.items)
    broken = text.replace('"query_id": "q512"', '"query_id": 512')
    with pytest.raises(InputError) as in_batches:
        run_from_jsonl_batches(Blob("run.jsonl", broken.encode()), 2048)
    with pytest.raises(InputError) as read_whole:
        run_from_jsonl(broken, "run.jsonl")
    assert str(in_batches.value) == str(read_whole.value)
    assert str(in_batches.value).startswith("run.jsonl:513: ")
