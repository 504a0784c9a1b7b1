"""Chunk judgments turned into span judgments (``gate qrels to-spans``) and the warning about
spans cut by a chunking: hand-computed cases of narrowing, snapping and overlaps, the
migration round trip on the chunked pydoc example, and the refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, gate
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval_gate.commands.to_spans import _apart, _Piece, conversion_lines, spans_text, to_spans
from retrieval_gate.core.errors import InputError
from retrieval_gate.scoring.chunkcut import Boundaries, Cut, cut_spans

PYDOC = ROOT / "examples" / "pydoc"
FROM_CHUNKS = PYDOC / "chunk-judgments"

#          0         1         2         3         4         5         6
#          0123456789012345678901234567890123456789012345678901234567890123
TEXT_A = ("Alpha one. Beta two is here. Gamma three!  Delta four.\n\nNext par.")


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Document a (TEXT_A, 65 characters) and b (40 x's); chunks a#0 [0, 30), a#1 [20, 55),
    a#2 [56, 65), b#0 [0, 20), b#1 [10, 40), b#2 [20, 40)."""
    jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "text": TEXT_A}, {"id": "b", "text": "x" * 40}])
    jsonl(tmp_path / "chunks.jsonl", [
        {"id": "a#0", "doc_id": "a", "start": 0, "end": 30},
        {"id": "a#1", "doc_id": "a", "start": 20, "end": 55},
        {"id": "a#2", "doc_id": "a", "start": 56, "end": 65},
        {"id": "b#0", "doc_id": "b", "start": 0, "end": 20},
        {"id": "b#1", "doc_id": "b", "start": 10, "end": 40},
        {"id": "b#2", "doc_id": "b", "start": 20, "end": 40}])
    return tmp_path


def convert(folder: Path, judgments: list[dict], evidence: list[dict] | None = None,
            snap: str | None = None):
    qrels = jsonl(folder / "qrels.jsonl", judgments)
    quotes = None if evidence is None else jsonl(folder / "evidence.jsonl", evidence)
    return to_spans(qrels, folder / "chunks.jsonl", folder / "corpus.jsonl", quotes, snap)


def judged(query: str, chunk: str, grade: int, fact: str | None = None) -> dict:
    row = {"query_id": query, "doc_id": chunk, "grade": grade}
    return row if fact is None else {**row, "fact": fact}


def spans(done) -> list[tuple]:
    return [(q, s.doc, s.start, s.end, s.grade, s.fact) for q, s in done.spans]


# -- overlaps --------------------------------------------------------------------------------

def test_overlapping_chunks_of_different_grades_split_the_highest_grade_wins(folder):
    done = convert(folder, [judged("q", "a#0", 1), judged("q", "a#1", 2)])
    assert spans(done) == [("q", "a", 0, 20, 1, None), ("q", "a", 20, 55, 2, None)]
    assert (done.no_evidence, done.chunk_wide, done.narrowed) == (2, 2, 0)


def test_overlapping_chunks_of_equal_grade_merge_and_touching_ones_too(folder):
    done = convert(folder, [judged("q", "a#0", 2), judged("q", "a#1", 2), judged("q", "b#0", 1),
                            judged("q", "b#2", 1)])
    assert spans(done) == [("q", "a", 0, 55, 2, None), ("q", "b", 0, 40, 1, None)]


def test_facts_are_kept_apart_split_where_they_meet(folder):
    done = convert(folder, [judged("q", "a#0", 2, "f1"), judged("q", "a#1", 2, "f2")])
    # equal grades: the shorter span takes the overlap (a#0: 30 characters, a#1: 35)
    assert spans(done) == [("q", "a", 0, 30, 2, "f1"), ("q", "a", 30, 55, 2, "f2")]
    assert done.lost == ()


def test_a_negative_or_zero_grade_is_a_span_and_loses_to_a_higher_one(folder):
    done = convert(folder, [judged("q", "a#0", 0), judged("q", "a#1", -1), judged("p", "b#0", 0)])
    assert spans(done) == [("q", "a", 0, 30, 0, None), ("q", "a", 30, 55, -1, None),
                           ("p", "b", 0, 20, 0, None)]


