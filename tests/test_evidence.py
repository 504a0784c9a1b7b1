"""Evidence units: span judgments scored by coverage, chunk tables, corpus membership, required
facts — hand-computed values on a small fixture, the rules one by one, the errors, and the
invariant that span scoring of one-span items is chunk scoring."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
from conftest import gate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_gate import ScoringPolicy, parse_measures, score_run
from retrieval_gate.core.errors import InputError
from retrieval_gate.formats import read_qrels, read_run
from retrieval_gate.formats.corpus import read_chunk_table, read_corpus
from retrieval_gate.scoring.evidence import attach_chunks

MEASURES = ["Recall@2", "Recall@5", "P@5", "Hit@1", "Hit@2", "RR@5", "AP@5", "nDCG@5",
            "Judged@5", "FactCoverage@2", "FactCoverage@5", "AllFacts@2", "AllFacts@5"]


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def fixture(tmp_path: Path) -> Path:
    """Documents a (100 chars), b (50), c (30). Query q1 judges a[10:20] (grade 2, fact f1),
    a[50:60] (grade 1, fact f2) and b[0:10] (grade 2, fact f1: another place stating f1).
    The run: rank 1 holds half of a[10:20], rank 2 the other half (completing it), rank 3 text
    of it again (no credit), rank 4 a document without judgments, rank 5 a[45:65]."""
    jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "text": "x" * 100},
                                      {"id": "b", "text": "y" * 50},
                                      {"id": "c", "text": "z" * 30}])
    jsonl(tmp_path / "qrels.jsonl", [
        {"query_id": "q1", "doc_id": "a", "start": 10, "end": 20, "grade": 2, "fact": "f1"},
        {"query_id": "q1", "doc_id": "a", "start": 50, "end": 60, "grade": 1, "fact": "f2"},
        {"query_id": "q1", "doc_id": "b", "start": 0, "end": 10, "grade": 2, "fact": "f1"}])
    jsonl(tmp_path / "chunks.jsonl", [
        {"id": "c1", "doc_id": "a", "start": 0, "end": 15, "tokens": 3},
        {"id": "c2", "doc_id": "a", "start": 15, "end": 30, "tokens": 3},
        {"id": "c3", "doc_id": "a", "start": 12, "end": 18, "tokens": 1},
        {"id": "c4", "doc_id": "c", "start": 0, "end": 5, "tokens": 1},
        {"id": "c5", "doc_id": "a", "start": 45, "end": 65, "tokens": 4},
        {"id": "c6", "doc_id": "b", "start": 0, "end": 50, "tokens": 9}])
    (tmp_path / "run.trec").write_text("".join(
        f"q1 Q0 c{i} {i} {10 - i} t\n" for i in range(1, 6)))
    return tmp_path


def scores(folder: Path, run: str = "run.trec", chunks: str | None = "chunks.jsonl",
           min_coverage: float = 1.0, measures=MEASURES) -> dict[str, float]:
    rows = read_run(folder / run)
    if chunks:
        rows = attach_chunks(rows, read_chunk_table(folder / chunks))
    result = score_run(read_qrels(folder / "qrels.jsonl"), rows, parse_measures(measures),
                       ScoringPolicy(), corpus=read_corpus(folder / "corpus.jsonl"),
                       min_coverage=min_coverage)
    (only,) = result.per_query().values()
    return only


def test_hand_computed_values_on_the_span_fixture(fixture):
    got = scores(fixture)
    dcg = (2**2 - 1) / math.log2(3) + (2**1 - 1) / math.log2(6)  # ranks 2 and 5
    idcg = 3 / math.log2(2) + 3 / math.log2(3) + 1 / math.log2(4)  # grades 2, 2, 1
    expected = {
        "Recall@2": 1 / 3,  # a[10:20] completed at rank 2; R = 3 spans
        "Recall@5": 2 / 3,  # a[50:60] at rank 5; b[0:10] never
        "P@5": 2 / 5,  # ranks 2 and 5 complete a span; rank 3 repeats text: no credit
        "Hit@1": 0.0,  # half a span is not the span
        "Hit@2": 1.0,
        "RR@5": 1 / 2,
        "AP@5": (1 / 2 + 2 / 5) / 3,
        "nDCG@5": dcg / idcg,
        "Judged@5": 4 / 5,  # rank 4 is a document without judgments
        "FactCoverage@2": 1 / 2,  # f1 by a[10:20]; f2 not yet
        "FactCoverage@5": 1.0,
        "AllFacts@2": 0.0,
        "AllFacts@5": 1.0,
    }
    assert got == pytest.approx(expected, abs=1e-15)


def test_min_coverage_counts_a_span_covered_by_half(fixture):
    got = scores(fixture, min_coverage=0.5, measures=["Hit@1", "Recall@1", "P@5"])
    # rank 1 holds a[10:15], half of a[10:20]: covered there; rank 2 completes nothing more;
    # rank 5 holds a[50:60] whole.
    assert got == {"Hit@1": 1.0, "Recall@1": 1 / 3, "P@5": 2 / 5}


def test_one_item_covering_two_spans_earns_once_and_recalls_both(tmp_path):
    jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "text": "x" * 100}])
    jsonl(tmp_path / "qrels.jsonl", [
        {"query_id": "q", "doc_id": "a", "start": 10, "end": 20, "grade": 1},
        {"query_id": "q", "doc_id": "a", "start": 30, "end": 40, "grade": 3}])
    (tmp_path / "run.jsonl").write_text(json.dumps({"query_id": "q", "items": [
        {"id": "big", "doc_id": "a", "start": 0, "end": 50}]}) + "\n")
    got = scores(tmp_path, "run.jsonl", None, measures=["Recall@1", "P@1", "nDCG@1"])
    ideal = (2**3 - 1)  # the best span first
    assert got == {"Recall@1": 1.0, "P@1": 1.0, "nDCG@1": (2**3 - 1) / ideal}


def test_a_truncated_item_holds_only_what_it_still_holds(tmp_path):
    jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "text": "x" * 100}])
    jsonl(tmp_path / "qrels.jsonl", [
        {"query_id": "q", "doc_id": "a", "start": 40, "end": 60, "grade": 2}])
    (tmp_path / "run.jsonl").write_text(json.dumps({"query_id": "q", "items": [
        {"id": "a#0", "doc_id": "a", "start": 0, "end": 50},  # cut before the span ends
        {"id": "a#1", "doc_id": "a", "start": 50, "end": 100}]}) + "\n")
    got = scores(tmp_path, "run.jsonl", None, measures=["Recall@1", "Recall@2", "RR@2"])
    assert got == {"Recall@1": 0.0, "Recall@2": 1.0, "RR@2": 0.5}


def test_chunk_ids_missing_from_the_table_and_documents_outside_the_corpus(fixture):
    (fixture / "bad.trec").write_text("q1 Q0 c1 1 9 t\nq1 Q0 zz 2 8 t\nq1 Q0 yy 3 7 t\n")
    code, _, err = gate("score", fixture / "qrels.jsonl", fixture / "bad.trec", "--corpus",
                        fixture / "corpus.jsonl", "--chunks", fixture / "chunks.jsonl")
    assert code == 2 and "2 item ids not in the chunk table" in err and "'zz', 'yy'" in err
    assert err.count("\n") == 1
    jsonl(fixture / "qrels-docs.jsonl", [{"query_id": "q1", "doc_id": "a", "grade": 1}])
    (fixture / "docs.trec").write_text("q1 Q0 a 1 9 t\nq1 Q0 nope 2 8 t\n")
    code, _, err = gate("score", fixture / "qrels-docs.jsonl", fixture / "docs.trec",
                        "--corpus", fixture / "corpus.jsonl")
    assert code == 2 and "1 item names a document that is not in the corpus" in err
    assert "'nope'" in err


def test_offsets_outside_the_document_are_refused(fixture):
    jsonl(fixture / "long.jsonl", [{"id": "c1", "doc_id": "c", "start": 0, "end": 31}])
    (fixture / "one.trec").write_text("q1 Q0 c1 1 9 t\n")
    code, _, err = gate("score", fixture / "qrels.jsonl", fixture / "one.trec", "--corpus",
                        fixture / "corpus.jsonl", "--chunks", fixture / "long.jsonl")
    assert code == 2 and "ends past the document's 30 characters" in err
    jsonl(fixture / "qrels-far.jsonl", [
        {"query_id": "q1", "doc_id": "b", "start": 40, "end": 51, "grade": 1}])
    code, _, err = gate("score", fixture / "qrels-far.jsonl", fixture / "run.trec", "--corpus",
                        fixture / "corpus.jsonl", "--chunks", fixture / "chunks.jsonl")
    assert code == 2 and "span b[40:51] ends past the document's 50 characters" in err


@pytest.mark.parametrize("rows, message", [
    ([{"query_id": "q", "doc_id": "a", "start": 1, "end": 5, "grade": 1},
      {"query_id": "q", "doc_id": "a", "start": 4, "end": 9, "grade": 2}],
     "span a[4:9] overlaps span a[1:5] (line 1)"),
    ([{"query_id": "q", "doc_id": "a", "start": 5, "end": 5, "grade": 1}],
     "ends at 5, not after its start 5"),
    ([{"query_id": "q", "doc_id": "a", "start": 1, "grade": 1}], "the span has no 'end'"),
    ([{"query_id": "q", "doc_id": "a", "grade": 1},
      {"query_id": "q", "doc_id": "b", "start": 0, "end": 2, "grade": 1}],
     "judges a span while earlier lines judge ids"),
    ([{"query_id": "q", "doc_id": "a", "start": -1, "end": 2, "grade": 1}],
     "'start' -1 is not a whole number"),
])
def test_malformed_span_judgments(tmp_path, rows, message):
    jsonl(tmp_path / "q.jsonl", rows)
    (tmp_path / "r.trec").write_text("q Q0 a 1 1 t\n")
    code, _, err = gate("score", tmp_path / "q.jsonl", tmp_path / "r.trec")
    assert code == 2 and message in err and err.count("\n") == 1


DOCUMENT = {"query_id": "q1", "doc_id": "a", "grade": 2, "fact": "f1"}
SPAN = {"query_id": "q1", "doc_id": "a", "start": 10, "end": 20, "grade": 2, "fact": "f1"}


@pytest.mark.parametrize("judgment", [DOCUMENT, SPAN], ids=["document", "span"])
def test_a_repeated_judgment_follows_one_rule_for_every_unit(fixture, judgment):
    """An exact repeat is one judgment; a repeat with another grade or another fact is the
    same error, at the repeat's line, whatever the unit."""
    args = ("--corpus", fixture / "corpus.jsonl", "--chunks", fixture / "chunks.jsonl",
            "--output-format", "json")
    jsonl(fixture / "once.jsonl", [judgment])
    jsonl(fixture / "twice.jsonl", [judgment, {**judgment}])
    once = gate("score", fixture / "once.jsonl", fixture / "run.trec", *args)
    assert once[0] == 0, once[2]
    twice = gate("score", fixture / "twice.jsonl", fixture / "run.trec", *args)
    assert twice[0] == 0 and json.loads(twice[1])["per_query"] == json.loads(once[1])[
        "per_query"]
    item = "a" if "start" not in judgment else "a[10:20]"
    fix = " — keep one judgment per (query, item)"
    for changed, message in (
            ({"grade": 1}, f"query 'q1', item '{item}' is judged 2 and again 1{fix}"),
            ({"fact": "f2"}, f"query 'q1', item '{item}' states fact 'f1' and again 'f2'{fix}"),
            ({"fact": None}, "states fact 'f1' and again none")):
        jsonl(fixture / "conflict.jsonl", [judgment, {**judgment, **changed}])
        code, _, err = gate("score", fixture / "conflict.jsonl", fixture / "run.trec", *args)
        assert code == 2 and "conflict.jsonl:2: " in err and message in err, err
        assert err.count("\n") == 1


