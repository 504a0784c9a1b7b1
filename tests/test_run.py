"""``gate run``: the gate calls a retriever over the frozen queries and writes the run it
judges. Every test runs the command line (or the library) on a snapshot frozen in ``tmp_path``
with a retriever module written there, as a user's would be."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import retrieval_gate
from tests.conftest import INTERRUPTIBLE, ROOT, gate

DOCS = {"d1": "alpha apples and more alpha", "d2": "beta bananas", "d3": "gamma grapes here",
        "d4": "delta dates", "d5": "epsilon elderberries", "d6": "zeta zucchini"}
QUERIES = [("q1", "alpha", True), ("q2", "beta", True), ("u1", "omega", False),
           ("q3", "gamma", True), ("q4", "delta", True)]
QRELS = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d2", 1), ("q3", "d3", 1), ("q4", "d4", 1),
         ("q4", "d5", 1)]
# the ranking each query gets from the module's `search`: best first
RANKED = {"q1": ["d1", "d3", "d2"], "q2": ["d2", "d1"], "u1": ["d6"], "q3": ["d4", "d3"],
          "q4": ["d4", "d6", "d5"]}
CHUNKS = [(f"{d}#{i}", d, i * 5, i * 5 + 5) for d in DOCS for i in range(2)]


def world(folder: Path, unit: str = "document", missing: str = "error",
          stages: tuple[str, ...] = ()) -> Path:
    """A small snapshot in ``folder`` (the current folder for the tests): its corpus, queries
    (one unanswerable) and judgments of ``unit``; returns the snapshot's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n"
                                                 for d, t in DOCS.items()))
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"id": q, "text": t, "answerable": a, "tags": ["t"], "scope": None,
                    "custom": {"k": q}}) + "\n" for q, t, a in QUERIES))
    options: list[str | Path] = []
    if unit == "document":
        lines = [{"query_id": q, "doc_id": d, "grade": g} for q, d, g in QRELS]
    elif unit == "chunk":
        lines = [{"query_id": q, "doc_id": f"{d}#0", "grade": g} for q, d, g in QRELS]
        (folder / "chunks.jsonl").write_text("".join(
            json.dumps({"id": c, "doc_id": d, "start": s, "end": e}) + "\n"
            for c, d, s, e in CHUNKS))
        options = ["--unit", "chunk", "--chunking-version", "v1", "--chunks",
                   folder / "chunks.jsonl"]
    else:
        lines = [{"query_id": q, "doc_id": d, "start": 0, "end": 4, "grade": g}
                 for q, d, g in QRELS]
    (folder / "qrels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    for stage in stages:
        options += ["--stage", stage]
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
                        folder / "qrels.jsonl", "--corpus-version", "c1", "--corpus-file",
                        folder / "corpus.jsonl", "--permissions-version", "p1", "--missing",
                        missing, "-m", "Recall@3", "-m", "RR@3", *options,
                        "-o", folder / "snapshot.json")
    assert code == 0, err
    return folder / "snapshot.json"


SEARCH = f"""
import asyncio, json, math, os, time
RANKED = {RANKED!r}
CHUNKS = {CHUNKS!r}
DOCS = {DOCS!r}

def words(text):
    return text.split()

def with_text(query):
    return [{{"id": d, "score": 10.0 - i, "text": DOCS[d]}} for i, d in enumerate(RANKED[query.id])]

def search(query):
    return [(d, 10.0 - i) for i, d in enumerate(RANKED[query.id])]

def ids_only(query):
    return list(RANKED[query.id])

def fields(query):
    assert query.custom == {{"k": query.id}} and query.tags == ["t"] and query.scope is None
    assert query.answerable == (query.id != "u1") and query.fields["text"] == query.text
    query.tags.append("changed")  # a query's values are the call's own copies
    return search(query)

def slow(query):
    time.sleep(0.002 * (hash(query.id) % 5))
    return [{{"id": d, "score": 10 - i, "tokens": 7}} for i, d in enumerate(RANKED[query.id])]

async def asearch(query):
    await asyncio.sleep(0.001 * (len(query.id) % 3))
    return search(query)

def batch(queries):
    return [search(q) for q in queries]

def staged(query):
    return {{"candidates": search(query), "context": search(query)[:2]}}

def chunks(query):
    return [{{"id": d + "#0", "doc_id": d, "score": 5.0 - i}} for i, d in enumerate(RANKED[query.id])]

def spans(query):
    return [{{"doc_id": d, "start": 0, "end": 4, "score": 5.0 - i}}
            for i, d in enumerate(RANKED[query.id])]

def log(query):
    with open("calls.log", "a") as f:
        f.write(query.id + "\\n")
    time.sleep(float(os.environ.get("SEARCH_SLEEP", "0")))
    return search(query)

def stalls(query):
    with open("calls.log", "a") as f:
        f.write(query.id + "\\n")
    if query.id == os.environ.get("STALL"):
        time.sleep(60)
    return search(query)

def doc_once(query):
    if query.id == "q2":
        return [{{"id": "d2", "doc_id": "d2", "score": 1.0}}]
    return search(query)

def flaky(query):
    count = open("calls.log").read().split().count("q2") if os.path.exists("calls.log") else 0
    log(query)
    if query.id == "q2" and count < 3:
        raise ConnectionError("refused\\nsecond line")
    return search(query)

def broken(query):
    if query.id in ("q2", "u1"):
        raise RuntimeError("index offline")
    return search(query)

def sleepy(query):
    time.sleep(5 if query.id == "q3" else 0)
    return search(query)

def returns(query):
    return json.loads(os.environ["RETURNS"]) if query.id == "q2" else search(query)

def nan(query):
    return [("d1", math.nan)] if query.id == "q2" else search(query)

def coroutine(query):
    return asearch(query)

def exits(query):
    if query.id == "q2":
        raise SystemExit(0)
    return search(query)

def down(query):
    raise ConnectionError("index offline")

def wanders(query):
    os.makedirs("elsewhere", exist_ok=True)
    os.chdir("elsewhere")  # the run's files are still named relative to the folder before
    if query.id == "q3" and not os.environ.get("FIXED"):
        raise RuntimeError("offline")
    return chunks(query)

def extra_stage(query):
    return {{"candidates": search(query), "context": search(query)[:2], "bonus": []}}

not_callable = 3
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    """``tmp_path`` as the current folder, with the retriever module ``search_<test>.py``."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def module(folder: Path) -> str:
    """Write the retriever module under a name of this test's own (modules are cached by
    name), and return the name."""
    name = "search_" + re.sub(r"\W", "_", folder.name)
    (folder / f"{name}.py").write_text(SEARCH)
    return name