def test_queries_keep_their_order_and_spans_their_documents_order(folder):
    done = convert(folder, [judged("z", "b#0", 1), judged("z", "a#2", 1), judged("a", "a#0", 1)])
    assert [(q, s.doc) for q, s in done.spans] == [("z", "a"), ("z", "b"), ("a", "a")]


def test_a_fact_whose_text_went_to_a_higher_grade_is_lost_and_said_so(folder):
    evidence = [{"query_id": "q", "chunk_id": "a#1", "evidence": "is here", "fact": "f2"}]
    done = convert(folder, [judged("q", "a#0", 2, "f1"), judged("q", "a#1", 1)], evidence)
    assert spans(done) == [("q", "a", 0, 30, 2, "f1")]
    assert done.lost == (("q", "f2"),)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(1, 10), st.integers(-1, 2),
                          st.sampled_from([None, "f1", "f2"])), min_size=1, max_size=8))
def test_overlaps_resolve_character_by_character(given_pieces):
    """Each character to the highest grade, then the shortest piece, the first, one with a
    fact, the first fact; runs of one grade and fact are one span."""
    pieces = [_Piece("q", "d", s, s + n, g, f) for s, n, g, f in given_pieces]
    owner = {}
    for x in range(40):
        holding = [p for p in pieces if p.start <= x < p.end]
        if holding:
            best = min(holding, key=lambda p: (-p.grade, p.end - p.start, p.start,
                                               p.fact is None, p.fact or ""))
            owner[x] = (best.grade, best.fact)
    expected = []
    for x in sorted(owner):
        if expected and expected[-1][1] == x and expected[-1][2:] == owner[x]:
            expected[-1] = (expected[-1][0], x + 1, *owner[x])
        else:
            expected.append((x, x + 1, *owner[x]))
    assert [(s.start, s.end, s.grade, s.fact) for s in _apart("d", pieces)] == expected


# -- narrowing -------------------------------------------------------------------------------

def test_a_quote_found_once_in_its_chunk_is_the_span(folder):
    evidence = [{"query_id": "q", "chunk_id": "a#1", "evidence": "Gamma three!", "fact": "f3"}]
    done = convert(folder, [judged("q", "a#1", 2, "f1")], evidence)
    assert spans(done) == [("q", "a", 29, 41, 2, "f3")]  # the quote's fact wins
    assert (done.narrowed, done.chunk_wide, done.quotes, done.unused) == (1, 0, 1, ())


def test_a_quote_with_other_white_space_is_found_with_white_space_read_loosely(folder):
    evidence = [{"query_id": "q", "chunk_id": "a#1", "evidence": " Gamma\tthree!\n Delta "}]
    done = convert(folder, [judged("q", "a#1", 2, "f1")], evidence)
    assert spans(done) == [("q", "a", 29, 48, 2, "f1")]  # "Gamma three!  Delta": two spaces


def test_a_quote_not_in_the_chunk_leaves_it_chunk_wide(folder):
    evidence = [{"query_id": "q", "chunk_id": "a#1", "evidence": "Alpha one."},  # only in a#0
                {"query_id": "q", "chunk_id": "a#1", "evidence": "Delta four.\n\nNext"},  # past
                {"query_id": "q", "chunk_id": "a#1", "evidence": "gamma three"}]  # case
    done = convert(folder, [judged("q", "a#1", 2)], evidence)
    assert spans(done) == [("q", "a", 20, 55, 2, None)]
    assert (done.not_found, done.ambiguous, done.no_evidence) == (1, 0, 0)
    assert [(u.quote.line, u.repeated) for u in done.unused] == [(1, False), (2, False),
                                                                 (3, False)]
    assert done.cut == Cut(1, 1, 1)


def test_a_quote_found_twice_is_ambiguous_and_not_used(folder):
    evidence = [{"query_id": "q", "chunk_id": "b#1", "evidence": "xxx"},
                {"query_id": "q", "chunk_id": "a#0", "evidence": "e"}]
    done = convert(folder, [judged("q", "b#1", 1), judged("q", "a#0", 2)], evidence)
    assert spans(done) == [("q", "a", 0, 30, 2, None), ("q", "b", 10, 40, 1, None)]
    assert (done.ambiguous, done.not_found) == (2, 0)
    assert [u.repeated for u in done.unused] == [True, True]