def test_span_judgments_need_the_corpus_and_placed_items(fixture):
    code, _, err = gate("score", fixture / "qrels.jsonl", fixture / "run.trec", "--chunks",
                        fixture / "chunks.jsonl")
    assert code == 2 and "span judgments need the corpus" in err
    code, _, err = gate("score", fixture / "qrels.jsonl", fixture / "run.trec", "--corpus",
                        fixture / "corpus.jsonl")
    assert code == 2 and "the run names" not in err and "chunk table" in err


def test_required_facts_listed_by_the_query(fixture):
    jsonl(fixture / "queries.jsonl", [{"id": "q1", "text": "?", "facts": ["f2"]}])
    rows = attach_chunks(read_run(fixture / "run.trec"), read_chunk_table(fixture / "chunks.jsonl"))
    from retrieval_gate.formats import read_queries

    result = score_run(read_qrels(fixture / "qrels.jsonl"), rows,
                       parse_measures(["FactCoverage@2", "FactCoverage@5"]), ScoringPolicy(),
                       read_queries(fixture / "queries.jsonl"),
                       corpus=read_corpus(fixture / "corpus.jsonl"))
    assert result.per_query()["q1"] == {"FactCoverage@2": 0.0, "FactCoverage@5": 1.0}
    jsonl(fixture / "queries.jsonl", [{"id": "q1", "text": "?", "facts": ["f9"]}])
    code, _, err = gate("score", fixture / "qrels.jsonl", fixture / "run.trec", "--queries",
                        fixture / "queries.jsonl", "--corpus", fixture / "corpus.jsonl",
                        "--chunks", fixture / "chunks.jsonl")
    assert code == 2 and "requires fact 'f9', which none of its judgments states" in err