def run(folder: Path, function: str, *args: str | Path, snapshot: Path | None = None,
        output: str = "run.jsonl", env: dict[str, str] | None = None) -> tuple[int, str, str]:
    snap = snapshot or folder / "snapshot.json"
    return gate("run", "--snapshot", snap, "--retriever", f"{module(folder)}:{function}",
                "-o", folder / output, "--commit", "none", *args, env=env)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_latency(path: Path) -> str:
    """The run file's text with each latency_ms removed (the one part that is measured)."""
    return re.sub(r', "latency_ms": [0-9.e-]+', "", path.read_text())


def test_a_retriever_that_changes_the_working_folder_moves_none_of_the_run_s_files(
        here: Path) -> None:
    world(here, "chunk")
    name = module(here)
    (here / "own.jsonl").write_text((here / "chunks.jsonl").read_text())
    command = ("run", "--snapshot", "snapshot.json", "--retriever", f"{name}:wanders", "-o",
               "run.jsonl", "--commit", "none", "--chunks", "own.jsonl")
    code, _, err = gate(*command)
    assert code == 2 and "kept in run.jsonl.journal" in err and os.getcwd() == str(here)
    code, _, err = gate(*command, "--resume", env={"FIXED": "1"})
    assert code == 0, err
    assert sorted(p.name for p in here.glob("run.*")) == ["run.jsonl", "run.jsonl.manifest.json"]
    assert not [p for p in (here / "elsewhere").rglob("*") if p.is_file()]
    assert os.getcwd() == str(here)
    assert json.loads((here / "run.jsonl.manifest.json").read_text())["chunking"]["file"] == \
        "own.jsonl"


def test_a_retriever_module_that_changes_the_working_folder_when_imported(here: Path) -> None:
    world(here)
    (here / "away").mkdir()
    (here / "wander_import.py").write_text(
        "import os\nos.chdir('away')\n" + SEARCH)
    code, _, err = gate("run", "--snapshot", "snapshot.json", "--retriever",
                        "wander_import:search", "-o", "out/run.jsonl", "--commit", "none")
    assert code == 0, err
    assert (here / "out" / "run.jsonl").exists() and not list((here / "away").iterdir())
    assert os.getcwd() == str(here)


def test_every_query_is_called_and_the_run_and_its_manifest_are_written(here: Path) -> None:
    world(here)
    code, out, err = run(here, "fields", "--system", "retriever=overlap")
    assert code == 0, err
    assert "run.jsonl: run of 5 queries on snapshot" in out
    written = lines(here / "run.jsonl")
    assert [w["query_id"] for w in written] == [q for q, _, _ in QUERIES]  # query-set order
    assert written[0]["items"] == [{"id": "d1", "score": 10.0}, {"id": "d3", "score": 9.0},
                                   {"id": "d2", "score": 8.0}]
    assert all(w["latency_ms"] >= 0 for w in written)
    manifest = json.loads((here / "run.jsonl.manifest.json").read_text())
    assert manifest["system"] == {"retriever": "overlap"}
    assert manifest["run"]["costs"] == ["latency_ms"]
    runner = manifest["provenance"]["runner"]
    assert runner["target"].endswith(":fields") and runner["failed"] == []
    assert runner["settings"] == {"batch_size": None, "concurrency": 1, "timeout": None,
                                  "retries": 0, "on_error": "fail", "shards": 1}
    assert "cores, Python" in manifest["provenance"]["timed_on"]
    assert not (here / "run.jsonl.journal").exists()
    assert gate("validate", here / "snapshot.json", here / "run.jsonl")[0] == 0


def test_check_of_the_produced_run_agrees_with_a_hand_written_one(here: Path) -> None:
    """The same rankings written by hand and by gate run: the same verdict and numbers."""
    world(here)
    base = {"q1": ["d2", "d1"], "q2": ["d1", "d2"], "u1": [], "q3": ["d3"], "q4": ["d6", "d4"]}
    for name, ranking in (("base.jsonl", base), ("hand.jsonl", RANKED)):
        (here / name).write_text("".join(json.dumps({"query_id": q, "items": [
            {"id": d, "score": 10.0 - i} for i, d in enumerate(ranking[q])]}) + "\n"
            for q, _, _ in QUERIES))
        assert gate("run-manifest", "--snapshot", here / "snapshot.json", "--run",
                    here / name, "--commit", "none")[0] == 0
    assert run(here, "search")[0] == 0
    reports = [retrieval_gate.check(here / name, baseline=here / "base.jsonl",
                                    snapshot=here / "snapshot.json", config=False,
                                    gates=("Recall@3=0.1", "RR@3=0.1"))
               for name in ("run.jsonl", "hand.jsonl")]
    assert reports[0].verdict == reports[1].verdict
    assert [(c.measure, c.candidate_mean, c.baseline_mean) for c in reports[0].comparisons] \
        == [(c.measure, c.candidate_mean, c.baseline_mean) for c in reports[1].comparisons]


