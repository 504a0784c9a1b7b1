"""The pydoc example's data: span judgments that point at real text, chunk tables whose offsets
are the chunks' text, runs of those chunk ids, and the scripts that rebuild them byte for byte."""

from __future__ import annotations

import importlib.util
import itertools
import json
import platform
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYDOC = ROOT / "examples" / "pydoc"
RUNS = {  # run -> chunk table
    ROOT / "baselines" / "pydoc" / "bm25-300.trec": PYDOC / "chunks-300.jsonl",
    PYDOC / "runs" / "bm25-200.trec": PYDOC / "chunks-200.jsonl",
    PYDOC / "runs" / "bm25-truncated.trec": PYDOC / "chunks-truncated.jsonl",
}


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


CORPUS = {row["id"]: row["text"] for row in read_jsonl(PYDOC / "corpus.jsonl")}
QUERIES = read_jsonl(PYDOC / "queries.jsonl")
QRELS = read_jsonl(PYDOC / "qrels.jsonl")


def script(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                          cwd=ROOT, check=False)


def test_corpus_is_every_help_topic_in_name_order():
    assert list(CORPUS) == sorted(CORPUS) and len(CORPUS) == 79
    if platform.python_version() == "3.11.7":
        from pydoc_data.topics import topics

        assert CORPUS == topics