def test_a_quote_of_the_query_is_looked_for_in_every_chunk_it_judges(folder):
    evidence = [{"query_id": "q", "evidence": "Beta two"}]  # in a#0 [0, 30) and a#1 [20, 55)
    done = convert(folder, [judged("q", "a#0", 2), judged("q", "a#1", 1), judged("q", "b#0", 1)],
                   evidence)
    assert spans(done) == [("q", "a", 11, 19, 2, None), ("q", "a", 20, 55, 1, None),
                           ("q", "b", 0, 20, 1, None)]
    assert (done.narrowed, done.no_evidence, done.not_found) == (1, 0, 2)
    assert done.unused == ()  # used in a#0: not listed, although a#1 and b#0 lack it


def test_one_passage_found_in_two_overlapping_chunks_is_one_span(folder):
    evidence = [{"query_id": "q", "chunk_id": c, "evidence": "is here.", "fact": "f1"}
                for c in ("a#0", "a#1")]  # in the overlap [20, 30)
    done = convert(folder, [judged("q", "a#0", 2), judged("q", "a#1", 2)], evidence)
    assert spans(done) == [("q", "a", 20, 28, 2, "f1")]
    assert done.narrowed == 2


@pytest.mark.parametrize(("snap", "chunk", "quote", "expected"), [
    ("sentence", "a#0", "two is", (11, 28)),  # grows to "Beta two is here."
    ("sentence", "a#1", "here. Gamma", (11, 41)),  # two sentences, whole
    ("sentence", "a#0", "Beta two is here.", (11, 28)),  # whole already: not snapped
    ("paragraph", "a#1", "four", (0, 54)),  # the first paragraph, without the blank line
])
def test_snapping_grows_a_quote_to_whole_sentences_or_paragraphs(folder, snap, chunk, quote,
                                                                 expected):
    evidence = [{"query_id": "q", "chunk_id": chunk, "evidence": quote}]
    done = convert(folder, [judged("q", chunk, 2)], evidence, snap)
    assert spans(done) == [("q", "a", *expected, 2, None)]
    assert done.snapped == (quote != TEXT_A[slice(*expected)])


def test_snapping_may_pass_the_chunks_edge(folder):
    evidence = [{"query_id": "q", "chunk_id": "a#1", "evidence": "is here."}]  # a#1 from 20
    done = convert(folder, [judged("q", "a#1", 2)], evidence, "sentence")
    assert spans(done) == [("q", "a", 11, 28, 2, None)]


def test_the_output_is_json_lines_qrels_and_the_same_bytes_every_time(folder):
    rows = [judged("q2", "a#1", 2, "f1"), judged("q1", "b#0", 1)]
    first = spans_text(convert(folder, rows))
    assert first == spans_text(convert(folder, rows))
    assert [json.loads(line) for line in first.splitlines()] == [
        {"query_id": "q2", "doc_id": "a", "start": 20, "end": 55, "grade": 2, "fact": "f1"},
        {"query_id": "q1", "doc_id": "b", "start": 0, "end": 20, "grade": 1}]


# -- spans cut by a chunking -----------------------------------------------------------------

def test_cut_spans_counts_both_ends_on_boundaries_but_not_a_whole_document():
    chunks = Boundaries(np.array([b"a", b"a", b"a", b"b"]), np.array([0, 20, 40, 0]),
                        np.array([30, 50, 60, 9]))
    doc = np.array([b"a", b"a", b"a", b"a", b"b", b"c"])
    start, end = np.array([20, 0, 0, 5, 0, 0]), np.array([50, 50, 60, 30, 9, 5])
    # a[20:50] a chunk; a[0:50] two merged; a[0:60] the whole chunked document; a[5:30] one
    # end only; b[0:9] a whole document; c has no chunk
    assert cut_spans(doc, start, end, chunks) == Cut(6, 2, 1)
    assert not Cut(100, 9, 0).noticeable and Cut(100, 10, 0).noticeable


