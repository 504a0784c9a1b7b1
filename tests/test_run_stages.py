"""``gate run --stage NAME=TARGET``: chained stages, each called and timed on its own; token
counts by the pipeline's tokenizer; latencies a batch function reports. Every test runs the
command line (or the library) on a snapshot frozen in ``tmp_path`` with a stage module written
there, as a user's would be."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

import retrieval_gate
from tests.conftest import ROOT, gate
from tests.test_run import DOCS, QUERIES, RANKED, lines, without_latency, world

STAGES = f"""
import asyncio, json, os, time
RANKED = {RANKED!r}
DOCS = {DOCS!r}

def _sleep(stage):
    time.sleep(float(os.environ.get("SLEEP_" + stage.upper(), "0")))

def _log(stage, query, hits=None):
    with open("stages.log", "a") as f:
        f.write(json.dumps({{"stage": stage, "query": query.id, "hits": hits}}) + "\\n")

def candidates(query):
    _sleep("candidates")
    _log("candidates", query)
    query.tags.append("changed")  # each stage has its own copy of the query
    return [{{"id": d, "score": 10.0 - i, "text": DOCS[d]}} for i, d in enumerate(RANKED[query.id])]

def pairs(query):
    return [(d, 10.0 - i) for i, d in enumerate(RANKED[query.id])]

def text_once(query):
    return candidates(query) if query.id == "q2" else pairs(query)

def context(query, hits):
    _sleep("context")
    _log("context", query, hits)
    assert query.tags == ["t"]
    return hits[:2]

def counted(query, hits):
    return [dict(h, tokens=len(h["text"].split())) for h in hits]

def miscounted(query, hits):
    return [dict(h, tokens=99) for h in hits]

def packed(query, hits):
    # packs the hits in rank order into 3 tokens, by the counts it is given
    kept, spent = [], 0
    for hit in hits:
        if spent + hit["tokens"] > 3:
            break
        kept.append(hit)
        spent += hit["tokens"]
    return kept

def batch(queries):
    return [{{"hits": [(d, 1.0 / (i + 1)) for i, d in enumerate(RANKED[q.id])],
             "latency_ms": 10.0 + len(q.id) + i}} for i, q in enumerate(queries)]

def batch_some(queries):
    return [{{"hits": RANKED[q.id], "latency_ms": 1.0}} if q.id != "q3" else RANKED[q.id]
            for q in queries]

def batch_staged(queries):
    return [{{"hits": {{"candidates": RANKED[q.id], "context": RANKED[q.id][:1]}},
             "latency_ms": 2.5}} for q in queries]

def plain_batch(queries):
    return [RANKED[q.id] for q in queries]

def returns(query):
    return json.loads(os.environ["RETURNS"])

def returns_batch(queries):
    return [json.loads(os.environ["RETURNS"]) for q in queries]

def flaky(query, hits):
    _log("flaky", query)
    if query.id == "q2" and os.environ.get("FLAKY") == "always":
        raise RuntimeError("reranker offline")
    calls = [json.loads(line) for line in open("stages.log")]
    if query.id == "q2" and sum(c["stage"] == "flaky" and c["query"] == "q2"
                                for c in calls) < 3:
        raise ConnectionError("reranker busy")
    return hits

def bad(query, hits):
    _log("bad", query)
    return [("nope", 1.0)] if query.id == "q2" and os.environ.get("BAD") != "no" else hits

def later(query, hits):
    _log("later", query)
    return hits

async def acandidates(query):
    await asyncio.sleep(0.001 * (len(query.id) % 3))
    return candidates(query)

async def acontext(query, hits):
    return context(query, hits)

def unit_hits(query):
    unit = os.environ["UNIT"]
    ranked = enumerate(RANKED[query.id])
    if unit == "chunk":
        return [{{"id": d + "#0", "doc_id": d, "score": 5.0 - i}} for i, d in ranked]
    return [{{"doc_id": d, "start": 0, "end": 4, "score": 5.0 - i}} for i, d in ranked]

def first_only(query, hits):
    _log("first_only", query, hits)
    return hits[:1]

def words(text):
    return text.split()

def word_count(text):
    return len(text.split())

def not_a_count(text):
    return "many"

def failing(text):
    raise ValueError("no vocabulary")

async def async_words(text):
    return text.split()
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    """``tmp_path`` as the current folder, holding a snapshot with the pipeline candidates →
    context."""
    monkeypatch.chdir(tmp_path)
    world(tmp_path, stages=("candidates", "context"))
    return tmp_path