def test_hits_without_scores_keep_their_order_with_score_one_over_rank(here: Path) -> None:
    world(here)
    assert run(here, "ids_only")[0] == 0
    assert lines(here / "run.jsonl")[0]["items"] == [
        {"id": "d1", "score": 1.0}, {"id": "d3", "score": 0.5}, {"id": "d2", "score": 1 / 3}]


def test_the_run_is_the_same_for_every_concurrency_and_kind_of_target(here: Path) -> None:
    world(here)
    texts = []
    for function, options in (("slow", ()), ("slow", ("--concurrency", "4")),
                              ("slow", ("--concurrency", "3", "--timeout", "30")),
                              ("slow", ("--concurrency", "2", "--retries", "1"))):
        assert run(here, function, *options)[0] == 0
        texts.append(without_latency(here / "run.jsonl"))
    assert len(set(texts)) == 1
    assert '"tokens": 7' in texts[0]
    plain = []
    for function, options in (("search", ()), ("asearch", ()),
                              ("asearch", ("--concurrency", "5", "--timeout", "30")),
                              ("batch", ("--batch-size", "2")),
                              ("batch", ("--batch-size", "3", "--concurrency", "2"))):
        code, _, err = run(here, function, *options)
        assert code == 0, err
        plain.append(without_latency(here / "run.jsonl"))
    assert len(set(plain)) == 1


def test_a_batch_records_its_call_s_latency_for_each_of_its_queries(here: Path) -> None:
    world(here)
    assert run(here, "batch", "--batch-size", "2")[0] == 0
    latencies = [w["latency_ms"] for w in lines(here / "run.jsonl")]
    assert latencies[0] == latencies[1] and latencies[2] == latencies[3]
    runner = json.loads((here / "run.jsonl.manifest.json").read_text())["provenance"]["runner"]
    assert runner["latency"] == "batch" and runner["settings"]["batch_size"] == 2


@pytest.mark.parametrize(("returned", "said"), [
    ("null", "returned None: that is not a ranking"),
    ('[["d1", 1.0], ["d1", 0.5]]', "returned [['d1', 1.0], ['d1', 0.5]]: id 'd1' twice"),
    ('[["d1", 1.0], ["d2", 2.0]]', "hit 2 scores 2.0, above hit 1's 1.0"),
    ('[["d1", 1.0], "d2"]', "hit 2 has no score and hit 1 has"),
    ('[["nope", 1.0]]', "hit 1 names document 'nope', which is not in the snapshot's corpus"),
    ('[[7, 1.0]]', "hit 1's id is not a non-empty string"),
    ('[["d1", "high"]]', "hit 1's score is not a number"),
    ('[["d1", 1.0, 2]]', "hit 1 has 3 values, not (id, score)"),
    ('[{"score": 1.0}]', "hit 1's id is not a non-empty string"),
    ('[{"id": "d1", "start": 3, "end": 2, "doc_id": "d1"}]', "hit 1 ends at 2, not after its start 3"),
    ('[["\\u001b[31md9\\nerror: fake", 1.0]]', "which is not in the snapshot's corpus"),
    ('{"bad name!": []}', "stage name 'bad name!' is not a name"),
    ('[{"id": "d1", "doc_id": "d1", "start": 0, "end": 999}]', "past the 27 characters"),
])
def test_a_result_that_is_not_a_valid_ranking_is_refused_naming_the_query(
        here: Path, returned: str, said: str) -> None:
    world(here)
    code, _out, err = run(here, "returns", env={"RETURNS": returned})
    assert code == 2, err
    assert err.startswith("error: search_") and ":returns: query 'q2' returned " in err
    assert said in err
    assert len(err.strip().splitlines()) == 1 and "\x1b" not in err  # one line, escaped
    assert not (here / "run.jsonl").exists()
    assert not (here / "run.jsonl.manifest.json").exists()
    assert "1 answered query is kept in" in err and "--resume" in err  # q1 came first


def test_non_finite_scores_and_coroutines_from_a_sync_function_are_refused(here: Path) -> None:
    world(here)
    code, _, err = run(here, "nan")
    assert code == 2 and "query 'q2' returned [('d1', nan)]: hit 1 has score nan" in err
    code, _, err = run(here, "coroutine")
    assert code == 2 and "query 'q1' returned an awaitable" in err
    assert not (here / "run.jsonl").exists()
    # the first query refused: nothing to resume from, so no journal is left behind either
    assert "kept in" not in err and not (here / "run.jsonl.journal").exists()


def test_a_batch_that_returns_another_number_of_rankings_is_refused(here: Path) -> None:
    world(here)
    (here / "wrong_batch.py").write_text("def f(queries):\n    return [[]] * (len(queries) + 1)\n")
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        "wrong_batch:f", "--batch-size", "2", "-o", here / "run.jsonl")
    assert code == 2
    assert "the batch of 2 queries from query 'q1' returned 3 rankings" in err


