"""Judging what the candidate found: ``gate pool export`` lists exactly the unjudged items of
the runs' top k (checked against the run files read independently), and ``gate pool merge``
turns the assessor's grades into new qrels and a new snapshot, or refuses a bad line by its
number and writes nothing."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import BASELINE, CRANFIELD, INTERRUPTED, ROOT, gate, interrupted_runs

from retrieval_gate.commands.pool import TEXT_LIMIT, collect_pool, json_line
from retrieval_gate.core.errors import InputError
from retrieval_gate.gating.gate import run_gate
from retrieval_gate.gating.instead import corpus_texts
from retrieval_gate.inputs.snapshot import load_snapshot, load_test_set

CANDIDATE = "runs/bm25-titles.trec"


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def top_k(run: Path, k: int = 10) -> dict[str, list[str]]:
    """The first k documents of each query of a TREC run, read here without the gate: score
    descending, ties by document id descending in byte order (trec_eval's rule)."""
    rows = defaultdict(list)
    for line in run.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        rows[qid].append((float(score), doc.encode()))
    return {q: [d.decode() for _, d in sorted(r, reverse=True)[:k]] for q, r in rows.items()}


def judged_pairs(qrels: Path) -> set[tuple[str, str]]:
    return {(q, d) for q, _, d, _ in (line.split() for line in qrels.read_text().splitlines())}


@pytest.fixture
def cranfield(tmp_path: Path) -> Path:
    """A copy of the Cranfield example with the approved baseline in ``baseline/``."""
    folder = tmp_path / "cranfield"
    shutil.copytree(CRANFIELD, folder)
    (folder / "baseline").mkdir()
    for name in (BASELINE.name, BASELINE.name + ".manifest.json"):
        shutil.copy(BASELINE.parent / name, folder / "baseline" / name)
    return folder


def export(folder: Path, *extra: str | Path, snapshot: str = "snapshot.json",
           output: str = "pool.jsonl") -> tuple[int, str, str]:
    return gate("pool", "export", "--snapshot", folder / snapshot, "--candidate",
                folder / CANDIDATE, "-o", folder / output, *extra)


def merge(folder: Path, judged: Path, *extra: str | Path) -> tuple[int, str, str]:
    return gate("pool", "merge", "--snapshot", folder / "snapshot.json", "--judged", judged,
                "-o", folder / "qrels-pool.jsonl", *extra)


# -- export ----------------------------------------------------------------------------------

def test_export_lists_exactly_the_unjudged_top_10_of_both_runs(cranfield):
    code, out, err = export(cranfield, "--baseline", cranfield / "baseline")
    assert code == 0, err
    lines = read_lines(cranfield / "pool.jsonl")
    judged = judged_pairs(cranfield / "qrels.tsv")
    tops = {"candidate": top_k(cranfield / CANDIDATE), "baseline": top_k(BASELINE)}
    expected: dict[tuple[str, str], dict[str, int | None]] = {}
    for role, top in tops.items():
        for qid, docs in top.items():
            for rank, doc in enumerate(docs, 1):
                if (qid, doc) not in judged:
                    ranks = expected.setdefault((qid, doc), {"candidate": None, "baseline": None})
                    ranks[role] = rank
    got = {(line["query_id"], line["doc_id"]): line["rank"] for line in lines}
    assert len(got) == len(lines)  # one line per (query, document)
    assert got == expected
    assert not {pair for pair in got if pair in judged}
    queries = len({q for q, _ in got})
    assert out == f"{len(lines):,} unjudged items for {queries} queries written to " \
                  f"{cranfield / 'pool.jsonl'} (top 10 of the candidate and the baseline)\n"
    assert (len(lines), queries) == (3094, 225)


def test_export_ranks_by_hand(cranfield):
    """Query 1, read off the run files: the candidate ranks 13 (judged), 486, 875 (judged),
    746, 792, 184 (judged), 1268, 51 (judged), 429 and 1250 (tied with 1111 at 3.281385: the
    larger id in byte order wins); the baseline 184, 486, 13, 12 (judged), 1268, 878, 51, 14
    (judged), 141, 1361."""
    code, _, err = export(cranfield, "--baseline", cranfield / "baseline")
    assert code == 0, err
    first = [(line["doc_id"], line["rank"]) for line in read_lines(cranfield / "pool.jsonl")
             if line["query_id"] == "1"]
    assert first == [("486", {"candidate": 2, "baseline": 2}),
                     ("746", {"candidate": 4, "baseline": None}),
                     ("792", {"candidate": 5, "baseline": None}),
                     ("1268", {"candidate": 7, "baseline": 5}),
                     ("878", {"candidate": None, "baseline": 6}),
                     ("429", {"candidate": 9, "baseline": None}),
                     ("141", {"candidate": None, "baseline": 9}),
                     ("1250", {"candidate": 10, "baseline": None}),
                     ("1361", {"candidate": None, "baseline": 10})]


def test_export_lines_carry_the_query_the_text_and_no_grade(cranfield):
    code, _, err = export(cranfield)
    assert code == 0, err
    queries = {q["id"]: q["text"] for q in read_lines(cranfield / "queries.jsonl")}
    corpus = {d["id"]: d["text"] for d in read_lines(cranfield / "corpus.jsonl")}
    lines = read_lines(cranfield / "pool.jsonl")
    order = list(queries)
    positions = [(order.index(line["query_id"]), line["rank"]["candidate"]) for line in lines]
    assert positions == sorted(positions)  # query order, then rank
    for line in lines:
        assert set(line) == {"query_id", "query", "doc_id", "item", "text", "rank", "grade"}
        assert line["query"] == queries[line["query_id"]]
        assert line["item"] == line["doc_id"] and line["grade"] is None
        assert list(line["rank"]) == ["candidate"]
        text = corpus[line["doc_id"]]
        assert line["text"] == (text if len(text) <= TEXT_LIMIT
                                else text[:TEXT_LIMIT - 1] + "…")


def test_the_candidates_pool_is_what_gate_check_counts_as_unjudged(cranfield):
    code, out, err = export(cranfield)
    assert code == 0, err
    report = run_gate(cranfield / "snapshot.json", cranfield / "baseline", cranfield / CANDIDATE)
    unjudged = report.candidate.unjudged_share
    assert unjudged is not None
    assert len(read_lines(cranfield / "pool.jsonl")) == round(unjudged * 225 * 10) == 1857
    assert out.startswith("1,857 unjudged items for 225 queries written to ")


@pytest.mark.parametrize("k", ["0", "1000001"])
def test_a_cutoff_out_of_range_is_refused(cranfield, k):
    code, _, err = export(cranfield, "-k", k)
    assert code == 2 and "-k: " in err and err.count("\n") == 1
    assert not (cranfield / "pool.jsonl").exists()


def test_a_smaller_cutoff_pools_fewer_items(cranfield):
    assert export(cranfield, "-k", "3")[0] == 0
    lines = read_lines(cranfield / "pool.jsonl")
    assert lines and max(line["rank"]["candidate"] for line in lines) == 3


# -- round trip ------------------------------------------------------------------------------

def grade_all(pool: Path, judged: Path) -> list[dict]:
    """Every third line relevant (grade 2), the others 0."""
    lines = read_lines(pool)
    for i, line in enumerate(lines):
        line["grade"] = 2 if i % 3 == 0 else 0
    jsonl(judged, lines)
    return lines


def test_round_trip_export_judge_merge_freeze_validate(cranfield):
    assert export(cranfield, "--baseline", cranfield / "baseline")[0] == 0
    graded = grade_all(cranfield / "pool.jsonl", cranfield / "judged.jsonl")
    code, out, err = merge(cranfield, cranfield / "judged.jsonl", "--freeze",
                           cranfield / "snapshot-pool.json")
    assert code == 0, err
    assert out.splitlines()[0] == (f"3,094 new judgments for 225 queries (0 already recorded) "
                                   f"written to {cranfield / 'qrels-pool.jsonl'}")
    assert "qrels version cranfield-grades-v1+pool" in out
    code, out, err = gate("validate", cranfield / "snapshot-pool.json")
    assert code == 0, err
    old, new = load_snapshot(cranfield / "snapshot.json"), load_snapshot(
        cranfield / "snapshot-pool.json")
    assert {k: v for k, v in old.identity.items() if k != "qrels"} == \
        {k: v for k, v in new.identity.items() if k != "qrels"}
    assert new.name == old.name and new.fingerprint != old.fingerprint
    judgments = load_test_set(new).qrels.judgments
    before = load_test_set(old).qrels.judgments
    for line in graded:
        assert judgments[line["query_id"]][line["doc_id"]] == line["grade"]
    for qid, labels in before.items():  # every recorded judgment kept
        assert all(judgments[qid][doc] == grade for doc, grade in labels.items())
    assert sum(map(len, judgments.values())) == sum(map(len, before.values())) + len(graded)

    # The old runs were made on the old snapshot: not comparable (exit 3) ...
    code, _, err = export(cranfield, snapshot="snapshot-pool.json", output="again.jsonl")
    assert code == 3 and "qrels" in err
    # ... re-run (here: the same files) on the new one, and nothing is left to judge.
    for run in (cranfield / CANDIDATE, cranfield / "baseline" / BASELINE.name):
        code, _, err = gate("run-manifest", "--snapshot", cranfield / "snapshot-pool.json",
                            "--run", run)
        assert code == 0, err
    code, out, err = export(cranfield, "--baseline", cranfield / "baseline",
                            snapshot="snapshot-pool.json", output="again.jsonl")
    assert code == 0, err
    assert out.startswith("0 unjudged items for 0 queries")
    assert (cranfield / "again.jsonl").read_text() == ""


def test_merge_without_freeze_writes_the_union_as_jsonl_qrels(cranfield):
    assert export(cranfield, "-k", "2")[0] == 0
    graded = grade_all(cranfield / "pool.jsonl", cranfield / "judged.jsonl")
    code, _, err = merge(cranfield, cranfield / "judged.jsonl")
    assert code == 0, err
    rows = read_lines(cranfield / "qrels-pool.jsonl")
    recorded = [(q, d, int(g)) for q, _, d, g in
                (line.split() for line in (cranfield / "qrels.tsv").read_text().splitlines())]
    assert {(r["query_id"], r["doc_id"], r["grade"]) for r in rows} == set(recorded) | {
        (line["query_id"], line["doc_id"], line["grade"]) for line in graded}
    assert len(rows) == len(recorded) + len(graded)
    assert list(dict.fromkeys(r["query_id"] for r in rows)) == [
        q["id"] for q in read_lines(cranfield / "queries.jsonl")]  # query set order


def test_repeats_with_the_same_grade_are_accepted(cranfield):
    lines = [{"query_id": "1", "doc_id": "184", "grade": 3},  # as recorded
             {"query_id": "1", "doc_id": "486", "grade": 1},
             {"query_id": "1", "doc_id": "486", "grade": 1}]  # twice, equal
    code, out, err = merge(cranfield, jsonl(cranfield / "judged.jsonl", lines))
    assert code == 0, err
    assert out.startswith("1 new judgment for 1 query (2 already recorded) written to ")


def test_a_freeze_that_fails_writes_nothing(cranfield, monkeypatch):
    """The new snapshot is frozen from the merged judgments' bytes before either file is
    written: when freezing fails, the judgments file is not created, or keeps its content."""
    import retrieval_gate.commands.pool

    def refuse(*args, **kwargs):
        assert not (cranfield / "qrels-pool.jsonl").exists() or (
            cranfield / "qrels-pool.jsonl").read_text() == "old\n"  # not written yet
        raise InputError("--freeze", "refused", "for the test")

    monkeypatch.setattr(retrieval_gate.commands.pool, "freeze", refuse)
    assert export(cranfield, "-k", "1")[0] == 0
    grade_all(cranfield / "pool.jsonl", cranfield / "judged.jsonl")
    args = ("--freeze", cranfield / "snapshot-pool.json")
    code, _, err = merge(cranfield, cranfield / "judged.jsonl", *args)
    assert code == 2 and err == "error: --freeze: refused — for the test\n"
    assert not (cranfield / "qrels-pool.jsonl").exists()
    (cranfield / "qrels-pool.jsonl").write_text("old\n")
    assert merge(cranfield, cranfield / "judged.jsonl", *args)[0] == 2
    assert (cranfield / "qrels-pool.jsonl").read_text() == "old\n"
    assert not (cranfield / "snapshot-pool.json").exists()
    assert sorted(p.name for p in cranfield.iterdir() if p.name.startswith(".")) == []


# The gate's process, its second rename (the new snapshot over the old) killed (SIGKILL) or
# refused by the disk: the fault is injected, the rest is the real command.
FAULT_AT_SECOND_RENAME = """
import errno, os, signal, sys
from retrieval_gate.cli import main
real, calls, fault = os.replace, [], sys.argv.pop(1)
def replace(source, target):
    calls.append(target)
    if len(calls) == 2:
        if fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return real(source, target)
os.replace = replace
main()
"""


def merge_with_a_fault(folder: Path, fault: str) -> subprocess.CompletedProcess[str]:
    """``gate pool merge -o qrels.tsv --freeze snapshot.json``: both files replaced in place."""
    assert export(folder, "-k", "1")[0] == 0
    grade_all(folder / "pool.jsonl", folder / "judged.jsonl")
    return subprocess.run([sys.executable, "-c", FAULT_AT_SECOND_RENAME, fault, "pool", "merge",
                           "--snapshot", folder / "snapshot.json", "--judged",
                           folder / "judged.jsonl", "-o", folder / "qrels.tsv", "--freeze",
                           folder / "snapshot.json"], capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_second_rename_that_fails_puts_the_judgments_back(cranfield):
    before = {p.name: p.read_bytes() for p in cranfield.iterdir() if p.is_file()}
    done = merge_with_a_fault(cranfield, "refuse")
    assert done.returncode == 74, done.stderr
    assert "snapshot.json: cannot write (No space left on device)" in done.stderr
    after = {p.name: p.read_bytes() for p in cranfield.iterdir() if p.is_file()}
    assert {name: after[name] for name in before} == before  # qrels.tsv put back
    assert set(after) - set(before) == {"pool.jsonl", "judged.jsonl"}  # no temporary file


@pytest.mark.parametrize("way", ["finish", "undo"])
def test_a_kill_between_the_renames_is_caught_and_says_how_to_recover(cranfield, way):
    """Killed after the judgments landed and before the snapshot did: the old snapshot no
    longer matches its judgments, so every command refuses it (exit 3) rather than pair them,
    and the message names the two files left to finish the write, or to undo it."""
    old_qrels = (cranfield / "qrels.tsv").read_bytes()
    old_snapshot = (cranfield / "snapshot.json").read_bytes()
    done = merge_with_a_fault(cranfield, "kill")
    assert done.returncode == -signal.SIGKILL
    assert (cranfield / "qrels.tsv").read_bytes() != old_qrels
    assert (cranfield / "snapshot.json").read_bytes() == old_snapshot
    (staged,) = cranfield.glob(".snapshot.json.*.tmp")
    (kept,) = cranfield.glob(".qrels.tsv.*.tmp")
    code, _, err = gate("validate", cranfield / "snapshot.json")
    assert code == 3
    assert err.endswith(
        "— a write of the snapshot with its files was "
        f"interrupted between its renames: to finish it, move {staged} over "
        f"{cranfield / 'snapshot.json'}; or to undo it, move {kept} over "
        f"{cranfield / 'qrels.tsv'}\n")
    if way == "finish":
        staged.replace(cranfield / "snapshot.json")
    else:
        kept.replace(cranfield / "qrels.tsv")
    code, _, err = gate("validate", cranfield / "snapshot.json")
    assert code == 0, err
    version = load_snapshot(cranfield / "snapshot.json").document["qrels"]["version"]
    assert version == ("cranfield-grades-v1+pool" if way == "finish" else "cranfield-grades-v1")


def test_ctrl_c_at_either_rename_leaves_both_files_old_or_both_new(cranfield):
    """``-o qrels.tsv --freeze snapshot.json``, SIGINT as either rename returns, and at every
    rename after it: exit 130, and the judgments and the snapshot both as they were, byte for
    byte — or, at the second rename, which ends the write, both new — never the new judgments
    beside the old snapshot, never either lost; no temporary file, and the snapshot valid."""
    assert export(cranfield, "-k", "1")[0] == 0
    grade_all(cranfield / "pool.jsonl", cranfield / "judged.jsonl")
    before = {p.name: p.read_bytes() for p in cranfield.iterdir() if p.is_file()}
    both = ("qrels.tsv", "snapshot.json")

    def reset() -> None:
        for name in both:
            (cranfield / name).write_bytes(before[name])

    seen = []
    for run in interrupted_runs(["pool", "merge", "--snapshot", cranfield / "snapshot.json",
                                 "--judged", cranfield / "judged.jsonl", "-o",
                                 cranfield / "qrels.tsv", "--freeze",
                                 cranfield / "snapshot.json"], reset):
        assert run.returncode in (0, 130), run.stderr
        if run.returncode == 130:
            assert run.stderr == INTERRUPTED
        after = {p.name: p.read_bytes() for p in cranfield.iterdir() if p.is_file()}
        assert sorted(after) == sorted(before)
        changed = [after[name] != before[name] for name in both]
        seen.append({(False, False): "old", (True, True): "new"}[tuple(changed)])
        code, _, err = gate("validate", cranfield / "snapshot.json")
        assert code == 0, err
    assert run.returncode == 0
    assert seen == ["old", "new", "new"]


def test_freeze_needs_every_file_in_its_folder(cranfield, tmp_path):
    assert export(cranfield, "-k", "1")[0] == 0
    grade_all(cranfield / "pool.jsonl", cranfield / "judged.jsonl")
    code, _, err = merge(cranfield, cranfield / "judged.jsonl", "--freeze",
                         tmp_path / "elsewhere" / "snapshot.json")
    assert code == 2 and "--freeze: " in err and "is not inside the new snapshot's folder" in err
    assert not (cranfield / "qrels-pool.jsonl").exists()
    code, _, err = merge(cranfield, cranfield / "judged.jsonl", "--qrels-version", "v2")
    assert code == 2 and "--qrels-version: " in err and "--freeze" in err


@pytest.mark.parametrize("qrels_to, snapshot_to, option, pinned", [
    ("queries.jsonl", "snapshot-pool.json", "-o", "queries"),
    ("qrels-pool.jsonl", "corpus.jsonl", "--freeze", "corpus"),
])
def test_neither_file_may_replace_another_file_the_new_snapshot_pins(
        cranfield, qrels_to, snapshot_to, option, pinned):
    assert export(cranfield, "-k", "1")[0] == 0
    grade_all(cranfield / "pool.jsonl", cranfield / "judged.jsonl")
    before = {p.name: p.read_bytes() for p in cranfield.iterdir() if p.is_file()}
    code, _, err = gate("pool", "merge", "--snapshot", cranfield / "snapshot.json", "--judged",
                        cranfield / "judged.jsonl", "-o", cranfield / qrels_to, "--freeze",
                        cranfield / snapshot_to)
    target = cranfield / (qrels_to if option == "-o" else snapshot_to)
    assert code == 2 and err == (f"error: {option}: {target} is the snapshot's {pinned} file, "
                                 "which the new snapshot pins too — write it to a file of its "
                                 "own\n")
    assert {p.name: p.read_bytes() for p in cranfield.iterdir() if p.is_file()} == before


# -- refusals --------------------------------------------------------------------------------

GOOD = {"query_id": "1", "query": "…", "doc_id": "486", "item": "486", "text": None,
        "rank": {"candidate": 2}, "grade": 1}


@pytest.mark.parametrize("bad, message", [
    ({"grade": "high"}, 'grade "high" is not an integer'),
    ({"grade": 2.5}, "grade 2.5 is not an integer"),
    ({"grade": 101}, "grade 101 is outside -100..100"),
    ({"grade": None}, "query '1', doc_id '746' is not judged yet (grade null)"),
    ({"query_id": "nope"}, "query 'nope' is not in the snapshot's query set"),
    ({"doc_id": "184", "grade": 0}, "query '1', doc_id '184' is graded 0, and the snapshot"),
    ({"doc_id": "486", "grade": 0}, "query '1', doc_id '486' is graded 0, and 1 on line 1"),
    ({"doc_id": "no-such-doc"}, "doc_id 'no-such-doc' is not in the corpus"),
    ({"doc_id": ""}, "doc_id \"\" is not a non-empty string"),
])
@pytest.mark.parametrize("freeze", [False, True])
def test_a_bad_line_is_refused_by_its_number_and_nothing_is_written(cranfield, bad, message,
                                                                    freeze):
    lines = [GOOD, {**GOOD, "doc_id": "746", "item": "746", "grade": 0}, {**GOOD, **bad},
             {**GOOD, "doc_id": "792", "item": "792"}]
    judged = jsonl(cranfield / "judged.jsonl", lines)
    extra = ("--freeze", cranfield / "snapshot-pool.json") if freeze else ()
    if bad == {"grade": None}:  # the second line is still ungraded
        lines[1]["grade"] = None
        lines[2] = {**GOOD, "doc_id": "792"}
        jsonl(judged, lines)
    code, out, err = merge(cranfield, judged, *extra)
    line = 2 if bad == {"grade": None} else 3
    assert code == 2 and out == ""
    assert err.startswith(f"error: {judged}:{line}: ") and err.count("\n") == 1, err
    assert message in err
    assert not (cranfield / "qrels-pool.jsonl").exists()
    assert not (cranfield / "snapshot-pool.json").exists()


def test_a_line_without_a_grade_is_not_judged_yet(cranfield):
    judged = jsonl(cranfield / "judged.jsonl", [{"query_id": "1", "doc_id": "486"}])
    code, _, err = merge(cranfield, judged)
    assert code == 2 and f"{judged}:1: query '1', doc_id '486' is not judged yet " \
                         "(grade missing)" in err


def test_span_judgments_are_not_merged(tmp_path):
    judged = jsonl(tmp_path / "judged.jsonl", [GOOD])
    code, _, err = gate("pool", "merge", "--snapshot", ROOT / "examples/pydoc/snapshot.json",
                        "--judged", judged, "-o", tmp_path / "out.jsonl")
    assert code == 2 and "the snapshot judges spans" in err and "judge the spans" in err
    assert not (tmp_path / "out.jsonl").exists()


# -- units, access, hostile text ---------------------------------------------------------------

def small_set(folder: Path, corpus: list[dict], qrels: list[dict], run: list[dict] | str,
              *freeze: str, queries: list[dict] | None = None, declare: tuple[str, ...] = ()
              ) -> Path:
    """A snapshot in ``folder`` and a run ``run.jsonl`` (or ``run.trec``) with its manifest
    (``declare``: the options that say which chunking the run was made with)."""
    folder.mkdir(exist_ok=True)
    jsonl(folder / "queries.jsonl", queries or [{"id": "q1", "text": "first"},
                                                {"id": "q2", "text": "second"}])
    jsonl(folder / "qrels.jsonl", qrels)
    jsonl(folder / "corpus.jsonl", corpus)
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
                        folder / "qrels.jsonl", "--corpus-file", folder / "corpus.jsonl",
                        "--corpus-version", "c1", "--permissions-version", "p1", *freeze,
                        "-o", folder / "snapshot.json")
    assert code == 0, err
    if isinstance(run, str):
        name = "run.trec"
        (folder / name).write_text(run)
    else:
        name = "run.jsonl"
        jsonl(folder / name, run)
    code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json", "--run",
                        folder / name, *declare)
    assert code == 0, err
    return folder / name