def module(folder: Path) -> str:
    """Write the stage module under a name of this test's own (modules are cached by name)."""
    name = "stages_" + re.sub(r"\W", "_", folder.name)
    (folder / f"{name}.py").write_text(STAGES)
    return name


def chain(folder: Path, *stages: str, args: tuple[str | Path, ...] = (),
          output: str = "run.jsonl", env: dict[str, str] | None = None
          ) -> tuple[int, str, str]:
    """``gate run`` with ``--stage NAME=MODULE:FUNCTION`` for each ``NAME=FUNCTION``."""
    name = module(folder)
    given = [a for s in stages for a in ("--stage", s.replace("=", f"={name}:", 1))]
    return gate("run", "--snapshot", folder / "snapshot.json", *given, "-o", folder / output,
                "--commit", "none", *args, env=env)


def logged(folder: Path) -> list[dict]:
    path = folder / "stages.log"
    return lines(path) if path.exists() else []


def manifest(path: Path) -> dict:
    return json.loads(path.with_name(path.name + ".manifest.json").read_text())


def test_each_stage_is_timed_on_its_own_and_gets_the_previous_stage_s_hits(here: Path) -> None:
    code, out, err = chain(here, "candidates=candidates", "context=context",
                           env={"SLEEP_CANDIDATES": "0.12", "SLEEP_CONTEXT": "0.03"})
    assert code == 0, err
    assert "run of 5 queries" in out
    first, last = lines(here / "run.candidates.jsonl"), lines(here / "run.jsonl")
    # each stage's own time: at least its sleep; the last stage no longer carries the whole
    # chain's (its sleep and the first stage's would be 150 ms)
    assert all(r["latency_ms"] >= 120 for r in first)
    assert all(30 <= r["latency_ms"] < 120 for r in last)
    assert first[0]["items"] == [{"id": d, "score": 10.0 - i} for i, d in enumerate(RANKED["q1"])]
    assert [r["items"] for r in last] == [r["items"][:2] for r in first]
    # the second stage got the first stage's hits as the run file holds them, and their text
    seen = [r for r in logged(here) if r["stage"] == "context"]
    assert [r["query"] for r in seen] == [q for q, _, _ in QUERIES]
    assert seen[0]["hits"] == [{"id": d, "score": 10.0 - i, "text": DOCS[d]}
                               for i, d in enumerate(RANKED["q1"])]
    document = manifest(here / "run.jsonl")
    assert [(s["name"], s["costs"]) for s in document["stages"]] == [
        ("candidates", ["latency_ms"]), ("context", ["latency_ms"])]
    runner = document["provenance"]["runner"]
    name = module(here)
    assert runner["target"] == f"candidates={name}:candidates, context={name}:context"
    assert runner["latency"] == "stage" and "tokenizer" not in runner
    assert gate("validate", here / "snapshot.json", here / "run.jsonl")[0] == 0


def test_a_chain_gives_the_run_of_one_function_returning_every_stage(here: Path) -> None:
    """The same rankings from chained stages and from one call: the same files, but where the
    latency is written."""
    assert chain(here, "candidates=pairs", "context=context")[0] == 0
    (here / "whole.py").write_text(
        f"from {module(here)} import pairs\n"
        "def whole(query):\n    hits = pairs(query)\n"
        "    return {'candidates': hits, 'context': hits[:2]}\n")
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        "whole:whole", "-o", here / "whole.jsonl", "--commit", "none")
    assert code == 0, err
    assert without_latency(here / "run.jsonl") == without_latency(here / "whole.jsonl")
    assert without_latency(here / "run.candidates.jsonl") == without_latency(
        here / "whole.candidates.jsonl")
    assert "latency_ms" not in (here / "whole.candidates.jsonl").read_text()
    assert manifest(here / "whole.jsonl")["provenance"]["runner"]["latency"] == "call"


def test_chained_stages_are_the_same_for_every_concurrency_and_kind(here: Path) -> None:
    texts = []
    for first, second, args in (("candidates", "context", ()),
                                ("candidates", "context", ("--concurrency", "3")),
                                ("candidates", "context", ("--concurrency", "2", "--timeout",
                                                           "30", "--retries", "1")),
                                ("acandidates", "acontext", ("--concurrency", "4")),
                                ("acandidates", "acontext", ("--timeout", "30"))):
        code, _, err = chain(here, f"candidates={first}", f"context={second}", args=args)
        assert code == 0, err
        texts.append((without_latency(here / "run.candidates.jsonl"),
                      without_latency(here / "run.jsonl")))
    assert len(set(texts)) == 1