def test_any_span_stating_a_fact_supports_it(fixture):
    """f1 is stated by a[10:20] and, in other words, by b[0:10]: retrieving only the second
    covers f1; f2 (only a[50:60]) stays uncovered."""
    (fixture / "alt.trec").write_text("q1 Q0 c6 1 9 t\n")  # c6 holds all of b
    got = scores(fixture, "alt.trec", measures=["FactCoverage@1", "AllFacts@1", "Recall@1"])
    assert got == {"FactCoverage@1": 0.5, "AllFacts@1": 0.0, "Recall@1": 1 / 3}


def test_facts_on_document_judgments(tmp_path):
    jsonl(tmp_path / "q.jsonl", [
        {"query_id": "q", "doc_id": "d1", "grade": 2, "fact": "when"},
        {"query_id": "q", "doc_id": "d2", "grade": 1, "fact": "when"},
        {"query_id": "q", "doc_id": "d3", "grade": 1, "fact": "where"}])
    (tmp_path / "r.trec").write_text("q Q0 d2 1 9 t\nq Q0 d1 2 8 t\nq Q0 d3 3 7 t\n")
    code, out, err = gate("score", tmp_path / "q.jsonl", tmp_path / "r.trec", "-m",
                          "FactCoverage@2", "-m", "AllFacts@3", "-m", "Recall@2",
                          "--output-format", "json")
    assert code == 0, err
    # ten items repeating one fact cover one fact: d2 and d1 both state "when"
    assert json.loads(out)["per_query"]["q"] == {"FactCoverage@2": 0.5, "AllFacts@3": 1.0,
                                                 "Recall@2": 2 / 3}


