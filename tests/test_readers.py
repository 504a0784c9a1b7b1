"""Readers: the numpy TREC tokenizer and the optional pyarrow path give identical rows, and
format detection picks the right reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.formats import read_qrels, read_run, trec
from retrieval_gate.formats.source import read_bytes

ROOT = Path(__file__).parent.parent
RUNS = ROOT / "examples" / "cranfield" / "runs"
TREC = Path(__file__).parent / "data" / "trec_eval"


def same_rows(a, b) -> None:
    assert a.query_ids == b.query_ids
    for field in ("qcodes", "items", "scores", "lines"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field


@pytest.mark.parametrize("run", ["bm25.trec", "dense.trec", "hybrid.trec"])
def test_arrow_reader_matches_numpy_reader(monkeypatch, run):
    arrow = pytest.importorskip("retrieval_gate.formats.arrow")
    pytest.importorskip("pyarrow")
    monkeypatch.setattr(arrow, "_MIN_BYTES", 0)
    data = read_bytes(RUNS / run)
    fast = arrow.read_trec_run(data, run)
    assert fast is not None
    same_rows(fast, trec.read_trec_run(data, run))


def test_arrow_reader_leaves_irregular_files_to_the_numpy_reader(monkeypatch):
    arrow = pytest.importorskip("retrieval_gate.formats.arrow")
    pytest.importorskip("pyarrow")
    monkeypatch.setattr(arrow, "_MIN_BYTES", 0)
    for irregular in (b"q Q0 a 1 1.0 t\n# comment x y z w v\n",  # comment with six fields
                      b"q\tQ0\ta\t1\t1.0\tt\n",  # tabs
                      b"q Q0 a 1 1.0 t junk\n",  # extra field
                      b"q Q0 a 1 abc t\n",  # bad score: the numpy reader names the line
                      b"q Q0 a 1 nan t\n"):
        assert arrow.read_trec_run(irregular, "r") is None


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
        assert run.items.tolist() == [b"a", b"b"] and run.scores.tolist() == [1.0, 2.0]
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