@pytest.mark.parametrize(("stages", "args", "said"), [
    (("context=context", "candidates=candidates"), (),
     ("--stage context: is stage 1, and the snapshot's pipeline has it at 2 (candidates, "
     "context)")),
    (("candidates=candidates",), (),
     "--stage: stage 'context' of the snapshot's pipeline (candidates, context) is not given"),
    (("candidates=candidates", "context=context", "extra=context"), (),
     "--stage extra: is stage 3, and the snapshot's pipeline has candidates, context"),
    (("candidates=candidates", "context=acontext"), (),
     "--stage candidates: is not async def, and other stages are"),
    (("candidates=candidates", "context=context"), ("--batch-size", "2"),
     "--batch-size: applies to --retriever only"),
    (("candidates=candidates", "context=context"), ("--retriever", "x:y"),
     "--retriever: and --stage are both given"),
    (("candidates=candidates", "context=nothing"), (),
     "has no 'nothing'"),
    (("candidates", "context=context"), (), "--stage: 'candidates' is not NAME=MODULE:FUNCTION"),
])
def test_stages_that_do_not_fit_the_snapshot_s_pipeline_are_refused(
        here: Path, stages: tuple[str, ...], args: tuple[str, ...], said: str) -> None:
    code, _, err = chain(here, *stages, args=args)
    assert code == 2 and said in err, err
    assert not logged(here) and not (here / "run.jsonl").exists()


def test_stages_on_a_snapshot_without_a_pipeline_and_an_endpoint_after_the_first_are_refused(
        here: Path) -> None:
    world(here / "flat")
    name = module(here)
    code, _, err = gate("run", "--snapshot", here / "flat" / "snapshot.json", "--stage",
                        f"candidates={name}:candidates", "-o", here / "run.jsonl")
    assert code == 2 and "the snapshot's pipeline has no stages — give a single target " \
        "with --retriever" in err
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--stage",
                        f"candidates={name}:candidates", "--stage",
                        "context=http://localhost:9/rerank", "-o", here / "run.jsonl")
    assert code == 2 and "--stage context: http://localhost:9/rerank is an HTTP endpoint: " \
        "a stage after the first is given the query and the previous stage's hits" in err
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "-o", here / "run.jsonl")
    assert code == 2 and "--retriever: is required" in err


@pytest.mark.parametrize("unit", ["chunk", "span"])
def test_a_later_stage_gets_and_may_return_hits_of_the_snapshot_s_unit(here: Path,
                                                                       unit: str) -> None:
    """The dicts a stage is given are hits the runner accepts back: their places, chunks and
    documents as the snapshot's evidence unit reads them."""
    world(here, unit, stages=("candidates", "context"))
    args = ("--chunking-version", "v1") if unit == "chunk" else ()
    code, _, err = chain(here, "candidates=unit_hits", "context=first_only", args=args,
                         env={"UNIT": unit})
    assert code == 0, err
    given = next(r for r in logged(here) if r["query"] == "q1")["hits"]
    first = RANKED["q1"][0]
    assert given[0] == ({"id": f"{first}#0", "doc_id": first, "score": 5.0} if unit == "chunk"
                        else {"id": f"{first}[0:4]", "doc_id": first, "start": 0, "end": 4,
                              "score": 5.0})
    assert lines(here / "run.jsonl")[0]["items"] == [given[0]]
    assert gate("validate", here / "snapshot.json", here / "run.jsonl")[0] == 0


def test_a_failing_stage_fails_the_whole_chain_which_is_retried_from_the_first_stage(
        here: Path) -> None:
    code, _, err = chain(here, "candidates=candidates", "context=flaky", args=("--retries", "3"))
    assert code == 0, err
    calls = [(r["stage"], r["query"]) for r in logged(here) if r["query"] == "q2"]
    # q2's chain: called 3 times in all, each from its first stage (2 failures, then done)
    assert calls == [("candidates", "q2"), ("flaky", "q2")] * 3
    (here / "stages.log").unlink()
    world(here / "zero", missing="zero", stages=("candidates", "context"))
    name = module(here)
    code, out, err = gate("run", "--snapshot", here / "zero" / "snapshot.json", "--stage",
                          f"candidates={name}:candidates", "--stage", f"context={name}:flaky",
                          "-o", here / "rec.jsonl", "--on-error", "record", "--commit", "none",
                          env={"FLAKY": "always"})
    assert code == 0, err
    assert "(first: q2: stage 'context': RuntimeError: reranker offline)" in out
    for path in (here / "rec.candidates.jsonl", here / "rec.jsonl"):
        assert "q2" not in [r["query_id"] for r in lines(path)]
    assert manifest(here / "rec.jsonl")["provenance"]["runner"]["failed"] == [
        {"query_id": "q2", "error": "stage 'context': RuntimeError: reranker offline"}]
    code, _, err = chain(here, "candidates=candidates", "context=flaky", env={"FLAKY": "always"})
    assert code == 2 and "query 'q2' failed: stage 'context': RuntimeError: reranker offline" in err