@settings(max_examples=60, deadline=None, derandomize=True)
@given(chunks=st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 12), st.integers(1, 6)),
                       max_size=12),
       spans=st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 12), st.integers(1, 12)),
                      max_size=12))
def test_cut_spans_agrees_with_counting_by_hand(chunks, spans):
    places = [(d, s, s + n) for d, s, n in chunks]
    wanted = [(d, s, s + n) for d, s, n in spans]
    bounds = {(d, x) for d, s, e in places for x in (s, e)}
    edges = {d: (min(s for c, s, _ in places if c == d), max(e for c, _, e in places if c == d))
             for d, _, _ in places}
    cut = [(d, s, e) for d, s, e in wanted
           if (d, s) in bounds and (d, e) in bounds and edges[d] != (s, e)]
    exact = [span for span in cut if span in set(places)]

    def arrays(rows):
        return (np.array([d.encode() for d, _, _ in rows], dtype="S1"),
                np.array([s for _, s, _ in rows], dtype=np.int64),
                np.array([e for _, _, e in rows], dtype=np.int64))

    assert cut_spans(*arrays(wanted), Boundaries(*arrays(places))) == Cut(
        len(wanted), len(cut), len(exact))


# -- the command line ------------------------------------------------------------------------

def test_the_command_prints_its_counts_and_warns_of_chunk_wide_spans(folder):
    jsonl(folder / "qrels.jsonl", [judged("q", "a#0", 2), judged("q", "a#1", 1)])
    jsonl(folder / "evidence.jsonl", [{"query_id": "q", "chunk_id": "a#0", "evidence": "nope"}])
    code, out, err = gate("qrels", "to-spans", "--qrels", folder / "qrels.jsonl", "--chunks",
                          folder / "chunks.jsonl", "--corpus", folder / "corpus.jsonl",
                          "--evidence", folder / "evidence.jsonl", "-o", folder / "spans.jsonl")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == (f"2 chunk judgments of 1 query → 2 spans written to "
                        f"{folder / 'spans.jsonl'}")
    assert lines[1] == ("narrowed to their evidence: 0; left chunk-wide: 2 (quotes not in the "
                        "chunk 1, found more than once 0, no quote 1)")
    assert lines[2].startswith(f"warning: {folder / 'evidence.jsonl'}:1: the quote for query "
                               "'q' is not in chunk 'a#0'")
    assert lines[3].startswith(f"warning: 2 of 2 spans begin and end on chunk boundaries of "
                               f"{folder / 'chunks.jsonl'} (1 exactly chunks)")
    assert len(lines) == 4


def test_the_summary_names_five_unused_quotes_and_counts_the_rest(folder):
    evidence = [{"query_id": "q", "chunk_id": "a#0", "evidence": "two is"}] + [
        {"query_id": "q", "evidence": f"absent {i}"} for i in range(7)]
    done = convert(folder, [judged("q", "a#0", 2)], evidence, "sentence")
    lines = conversion_lines(done, "out.jsonl", "chunks.jsonl", "evidence.jsonl")
    assert lines[1] == ("narrowed to their evidence: 1, 1 grown to whole sentences; left "
                        "chunk-wide: 0 (quotes not in the chunk 0, found more than once 0, no "
                        "quote 0)")
    assert lines[2:4] == [
        f"warning: evidence.jsonl:{n}: the quote for query 'q' is not in any chunk the query "
        "judges — quote the chunk's text as written" for n in (2, 3)]
    assert lines[7:] == ["warning: and 2 more quotes not used"]


def _round_trip_folder(tmp_path: Path) -> Path:
    """The pydoc example with its chunk judgments and both runs, copied."""
    work = tmp_path / "pydoc"
    shutil.copytree(PYDOC, work, ignore=shutil.ignore_patterns("pipeline*", "*.manifest.json"))
    shutil.copy(ROOT / "baselines" / "pydoc" / "bm25-300.trec", work / "runs")
    return work