@pytest.mark.parametrize(("target", "said"), [
    ("nomodule", "'nomodule' is not module:function"),
    ("no_such_module_here:f", ("cannot import module 'no_such_module_here' "
                              "(ModuleNotFoundError: No module named")),
    ("MODULE:missing", "has no 'missing'"),
    ("MODULE:not_callable", "is a int, not a function"),
])
def test_a_target_that_cannot_be_loaded_is_refused(here: Path, target: str, said: str) -> None:
    world(here)
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        target.replace("MODULE", module(here)), "-o", here / "run.jsonl")
    assert code == 2 and err.startswith("error: --retriever: ") and said in err, err
    assert not (here / "run.jsonl").exists() and not (here / "run.jsonl.journal").exists()


def test_a_failed_call_stops_the_run_naming_the_query_and_the_error(here: Path) -> None:
    world(here)
    code, _, err = run(here, "flaky")
    assert code == 2
    assert ":flaky: query 'q2' failed: ConnectionError: refused — fix the retriever" in err
    assert "second line" not in err and not (here / "run.jsonl").exists()
    (here / "calls.log").unlink()
    code, _, err = run(here, "flaky", "--retries", "2")
    assert code == 2 and "query 'q2' failed 3 times: ConnectionError: refused" in err
    (here / "calls.log").unlink()
    code, _, err = run(here, "flaky", "--retries", "3")
    assert code == 0, err
    assert (here / "calls.log").read_text().split().count("q2") == 4


def test_a_call_that_overruns_its_timeout_has_failed(here: Path) -> None:
    world(here)
    started = time.monotonic()
    code, _, err = run(here, "sleepy", "--timeout", "0.3")
    assert code == 2 and "query 'q3' failed: timed out: no answer within 0.3 s" in err
    assert time.monotonic() - started < 4


def test_recorded_failures_follow_the_snapshot_s_missing_policy(here: Path) -> None:
    """On a snapshot that scores a missing query 0, failed queries are left out of the run and
    listed in the manifest, and gate check names them; where missing queries are an error,
    gate run refuses to write a run gate check would refuse."""
    world(here / "zero", missing="zero")
    code, out, err = run(here, "broken", "--on-error", "record",
                         snapshot=here / "zero" / "snapshot.json")
    assert code == 0, err
    assert "2 queries failed, left out of the run (first: q2: RuntimeError: index offline)" \
        in out
    assert [w["query_id"] for w in lines(here / "run.jsonl")] == ["q1", "q3", "q4"]
    runner = json.loads((here / "run.jsonl.manifest.json").read_text())["provenance"]["runner"]
    assert runner["failed"] == [{"query_id": "q2", "error": "RuntimeError: index offline"},
                                {"query_id": "u1", "error": "RuntimeError: index offline"}]
    assert run(here, "search", output="base.jsonl",
               snapshot=here / "zero" / "snapshot.json")[0] == 0
    code, out, err = gate("check", "--snapshot", here / "zero" / "snapshot.json", "--baseline",
                          here / "base.jsonl", "--candidate", here / "run.jsonl",
                          "--no-config", "--gate", "Recall@3=0.1")
    assert "candidate: 2 queries failed when the run was made ('q2', 'u1'; first: " \
           "RuntimeError: index offline) and are scored as missing (missing: zero)" in out

    world(here / "strict")
    code, _, err = run(here, "broken", "--on-error", "record", output="strict.jsonl",
                       snapshot=here / "strict" / "snapshot.json")
    assert code == 2
    assert "query 'q2' failed (RuntimeError: index offline); 2 of 5 queries failed, and the " \
           "snapshot's missing policy is error" in err
    assert not (here / "strict.jsonl").exists()


def test_check_refuses_a_run_whose_failed_queries_the_policy_does_not_score(
        here: Path) -> None:
    """A failed unanswerable query is absent from the run; were it not refused, it would
    read as a query that returned nothing — a perfect abstention."""
    world(here)
    assert run(here, "search", output="base.jsonl")[0] == 0
    assert run(here, "search")[0] == 0
    kept = [line for line in (here / "run.jsonl").read_text().splitlines()
            if '"u1"' not in line]
    (here / "run.jsonl").write_text("\n".join(kept) + "\n")
    manifest = json.loads((here / "run.jsonl.manifest.json").read_text())
    import hashlib

    manifest["run"]["sha256"] = hashlib.sha256((here / "run.jsonl").read_bytes()).hexdigest()
    manifest["provenance"]["runner"]["failed"] = [{"query_id": "u1", "error": "E: down"}]
    (here / "run.jsonl.manifest.json").write_text(json.dumps(manifest))
    code, _, err = gate("check", "--snapshot", here / "snapshot.json", "--baseline",
                        here / "base.jsonl", "--candidate", here / "run.jsonl", "--no-config",
                        "--gate", "Recall@3=0.1")
    assert code == 2
    assert "query 'u1' failed when the candidate was run (E: down): 1 failed ('u1'), and " \
           "the snapshot's missing policy is error" in err
    code, _, err = gate("validate", here / "snapshot.json", here / "run.jsonl")
    assert code == 2 and "query 'u1' failed when the run was run" in err


def test_the_manifest_names_the_tokenizer_only_when_it_counted(here: Path) -> None:
    world(here)
    name = module(here)
    code, _, err = run(here, "with_text", "--tokenizer", f"{name}:words")
    assert code == 0, err
    assert [i["tokens"] for i in lines(here / "run.jsonl")[0]["items"]] == [
        len(DOCS[d].split()) for d in RANKED["q1"]]
    runner = json.loads((here / "run.jsonl.manifest.json").read_text())["provenance"]["runner"]
    assert runner["tokenizer"] == f"{name}:words" and "counted no hit" not in err
    code, _, err = run(here, "slow", "--tokenizer", f"{name}:words")  # counts, but no text
    assert code == 0, err
    assert {i["tokens"] for i in lines(here / "run.jsonl")[0]["items"]} == {7}  # its own
    runner = json.loads((here / "run.jsonl.manifest.json").read_text())["provenance"]["runner"]
    assert "tokenizer" not in runner
    assert f"note: --tokenizer {name}:words counted no hit: none carried text" in err