def test_document_judgments_collapse_chunks_and_show_the_best_chunk(tmp_path):
    corpus = [{"id": d, "text": f"text of {d}"} for d in ("a", "b", "c")]
    qrels = [{"query_id": "q1", "doc_id": "a", "grade": 1},
             {"query_id": "q2", "doc_id": "b", "grade": 1}]
    run = [{"query_id": "q1", "items": [{"id": "b#1", "doc_id": "b", "score": 9},
                                        {"id": "a#0", "doc_id": "a", "score": 8},
                                        {"id": "b#0", "doc_id": "b", "score": 7},
                                        {"id": "c#0", "doc_id": "c", "score": 6}]},
           {"query_id": "q2", "items": [{"id": "b#0", "doc_id": "b", "score": 1}]}]
    folder = tmp_path / "set"
    runfile = small_set(folder, corpus, qrels, run, "--unit", "document")
    pool = collect_pool(folder / "snapshot.json", runfile, k=3)
    assert [(i.query_id, i.doc_id, i.item, i.rank, i.text) for i in pool.items] == [
        ("q1", "b", "b#1", {"candidate": 1}, "text of b"),
        ("q1", "c", "c#0", {"candidate": 3}, "text of c")]


def test_chunk_judgments_pool_chunks_and_merge_them(tmp_path):
    corpus = [{"id": "a", "text": "0123456789" * 4}]
    chunks = [{"id": f"a#{i}", "doc_id": "a", "start": s, "end": s + 10}
              for i, s in enumerate(range(0, 40, 10))]
    folder = tmp_path / "set"
    folder.mkdir()
    jsonl(folder / "chunks.jsonl", chunks)
    qrels = [{"query_id": "q1", "doc_id": "a#0", "grade": 1},
             {"query_id": "q2", "doc_id": "a#1", "grade": 1}]
    runfile = small_set(folder, corpus, qrels, "q1 Q0 a#2 1 3 t\nq1 Q0 a#0 2 2 t\n"
                        "q1 Q0 a#3 3 1 t\nq2 Q0 a#1 1 1 t\n", "--unit", "chunk",
                        "--chunking-version", "c10", "--chunks", str(folder / "chunks.jsonl"),
                        declare=("--chunking-version", "c10"))
    code, _, err = gate("pool", "export", "--snapshot", folder / "snapshot.json", "--candidate",
                        runfile, "-o", folder / "pool.jsonl")
    assert code == 0, err
    lines = read_lines(folder / "pool.jsonl")
    assert [(x["item"], x["doc_id"], x["rank"], x["text"]) for x in lines] == [
        ("a#2", "a", {"candidate": 1}, "0123456789"), ("a#3", "a", {"candidate": 3},
                                                       "0123456789")]
    for line in lines:
        line["grade"] = 1
    jsonl(folder / "judged.jsonl", lines)
    code, _, err = gate("pool", "merge", "--snapshot", folder / "snapshot.json", "--judged",
                        folder / "judged.jsonl", "-o", folder / "qrels-2.jsonl", "--freeze",
                        folder / "snapshot-2.json", "--qrels-version", "v2")
    assert code == 0, err
    new = load_snapshot(folder / "snapshot-2.json")
    assert new.document["chunking"] == load_snapshot(folder / "snapshot.json").document[
        "chunking"]
    assert load_test_set(new).qrels.judgments["q1"] == {"a#0": 1, "a#2": 1, "a#3": 1}
    jsonl(folder / "judged.jsonl", [{"query_id": "q1", "item": "a#9", "doc_id": "a",
                                     "grade": 1}])
    code, _, err = gate("pool", "merge", "--snapshot", folder / "snapshot.json", "--judged",
                        folder / "judged.jsonl", "-o", folder / "qrels-3.jsonl")
    assert code == 2 and ":1: item 'a#9' is not in the chunk table" in err