@pytest.mark.parametrize(("evidence", "counts", "exit_code", "delta", "warned"), [
    (False, ["217 chunk judgments of 96 queries → 193 spans",
             ("narrowed to their evidence: 0; left chunk-wide: 217 (quotes not in the chunk 0, "
              "found more than once 0, no quote 217)"),
             "warning: 156 of 193 spans begin and end on chunk boundaries"], 0, "−0.4030", True),
    (True, ["217 chunk judgments of 96 queries → 275 spans",
            ("narrowed to their evidence: 215; left chunk-wide: 2 (quotes not in the chunk 2, "
             "found more than once 0, no quote 0)"),
            "warning: 1 of 275 spans begin and end on chunk boundaries"], 0, "−0.0082", False),
])
def test_the_migration_round_trip_on_the_chunked_pydoc_example(tmp_path, evidence, counts,
                                                               exit_code, delta, warned):
    work = _round_trip_folder(tmp_path)
    judged_by = work / "chunk-judgments"
    args = ["--evidence", judged_by / "evidence.jsonl"] if evidence else []
    code, out, err = gate("qrels", "to-spans", "--qrels", judged_by / "qrels-chunks-300.jsonl",
                          "--chunks", work / "chunks-300.jsonl", "--corpus",
                          work / "corpus.jsonl", *args, "-o", judged_by / "spans.jsonl")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(counts[0]) and lines[1] == counts[1]
    assert lines[-1].startswith(counts[2])
    code, _, err = gate("snapshot", "freeze", "--queries", judged_by / "queries.jsonl",
                        "--qrels", judged_by / "spans.jsonl", "--corpus-file",
                        work / "corpus.jsonl", "--corpus-version", "cpython-3.11.7-pydoc-topics",
                        "--permissions-version", "public", "-m", "Recall@10",
                        "-o", work / "from-chunks.json")
    assert code == 0, err
    for run, size in (("bm25-300", "300-overlap-50"), ("bm25-200", "200-overlap-40")):
        code, _, err = gate("run-manifest", "--snapshot", work / "from-chunks.json", "--run",
                            work / "runs" / f"{run}.trec", "--chunks",
                            work / f"chunks-{run[5:]}.jsonl", "--chunking-version",
                            f"tokens-{size}", "--commit", "none")
        assert code == 0, err
    code, out, err = gate("check", "--no-config", "--snapshot", work / "from-chunks.json",
                          "--baseline", work / "runs" / "bm25-300.trec", "--candidate",
                          work / "runs" / "bm25-200.trec", "--gate", "Recall@10=0.08",
                          "--output-format", "json")
    assert code == exit_code, err
    report = json.loads(out)
    (row,) = [c for c in report["comparisons"] if c["measure"] == "Recall@10"]
    assert f"{row['mean_diff']:+.4f}".replace("-", "−") == delta
    # spans cut by the baseline's chunking favour it: its drop decides nothing
    assert row["decision"] == ("inconclusive" if warned else "pass")
    cut = [w for w in report["warnings"] if "begin and end on chunk boundaries" in w]
    if warned:
        assert cut == [("144 of 181 relevant spans begin and end on chunk boundaries of the "
                        "baseline's chunking (tokens-300-overlap-50, chunks-300.jsonl); 123 of "
                        "them exactly chunks: the test set was cut by that chunking, and a "
                        "comparison with another chunking favours it — narrow the spans to "
                        "their evidence (gate qrels to-spans --evidence)")]
    else:
        assert cut == []
    code, out, _ = gate("check", "--no-config", "--snapshot", work / "from-chunks.json",
                        "--baseline", work / "runs" / "bm25-300.trec", "--candidate",
                        work / "runs" / "bm25-200.trec", "--gate", "Recall@10=0.08")
    step = out.splitlines()[1]
    assert (step == "Next: narrow the span judgments to their evidence before trusting this "
            "comparison (gate qrels to-spans --evidence): the baseline's chunking cut them, so "
            "the comparison favours it") == warned, step


