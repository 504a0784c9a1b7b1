"""``gate run`` with a chunk table: the run's own (``--chunks``) or the one a chunk snapshot
pins places the hits, on every evidence unit, as ``gate check`` reads the run; the journal and
the shards are bound to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gate
from tests.test_run import CHUNKS, RANKED, lines, run, without_latency, world

# the run's own chunking: each document cut in two at another place than the snapshot's
TABLE = [(f"{d}@{i}", d, i * 3, i * 3 + 3) for d in RANKED["q1"] + ["d4", "d5", "d6"]
         for i in range(2)]
RETRIEVERS = f"""
TABLE = {TABLE!r}

def table_chunks(query):
    from search_table import RANKED
    return [(d + "@0", 9.0 - i) for i, d in enumerate(RANKED[query.id])]
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def table(folder: Path, rows: list[tuple[str, str, int, int]] = TABLE,
          name: str = "table.jsonl") -> Path:
    (folder / name).write_text("".join(json.dumps({"id": c, "doc_id": d, "start": s,
                                                   "end": e}) + "\n" for c, d, s, e in rows))
    return Path(name)  # as given on a command line in the folder


def retriever(folder: Path, body: str) -> str:
    """A module of this test's own holding ``body`` (and RANKED); its name."""
    name = f"chunked_{folder.name.replace('-', '_')}"
    (folder / "search_table.py").write_text(f"RANKED = {RANKED!r}\n")
    (folder / f"{name}.py").write_text(body)
    return name


def by_hand(folder: Path, name: str, chunks: Path) -> Path:
    """The same ranking as ``table_chunks`` written as TREC by hand, with its manifest."""
    path = folder / name
    path.write_text("".join(f"{q} Q0 {d}@0 {r} {9.0 - r + 1} hand\n" for q, docs in RANKED.items()
                            for r, d in enumerate(docs, 1)))
    code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json", "--run", path,
                        "--chunks", chunks, "--commit", "none")
    assert code == 0, err
    return path


def same_scores(folder: Path, baseline: Path, candidate: Path) -> None:
    """Both runs score alike on every query: each comparison's queries are all the same."""
    code, out, err = gate("check", "--snapshot", folder / "snapshot.json", "--baseline",
                          baseline, "--candidate", candidate, "--no-config", "--gate",
                          "Recall@3=0.1", "--gate", "RR@3=0.1", "--output-format", "json")
    assert code == 0, err
    report = json.loads(out)
    rows = report["comparisons"]
    assert len(rows) == 2 and all(r["wins"] == r["losses"] == 0 for r in rows), rows
    assert all(r["baseline_mean"] == r["candidate_mean"] for r in rows)
    assert [q["baseline"] for q in report["queries"]] == [
        q["candidate"] for q in report["queries"]]


@pytest.mark.parametrize("unit", ["document", "span"])
def test_chunk_ids_are_placed_by_the_run_s_chunk_table(here: Path, unit: str) -> None:
    world(here, unit)
    chunks = table(here)
    name = retriever(here, RETRIEVERS)
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        f"{name}:table_chunks", "-o", here / "run.jsonl", "--chunks", chunks,
                        "--commit", "none")
    assert code == 0, err
    assert [item["id"] for item in lines(here / "run.jsonl")[0]["items"]] == [
        "d1@0", "d3@0", "d2@0"]
    same_scores(here, by_hand(here, "hand.trec", chunks), here / "run.jsonl")
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        f"{name}:table_chunks", "-o", here / "bare.jsonl", "--commit", "none")
    assert code == 2 and "query 'q1' returned" in err  # without the table: not placed


def test_a_hit_outside_the_table_or_placed_elsewhere_is_refused(here: Path) -> None:
    world(here, "span")
    chunks = table(here)
    name = retriever(here, RETRIEVERS + """
def unknown(query):
    return [("d1#0", 1.0)]

def misplaced(query):
    return [{"id": "d1@0", "doc_id": "d1", "start": 1, "end": 3, "score": 1.0}]

def agreeing(query):
    return [{"id": "d1@1", "doc_id": "d1", "start": 3, "end": 6, "score": 1.0}]
""")
    said = {"unknown": "hit 1, 'd1#0', is not a chunk of the chunk table table.jsonl — "
                       "return chunk ids of that chunking",
            "misplaced": "hit 1 places chunk 'd1@0' in 'd1' at 1:3, and the chunk table "
                         "table.jsonl in 'd1' at 0:3"}
    for function, message in said.items():
        code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                            f"{name}:{function}", "-o", here / f"{function}.jsonl", "--chunks",
                            chunks, "--commit", "none")
        assert code == 2 and "query 'q1' returned" in err and message in err, err
        assert not (here / f"{function}.jsonl").exists()
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        f"{name}:agreeing", "-o", here / "agreeing.jsonl", "--chunks", chunks,
                        "--commit", "none")
    assert code == 0, err