def test_a_stage_s_bad_ranking_stops_the_run_naming_the_stage_and_its_target(here: Path) -> None:
    code, _, err = chain(here, "candidates=candidates", "context=bad")
    name = module(here)
    assert code == 2
    assert f"{name}:bad: query 'q2' returned [('nope', 1.0)]: hit 1 of stage " \
        "'context' names document 'nope', which is not in the snapshot's corpus" in err
    assert [r["query"] for r in logged(here) if r["stage"] == "bad"] == ["q1", "q2"]
    code, _, err = chain(here, "candidates=returns", "context=later", env={"RETURNS": "{}"})
    assert code == 2 and "stage 'candidates' is a dict, not a list of hits" in err
    assert not [r for r in logged(here) if r["stage"] == "later"]  # later stages not called


def test_resume_and_shards_are_bound_to_every_stage_s_target(here: Path) -> None:
    code, _, _ = chain(here, "candidates=candidates", "context=bad")
    assert code == 2 and (here / "run.jsonl.journal").exists()  # q1 answered
    code, _, err = chain(here, "candidates=candidates", "context=context", args=("--resume",))
    assert code == 2 and "the journal belongs to another run: target candidates=" in err
    code, _, err = chain(here, "candidates=candidates", "context=bad", args=("--resume",))
    assert code == 2 and "query 'q2' returned" in err  # the same chain resumed
    (here / "stages.log").unlink()
    code, out, err = chain(here, "candidates=candidates", "context=bad", args=("--resume",),
                           env={"BAD": "no"})
    assert code == 0 and "(4 queries called in" in out, err
    assert "q1" not in [r["query"] for r in logged(here)]
    resumed = [without_latency(here / name) for name in ("run.candidates.jsonl", "run.jsonl")]
    assert all("latency_ms" in r for r in lines(here / "run.candidates.jsonl"))
    assert chain(here, "candidates=candidates", "context=bad", output="whole.jsonl",
                 env={"BAD": "no"})[0] == 0
    assert resumed == [without_latency(here / name)
                       for name in ("whole.candidates.jsonl", "whole.jsonl")]
    for i in (1, 2):
        code, _, err = chain(here, "candidates=candidates", "context=context",
                             args=("--shard", f"{i}/2"), output=f"shard{i}.jsonl")
        assert code == 0, err
    assert "stage_latency_ms" in (here / "shard1.jsonl").read_text()
    code, _, err = gate("run", "merge", here / "shard1.jsonl", here / "shard2.jsonl",
                        "--snapshot", here / "snapshot.json", "-o", here / "merged.jsonl",
                        "--commit", "none")
    assert code == 0, err
    assert chain(here, "candidates=candidates", "context=context")[0] == 0
    for name in ("merged", "run"):
        assert all("latency_ms" in r for r in lines(here / f"{name}.candidates.jsonl"))
    assert without_latency(here / "merged.jsonl") == without_latency(here / "run.jsonl")
    assert without_latency(here / "merged.candidates.jsonl") == without_latency(
        here / "run.candidates.jsonl")
    assert manifest(here / "merged.jsonl")["provenance"]["runner"]["latency"] == "stage"
    assert chain(here, "candidates=candidates", "context=later", args=("--shard", "2/2"),
                 output="other2.jsonl")[0] == 0
    code, _, err = gate("run", "merge", here / "shard1.jsonl", here / "other2.jsonl",
                        "--snapshot", here / "snapshot.json", "-o", here / "bad.jsonl",
                        "--commit", "none")
    assert code == 2 and "differs from" in err and "in its target" in err


def test_a_chain_s_journal_is_bound_to_its_stages_source(here: Path) -> None:
    """The manifest's code of a chain is the sha256 of each stage's entry point and its
    file's sha256 (computed here independently); an edited stage file is not resumed."""
    assert chain(here, "candidates=candidates", "context=bad")[0] == 2
    name = module(here)
    (here / f"{name}.py").write_text(STAGES + "# edited\n")
    stages = ["--stage", f"candidates={name}:candidates", "--stage", f"context={name}:bad"]
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", *stages, "-o",
                        here / "run.jsonl", "--commit", "none", "--resume", env={"BAD": "no"})
    assert code == 2 and "the journal belongs to another run: code sha256:" in err
    code, _, err = chain(here, "candidates=candidates", "context=bad", args=("--resume",),
                         env={"BAD": "no"})
    assert code == 0, err
    file = "sha256:" + hashlib.sha256(STAGES.encode()).hexdigest()
    joined = f"{name}:candidates\t{file}\n{name}:bad\t{file}\n"
    assert manifest(here / "run.jsonl")["provenance"]["runner"]["code"] == (
        "sha256:" + hashlib.sha256(joined.encode()).hexdigest())