# -- the invariant: one item = one judged span is chunk scoring ------------------------------

ALL = ["Recall@3", "P@3", "Hit@1", "RR@5", "AP@5", "nDCG@5", "nDCG(gain=linear)@3", "CP@5",
       "Recall", "AP", "nDCG"]


@st.composite
def chunked_runs(draw):
    """Documents cut into chunks; qrels judge some chunks (by id, and as spans of the same
    text); the run ranks some chunks with tie-heavy scores."""
    chunks = []
    for d in range(draw(st.integers(1, 3))):
        cuts = sorted(draw(st.sets(st.integers(1, 59), max_size=4)))
        bounds = [0, *cuts, 60]
        chunks += [(f"d{d}#{i}", f"d{d}", s, e)
                   for i, (s, e) in enumerate(itertools.pairwise(bounds))]
    queries = {}
    for q in range(draw(st.integers(1, 3))):
        judged = draw(st.lists(st.sampled_from(chunks), min_size=1, unique=True, max_size=5))
        grades = [draw(st.integers(0, 3)) for _ in judged]
        if not any(grades):
            grades[0] = 1
        ranked = draw(st.lists(st.sampled_from(chunks), unique=True, max_size=8))
        scores = [draw(st.integers(0, 3)) for _ in ranked]
        queries[f"q{q}"] = (list(zip(judged, grades)), list(zip(ranked, scores)))
    return chunks, queries


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=chunked_runs())
def test_span_scoring_of_one_span_items_is_chunk_scoring(tmp_path, data):
    _span_scoring_is_chunk_scoring(tmp_path, *data)