def test_a_chunk_snapshot_s_pinned_table_or_the_run_s_own(here: Path) -> None:
    world(here, "chunk")
    code, _, err = run(here, "chunks", "--chunking-version", "v1")
    assert code == 0, err  # the pinned table: d1#0 ...
    own = table(here, [(c, d, s, e) for c, d, s, e in CHUNKS if c.endswith("#0")], "own.jsonl")
    code, _, err = run(here, "chunks", "--chunks", own, output="own-run.jsonl")
    assert code == 0, err
    partial = table(here, [(c, d, s, e) for c, d, s, e in CHUNKS if c.startswith("d1")],
                    "partial.jsonl")
    code, _, err = run(here, "chunks", "--chunks", partial, output="partial-run.jsonl")
    assert code == 2 and "hit 2, 'd3#0', is not a chunk of the chunk table partial.jsonl" in err


def test_the_journal_and_the_shards_are_bound_to_the_chunk_table(here: Path) -> None:
    world(here, "span")
    chunks, other = table(here), table(here, TABLE + [("d9@0", "d1", 0, 1)], "other.jsonl")
    name = retriever(here, RETRIEVERS + """
import os
def fails(query):
    if query.id == "q3" and not os.environ.get("FIXED"):
        raise RuntimeError("offline")
    return table_chunks(query)
""")
    common = ("run", "--snapshot", here / "snapshot.json", "--retriever", f"{name}:fails",
              "--commit", "none")
    code, _, err = gate(*common, "-o", here / "run.jsonl", "--chunks", chunks)
    assert code == 2 and "gate run --resume calls only the others" in err
    code, _, err = gate(*common, "-o", here / "run.jsonl", "--chunks", other, "--resume",
                        env={"FIXED": "1"})
    assert code == 2 and "the journal belongs to another run: chunks sha256:" in err
    code, _, err = gate(*common, "-o", here / "run.jsonl", "--chunks", chunks, "--resume",
                        env={"FIXED": "1"})
    assert code == 0, err
    for index in (1, 2):
        code, _, err = gate(*common, "-o", here / f"shard-{index}.jsonl", "--chunks", chunks,
                            "--shard", f"{index}/2", env={"FIXED": "1"})
        assert code == 0, err
    shards = (here / "shard-1.jsonl", here / "shard-2.jsonl")
    for given, said in (((), "was checked against the chunk table sha256:"),
                        (("--chunks", other), "and --chunks gives other.jsonl (sha256:")):
        code, _, err = gate("run", "merge", *shards, "--snapshot", here / "snapshot.json",
                            "-o", here / "merged.jsonl", "--commit", "none", *given)
        assert code == 2 and said in err, err
    code, _, err = gate("run", "merge", *shards, "--snapshot", here / "snapshot.json", "-o",
                        here / "merged.jsonl", "--commit", "none", "--chunks", chunks)
    assert code == 0, err
    assert without_latency(here / "merged.jsonl") == without_latency(here / "run.jsonl")


def test_ids_outside_ascii_are_read_from_the_corpus(here: Path) -> None:
    (here / "corpus.jsonl").write_text('{"id": "dé1", "text": "alpha"}\n{"id": "d2", '
                                       '"text": "beta"}\n')
    (here / "queries.jsonl").write_text('{"id": "q1", "text": "alpha"}\n')
    (here / "qrels.trec").write_text("q1 0 dé1 1\n")
    assert gate("snapshot", "freeze", "--queries", "queries.jsonl", "--qrels", "qrels.trec",
                "--corpus-file", "corpus.jsonl", "-o", "snapshot.json")[0] == 0
    name = retriever(here, "def search(query):\n    return [('dé1', 1.0), ('d2', 0.5)]\n"
                           "def other(query):\n    return [('dé2', 1.0)]\n")
    code, _, err = gate("run", "--snapshot", "snapshot.json", "--retriever", f"{name}:search",
                        "-o", "run.jsonl", "--commit", "none")
    assert code == 0, err
    assert lines(here / "run.jsonl")[0]["items"][0]["id"] == "dé1"
    code, _, err = gate("run", "--snapshot", "snapshot.json", "--retriever", f"{name}:other",
                        "-o", "other.jsonl", "--commit", "none")
    assert code == 2 and "names document 'dé2', which is not in the snapshot's corpus" in err