def test_check_counts_the_places_of_json_lines_items_without_a_chunk_table(tmp_path):
    jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "text": "x" * 100}])
    jsonl(tmp_path / "queries.jsonl", [{"id": "q"}])
    jsonl(tmp_path / "qrels.jsonl", [
        {"query_id": "q", "doc_id": "a", "start": 10, "end": 30, "grade": 1},
        {"query_id": "q", "doc_id": "a", "start": 50, "end": 55, "grade": 1}])
    for name, places in (("base", [(10, 30), (30, 60)]), ("cand", [(0, 40), (40, 80)])):
        jsonl(tmp_path / f"{name}.jsonl", [{"query_id": "q", "items": [
            {"id": f"{name}{i}", "doc_id": "a", "start": s, "end": e}
            for i, (s, e) in enumerate(places)]}])
    code, _, err = gate("snapshot", "freeze", "--queries", tmp_path / "queries.jsonl",
                        "--qrels", tmp_path / "qrels.jsonl", "--corpus-file",
                        tmp_path / "corpus.jsonl", "--corpus-version", "c",
                        "--permissions-version", "p", "-m", "Recall@2", "-o",
                        tmp_path / "snapshot.json")
    assert code == 0, err
    for name in ("base", "cand"):  # a chunking named by its version alone: still the places
        assert gate("run-manifest", "--snapshot", tmp_path / "snapshot.json", "--run",
                    tmp_path / f"{name}.jsonl", "--commit", "none", "--chunking-version",
                    f"{name}-v1")[0] == 0
    code, out, err = gate("check", "--no-config", "--snapshot", tmp_path / "snapshot.json",
                          "--baseline", tmp_path / "base.jsonl", "--candidate",
                          tmp_path / "cand.jsonl", "--gate", "Recall@2=0.1", "--output-format",
                          "json")
    warnings = [w for w in json.loads(out)["warnings"] if "chunk" in w or "places" in w]
    assert warnings == [("1 of 2 relevant spans begin and end on the places of the baseline's "
                         "retrieved items; all exactly chunks: the test set was cut by that "
                         "chunking, and a comparison with another chunking favours it — narrow "
                         "the spans to their evidence (gate qrels to-spans --evidence)")]


# -- refusals --------------------------------------------------------------------------------

def _refused(folder: Path, *args: str | Path) -> str:
    out = folder / "spans.jsonl"
    code, stdout, err = gate("qrels", "to-spans", "--chunks", folder / "chunks.jsonl",
                             "--corpus", folder / "corpus.jsonl", *args, "-o", out)
    assert code == 2, stdout + err
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert not out.exists()
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]
    return err.strip()


def test_a_chunk_id_that_is_not_in_the_chunk_table(folder):
    (folder / "qrels.txt").write_text("q 0 a#0 1\n# note\nq 0 a#9 2\n")
    assert _refused(folder, "--qrels", folder / "qrels.txt") == (
        f"error: {folder / 'qrels.txt'}:3: query 'q' judges chunk 'a#9', which is not in the "
        f"chunk table {folder / 'chunks.jsonl'} — give the chunk table of the judged chunking "
        "(or fix the chunk id)")
    (folder / "qrels.json").write_text('{"q": {"a#0": 1, "zz": 2}}')
    assert _refused(folder, "--qrels", folder / "qrels.json").startswith(
        f'error: {folder / "qrels.json"}:$["q"]["zz"]: query \'q\' judges chunk \'zz\'')


def test_a_chunk_outside_its_document(folder):
    jsonl(folder / "qrels.jsonl", [judged("q", "a#0", 1), judged("q", "b#1", 1)])
    jsonl(folder / "chunks.jsonl", [{"id": "a#0", "doc_id": "a", "start": 0, "end": 30},
                                    {"id": "b#1", "doc_id": "b", "start": 10, "end": 41}])
    assert _refused(folder, "--qrels", folder / "qrels.jsonl") == (
        f"error: {folder / 'chunks.jsonl'}:2: chunk 'b#1' at 10:41 ends past the 40 characters "
        f"of document 'b' in {folder / 'corpus.jsonl'} — give the chunk table and the corpus "
        "of one chunking (offsets in code points, end exclusive)")
    jsonl(folder / "chunks.jsonl", [{"id": "a#0", "doc_id": "zz", "start": 0, "end": 3},
                                    {"id": "b#1", "doc_id": "b", "start": 10, "end": 40}])
    assert "is in document 'zz', which is not in the corpus" in _refused(
        folder, "--qrels", folder / "qrels.jsonl")