def _span_scoring_is_chunk_scoring(tmp_path: Path, chunks: list, queries: dict,
                                   condensed: bool = False) -> None:
    docs = sorted({c[1] for c in chunks})
    jsonl(tmp_path / "corpus.jsonl", [{"id": d, "text": "t" * 60} for d in docs])
    jsonl(tmp_path / "chunks.jsonl", [{"id": c, "doc_id": d, "start": s, "end": e}
                                      for c, d, s, e in chunks])
    jsonl(tmp_path / "spans.jsonl", [
        {"query_id": q, "doc_id": d, "start": s, "end": e, "grade": g}
        for q, (judged, _) in queries.items() for (c, d, s, e), g in judged])
    jsonl(tmp_path / "ids.jsonl", [{"query_id": q, "doc_id": c, "grade": g}
                                   for q, (judged, _) in queries.items()
                                   for (c, _d, _s, _e), g in judged])
    (tmp_path / "run.trec").write_text("".join(
        f"{q} Q0 {c} 1 {score} t\n" for q, (_, ranked) in queries.items()
        for (c, _d, _s, _e), score in ranked) or "q0 Q0 d0#0 1 1 t\n")
    measures = parse_measures(ALL)
    policy = ScoringPolicy(missing="zero", extra="ignore")
    run = read_run(tmp_path / "run.trec")
    by_chunk = score_run(read_qrels(tmp_path / "ids.jsonl"), run, measures, policy,
                         condensed=condensed)
    by_span = score_run(read_qrels(tmp_path / "spans.jsonl"),
                        attach_chunks(run, read_chunk_table(tmp_path / "chunks.jsonl")),
                        measures, policy, corpus=read_corpus(tmp_path / "corpus.jsonl"),
                        condensed=condensed)
    spans, ids = by_span.per_query(), by_chunk.per_query()
    assert spans.keys() == ids.keys()
    for qid in ids:
        assert spans[qid] == pytest.approx(ids[qid], abs=1e-12), qid


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=chunked_runs())
def test_condensed_span_scoring_of_one_span_items_is_condensed_chunk_scoring(tmp_path, data):
    """On condensed rankings too, when every chunk of a judged document is judged (as span
    judgments judge the rest of a judged document's text: grade 0): both units then remove
    the same items."""
    chunks, queries = data
    whole = {}
    for q, (judged, ranked) in queries.items():
        docs = {c[1] for c, _ in judged}
        graded = dict(judged)
        whole[q] = ([(c, graded.get(c, 0)) for c in chunks if c[1] in docs], ranked)
    _span_scoring_is_chunk_scoring(tmp_path, chunks, whole, condensed=True)


# -- snapshots, run manifests, gate check ------------------------------------------------------

def _freeze(folder: Path, *extra: str | Path) -> tuple[int, str, str]:
    return gate("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
                folder / "qrels.jsonl", "--corpus-file", folder / "corpus.jsonl",
                "--corpus-version", "c1", "--permissions-version", "p", "-m", "Recall@5",
                "-m", "FactCoverage@5", "-m", "nDCG@5", *extra, "-o", folder / "snapshot.json")


