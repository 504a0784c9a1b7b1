"""The evidence unit is never guessed in silence, judgments name what the snapshot pins, and
a chunk-unit snapshot compares only runs that say which chunking they were made with — each
from the user's side, on the pydoc example judged by chunk id, as a RAG repository judges."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import CRANFIELD, ROOT, gate

PYDOC = ROOT / "examples" / "pydoc"
V300, V200 = "tokens-300-overlap-50", "tokens-200-overlap-40"


def _chunk_judgments(spans: Path, chunks: Path) -> list[dict]:
    """Chunk judgments as an assessor of chunks would make them from the span judgments: a
    chunk that holds a judged span whole is judged with the highest such grade."""
    table = [json.loads(line) for line in chunks.read_text().splitlines()]
    best: dict[tuple[str, str], int] = {}
    for line in spans.read_text().splitlines():
        span = json.loads(line)
        for chunk in table:
            if (chunk["doc_id"] == span["doc_id"] and chunk["start"] <= span["start"]
                    and span["end"] <= chunk["end"]):
                key = (span["query_id"], chunk["id"])
                best[key] = max(best.get(key, span["grade"]), span["grade"])
    return [{"query_id": q, "doc_id": c, "grade": g} for (q, c), g in best.items()]


@pytest.fixture
def chunked(tmp_path: Path, monkeypatch) -> Path:
    """A repository whose questions are judged by chunk ids of the 300-token chunking."""
    for name in ("corpus.jsonl", "chunks-300.jsonl", "chunks-200.jsonl"):
        shutil.copy(PYDOC / name, tmp_path / name)
    queries = [json.loads(line) for line in (PYDOC / "queries.jsonl").read_text().splitlines()]
    (tmp_path / "queries.jsonl").write_text("".join(  # facts are labelled on spans only
        json.dumps({k: v for k, v in q.items() if k != "facts"}) + "\n" for q in queries))
    (tmp_path / "runs").mkdir()
    shutil.copy(ROOT / "baselines" / "pydoc" / "bm25-300.trec", tmp_path / "runs" / "bm25-300.trec")
    shutil.copy(PYDOC / "runs" / "bm25-200.trec", tmp_path / "runs" / "bm25-200.trec")
    judgments = _chunk_judgments(PYDOC / "qrels.jsonl", PYDOC / "chunks-300.jsonl")
    (tmp_path / "qrels.jsonl").write_text("".join(json.dumps(j) + "\n" for j in judgments))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_init_refuses_to_guess_the_unit_of_chunk_ids(chunked: Path) -> None:
    code, out, err = gate("init", "--queries", "queries.jsonl", "--qrels", "qrels.jsonl",
                          "--corpus-file", "corpus.jsonl")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "judged ids are not documents of the corpus corpus.jsonl, and they look like chunk " \
           "ids: 'compound#" in err
    assert "the evidence unit is not guessed — say which with --unit" in err
    assert "a re-chunked run is refused as not comparable" in err  # what each unit would do
    assert "gate qrels to-spans" in err
    assert not any(chunked.glob("snapshot.json")) and not (chunked / "gate.toml").exists()


def test_chunk_id_repository_init_approve_rechunk_check(chunked: Path) -> None:
    """init → approve → re-chunk → check: the re-chunked run is not comparable, never a
    regression measured on unjudged ids."""
    code, out, err = gate("init", "--queries", "queries.jsonl", "--qrels", "qrels.jsonl",
                          "--corpus-file", "corpus.jsonl", "--unit", "chunk",
                          "--chunking-version", V300, "--chunks", "chunks-300.jsonl")
    assert code == 0, err
    assert "unit: chunk — given with --unit" in out
    assert f"--chunking-version {V300}" in out  # the next step declares the chunking
    workflow = (chunked / ".github/workflows/retrieval-gate.yml").read_text()
    # the run described once, for the pull request's run and the approved one alike, with the
    # chunk table the baseline pins
    assert workflow.count("--system retriever=my-retriever") == 1
    assert (f"RUN_OPTIONS: --system retriever=my-retriever --chunks chunks-300.jsonl "
            f"--chunking-version {V300}") in workflow
    assert workflow.count("run-options: ${{ env.RUN_OPTIONS }}") == 2
    assert workflow.count("retriever: ${{ env.RETRIEVER }}") == 2
    base = chunked / "runs" / "bm25-300.trec"
    code, _, err = gate("run-manifest", "--snapshot", "snapshot.json", "--run", base)
    assert code == 2 and err == (
        f"error: --chunking-version: is needed: the snapshot judges chunks of chunking '{V300}',"
        " and a run's manifest must say which chunking the run was made with — pass "
        "--chunking-version (the run's chunking) or --chunks FILE (its chunk table)\n")
    assert not Path(f"{base}.manifest.json").exists()
    assert gate("run-manifest", "--snapshot", "snapshot.json", "--run", base, "--chunks",
                "chunks-300.jsonl", "--chunking-version", V300)[0] == 0
    code, _, err = gate("baseline", "approve", "--candidate", base, "--to", "baselines/main")
    assert code == 0, err

    rechunked = chunked / "runs" / "bm25-200.trec"
    assert gate("run-manifest", "--snapshot", "snapshot.json", "--run", rechunked, "--chunks",
                "chunks-200.jsonl", "--chunking-version", V200)[0] == 0
    code, out, err = gate("check", "--candidate", rechunked)
    assert code == 3 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith("error: not comparable: the candidate ") and \
        " was not made with the chunking that snapshot " in lines[0]
    assert lines[1].split() == ["error:", "changed", "candidate", "snapshot"]
    assert lines[2].split() == ["error:", "run's", "chunking", "version", V200, V300]
    assert lines[3].split()[:5] == ["error:", "run's", "chunk", "table", "sha256"]
    assert "…" not in "".join(lines[1:4]) and "→" not in "".join(lines[1:4])
    assert lines[4] == ("error: what to do — candidate: chunk judgments compare runs of the "
                        "judged chunking only: to compare chunkings, turn them into spans "
                        "(gate qrels to-spans) or judge documents")


def test_a_manifest_that_declares_no_chunking_is_refused_by_check(chunked: Path) -> None:
    """A manifest written without the chunking (by hand, or before the rule) cannot pass for
    the judged chunking: exit 2 with the fix, before any score."""
    assert gate("snapshot", "freeze", "--queries", "queries.jsonl", "--qrels", "qrels.jsonl",
                "--corpus-file", "corpus.jsonl", "--corpus-version", "c", "--chunking-version",
                V300, "--chunks", "chunks-300.jsonl", "--permissions-version", "p", "-o",
                "snapshot.json")[0] == 0
    base, cand = chunked / "runs" / "bm25-300.trec", chunked / "runs" / "bm25-200.trec"
    for run, table, version in ((base, "chunks-300.jsonl", V300),
                                (cand, "chunks-200.jsonl", V200)):
        assert gate("run-manifest", "--snapshot", "snapshot.json", "--run", run, "--chunks",
                    table, "--chunking-version", version)[0] == 0
    manifest = Path(f"{cand}.manifest.json")
    document = json.loads(manifest.read_text())
    del document["chunking"]
    manifest.write_text(json.dumps(document))
    code, _, err = gate("check", "--no-config", "--snapshot", "snapshot.json", "--baseline",
                        base, "--candidate", cand)
    assert code == 2 and err.startswith(f"error: {manifest}:$[\"chunking\"]: the candidate's "
                                        "manifest records no chunking; the snapshot judges "
                                        f"chunks of chunking '{V300}'")
    assert "rewrite it with gate run-manifest --chunking-version V" in err
    # a version alone declares it: the judged chunking is comparable (its ids are placed by
    # the pinned chunk table), another is not
    judged = Path(f"{base}.manifest.json")
    judged.write_text(json.dumps({**json.loads(judged.read_text()),
                                  "chunking": {"version": V300}}))
    code, out, err = gate("check", "--no-config", "--snapshot", "snapshot.json", "--baseline",
                          base, "--candidate", base)
    assert code == 0 and out.startswith("PASS"), err
    document["chunking"] = {"version": V200}
    manifest.write_text(json.dumps(document))
    code, _, err = gate("check", "--no-config", "--snapshot", "snapshot.json", "--baseline",
                        base, "--candidate", cand)
    assert code == 3 and "run's chunking version" in err


def test_freeze_prints_the_unit_and_why(tmp_path: Path) -> None:
    for name in ("queries.jsonl", "qrels.tsv", "corpus.jsonl"):
        shutil.copy(CRANFIELD / name, tmp_path / name)
    code, out, err = gate("snapshot", "freeze", "--queries", tmp_path / "queries.jsonl",
                          "--qrels", tmp_path / "qrels.tsv", "--corpus-file",
                          tmp_path / "corpus.jsonl", "--corpus-version", "c",
                          "--permissions-version", "p", "-o", tmp_path / "snapshot.json")
    assert code == 0, err
    judged = len({line.split()[2] for line in (tmp_path / "qrels.tsv").read_text().splitlines()})
    assert out.splitlines()[1] == (f"unit: document — every judged id ({judged}) is a document "
                                   f"of the corpus {tmp_path / 'corpus.jsonl'}")
    # without a corpus nothing can be checked, and the line says so
    code, out, err = gate("snapshot", "freeze", "--queries", tmp_path / "queries.jsonl",
                          "--qrels", tmp_path / "qrels.tsv", "--corpus-version", "c",
                          "--permissions-version", "p", "-o", tmp_path / "snapshot.json")
    assert code == 0, err
    assert out.splitlines()[1] == ("unit: document — no corpus file to check the judged ids "
                                   "against: they are taken for document ids (give "
                                   "--corpus-file to have them checked)")


def test_chunk_shaped_ids_without_a_corpus_are_not_taken_for_documents(chunked: Path) -> None:
    code, _, err = gate("snapshot", "freeze", "--queries", "queries.jsonl", "--qrels",
                          "qrels.jsonl", "--corpus-version", "c", "--permissions-version", "p",
                          "-o", "snapshot.json")
    assert code == 2 and "judged ids hold '#', as chunk ids do" in err
    assert not Path("snapshot.json").exists()
    code, _, err = gate("snapshot", "freeze", "--queries", "queries.jsonl", "--qrels",
                          "qrels.jsonl", "--corpus-version", "c", "--permissions-version", "p",
                          "--chunks", "chunks-300.jsonl", "-o", "snapshot.json")
    assert code == 2 and "chunk ids of the chunk table chunks-300.jsonl" in err


def test_judgments_outside_the_corpus_are_invalid_everywhere(tmp_path: Path,
                                                             monkeypatch) -> None:
    """A snapshot whose judgments name no corpus document validated, and check said PASS at
    0.0000 on every measure: now freeze, init, validate and check refuse it (exit 2)."""
    for name in ("queries.jsonl", "qrels.tsv", "corpus.jsonl"):
        shutil.copy(CRANFIELD / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "other.jsonl"  # another collection's ids
    other.write_text("".join(json.dumps({"id": f"x{i}", "text": "?"}) + "\n"
                             for i in range(1400)))
    judgments = len((tmp_path / "qrels.tsv").read_text().splitlines())
    judged = len({line.split()[2] for line in (tmp_path / "qrels.tsv").read_text().splitlines()})
    args = ("--queries", tmp_path / "queries.jsonl", "--qrels", tmp_path / "qrels.tsv")
    for command in (("snapshot", "freeze", *args, "--corpus-version", "c",
                     "--permissions-version", "p", "--unit", "document", "--corpus-file", other,
                     "-o", tmp_path / "snapshot.json"),
                    ("init", *args, "--corpus-file", other, "--unit", "document")):
        code, out, err = gate(*command)
        assert code == 2 and out == "" and err.startswith(
            f"error: {tmp_path / 'qrels.tsv'}:1: {judged} of the {judged} judged ids are not in "
            f"{other}: '184', '29', '31' and {judged - 3} more — judge documents of the pinned "
            "corpus"), err
        assert not (tmp_path / "snapshot.json").exists()
    # a snapshot whose corpus was replaced and re-pinned by hand: validate and check refuse it
    code, _, err = gate("snapshot", "freeze", *args, "--corpus-version", "c",
                        "--permissions-version", "p", "--corpus-file", tmp_path / "corpus.jsonl",
                        "-o", tmp_path / "snapshot.json")
    assert code == 0, err
    snapshot = json.loads((tmp_path / "snapshot.json").read_text())
    shutil.copy(other, tmp_path / "corpus.jsonl")
    from retrieval_gate.inputs.snapshot import sha256_file

    snapshot["corpus"]["sha256"] = sha256_file(tmp_path / "corpus.jsonl")
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    code, _, err = gate("validate", tmp_path / "snapshot.json")
    assert code == 2 and f"{judged} of the {judged} judged ids are not in" in err
    assert judgments > judged  # many judgments, each id named once


def test_both_runs_scoring_zero_everywhere_certifies_nothing(tmp_path: Path) -> None:
    """Document judgments, no corpus, and runs of chunk ids (the unit chosen by hand, wrongly):
    nothing either run returns is judged. An interval of [0, 0] would pass the change; the
    gate says nothing is certified, and why."""
    queries = [{"id": f"q{i}", "text": f"question {i}"} for i in range(30)]
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (tmp_path / "qrels.tsv").write_text("".join(f"q{i} 0 doc{i} 1\n" for i in range(30)))
    for name in ("a.trec", "b.trec"):
        (tmp_path / name).write_text("".join(f"q{i} Q0 doc{i}#{j} {j + 1} {10 - j} t\n"
                                             for i in range(30) for j in range(3)))
    assert gate("snapshot", "freeze", "--queries", tmp_path / "queries.jsonl", "--qrels",
                tmp_path / "qrels.tsv", "--corpus-version", "c", "--permissions-version", "p",
                "--unit", "document", "-o", tmp_path / "snapshot.json")[0] == 0
    for name in ("a.trec", "b.trec"):
        assert gate("run-manifest", "--snapshot", tmp_path / "snapshot.json", "--run",
                    tmp_path / name)[0] == 0
    args = ("check", "--no-config", "--snapshot", tmp_path / "snapshot.json", "--baseline",
            tmp_path / "a.trec", "--candidate", tmp_path / "b.trec")
    code, out, _ = gate(*args)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == ("INCONCLUSIVE: both runs score 0 on every query of Recall@10, nDCG@10: "
                        "neither retrieved anything the judgments count, so nothing is "
                        "certified (exit 0)")
    assert lines[1] == ("Next: check that the runs' item ids are the ids the judgments name "
                        "(documents of the corpus, or chunks of the judged chunking): both "
                        "runs score 0 on every query of Recall@10, nDCG@10")
    assert sum("inconclusive (both 0 everywhere)" in line for line in lines) == 2
    assert gate(*args, "--fail-on", "inconclusive")[0] == 4
    document = json.loads(gate(*args, "--output-format", "json")[1])
    assert [c["decision"] for c in document["comparisons"]] == ["inconclusive"] * 2
    assert not any(c["improvement"] for c in document["comparisons"])


def test_the_advice_to_declare_a_chunking_can_be_followed(chunked: Path) -> None:
    """Every fix the rules print works when followed: init asks for the chunk table a pinned
    corpus needs, and run-manifest asks for a version where a chunk table cannot be compared."""
    code, _, err = gate("init", "--queries", "queries.jsonl", "--qrels", "qrels.jsonl",
                        "--corpus-file", "corpus.jsonl", "--unit", "chunk",
                        "--chunking-version", V300)
    assert code == 2 and err.startswith("error: --chunks: is needed: chunk judgments with a "
                                        "pinned corpus place each run's chunk ids")
    assert not Path("snapshot.json").exists() and not Path("gate.toml").exists()
    code, _, err = gate("init", "--queries", "queries.jsonl", "--qrels", "qrels.jsonl",
                        "--unit", "chunk", "--chunking-version", "tokens 300 (v2)")
    assert code == 2 and "is not a plain name" in err and "path" not in err
    # a chunk snapshot that pins no table: a run's table alone cannot be compared with it
    assert gate("snapshot", "freeze", "--queries", "queries.jsonl", "--qrels", "qrels.jsonl",
                "--corpus-version", "c", "--chunking-version", V300, "--permissions-version",
                "p", "-o", "snapshot.json")[0] == 0
    base = chunked / "runs" / "bm25-300.trec"
    code, _, err = gate("run-manifest", "--snapshot", "snapshot.json", "--run", base,
                        "--chunks", "chunks-300.jsonl")
    assert code == 2 and err == (
        f"error: --chunking-version: is needed: the snapshot judges chunks of chunking '{V300}'"
        ", and it pins no chunk table to compare the run's with — pass --chunking-version "
        "(the run's chunking)\n")
    assert gate("run-manifest", "--snapshot", "snapshot.json", "--run", base, "--chunks",
                "chunks-300.jsonl", "--chunking-version", V300)[0] == 0
    assert gate("validate", "snapshot.json", base)[0] == 0


def test_a_baseline_of_the_judged_chunking_is_told_to_rewrite_its_manifest(chunked: Path) -> None:
    """The snapshot now pins the judged chunking's table; a baseline made before, of that very
    chunking, needs a new manifest, not spans."""
    freeze = ("snapshot", "freeze", "--queries", "queries.jsonl", "--qrels", "qrels.jsonl",
              "--corpus-version", "c", "--chunking-version", V300, "--permissions-version", "p",
              "-o", "snapshot.json")
    assert gate(*freeze)[0] == 0
    base, cand = chunked / "runs" / "bm25-300.trec", chunked / "runs" / "bm25-200.trec"
    assert gate("run-manifest", "--snapshot", "snapshot.json", "--run", base,
                "--chunking-version", V300)[0] == 0
    assert gate("run-manifest", "--snapshot", "snapshot.json", "--run", cand,
                "--chunking-version", V200)[0] == 0
    assert gate(*freeze, "--chunks", "chunks-300.jsonl")[0] == 0  # the table pinned now
    code, _, err = gate("check", "--no-config", "--snapshot", "snapshot.json", "--baseline", base,
                        "--candidate", cand)
    assert code == 3
    advice = [line for line in err.splitlines() if "what to do" in line]
    assert advice == [
        ("error: what to do — baseline: its chunking is the judged one, and the snapshot's "
         "record of it changed: rewrite its manifest with gate run-manifest and approve it"),
        ("error: what to do — candidate: chunk judgments compare runs of the judged chunking "
         "only: to compare chunkings, turn them into spans (gate qrels to-spans) or judge "
         "documents")]