@pytest.mark.parametrize(("line", "message"), [
    ({"query_id": "nobody", "evidence": "Alpha"}, "query 'nobody' has no chunk judgment in"),
    ({"query_id": "q", "chunk_id": "a#1", "evidence": "Alpha"},
     "query 'q' does not judge chunk 'a#1' in"),
    ({"query_id": "q", "chunk_id": "zz", "evidence": "Alpha"}, "does not judge chunk 'zz'"),
    ({"query_id": "q", "evidence": " \n"}, "'evidence' is missing, empty or not a string"),
    ({"query_id": "q", "chunk": "a#0", "evidence": "Alpha"}, "unknown key 'chunk'"),
])
def test_evidence_naming_what_is_not_judged_or_malformed(folder, line, message):
    jsonl(folder / "qrels.jsonl", [judged("q", "a#0", 1)])
    jsonl(folder / "evidence.jsonl", [{"query_id": "q", "evidence": "Alpha"}, line])
    err = _refused(folder, "--qrels", folder / "qrels.jsonl", "--evidence",
                   folder / "evidence.jsonl")
    assert err.startswith(f"error: {folder / 'evidence.jsonl'}:2: ") and message in err


def test_span_judgments_are_refused_as_input(folder):
    jsonl(folder / "qrels.jsonl", [{"query_id": "q", "doc_id": "a", "start": 0, "end": 5,
                                    "grade": 1}])
    assert _refused(folder, "--qrels", folder / "qrels.jsonl") == (
        f"error: {folder / 'qrels.jsonl'}:1: judges spans already (start and end) — freeze "
        "them as they are (gate snapshot freeze); to-spans reads chunk judgments")


def test_a_corpus_without_text(folder):
    jsonl(folder / "qrels.jsonl", [judged("q", "a#0", 1)])
    (folder / "corpus.jsonl").write_text("a\nb\n")
    assert "holds no documents' text" in _refused(folder, "--qrels", folder / "qrels.jsonl")


def test_an_output_that_is_a_folder_or_an_input(folder):
    jsonl(folder / "qrels.jsonl", [judged("q", "a#0", 1)])
    (folder / "out").mkdir()
    for target, message in ((folder / "out", "is a folder"),
                            (folder / "qrels.jsonl", "is also an input of the conversion")):
        code, _, err = gate("qrels", "to-spans", "--qrels", folder / "qrels.jsonl", "--chunks",
                            folder / "chunks.jsonl", "--corpus", folder / "corpus.jsonl", "-o",
                            target)
        assert code == 2 and message in err and len(err.splitlines()) == 1, err
    assert json.loads((folder / "qrels.jsonl").read_text()) == judged("q", "a#0", 1)
    assert list((folder / "out").iterdir()) == []


def test_the_library_refuses_an_unknown_snap(folder):
    jsonl(folder / "qrels.jsonl", [judged("q", "a#0", 1)])
    with pytest.raises(InputError, match="unknown unit 'word'"):
        to_spans(folder / "qrels.jsonl", folder / "chunks.jsonl", folder / "corpus.jsonl",
                 snap="word")


def test_hostile_ids_and_quotes_are_printed_visibly(folder):
    query = "q\n::warning::x\u202e"
    jsonl(folder / "qrels.jsonl", [judged(query, "a#0", 1)])
    jsonl(folder / "evidence.jsonl", [{"query_id": query, "evidence": "\u2028absent"}])
    code, out, err = gate("qrels", "to-spans", "--qrels", folder / "qrels.jsonl", "--chunks",
                          folder / "chunks.jsonl", "--corpus", folder / "corpus.jsonl",
                          "--evidence", folder / "evidence.jsonl", "-o", folder / "s.jsonl")
    assert code == 0, err
    assert "query 'q\\n::warning::x\\u202e'" in out and "\u202e" not in out
    assert len(out.splitlines()) == 4
    (line,) = (folder / "s.jsonl").read_text().splitlines()
    assert json.loads(line)["query_id"] == query