def test_an_output_that_would_overwrite_the_chunk_table_is_refused(here: Path) -> None:
    world(here, "span")
    chunks = table(here)
    before = (here / chunks).read_bytes()
    name = retriever(here, RETRIEVERS)
    common = ("--snapshot", here / "snapshot.json", "--retriever", f"{name}:table_chunks",
              "--commit", "none", "--chunks", chunks)
    for extra in ((), ("--shard", "1/2")):
        code, _, err = gate("run", *common, "-o", chunks, *extra)
        assert code == 2 and "table.jsonl would overwrite table.jsonl, which --chunks gives" \
            in err, err
    for index in (1, 2):
        assert gate("run", *common, "-o", f"shard-{index}.jsonl", "--shard", f"{index}/2")[0] == 0
    code, _, err = gate("run", "merge", "shard-1.jsonl", "shard-2.jsonl", "--snapshot",
                        here / "snapshot.json", "-o", "shard-2.jsonl", "--commit", "none",
                        "--chunks", chunks)
    assert code == 2 and "would overwrite shard-2.jsonl, which SHARD gives" in err, err
    assert (here / chunks).read_bytes() == before


def test_token_counts_must_be_the_table_s(here: Path) -> None:
    """gate check reads a chunk's tokens from the chunk table: a hit's own count, or the
    tokenizer's, that is not the table's is refused at its query, not replaced."""
    world(here, "span")
    counted = table(here, name="plain.jsonl")
    rows = [json.loads(line) for line in (here / counted).read_text().splitlines()]
    (here / "counted.jsonl").write_text("".join(json.dumps({**r, "tokens": 3}) + "\n"
                                                for r in rows))
    name = retriever(here, RETRIEVERS + """
def counts(query):
    from search_table import RANKED
    return [{"id": d + "@0", "score": 9.0 - i, "tokens": 3} for i, d in enumerate(RANKED[query.id])]
""")
    common = ("--snapshot", here / "snapshot.json", "--retriever", f"{name}:counts",
              "--commit", "none")
    code, _, err = gate("run", *common, "-o", "a.jsonl", "--chunks", "counted.jsonl")
    assert code == 0, err  # the same counts
    code, _, err = gate("run", *common, "-o", "b.jsonl", "--chunks", counted)
    assert code == 2 and "query 'q1' returned hit 1, chunk 'd1@0', with 3 tokens, and the " \
        "chunk table plain.jsonl gives none: gate check reads a chunk's tokens from the table" \
        in err, err
    rows = [{**r, "tokens": 4} for r in rows]
    (here / "four.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = gate("run", *common, "-o", "c.jsonl", "--chunks", "four.jsonl")
    assert code == 2 and "with 3 tokens, and the chunk table four.jsonl gives 4" in err, err


def test_a_chunk_table_outside_the_corpus_is_refused_before_any_call(here: Path) -> None:
    world(here, "span")
    bad = table(here, TABLE + [("x@0", "nowhere", 0, 3)], "bad.jsonl")
    name = retriever(here, RETRIEVERS + """
def logged(query):
    open("calls.log", "a").write(query.id)
    return table_chunks(query)
""")
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        f"{name}:logged", "-o", "run.jsonl", "--chunks", bad, "--commit", "none")
    assert code == 2 and "bad.jsonl: 1 chunk names a document that is not in the corpus" in err
    assert "give chunks of the pinned corpus's documents only" in err
    assert not (here / "calls.log").exists()


def test_an_id_in_another_unicode_normalization_is_named_so(here: Path) -> None:
    world(here, "span")
    chunks = table(here, TABLE + [("d1\u00e9", "d1", 0, 3)], "nfc.jsonl")
    name = retriever(here, RETRIEVERS + """
def decomposed(query):
    return [("d1e\u0301", 1.0)]
""")
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        f"{name}:decomposed", "-o", "run.jsonl", "--chunks", chunks,
                        "--commit", "none")
    assert code == 2 and "(the table holds it in another Unicode normalization: write the ids " \
        "alike)" in err, err