def test_trec_output_of_chained_stages_holds_no_latency(here: Path) -> None:
    code, _, err = chain(here, "candidates=pairs", "context=context", output="run.trec")
    assert code == 0, err
    assert "note: the run is TREC, which holds no costs" in err
    assert (here / "run.candidates.trec").read_text().splitlines()[0] == "q1 Q0 d1 1 10.0 gate-run"
    assert [s["costs"] for s in manifest(here / "run.trec")["stages"]] == [[], []]


def test_the_library_chains_functions_given_as_a_dict(here: Path) -> None:
    order = []

    def first(query):
        order.append(("first", query.id))
        return [(d, 1.0 - i / 10) for i, d in enumerate(RANKED[query.id])]

    def second(query, hits):
        order.append(("second", query.id))
        return hits[:1]

    path = retrieval_gate.run(stages={"candidates": first, "context": second},
                              snapshot=here / "snapshot.json", output=here / "lib.jsonl",
                              commit="none")
    assert order[:2] == [("first", "q1"), ("second", "q1")]
    assert [r["items"] for r in lines(path)] == [[{"id": RANKED[q][0], "score": 1.0}]
                                                 for q, _, _ in QUERIES]
    assert re.fullmatch(r"candidates=\S*test_run_stages:test_the_library_chains_functions_"
                        r"given_as_a_dict\.<locals>\.first, context=\S*\.<locals>\.second",
                        manifest(path)["provenance"]["runner"]["target"])


# tokens ------------------------------------------------------------------------------------

def words_of(doc: str) -> int:
    """The independent count: the tokenizer of the stage module splits on white space."""
    return len(DOCS[doc].split())


@pytest.mark.parametrize("tokenizer", ["words", "word_count"])
def test_the_pipeline_s_tokenizer_counts_each_hit_s_text(here: Path, tokenizer: str) -> None:
    code, _, err = chain(here, "candidates=candidates", "context=context",
                         args=("--tokenizer", f"{module(here)}:{tokenizer}"))
    assert code == 0, err
    for path in (here / "run.candidates.jsonl", here / "run.jsonl"):
        for record in lines(path):
            assert [i["tokens"] for i in record["items"]] == [words_of(i["id"])
                                                              for i in record["items"]]
    # the next stage is given the counts
    seen = next(r for r in logged(here) if r["stage"] == "context")
    assert [h["tokens"] for h in seen["hits"]] == [words_of(d) for d in RANKED["q1"]]
    document = manifest(here / "run.jsonl")
    assert document["provenance"]["runner"]["tokenizer"] == f"{module(here)}:{tokenizer}"
    assert [s["costs"] for s in document["stages"]] == [["latency_ms", "tokens"]] * 2


def test_a_packing_stage_packs_by_the_counted_tokens(here: Path) -> None:
    code, _, err = chain(here, "candidates=candidates", "context=packed",
                         args=("--tokenizer", f"{module(here)}:words"))
    assert code == 0, err
    for record in lines(here / "run.jsonl"):
        expected, spent = [], 0
        for doc in RANKED[record["query_id"]]:
            if spent + words_of(doc) > 3:
                break
            expected.append(doc)
            spent += words_of(doc)
        assert [i["id"] for i in record["items"]] == expected