def test_items_the_asker_may_not_see_are_left_out(tmp_path):
    corpus = [{"id": "pub", "text": "public"}, {"id": "hr", "text": "salaries",
                                                "acl": ["hr"]},
              {"id": "old", "text": "old rule", "valid_to": "2020-01-01"}]
    queries = [{"id": "q1", "text": "?", "as_of": "2026-01-01"}]
    folder = tmp_path / "set"
    runfile = small_set(folder, corpus, [{"query_id": "q1", "doc_id": "pub", "grade": 1}],
                        "q1 Q0 hr 1 3 t\nq1 Q0 old 2 2 t\nq1 Q0 pub 3 1 t\n", "--unit",
                        "document", queries=queries)
    code, out, err = gate("pool", "export", "--snapshot", folder / "snapshot.json",
                          "--candidate", runfile, "-o", folder / "pool.jsonl")
    assert code == 0, err
    assert read_lines(folder / "pool.jsonl") == []
    assert "; 2 items left out: not visible to the query's asker or not in force" in out


def test_unanswerable_queries_are_pooled_and_not_graded_relevant(tmp_path):
    corpus = [{"id": d, "text": d} for d in ("a", "b")]
    queries = [{"id": "q1", "text": "?"}, {"id": "q2", "text": "??", "answerable": False}]
    folder = tmp_path / "set"
    runfile = small_set(folder, corpus, [{"query_id": "q1", "doc_id": "a", "grade": 1}],
                        "q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\n", "--unit", "document",
                        queries=queries)
    pool = collect_pool(folder / "snapshot.json", runfile)
    assert [(i.query_id, i.doc_id) for i in pool.items] == [("q2", "b")]
    judged = jsonl(folder / "judged.jsonl", [{"query_id": "q2", "doc_id": "b", "grade": 1}])
    code, _, err = gate("pool", "merge", "--snapshot", folder / "snapshot.json", "--judged",
                        judged, "-o", folder / "out.jsonl")
    assert code == 2 and ":1: query 'q2' is marked unanswerable" in err
    jsonl(judged, [{"query_id": "q2", "doc_id": "b", "grade": 0}])
    code, _, err = gate("pool", "merge", "--snapshot", folder / "snapshot.json", "--judged",
                        judged, "-o", folder / "out.jsonl")
    assert code == 0, err