@pytest.fixture
def spans(fixture: Path) -> Path:
    jsonl(fixture / "queries.jsonl", [{"id": "q1", "text": "what?"}])
    code, _, err = _freeze(fixture)
    assert code == 0, err
    assert json.loads((fixture / "snapshot.json").read_text())["chunking"] == {"unit": "span"}
    for name, table in (("run.trec", "chunks.jsonl"), ("other.trec", "other.jsonl")):
        if name == "other.trec":
            jsonl(fixture / table, [{"id": "x1", "doc_id": "b", "start": 0, "end": 50},
                                    {"id": "x2", "doc_id": "a", "start": 0, "end": 100}])
            (fixture / name).write_text("q1 Q0 x2 1 2 t\nq1 Q0 x1 2 1 t\n")
        code, _, err = gate("run-manifest", "--snapshot", fixture / "snapshot.json", "--run",
                            fixture / name, "--chunks", fixture / table, "--chunking-version",
                            table.removesuffix(".jsonl"), "--chunking-param", "size=5")
        assert code == 0, err
    return fixture


def _span_check(spans: Path, candidate: str) -> dict:
    """The JSON report of ``gate check`` of ``candidate`` against run.trec, Recall@5 gated."""
    (spans / "gate.toml").write_text('resamples = 1000\nmin-queries = 1\n[[gate]]\n'
                                     'measure = "Recall@5"\nmargin = 0.1\n')
    code, out, err = gate("check", "--config", spans / "gate.toml", "--snapshot",
                          spans / "snapshot.json", "--baseline", spans / "run.trec",
                          "--candidate", spans / candidate, "--output-format", "json")
    assert code in (0, 1), err
    return json.loads(out)


def test_two_chunkings_compare_on_one_span_snapshot(spans):
    manifest = json.loads((spans / "other.trec.manifest.json").read_text())
    assert manifest["chunking"]["file"] == "other.jsonl"
    assert manifest["chunking"]["version"] == "other"
    assert manifest["chunking"]["params"] == {"size": 5}
    report = _span_check(spans, "other.trec")
    assert report["candidate"]["chunking"]["version"] == "other"
    assert report["baseline"]["chunking"]["version"] == "chunks"
    assert report["candidate"]["means"]["Recall@5"] == 1.0  # a[0:100] and b[0:50]: all spans
    _, out, _ = gate("check", "--config", spans / "gate.toml", "--snapshot",
                        spans / "snapshot.json", "--baseline", spans / "run.trec",
                        "--candidate", spans / "other.trec")
    assert "evidence unit span (min coverage 1); chunking: candidate other (size=5), " \
           "baseline chunks (size=5)" in out


def test_a_run_without_any_item_needs_no_places_and_scores_0(spans):
    """Every ranking empty: no item to place, so the run is scored (0 on every measure, as for
    any empty ranking) and compared, not refused for lacking places."""
    jsonl(spans / "empty.jsonl", [{"query_id": "q1", "items": []}])
    code, _, err = gate("run-manifest", "--snapshot", spans / "snapshot.json", "--run",
                        spans / "empty.jsonl")
    assert code == 0, err
    code, out, err = gate("score", spans / "qrels.jsonl", spans / "empty.jsonl", "--corpus",
                          spans / "corpus.jsonl", "-m", "Recall@5", "-m", "nDCG@5", "-m",
                          "Judged@5", "--output-format", "json")
    assert code == 0, err
    assert json.loads(out)["means"] == {"Recall@5": 0.0, "nDCG@5": 0.0, "Judged@5": 0.0}
    report = _span_check(spans, "empty.jsonl")
    assert report["candidate"]["means"] == {"Recall@5": 0.0, "FactCoverage@5": 0.0,
                                            "nDCG@5": 0.0}
    assert report["baseline"]["means"]["Recall@5"] == 2 / 3  # a[10:20] and a[50:60] of 3
    # one item without a place is still refused
    jsonl(spans / "placeless.jsonl", [{"query_id": "q1", "items": [{"id": "c1"}]}])
    code, _, err = gate("run-manifest", "--snapshot", spans / "snapshot.json", "--run",
                        spans / "placeless.jsonl")
    assert code == 2 and "span judgments need each item's place" in err