def test_reported_counts_are_kept_checked_or_absent_never_made_up(here: Path) -> None:
    name = module(here)
    # reported, no tokenizer: the reported counts
    assert chain(here, "candidates=candidates", "context=counted")[0] == 0
    assert [i.get("tokens") for i in lines(here / "run.jsonl")[0]["items"]] == [
        words_of(d) for d in RANKED["q1"]]
    assert "tokens" not in (here / "run.candidates.jsonl").read_text()  # text alone: none
    document = manifest(here / "run.jsonl")
    assert [s["costs"] for s in document["stages"]] == [["latency_ms"], ["latency_ms", "tokens"]]
    assert "tokenizer" not in document["provenance"]["runner"]
    # reported and counted alike: kept
    code, _, err = chain(here, "candidates=candidates", "context=counted",
                         args=("--tokenizer", f"{name}:words"))
    assert code == 0, err
    # reported and counted differently: refused, naming both counts
    code, _, err = chain(here, "candidates=candidates", "context=miscounted",
                         args=("--tokenizer", f"{name}:words"))
    assert code == 2 and f"query 'q1' returned hit 1 of stage 'context' with tokens 99, and " \
        f"{name}:words counts {words_of('d1')} in its text" in err
    # neither text nor tokens: none written, even with a tokenizer, which is then not named
    code, _, err = chain(here, "candidates=pairs", "context=context",
                         args=("--tokenizer", f"{name}:words"))
    assert code == 0, err
    assert "tokens" not in (here / "run.jsonl").read_text()
    assert "tokenizer" not in manifest(here / "run.jsonl")["provenance"]["runner"]
    assert f"note: --tokenizer {name}:words counted no hit: none carried text" in err
    # counted on one query only: named
    code, _, err = chain(here, "candidates=text_once", "context=context",
                         args=("--tokenizer", f"{name}:words"))
    assert code == 0 and "counted no hit" not in err, err
    assert manifest(here / "run.jsonl")["provenance"]["runner"]["tokenizer"] == f"{name}:words"


@pytest.mark.parametrize(("tokenizer", "output", "said"), [
    ("not_a_count", "run.jsonl", (":not_a_count returned 'many' for the text of hit 1 of stage "
     "'candidates' of query 'q1': neither tokens nor their count")),
    ("failing", "run.jsonl", (":failing failed on the text of hit 1 of stage 'candidates' of "
     "query 'q1': ValueError: no vocabulary")),
    ("async_words", "run.jsonl", "is an async def function, not a function that counts"),
    ("nothing", "run.jsonl", "--tokenizer: module 'stages_"),
    ("words", "run.trec", "--tokenizer: counts tokens, and a TREC run cannot hold them"),
])
def test_a_tokenizer_that_gives_no_count_is_refused(here: Path, tokenizer: str, output: str,
                                                    said: str) -> None:
    code, _, err = chain(here, "candidates=candidates", "context=context", output=output,
                         args=("--tokenizer", f"{module(here)}:{tokenizer}"))
    assert code == 2 and said in err, err
    assert not (here / output).exists()


def test_a_text_that_is_not_a_string_is_refused_with_a_tokenizer(here: Path) -> None:
    (here / "snapshot.json").unlink()
    world(here)
    name = module(here)
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        f"{name}:returns", "--tokenizer", f"{name}:words", "-o",
                        here / "run.jsonl", env={"RETURNS": '[{"id": "d1", "text": 7}]'})
    assert code == 2 and "query 'q1' returned hit 1 with text 7, not a string" in err
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        f"{name}:returns", "--tokenizer", f"{name}:words", "-o",
                        here / "run.jsonl", "--commit", "none",
                        env={"RETURNS": '[{"id": "d1", "text": "one two"}, "d2"]'})
    assert code == 0, err
    assert lines(here / "run.jsonl")[0]["items"] == [{"id": "d1", "score": 1.0, "tokens": 2},
                                                     {"id": "d2", "score": 0.5}]
    (here / "run.jsonl.journal").write_text(json.dumps(
        {"gate_run": 1, "snapshot": manifest(here / "run.jsonl")["snapshot"]["fingerprint"],
         "target": f"{name}:returns", "shard": None, "tokenizer": f"{name}:words"}) + "\n")
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", "--retriever",
                        f"{name}:returns", "--tokenizer", f"{name}:word_count", "-o",
                        here / "run.jsonl", "--resume", env={"RETURNS": "[]"})
    assert code == 2 and "the journal belongs to another run: " in err
    assert f"tokenizer {name}:words (this run: {name}:word_count)" in err


# batch latency -----------------------------------------------------------------------------

def flat(folder: Path) -> Path:
    """A snapshot without a pipeline, in its own folder (frozen once)."""
    path = folder / "flat" / "snapshot.json"
    return path if path.exists() else world(folder / "flat")


def batch_run(folder: Path, function: str, size: str = "2", output: str = "run.jsonl",
              env: dict[str, str] | None = None, snapshot: Path | None = None
              ) -> tuple[int, str, str]:
    return gate("run", "--snapshot", snapshot or flat(folder), "--retriever",
                f"{module(folder)}:{function}", "--batch-size", size, "-o", folder / output,
                "--commit", "none", env=env)