HOSTILE = ("line\nbreak\r\u2028sep\u2029para\x85nel\x1b[31mred\u202eevil\u2066 ##[error]x\n"
           "::warning::y \ufeff\u200b\x00nul")


def test_hostile_text_stays_one_json_line(tmp_path):
    corpus = [{"id": "evil\u2028id", "text": HOSTILE}, {"id": "b", "text": "b"}]
    queries = [{"id": "q1", "text": HOSTILE}]
    folder = tmp_path / "set"
    runfile = small_set(folder, corpus, [{"query_id": "q1", "doc_id": "b", "grade": 1}],
                        [{"query_id": "q1", "items": [{"id": "evil\u2028id", "score": 2},
                                                      {"id": "b", "score": 1}]}],
                        "--unit", "document", queries=queries)
    code, out, err = gate("pool", "export", "--snapshot", folder / "snapshot.json",
                          "--candidate", runfile, "-o", folder / "pool.jsonl")
    assert code == 0, err
    assert out.count("\n") == 1
    text = (folder / "pool.jsonl").read_text(encoding="utf-8")
    assert len(text.splitlines()) == 1 and text.endswith("\n")  # splitlines: every separator
    assert not any(c in text for c in "\u2028\u2029\x85\x1b\u202e\u2066\ufeff\u200b\r\x00")
    line = json.loads(text)
    assert (line["doc_id"], line["query"], line["text"]) == ("evil\u2028id", HOSTILE, HOSTILE)
    assert json.loads(json_line(HOSTILE)) == HOSTILE