def test_a_chunk_table_changed_after_the_manifest_is_not_comparable(spans):
    table = spans / "other.jsonl"
    table.write_text(table.read_text().replace('"end": 50', '"end": 49'))
    code, _, err = gate("validate", spans / "snapshot.json", spans / "other.trec")
    assert code == 3 and "the chunking changed after the manifest was written" in err


def test_approval_keeps_the_chunk_table_beside_the_run(spans):
    code, _, err = gate("baseline", "approve", "--candidate", spans / "other.trec", "--to",
                        spans / "base", "--snapshot", spans / "snapshot.json")
    assert code == 0, err
    version = spans / "base" / (spans / "base" / "CURRENT").read_text().strip()
    assert sorted(p.name for p in version.iterdir()) == [
        "other.jsonl", "other.trec", "other.trec.manifest.json"]
    manifest = json.loads((version / "other.trec.manifest.json").read_text())
    assert manifest["chunking"]["file"] == "other.jsonl"
    code, _, err = gate("validate", spans / "snapshot.json", spans / "base")
    assert code == 0, err


def test_chunk_judgments_refuse_a_run_of_another_chunking(tmp_path):
    jsonl(tmp_path / "queries.jsonl", [{"id": "q", "text": "?"}])
    jsonl(tmp_path / "qrels.jsonl", [{"query_id": "q", "doc_id": "a#0", "grade": 1}])
    jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "text": "x" * 40}])
    for name, size in (("c20.jsonl", 20), ("c10.jsonl", 10)):
        jsonl(tmp_path / name, [{"id": f"a#{i}", "doc_id": "a", "start": s, "end": s + size}
                                for i, s in enumerate(range(0, 40, size))])
    code, _, err = gate("snapshot", "freeze", "--queries", tmp_path / "queries.jsonl",
                        "--qrels", tmp_path / "qrels.jsonl", "--corpus-file",
                        tmp_path / "corpus.jsonl", "--corpus-version", "c", "--unit", "chunk",
                        "--chunking-version", "c20", "--chunks", tmp_path / "c20.jsonl",
                        "--permissions-version", "p", "-o", tmp_path / "snapshot.json")
    assert code == 0, err
    (tmp_path / "run.trec").write_text("q Q0 a#0 1 1 t\n")
    code, _, err = gate("run-manifest", "--snapshot", tmp_path / "snapshot.json", "--run",
                        tmp_path / "run.trec", "--chunks", tmp_path / "c10.jsonl")
    assert code == 0, err  # the run is valid; comparing it is not
    code, _, err = gate("validate", tmp_path / "snapshot.json", tmp_path / "run.trec")
    assert code == 3
    assert ("not comparable: the run " in err and "chunk table sha256" in err
            and "to compare chunkings, turn them into spans (gate qrels to-spans)" in err)


@pytest.mark.parametrize("args, message", [
    (("--unit", "document"), "error: --unit: is document, and the judgments"),
    (("--chunking-version", "v1", "--unit", "span"), "span judgments compare runs of any"),
])
def test_freeze_explains_a_unit_mismatch(spans, args, message):
    code, _, err = _freeze(spans, *args)
    assert code == 2 and message in err and err.count("\n") == 1


# -- the corpus: its cache, and which items are checked ---------------------------------------

def test_a_corpus_is_read_once_into_its_cache_and_then_from_it(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(cache))
    jsonl(tmp_path / "corpus.jsonl", [{"id": f"d{i}", "text": "x" * i} for i in range(1, 50)])
    first = read_corpus(tmp_path / "corpus.jsonl")
    (entry,) = cache.iterdir()
    assert entry.name.startswith("corpus-lines-v1-") and sorted(
        p.name for p in entry.iterdir()) == ["ids.npy", "keys.npy", "lengths.npy",
                                             "manifest.json", "places.npy"]
    again = read_corpus(tmp_path / "corpus.jsonl")
    assert again.ids.tolist() == first.ids.tolist() and again.keys.tolist() == first.keys.tolist()
    assert again.lengths.tolist() == first.lengths.tolist()
    assert again.places.tolist() == first.places.tolist()
    assert sorted(first.ids.tolist()) != first.ids.tolist()  # in hash order, not file order
    (tmp_path / "ids.txt").write_text("a\nb\na\n")
    with pytest.raises(InputError, match="document 'a' is listed twice"):
        read_corpus(tmp_path / "ids.txt")
    assert len(list(cache.iterdir())) == 1  # an invalid corpus leaves no entry
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", "off")
    (tmp_path / "other.txt").write_text("a\nb\n")
    read_corpus(tmp_path / "other.txt")
    assert len(list(cache.iterdir())) == 1