def test_a_batch_function_may_report_each_query_s_latency(here: Path) -> None:
    code, _, err = batch_run(here, "batch")
    assert code == 0, err
    written = lines(here / "run.jsonl")
    # the latency each query reported: 10 + len(id) + its place in its batch of 2
    assert [r["latency_ms"] for r in written] == [
        10.0 + len(q) + i % 2 for i, (q, _, _) in enumerate(QUERIES)]
    assert written[0]["items"][0] == {"id": "d1", "score": 1.0}
    runner = manifest(here / "run.jsonl")["provenance"]["runner"]
    assert runner["latency"] == "reported"
    assert batch_run(here, "plain_batch", output="plain.jsonl")[0] == 0
    latencies = [r["latency_ms"] for r in lines(here / "plain.jsonl")]
    assert latencies[0] == latencies[1] and latencies[2] == latencies[3]  # each its batch's
    assert manifest(here / "plain.jsonl")["provenance"]["runner"]["latency"] == "batch"
    # stages with a reported latency: written on the last stage, as a measured one
    code, _, err = batch_run(here, "batch_staged", snapshot=here / "snapshot.json",
                             output="staged.jsonl")
    assert code == 0, err
    assert [r["latency_ms"] for r in lines(here / "staged.jsonl")] == [2.5] * 5
    assert "latency_ms" not in (here / "staged.candidates.jsonl").read_text()


@pytest.mark.parametrize(("returned", "batched", "said"), [
    ('{"hits": [], "latency_ms": 3}', False, ("it reports its latency_ms, and gate run times "
     "each call itself")),
    ('{"hits": [], "latency_ms": 3, "model": "x"}', True, "it has other keys"),
    ('{"latency_ms": [], "hits": []}', True, "its latency_ms is not a number of milliseconds"),
    ('{"hits": [], "latency_ms": -1}', True, "its latency_ms is not a number of milliseconds"),
    ('{"hits": [], "latency_ms": true}', True, "its latency_ms is not a number of milliseconds"),
    ('{"hits": {"x": 1}, "latency_ms": 1}', True, "stage 'x' is a int, not a list of hits"),
])
def test_a_reported_latency_that_is_not_one_is_refused(here: Path, returned: str, batched: bool,
                                                       said: str) -> None:
    name = module(here)
    args = ("--retriever", f"{name}:returns_batch", "--batch-size", "2") if batched else (
        "--retriever", f"{name}:returns")
    code, _, err = gate("run", "--snapshot", flat(here), *args, "-o", here / "run.jsonl",
                        env={"RETURNS": returned})
    assert code == 2 and "query 'q1' returned" in err and said in err, err


def test_a_run_whose_queries_report_their_latency_or_not_by_turns_is_refused(here: Path) -> None:
    code, _, err = batch_run(here, "batch_some")
    assert code == 2 and "4 of 5 queries report their latency_ms and query 'q3' does not" in err
    assert not (here / "run.jsonl").exists()


# gate check reads what the latencies are --------------------------------------------------