def test_a_pipeline_run_is_pooled_from_its_last_stage():
    pydoc = ROOT / "examples" / "pydoc"
    run = pydoc / "pipeline" / "packing-bug" / "context.jsonl"
    pool = collect_pool(pydoc / "pipeline-snapshot.json", run, k=5)
    context = {row["query_id"]: [item["id"] for item in row["items"]]
               for row in read_lines(run)}
    assert pool.items
    for item in pool.items:
        rank = item.rank["candidate"]
        assert rank is not None and rank <= 5
        assert context[item.query_id][rank - 1] == item.item  # explicit order: the file's
        judged = {s.doc for s in load_test_set(load_snapshot(
            pydoc / "pipeline-snapshot.json")).qrels.spans.get(item.query_id, ())}
        assert item.doc_id not in judged


# -- corpus_texts ----------------------------------------------------------------------------

@pytest.mark.parametrize("many", [False, True])
def test_corpus_texts_finds_each_document_by_its_top_level_id(tmp_path, many):
    lines = ['{"id": "x", "meta": {"id": "d1"}, "text": "not d1"}',
             '{"text": "caf\\u00e9 text", "id": "caf\\u00e9"}',
             '{"id": "d1", "text": "the text of d1"}']
    lines += [f'{{"id": "f{i}", "text": "filler {i}"}}' for i in range(20)]
    (tmp_path / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    jsonl(tmp_path / "queries.jsonl", [{"id": "q"}])
    jsonl(tmp_path / "qrels.jsonl", [{"query_id": "q", "doc_id": "d1", "grade": 1}])
    code, _, err = gate("snapshot", "freeze", "--queries", tmp_path / "queries.jsonl",
                        "--qrels", tmp_path / "qrels.jsonl", "--corpus-file",
                        tmp_path / "corpus.jsonl", "--corpus-version", "c",
                        "--permissions-version", "p", "-o", tmp_path / "snapshot.json")
    assert code == 0, err
    snap = load_snapshot(tmp_path / "snapshot.json")
    wanted = {"d1", "café", "absent"} | ({f"f{i}" for i in range(20)} if many else set())
    found = corpus_texts(snap, load_test_set(snap), wanted)
    assert found.pop("d1") == "the text of d1" and found.pop("café") == "café text"
    assert found == ({f"f{i}": f"filler {i}" for i in range(20)} if many else {})