def test_trec_output_has_no_costs_and_says_so(here: Path) -> None:
    world(here)
    code, _out, err = run(here, "search", output="run.trec")
    assert code == 0
    assert "note: the run is TREC, which holds no costs" in err
    assert (here / "run.trec").read_text().splitlines()[0] == "q1 Q0 d1 1 10.0 gate-run"
    manifest = json.loads((here / "run.trec.manifest.json").read_text())
    assert manifest["run"]["costs"] == [] and "timed_on" not in manifest["provenance"]
    code, _, err = run(here, "chunks", output="chunks.trec")
    assert code == 2 and "returned hits with a doc_id or a place, which TREC cannot hold" in err


def test_named_stages_are_written_as_a_pipeline_run_timed_on_the_last(here: Path) -> None:
    world(here, stages=("candidates", "context"))
    code, _, err = run(here, "staged")
    assert code == 0, err
    assert lines(here / "run.candidates.jsonl")[0] == {
        "query_id": "q1", "items": [{"id": "d1", "score": 10.0}, {"id": "d3", "score": 9.0},
                                    {"id": "d2", "score": 8.0}]}
    assert "latency_ms" in lines(here / "run.jsonl")[0]
    manifest = json.loads((here / "run.jsonl.manifest.json").read_text())
    assert [(s["name"], s["file"], s.get("costs")) for s in manifest["stages"]] == [
        ("candidates", "run.candidates.jsonl", []), ("context", "run.jsonl", ["latency_ms"])]
    assert run(here, "staged", output="base.jsonl")[0] == 0
    code, out, _ = gate("check", "--snapshot", here / "snapshot.json", "--baseline",
                        here / "base.jsonl", "--candidate", here / "run.jsonl", "--no-config",
                        "--gate", "Recall@3=0.1")
    assert code == 0 and "Evidence funnel" in out
    code, _, err = run(here, "search")
    assert code == 2 and "query 'q1' returned one ranking, and the snapshot's pipeline has " \
        'stages candidates, context — return a dict of the stages\' rankings, in pipeline ' \
        'order: {"candidates": [...], "context": [...]}' in err


@pytest.mark.parametrize("unit", ["document", "chunk", "span"])
def test_ids_are_read_by_the_snapshot_s_evidence_unit(here: Path, unit: str) -> None:
    world(here, unit)
    good = {"document": "search", "chunk": "chunks", "span": "spans"}[unit]
    options = ("--chunking-version", "v1") if unit == "chunk" else ()
    code, _, err = run(here, good, *options)
    assert code == 0, err
    assert gate("validate", here / "snapshot.json", here / "run.jsonl")[0] == 0
    wrong = {"document": "spans", "chunk": "search", "span": "search"}[unit]
    code, _, err = run(here, wrong, *options)
    said = {"document": "hit 1's id is not a non-empty string",  # only a span's is implied
            "chunk": "hit 1, 'd1', is not a chunk of the snapshot's chunk table",
            "span": "hit 1 has no place: the snapshot judges spans"}[unit]
    assert code == 2 and "query 'q1' returned" in err and said in err


def test_a_chunk_snapshot_needs_the_run_s_chunking_before_any_call(here: Path) -> None:
    world(here, "chunk")
    code, _, err = run(here, "log")
    assert code == 2 and "--chunking-version: is needed" in err
    assert not (here / "calls.log").exists()


