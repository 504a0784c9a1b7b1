"""Hash what you parse: every pinned file (the snapshot's query set and judgments, each run) is
read once, and the bytes whose SHA-256 is checked are the bytes parsed. A file renamed over the
pinned one between the check and the parse can no longer pass for it."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest
from conftest import gate

from retrieval_gate.core.errors import GateError, NotComparableError
from retrieval_gate.gating.gate import run_gate
from retrieval_gate.gating.pipeline import score_stages
from retrieval_gate.inputs.run_manifest import load_checked_run, make_run_manifest
from retrieval_gate.inputs.snapshot import load_snapshot, load_test_set

QUERIES = '{"id": "q1"}\n{"id": "q2"}\n{"id": "q3"}\n'
QRELS = "q1 0 d1 1\nq2 0 d2 1\nq3 0 d3 1\n"
OTHER_QRELS = "q1 0 d9 1\nq2 0 d9 1\nq3 0 d9 1\n"
RUN_A = "q1 Q0 d1 1 2 a\nq1 Q0 d9 2 1 a\nq2 Q0 d2 1 2 a\nq3 Q0 d3 1 1 a\n"
RUN_B = "q1 Q0 d9 1 2 b\nq1 Q0 d1 2 1 b\nq2 Q0 d9 1 2 b\nq3 Q0 d9 1 1 b\n"


@pytest.fixture
def testset(tmp_path: Path) -> Path:
    (tmp_path / "queries.jsonl").write_text(QUERIES)
    (tmp_path / "qrels.tsv").write_text(QRELS)
    (tmp_path / "run.trec").write_text(RUN_A)
    assert gate("snapshot", "freeze", "--queries", tmp_path / "queries.jsonl", "--qrels",
                tmp_path / "qrels.tsv", "--corpus-version", "c", "--unit", "document",
                "--permissions-version", "p", "-o", tmp_path / "snapshot.json")[0] == 0
    assert gate("run-manifest", "--snapshot", tmp_path / "snapshot.json", "--run",
                tmp_path / "run.trec", "--commit", "abc")[0] == 0
    return tmp_path


def swap(path: Path, text: str) -> None:
    """Replace ``path`` by a new file with ``text``, atomically (as a deploy or a git checkout
    does)."""
    staged = path.with_name(path.name + ".new")
    staged.write_text(text)
    os.replace(staged, path)


def test_snapshot_files_are_parsed_from_the_bytes_that_were_hashed(testset):
    """The judgments swapped after the hash check: the test set is still the pinned one (it
    used to be read again from the path, and the swapped judgments passed)."""
    snapshot = load_snapshot(testset / "snapshot.json")
    swap(testset / "qrels.tsv", OTHER_QRELS)
    swap(testset / "queries.jsonl", '{"id": "q1"}\n')
    test_set = load_test_set(snapshot)
    assert test_set.qrels.judgments == {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}
    assert test_set.answerable == ("q1", "q2", "q3")
    pinned = snapshot.document["qrels"]["sha256"]
    assert snapshot.blobs["qrels"].sha256 == pinned == hashlib.sha256(QRELS.encode()).hexdigest()
    with pytest.raises(GateError, match="qrels file 'qrels.tsv' has sha256") as refused:
        load_snapshot(testset / "snapshot.json")  # read again: the swap is seen, and refused
    assert refused.value.exit_code == 3


def test_a_run_is_scored_from_the_bytes_that_were_hashed(testset):
    snapshot = load_snapshot(testset / "snapshot.json")
    test_set = load_test_set(snapshot)
    manifest, blob = load_checked_run(testset / "run.trec")
    swap(testset / "run.trec", RUN_B)
    scores = score_stages(snapshot, test_set, [(None, blob)]).scores
    assert scores.per_query()["q2"]["Hit@10"] == 1.0  # RUN_A's ranking, not RUN_B's
    assert blob.sha256 == manifest.document["run"]["sha256"]
    assert make_run_manifest(snapshot, blob)["run"]["sha256"] == blob.sha256


def test_a_run_swapped_during_check_never_passes_for_the_pinned_one(testset):
    """A thread keeps swapping the candidate between its pinned content and another while the
    gate runs: each check either refuses it (exit 3) or scores exactly the pinned content."""
    run = testset / "run.trec"
    pinned = run_gate(testset / "snapshot.json", run, run)
    expected = pinned.candidate.means
    stop = threading.Event()

    def flip() -> None:
        texts = (RUN_B, RUN_A)
        i = 0
        while not stop.is_set():
            swap(run, texts[i % 2])
            i += 1

    flipper = threading.Thread(target=flip)
    flipper.start()
    outcomes = set()
    try:
        for _ in range(40):
            try:
                report = run_gate(testset / "snapshot.json", run, run)
            except NotComparableError:
                outcomes.add("refused")
                continue
            except GateError as exc:  # a half-written file cannot occur: swaps are renames
                pytest.fail(f"unexpected error {exc}")
            assert report.candidate.means == expected
            assert report.baseline.means == expected
            outcomes.add("pinned")
    finally:
        stop.set()
        flipper.join()
    assert outcomes


def test_a_hash_mismatch_is_reported_before_a_parse_error(testset):
    """A pinned file replaced by garbage is 'not what the manifest pins' (exit 3), not a
    malformed file (exit 2): the hash answers first."""
    swap(testset / "qrels.tsv", "not a qrels line\n")
    code, _, err = gate("validate", testset / "snapshot.json")
    assert code == 3 and "qrels file 'qrels.tsv' has sha256" in err
    swap(testset / "qrels.tsv", QRELS)
    swap(testset / "run.trec", "garbage\n")
    run = testset / "run.trec"
    code, _, err = gate("check", "--snapshot", testset / "snapshot.json", "--baseline", run,
                        "--candidate", run)
    assert code == 3 and "the run changed after its manifest was written" in err
    code, _, err = gate("validate", testset / "snapshot.json", run)
    assert code == 3 and "the run changed after its manifest was written" in err