def config(folder: Path, name: str, cost: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(f'[[gate]]\nmeasure = "Recall@3"\nmargin = 0.1\n\n[[cost]]\n{cost}\n')
    return path


def check(folder: Path, base: str, cand: str, *args: str | Path) -> tuple[int, str, str]:
    return gate("check", "--snapshot", folder / "flat" / "snapshot.json", "--baseline",
                folder / base, "--candidate", folder / cand, *args)


def test_check_compares_latencies_of_one_kind_only_and_no_relative_gate_on_batch_times(
        here: Path) -> None:
    assert batch_run(here, "batch", output="reported.jsonl")[0] == 0
    assert batch_run(here, "plain_batch", output="batch.jsonl")[0] == 0
    assert batch_run(here, "plain_batch", output="batch2.jsonl")[0] == 0
    assert gate("run", "--snapshot", here / "flat" / "snapshot.json", "--retriever",
                f"{module(here)}:pairs", "-o", here / "call.jsonl", "--commit", "none")[0] == 0
    relative = config(here, "relative", 'metric = "latency_ms"\nstat = "p50"\n'
                      "max-increase = 0.5")
    budget = config(here, "budget", 'metric = "latency_ms"\nstat = "p50"\nmax = 60000')
    # two kinds, gated: not comparable; shown only: left out, with a warning
    code, _, err = check(here, "call.jsonl", "batch.jsonl", "--config", budget)
    assert code == 3 and "latency_ms is gated, and the runs measure it differently: the " \
        "baseline's are each query's own call, timed by gate run; the candidate's are the " \
        "wall time of the batch call that answered each query" in err
    code, out, err = check(here, "reported.jsonl", "call.jsonl", "--no-config", "--gate",
                           "Recall@3=0.1")
    assert code == 0, err
    assert "latency_ms: the runs measure it differently (the baseline's are the latency the " \
        "batch function reported for each query; the candidate's are each query's own call" \
        in out + err
    assert "latency_ms p50" not in out
    # batch times: a relative gate is refused, an absolute budget decides with a warning
    code, _, err = check(here, "batch.jsonl", "batch2.jsonl", "--config", relative)
    assert code == 2 and "latency_ms p50 is gated relatively (max-increase), and the " \
        "baseline's latencies are batch wall times" in err
    code, out, err = check(here, "batch.jsonl", "batch2.jsonl", "--config", budget)
    assert code == 0, err
    assert "latency_ms p50" in out and "the candidate's latencies are the wall time of the " \
        "batch call that answered each query" in out + err
    # reported latencies on both sides: compared as any
    code, out, err = check(here, "reported.jsonl", "reported.jsonl", "--config", relative)
    assert code == 0 and "latency_ms p50" in out and "measure it differently" not in out + err


# the pydoc pipeline example ---------------------------------------------------------------

PYDOC_STAGES = """
import json

def _items(stage):
    records = [json.loads(line) for line in open({folder!r} + "/" + stage + ".jsonl")]
    return {{r["query_id"]: r["items"] for r in records}}

RUN = {{stage: _items(stage) for stage in ("candidates", "reranked", "context")}}

def candidates(query):
    return RUN["candidates"][query.id]

def reranked(query, hits):
    assert hits == RUN["candidates"][query.id], "the first stage's hits, as its file holds them"
    return RUN["reranked"][query.id]

def context(query, hits):
    assert hits == RUN["reranked"][query.id]
    return RUN["context"][query.id]
"""


def test_check_accepts_chained_stages_on_the_pydoc_pipeline_with_their_costs(
        tmp_path: Path, monkeypatch) -> None:
    """The pydoc pipeline's baseline rankings, given stage by stage: the written run is the
    baseline's, every stage timed, and gate check reads it — latency on every stage, the
    context's tokens — under the example's gates."""
    folder = ROOT / "baselines" / "pydoc-pipeline" / "v1"
    (tmp_path / "pydoc_stages.py").write_text(PYDOC_STAGES.format(folder=str(folder)))
    monkeypatch.chdir(tmp_path)
    snapshot = ROOT / "examples" / "pydoc" / "pipeline-snapshot.json"
    run = tmp_path / "run.jsonl"
    code, _, err = gate("run", "--snapshot", snapshot, "--stage",
                        "candidates=pydoc_stages:candidates", "--stage",
                        "reranked=pydoc_stages:reranked", "--stage",
                        "context=pydoc_stages:context", "-o", run, "--commit", "none")
    assert code == 0, err
    for stage, written in (("candidates", "run.candidates.jsonl"),
                           ("reranked", "run.reranked.jsonl"), ("context", "run.jsonl")):
        assert [r["items"] for r in lines(tmp_path / written)] == [
            r["items"] for r in lines(folder / f"{stage}.jsonl")]
        assert all(r["latency_ms"] >= 0 for r in lines(tmp_path / written))
    assert [(s["name"], s["costs"]) for s in manifest(run)["stages"]] == [
        (s, ["latency_ms", "tokens"]) for s in ("candidates", "reranked", "context")]
    toml = (ROOT / "examples" / "pydoc" / "pipeline.toml").read_text()
    (tmp_path / "pipeline.toml").write_text(
        toml.replace('snapshot = "pipeline-snapshot.json"', f'snapshot = "{snapshot}"')
        .replace('baseline = "../../baselines/pydoc-pipeline"',
                 f'baseline = "{ROOT / "baselines" / "pydoc-pipeline"}"'))
    # against the approved baseline, which times every stage too: the example's gates read
    # the latency summed over the same stages and the context's tokens
    code, out, err = gate("check", "--config", tmp_path / "pipeline.toml", "--candidate", run,
                          "--json", tmp_path / "report.json")
    assert code == 0, out + err
    costs = {(c["metric"], c["stat"]): c for c in
             json.loads((tmp_path / "report.json").read_text())["costs"]}
    assert (costs["latency_ms", "p95"]["n"], costs["latency_ms", "p95"]["in_family"]) == (89, True)
    answerable = {q["id"] for q in lines(ROOT / "examples" / "pydoc" / "queries.jsonl")
                  if q.get("answerable", True)}
    tokens = [sum(i["tokens"] for i in r["items"]) for r in lines(folder / "context.jsonl")
              if r["query_id"] in answerable]
    assert costs["context_tokens", "mean"]["candidate"] == pytest.approx(sum(tokens) / 89)