def test_resume_after_sigkill_calls_only_the_unanswered_queries(here: Path) -> None:
    world(here)
    name = module(here)
    command = [sys.executable, "-m", "retrieval_gate", "run", "--snapshot", "snapshot.json",
               "--retriever", f"{name}:log", "-o", "run.jsonl", "--commit", "none"]
    env = {**os.environ, "SEARCH_SLEEP": "0.4", "PYTHONPATH": str(ROOT / "src")}
    process = subprocess.Popen(command, cwd=here, env=env)
    journal = here / "run.jsonl.journal"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
            not journal.exists() or len(journal.read_text().splitlines()) < 3):
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    answered = len(journal.read_text().splitlines()) - 1
    assert 2 <= answered < len(QUERIES)
    assert not (here / "run.jsonl").exists()
    (here / "calls.log").unlink()
    done = subprocess.run([*command, "--resume"], cwd=here, env={**env, "SEARCH_SLEEP": "0"},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert len((here / "calls.log").read_text().split()) == len(QUERIES) - answered
    assert not journal.exists()
    resumed = without_latency(here / "run.jsonl")
    assert gate("run", "--snapshot", here / "snapshot.json", "--retriever", f"{name}:log",
                "-o", here / "whole.jsonl", "--commit", "none")[0] == 0
    assert resumed == without_latency(here / "whole.jsonl")


def stalled(here: Path, command: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """``command`` started, once its target has answered every query before q4 and stalls on
    q4, with every answer in the journal: its block reaches the file within 0.2 s, however long
    the next call takes."""
    process = subprocess.Popen(command, cwd=here, env={**env, "STALL": "q4"},
                               stderr=subprocess.PIPE, text=True)
    journal, log = here / "run.jsonl.journal", here / "calls.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (
            log.exists() and "q4" in log.read_text().split() and journal.exists()
            and len(journal.read_text().splitlines()) == 1 + 4):
        time.sleep(0.02)
    assert "q4" in log.read_text().split(), "the target never stalled"
    return process


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_run_stopped_while_a_call_stalls_keeps_every_answer_before_it(
        here: Path, stop: signal.Signals) -> None:
    """Killed (SIGKILL, SIGTERM: no cleanup) or interrupted (Ctrl-C: the last block written)
    while the target stalls: the journal holds the four answers before, and --resume calls
    only the stalled query; the run is the one an uninterrupted run writes."""
    world(here)
    name = module(here)
    command = [*INTERRUPTIBLE, "run", "--snapshot", "snapshot.json", "--retriever",
               f"{name}:stalls", "-o", "run.jsonl", "--commit", "none"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    process = stalled(here, command, env)
    process.send_signal(stop)
    _, err = process.communicate(timeout=60)
    assert process.returncode == (130 if stop == signal.SIGINT else -stop)
    assert err == ("error: interrupted — 4 answered queries are kept in run.jsonl.journal: "
                   "the same command with --resume calls only the others\n"
                   if stop == signal.SIGINT else "")
    journal = here / "run.jsonl.journal"
    assert [json.loads(line)["query_id"] for line in journal.read_text().splitlines()[1:]] \
        == ["q1", "q2", "u1", "q3"]
    assert not (here / "run.jsonl").exists()
    assert not [p for p in here.iterdir() if p.name.endswith(".tmp")]
    (here / "calls.log").unlink()
    done = subprocess.run([*command, "--resume"], cwd=here, env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (here / "calls.log").read_text().split() == ["q4"]
    assert not journal.exists()
    resumed = without_latency(here / "run.jsonl")
    assert run(here, "search", output="whole.jsonl")[0] == 0
    assert resumed == without_latency(here / "whole.jsonl")


def test_a_document_snapshot_s_run_gives_every_item_a_doc_id_when_one_has_one(
        here: Path) -> None:
    """One query's hits carry doc_id: the file is written again, every item of every query
    with a doc_id, its own id where it gave none (the run formats' all-or-none rule)."""
    world(here)
    code, _, err = run(here, "doc_once")
    assert code == 0, err
    written = lines(here / "run.jsonl")
    assert written[0]["items"][0] == {"id": "d1", "score": 10.0, "doc_id": "d1"}
    assert written[1]["items"] == [{"id": "d2", "score": 1.0, "doc_id": "d2"}]
    assert all("doc_id" in item for line in written for item in line["items"])
    assert gate("validate", here / "snapshot.json", here / "run.jsonl")[0] == 0
    assert not [p for p in here.iterdir() if p.name.endswith(".tmp")]


def test_a_journal_of_another_target_or_snapshot_is_refused(here: Path) -> None:
    world(here)
    code, _, _ = run(here, "returns", env={"RETURNS": "null"})
    assert code == 2 and (here / "run.jsonl.journal").exists()
    code, _, err = run(here, "search", "--resume")
    assert code == 2
    assert "run.jsonl.journal: the journal belongs to another run: target " in err
    assert ":returns (this run: " in err
    world(here / "other", missing="zero")
    code, _, err = run(here, "returns", "--resume", env={"RETURNS": "[]"},
                       snapshot=here / "other" / "snapshot.json")
    assert code == 2 and "the journal belongs to another run: snapshot sha256:" in err
    code, out, err = run(here, "returns", "--resume", env={"RETURNS": "[]"})
    assert code == 0, err  # the same run resumes: q1 came from the journal
    assert "(4 queries called in" in out


def test_a_journal_is_bound_to_the_code_and_the_settings_that_change_answers(
        here: Path) -> None:
    """--resume refuses a journal when the target's source file changed since (the hash of
    its bytes), or the batch size (what a latency is) — not when only the concurrency or the
    retries changed; the manifest records the hash, computed here independently."""
    world(here)
    name = module(here)
    source = here / f"{name}.py"
    again = ["run", "--snapshot", here / "snapshot.json", "--retriever", f"{name}:returns",
             "-o", here / "run.jsonl", "--commit", "none", "--resume"]
    assert run(here, "returns", env={"RETURNS": "null"})[0] == 2
    source.write_text(SEARCH + "# edited\n")
    code, _, err = gate(*again, env={"RETURNS": "[]"})
    assert code == 2 and "the journal belongs to another run: code sha256:" in err
    source.write_text(SEARCH)
    code, _, err = gate(*again, "--batch-size", "2", env={"RETURNS": "[]"})
    assert code == 2 and "batch_size None (this run: 2)" in err
    code, out, err = gate(*again, "--concurrency", "2", "--retries", "1", env={"RETURNS": "[]"})
    assert code == 0, err
    assert "(4 queries called in" in out  # q1 came from the journal
    runner = json.loads((here / "run.jsonl.manifest.json").read_text())["provenance"]["runner"]
    assert runner["code"] == "sha256:" + hashlib.sha256(SEARCH.encode()).hexdigest()
    assert runner["settings"]["concurrency"] == 2


def test_the_output_s_missing_folders_are_created(here: Path) -> None:
    world(here)
    code, _, err = run(here, "search", output="runs/pr/run.jsonl")
    assert code == 0, err
    assert len(lines(here / "runs" / "pr" / "run.jsonl")) == len(QUERIES)
    assert (here / "runs" / "pr" / "run.jsonl.manifest.json").is_file()
    (here / "taken").write_text("a file where a folder must be\n")
    code, _, err = run(here, "search", output="taken/run.jsonl")
    assert code == 74 and "taken: cannot create this folder (a file is in its place)" in err


def test_a_retriever_that_calls_sys_exit_fails_its_query_not_the_run(here: Path) -> None:
    """sys.exit() inside a retriever is its call's failure: exit 2 naming the query under
    --on-error fail, a recorded failure under record — never gate run's own exit code."""
    world(here, missing="zero")
    code, _, err = run(here, "exits")
    assert code == 2 and "query 'q2' failed: SystemExit: 0" in err
    code, _, err = run(here, "exits", "--on-error", "record", "--timeout", "5")
    assert code == 0, err
    runner = json.loads((here / "run.jsonl.manifest.json").read_text())["provenance"]["runner"]
    assert runner["failed"] == [{"query_id": "q2", "error": "SystemExit: 0"}]


def test_named_stages_that_are_not_the_pipeline_are_refused_at_the_query(here: Path) -> None:
    """A pipeline snapshot: a retriever returning a stage the pipeline does not have is
    refused at the first query, before anything is journaled."""
    world(here, stages=("candidates", "context"))
    code, _, err = run(here, "extra_stage")
    assert code == 2 and ("query 'q1' returned the stages 'candidates', 'context', 'bonus', "
                          "and the snapshot's pipeline has stages candidates, context") in err
    assert not (here / "run.jsonl").exists() and not (here / "run.jsonl.journal").exists()
    code, _, err = run(here, "search")
    assert code == 2 and "query 'q1' returned one ranking, and the snapshot's pipeline" in err


@pytest.mark.parametrize("output", ["-", "queries.jsonl", "snapshot.json", "/dev/stdout"])
def test_an_output_that_is_not_a_file_of_the_run_s_own_is_refused(here: Path,
                                                                     output: str) -> None:
    world(here)
    pinned = {p: p.read_bytes() for p in here.iterdir() if p.is_file()}
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        f"{module(here)}:search", "-o", output, "--commit", "none")
    assert code == 2 and err.startswith("error: --output: "), err
    assert {p: p.read_bytes() for p in pinned} == pinned
    assert not Path(f"{output}.manifest.json").exists() and not Path(f"{output}.journal").exists()


@pytest.mark.parametrize(("args", "said"), [
    (("--created", "yesterday"), "--created: 'yesterday' is not a UTC time"),
    (("--chunks", "no-such-table.jsonl"), "no-such-table.jsonl: file not found"),
])
def test_what_the_manifest_needs_is_checked_before_the_first_call(here: Path, args, said
                                                                  ) -> None:
    world(here)
    code, _, err = run(here, "log", *args)
    assert code == 2 and said in err
    assert not (here / "calls.log").exists() and not (here / "run.jsonl.journal").exists()


def test_no_commit_to_record_is_refused_before_the_first_call(here: Path) -> None:
    """Outside a git repository, without GITHUB_SHA and --commit: refused at once, not after
    every query was called."""
    world(here)
    env = {"GITHUB_SHA": "", "GIT_DIR": str(here / "no-repository")}
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        f"{module(here)}:log", "-o", here / "run.jsonl", env=env)
    assert code == 2 and "--commit: no source commit found" in err
    assert not (here / "calls.log").exists() and not (here / "run.jsonl.journal").exists()


def test_a_tampered_journal_or_shard_is_refused_not_a_bug(here: Path) -> None:
    """A NaN written into a journal's record (gate run never writes one) and a shard holding
    a query twice: exit 2 naming the file and line, not exit 70."""
    world(here)
    assert run(here, "returns", env={"RETURNS": "null"})[0] == 2  # q1 journaled
    journal = here / "run.jsonl.journal"
    lines_ = journal.read_text().splitlines()
    journal.write_text("\n".join([lines_[0], lines_[1].replace("10.0", "NaN", 1)]) + "\n")
    code, _, err = run(here, "returns", "--resume", env={"RETURNS": "[]"})
    assert code == 2 and "run.jsonl.journal:2: line 2 is not JSON written by gate run" in err
    for i in (1, 2):
        assert run(here, "search", "--shard", f"{i}/2", output=f"shard{i}.jsonl")[0] == 0
    shard = here / "shard1.jsonl"
    shard.write_text(shard.read_text() + shard.read_text().splitlines()[1] + "\n")
    code, _, err = gate("run", "merge", shard, here / "shard2.jsonl", "--snapshot",
                        here / "snapshot.json", "-o", here / "merged.jsonl", "--commit", "none")
    assert code == 2 and "holds query 'q1' again" in err
    assert not (here / "merged.jsonl").exists()


def test_a_run_whose_every_query_failed_says_so(here: Path) -> None:
    world(here, missing="zero")
    code, _, err = run(here, "down", "--on-error", "record")
    assert code == 2 and ("every query failed (5; the first, 'q1': ConnectionError: index "
                          "offline): there is no run to write") in err
    assert not (here / "run.jsonl").exists()


def test_id_key_with_chained_stages_is_refused(here: Path) -> None:
    world(here, stages=("candidates", "context"))
    name = module(here)
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--stage",
                        f"candidates={name}:search", "--stage", f"context={name}:search",
                        "--id-key", "chunk_id", "-o", here / "run.jsonl", "--commit", "none")
    assert code == 2 and "--id-key: applies to --retriever only" in err