def test_labels_are_rebuilt_byte_for_byte_from_the_quotes():
    done = script(PYDOC / "label.py", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("identical") == 2


def test_queries_cover_the_required_slices():
    tags = Counter(tag for q in QUERIES for tag in q["tags"])
    assert len(QUERIES) >= 64 and len({q["id"] for q in QUERIES}) == len(QUERIES)
    assert tags["multi-fact"] >= 12 and tags["paraphrase"] >= 10 and tags["unanswerable"] >= 8
    for q in QUERIES:
        assert (not q["answerable"]) == ("unanswerable" in q["tags"])
        assert ("multi-fact" in q["tags"]) == (len(q.get("facts", [])) >= 2)
        assert set(q["tags"]) - {"multi-fact", "paraphrase", "unanswerable"}, q["id"]


def test_spans_are_inside_their_topic_and_start_and_end_on_text():
    for row in QRELS:
        text = CORPUS[row["doc_id"]]
        assert 0 <= row["start"] < row["end"] <= len(text)
        span = text[row["start"]:row["end"]]
        assert span == span.strip() and row["grade"] in (0, 1, 2)


def test_spans_of_a_query_do_not_overlap():
    spans = sorted((r["query_id"], r["doc_id"], r["start"], r["end"]) for r in QRELS)
    for (q1, d1, _, end), (q2, d2, start, _) in itertools.pairwise(spans):
        assert (q1, d1) != (q2, d2) or start >= end


def test_every_required_fact_has_direct_evidence_and_unanswerable_queries_have_none():
    direct = {(r["query_id"], r.get("fact")) for r in QRELS if r["grade"] == 2}
    positive = {r["query_id"] for r in QRELS if r["grade"] > 0}
    for q in QUERIES:
        if q["answerable"]:
            assert all((q["id"], fact) in direct for fact in q["facts"]), q["id"]
        else:
            assert "facts" not in q and q["id"] not in positive
    spans_per_fact = Counter((r["query_id"], r["fact"]) for r in QRELS if "fact" in r)
    assert sum(n > 1 for n in spans_per_fact.values()) >= 6


@pytest.mark.parametrize("table", sorted(set(RUNS.values())), ids=lambda p: p.name)
def test_chunk_offsets_are_the_chunk_text(table):
    chunks = read_jsonl(table)
    assert len({c["id"] for c in chunks}) == len(chunks)
    per_doc = Counter()
    for c in chunks:
        text = CORPUS[c["doc_id"]][c["start"]:c["end"]]
        assert c["id"] == f"{c['doc_id']}#{per_doc[c['doc_id']]}"
        assert text == text.strip() and len(text.split()) == c["tokens"]
        per_doc[c["doc_id"]] += 1


@pytest.mark.parametrize("run", sorted(RUNS), ids=lambda p: p.name)
def test_runs_rank_20_chunks_for_every_query_in_trec_eval_order(run):
    known = {c["id"] for c in read_jsonl(RUNS[run])}
    ranked: dict[str, list[tuple[float, str, int]]] = {}
    for line in run.read_text(encoding="utf-8").splitlines():
        qid, q0, chunk_id, rank, score, _ = line.split(" ")
        assert q0 == "Q0" and chunk_id in known and len(score.split(".")[1]) == 6
        ranked.setdefault(qid, []).append((float(score), chunk_id, int(rank)))
    assert list(ranked) == [q["id"] for q in QUERIES]
    for rows in ranked.values():
        assert [r for _, _, r in rows] == list(range(1, 21))
        assert rows == sorted(rows, key=lambda r: (r[0], r[1]), reverse=True)


def test_rechunked_run_keeps_the_evidence_and_the_truncated_run_loses_it():
    spec = importlib.util.spec_from_file_location("span_coverage", PYDOC / "span_coverage.py")
    coverage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(coverage)
    base, rechunked, truncated = (coverage.measure(run, table, QUERIES, QRELS)["spans@10"]
                                  for run, table in RUNS.items())
    assert abs(rechunked - base) <= 0.03
    assert truncated <= base - 0.05


def test_runs_and_chunk_tables_are_rebuilt_byte_for_byte():
    pytest.importorskip("bm25s")
    done = script(ROOT / "examples" / "make_pydoc_runs.py", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("identical") == 6


def test_chunk_judgments_are_rebuilt_byte_for_byte_and_hold_every_span():
    done = script(ROOT / "examples" / "make_pydoc_chunk_judgments.py", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("identical") == 3
    folder = PYDOC / "chunk-judgments"
    chunks = {c["id"]: c for c in read_jsonl(PYDOC / "chunks-300.jsonl")}
    judged = {(j["query_id"], j["doc_id"]): j["grade"]
              for j in read_jsonl(folder / "qrels-chunks-300.jsonl")}
    for quote in read_jsonl(folder / "evidence.jsonl"):
        chunk = chunks[quote["chunk_id"]]
        assert (quote["query_id"], chunk["id"]) in judged
        assert quote["evidence"] in CORPUS[chunk["doc_id"]]
    assert {q["id"] for q in read_jsonl(folder / "queries.jsonl")} == {q["id"] for q in QUERIES}


# -- the gate on the example ---------------------------------------------------------------

def test_the_gate_passes_the_rechunked_run_and_catches_the_truncating_chunker(tmp_path):
    """The example's claim, through the command line: one span snapshot, two chunkings
    compared (pass), and a chunker that drops each document's tail (regression, exit 1)."""
    from conftest import gate

    config = PYDOC / "gate.toml"
    code, out, err = gate("check", "--config", config, "--json", tmp_path / "pass.json")
    assert code == 0, err
    report = json.loads((tmp_path / "pass.json").read_text(encoding="utf-8"))
    assert report["verdict"] == "pass"
    assert report["candidate"]["chunking"]["version"] == "tokens-200-overlap-40"
    assert report["baseline"]["chunking"]["version"] == "tokens-300-overlap-50"
    assert "evidence unit span (min coverage 1)" in out
    code, out, _ = gate("check", "--config", config, "--candidate",
                        PYDOC / "runs" / "bm25-truncated.trec")
    assert code == 1
    assert out.startswith("REGRESSION: material regression in Recall@10 (all)")


def test_a_run_of_ids_outside_the_corpus_is_refused(tmp_path):
    """A candidate whose chunk table names documents the pinned corpus does not hold (here, a
    renamed topic) is invalid input, not a run of unjudged items."""
    from conftest import gate

    table = (PYDOC / "chunks-200.jsonl").read_text(encoding="utf-8")
    renamed = table.replace('"doc_id": "assert"', '"doc_id": "assert-statement"')
    assert renamed != table
    (tmp_path / "chunks.jsonl").write_text(renamed, encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_bytes((PYDOC / "runs" / "bm25-200.trec").read_bytes())
    code, _, err = gate("run-manifest", "--snapshot", PYDOC / "snapshot.json", "--run", run,
                        "--chunks", tmp_path / "chunks.jsonl")
    assert code == 2
    assert "name a document that is not in the corpus" in err and "'assert-statement'" in err


# -- the pipeline example --------------------------------------------------------------------

def test_the_pipeline_example_fails_the_packing_bug_at_packing(tmp_path):
    """Candidates → reranked → context within 1,000 tokens: a packer that packs against 500
    tokens loses evidence at packing (exit 1, the funnel names it); 100 candidates instead of
    50 find more at the candidates stage and lose nothing later (exit 0, improved)."""
    from conftest import gate

    config = PYDOC / "pipeline.toml"
    code, out, _ = gate("check", "--config", config, "--json", tmp_path / "bug.json")
    assert code == 1
    assert out.splitlines()[0].startswith(
        "REGRESSION: material regression in Recall [context] (all), FactCoverage [context] "
        "(all); evidence lost: dropped at packing (context), 103 → 161 of 265 units")
    report = json.loads((tmp_path / "bug.json").read_text(encoding="utf-8"))
    assert report["funnel"]["worst"]["kind"] == "context"
    assert [r["stage"] for r in report["funnel"]["reaching"]] == ["candidates", "reranked",
                                                                 "context"]
    tokens = next(r for r in report["costs"] if r["metric"] == "context_tokens"
                  and r["stat"] == "mean")
    assert tokens["decision"] == "pass" and tokens["candidate"] <= 500 < tokens["baseline"]
    code, out, _ = gate("check", "--config", config, "--candidate",
                        PYDOC / "pipeline" / "more-candidates" / "context.jsonl")
    assert code == 0
    assert out.splitlines()[0] == ("PASS: no material regression; improved: Recall [candidates] "
                                   "(all) (exit 0)")


def test_pipeline_stages_are_rebuilt_except_their_latencies():
    pytest.importorskip("bm25s")
    pytest.importorskip("mistral_common")
    pytest.importorskip("Stemmer")
    done = script(ROOT / "examples" / "make_pydoc_pipeline.py", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