def test_only_items_a_measure_reads_are_checked_against_the_corpus(tmp_path):
    """Measures at @2 read three items (the cutoff and the next, for ties): a document outside
    the corpus at rank 4 is never scored; at rank 2 it is refused."""
    jsonl(tmp_path / "q.jsonl", [{"query_id": "q", "doc_id": "a", "grade": 1}])
    (tmp_path / "ids.txt").write_text("a\nb\nc\n")
    (tmp_path / "deep.trec").write_text("q Q0 a 1 9 t\nq Q0 b 2 8 t\nq Q0 c 3 7 t\n"
                                        "q Q0 zz 4 6 t\n")
    (tmp_path / "top.trec").write_text("q Q0 a 1 9 t\nq Q0 zz 2 8 t\n")
    common = ["--corpus", tmp_path / "ids.txt", "-m", "Recall@2", "-m", "nDCG@2"]
    assert gate("score", tmp_path / "q.jsonl", tmp_path / "deep.trec", *common)[0] == 0
    code, _, err = gate("score", tmp_path / "q.jsonl", tmp_path / "top.trec", *common)
    assert code == 2 and "'zz'" in err
    code, _, err = gate("score", tmp_path / "q.jsonl", tmp_path / "deep.trec", *common[:2], "-m",
                        "AP")  # reads the whole ranking
    assert code == 2 and "'zz'" in err


def test_chunk_judgments_with_a_pinned_chunk_table_score_the_chunks(tmp_path):
    """Chunk judgments name chunks: a chunk table (which gives each chunk its document) must
    not collapse the run's chunks to documents, or no judgment would ever match."""
    (tmp_path / "corpus.jsonl").write_text('{"id": "d", "text": "0123456789"}\n')
    (tmp_path / "chunks.jsonl").write_text('{"id": "d#0", "doc_id": "d", "start": 0, "end": 5}\n'
                                           '{"id": "d#1", "doc_id": "d", "start": 5, "end": 10}\n')
    (tmp_path / "queries.jsonl").write_text('{"id": "q"}\n')
    (tmp_path / "qrels.tsv").write_text("q 0 d#1 1\n")
    code, _, err = gate("snapshot", "freeze", "--queries", tmp_path / "queries.jsonl",
                        "--qrels", tmp_path / "qrels.tsv", "--corpus-file",
                        tmp_path / "corpus.jsonl", "--corpus-version", "c", "--unit", "chunk",
                        "--chunking-version", "halves", "--chunks", tmp_path / "chunks.jsonl",
                        "--permissions-version", "p", "-m", "RR@10",
                        "-o", tmp_path / "snapshot.json")
    assert code == 0, err
    (tmp_path / "run.trec").write_text("q Q0 d#0 1 2 t\nq Q0 d#1 2 1 t\n")
    code, _, err = gate("run-manifest", "--snapshot", tmp_path / "snapshot.json", "--run",
                        tmp_path / "run.trec", "--chunking-version", "halves")
    assert code == 0, err
    from retrieval_gate.decide.policy import GatedMeasure, GatePolicy
    from retrieval_gate.gating.gate import run_gate
    report = run_gate(tmp_path / "snapshot.json", tmp_path / "run.trec", tmp_path / "run.trec",
                   GatePolicy(gates=(GatedMeasure("RR@10"),), min_queries=1))
    assert report.baseline.means["RR@10"] == 0.5  # d#1 at rank 2, as trec_eval scores it