def test_shards_of_different_code_are_not_merged(here: Path) -> None:
    world(here)
    name = module(here)
    for i, text in ((1, SEARCH), (2, SEARCH + "# edited\n")):
        (here / f"{name}.py").write_text(text)
        assert gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                    f"{name}:search", "--shard", f"{i}/2", "-o", here / f"shard{i}.jsonl",
                    "--commit", "none")[0] == 0
    code, _, err = gate("run", "merge", here / "shard1.jsonl", here / "shard2.jsonl",
                        "--snapshot", here / "snapshot.json", "-o", here / "run.jsonl",
                        "--commit", "none")
    assert code == 2 and "shard2.jsonl: differs from " in err and "in its code — " in err
    assert not (here / "run.jsonl").exists()


def test_shards_merge_into_the_run_of_every_query(here: Path) -> None:
    world(here)
    for i in (1, 2, 3):
        code, out, err = run(here, "search", "--shard", f"{i}/3", output=f"shard{i}.jsonl")
        assert code == 0, err
        assert "merge the shards with gate run merge" in out
    header, *records = lines(here / "shard2.jsonl")
    assert header["shard"] == "2/3" and [r["query_id"] for r in records] == ["q2", "q4"]
    shards = [here / f"shard{i}.jsonl" for i in (3, 1, 2)]
    code, out, err = gate("run", "merge", *shards, "--snapshot", here / "snapshot.json",
                          "-o", here / "merged.jsonl", "--commit", "none")
    assert code == 0, err
    assert run(here, "search")[0] == 0
    assert without_latency(here / "merged.jsonl") == without_latency(here / "run.jsonl")
    runner = json.loads((here / "merged.jsonl.manifest.json").read_text())["provenance"]["runner"]
    assert runner["settings"]["shards"] == 3

    def merge(*given: Path) -> str:
        code, _, err = gate("run", "merge", *given, "--snapshot", here / "snapshot.json",
                            "-o", here / "bad.jsonl", "--commit", "none")
        assert code == 2 and not (here / "bad.jsonl").exists()
        return err

    assert "shard 3/3 is missing" in merge(*shards[1:])
    assert "is shard 1/3, as" in merge(*shards, here / "shard1.jsonl")
    assert run(here, "ids_only", "--shard", "3/3", output="other3.jsonl")[0] == 0
    assert "differs from" in merge(here / "other3.jsonl", *shards[1:])
    assert "is not a shard file" in merge(here / "run.jsonl")
    code, _, err = run(here, "search", "--shard", "4/3")
    assert code == 2 and "'4/3' is not I/N with 1 ≤ I ≤ N" in err


