"""``gate run``'s journal: records gathered in blocks, each block on disk within 0.2 s or at
close; read back one at a time in query-set order whatever order they came in, a later record
of a query replacing an earlier one; a journal torn by a kill continued where its last whole
line ends."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from retrieval_gate.core.errors import InputError
from retrieval_gate.runner.journal import BLOCK_SECONDS, Journal, record_line, scan

IDS = ["q1", "q2", "q3", "q4"]
HEADER = {"gate_run": 1, "snapshot": "sha256:x", "target": "m:f", "shard": None}


def answer(qid: str, score: float = 1.0) -> dict:
    return {"query_id": qid, "rankings": [[None, [["d1", score, None, None, None, None]]]],
            "latency_ms": 1.5}


def records(path: Path) -> list[str]:
    return [json.loads(line).get("query_id", "header") for line in
            path.read_text().splitlines()]


def test_a_record_reaches_the_file_without_another_record_or_the_close(
        tmp_path: Path) -> None:
    """The journal's own thread writes the block (every BLOCK_SECONDS; the bound here is
    loose, for a loaded machine)."""
    path = tmp_path / "run.jsonl.journal"
    journal = Journal(str(path), HEADER, IDS, None)
    try:
        journal.add(answer("q2"))
        started = time.monotonic()
        while records(path) != ["header", "q2"] and time.monotonic() - started < 50 * BLOCK_SECONDS:
            time.sleep(0.01)
        assert records(path) == ["header", "q2"]
    finally:
        journal.close()


def test_close_writes_the_last_block_and_records_read_back_in_query_set_order(
        tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl.journal"
    journal = Journal(str(path), HEADER, IDS, None)
    for record in (answer("q3"), {"query_id": "q1", "failed": "E: down"}, answer("q2", 0.5),
                   answer("q2", 0.25), answer("q1")):
        journal.add(record)
    journal.close()
    journal.close()  # once closed, nothing more
    assert records(path) == ["header", "q3", "q1", "q2", "q2", "q1"]
    held = journal.held
    assert (held.count, held.answered, held.failed) == (3, 3, {})
    assert [r["query_id"] for r in held.answers()] == ["q1", "q2", "q3"]
    assert [r for r in held.answers() if r["query_id"] == "q2"] == [answer("q2", 0.25)]
    assert list(held.answers()) == list(held.answers())  # read again, the same
    held.close()


def test_a_torn_journal_is_continued_after_its_last_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl.journal"
    path.write_text(record_line(HEADER) + record_line(answer("q1"))
                    + record_line({"query_id": "q2", "failed": "E: down"})
                    + record_line(answer("q3"))[:20])
    kept = scan(path, "journal", IDS, torn_tail=True)
    assert (kept.count, kept.failed, list(kept.others)) == (2, {1: "E: down"}, [])
    assert kept.failures() == [("q2", "E: down")]
    kept.forget_failures()
    assert (kept.count, kept.failed, kept.has_answer(0), kept.has_answer(1)) == (1, {}, True,
                                                                               False)
    journal = Journal(str(path), HEADER, IDS, kept)
    journal.add(answer("q4"))
    journal.close()
    assert records(path) == ["header", "q1", "q2", "q4"]
    assert [r["query_id"] for r in journal.held.answers()] == ["q1", "q4"]
    journal.held.close()
    path.write_text(record_line(HEADER) + "{torn\n")
    with pytest.raises(InputError, match="line 2 is not JSON written by gate run"):
        scan(path, "journal", IDS)