def test_a_shard_file_that_lacks_or_holds_another_query_is_refused(here: Path) -> None:
    world(here)
    for i in (1, 2):
        assert run(here, "search", "--shard", f"{i}/2", output=f"shard{i}.jsonl")[0] == 0
    header, *records = (here / "shard1.jsonl").read_text().splitlines(keepends=True)
    alien = json.loads(records[0]) | {"query_id": "zz"}
    for name, text, said in (
            ("lacks.jsonl", header + "".join(records[1:]),
             "lacks query 'q1' of shard 1/2 (1 missing, 0 not its own)"),
            ("holds.jsonl", header + "".join(records) + json.dumps(alien) + "\n",
             "holds query 'zz', which is not in shard 1/2 (0 missing, 1 not its own)")):
        (here / name).write_text(text)
        code, _, err = gate("run", "merge", here / name, here / "shard2.jsonl", "--snapshot",
                            here / "snapshot.json", "-o", here / "merged.jsonl")
        assert code == 2 and said in err, err
    assert not (here / "merged.jsonl").exists()


def test_progress_is_shown_only_when_asked_off_a_terminal(here: Path) -> None:
    world(here)
    code, out, err = run(here, "search")
    assert code == 0 and "gate run:" not in err and len(out.splitlines()) == 1
    code, _, err = run(here, "search", "--progress")
    assert code == 0 and "gate run: 5/5 queries" in err and "0 failed" in err


def test_the_library_runs_a_function_and_returns_the_run(here: Path) -> None:
    world(here)
    seen = []

    def search(query):
        seen.append(query.id)
        return [(d, 1.0 - i / 10) for i, d in enumerate(RANKED[query.id])]

    path = retrieval_gate.run(search, snapshot=here / "snapshot.json",
                              output=here / "lib.jsonl", commit="none", concurrency=2)
    assert path == here / "lib.jsonl" and sorted(seen) == sorted(q for q, _, _ in QUERIES)
    manifest = json.loads((here / "lib.jsonl.manifest.json").read_text())
    assert manifest["provenance"]["runner"]["target"].endswith(
        ":test_the_library_runs_a_function_and_returns_the_run.<locals>.search")
    report = retrieval_gate.check(path, baseline=path, snapshot=here / "snapshot.json",
                                  config=False, gates="Recall@3=0.1")
    assert report.exit_code == 0
    with pytest.raises(retrieval_gate.InputError, match="--concurrency: 0 is not"):
        retrieval_gate.run(search, snapshot=here / "snapshot.json", output=here / "x.jsonl",
                           concurrency=0)


def test_the_package_that_defines_the_target_is_recorded(here: Path) -> None:
    """A target from an installed distribution records it and its version."""
    world(here)
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        "click:echo", "-o", here / "run.jsonl", "--commit", "none")
    assert code == 2  # click.echo returns None: not a ranking
    assert "query 'q1' returned None" in err
    from retrieval_gate.runner.target import package_of

    assert package_of("click.core")[0] == "click"
    assert package_of(module(here)) is None
    # a package installed under another distribution's name: found through the map
    from importlib import metadata

    import pytrec_eval  # noqa: F401 — loaded, as a target's module is
    name, version = package_of("pytrec_eval")
    assert (name.replace("_", "-"), version) == ("pytrec-eval-terrier",
                                                 metadata.version("pytrec-eval-terrier"))


def test_gate_run_s_help_lists_merge() -> None:
    code, out, _ = gate("run", "--help")
    assert code == 0 and "merge" in out and "--retriever" in out
