"""The pydoc example's answer-level score files: rebuilt byte for byte by their script, one
line per query (and sample) of the snapshot, in the native JSON Lines score format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ANSWERS = ROOT / "examples" / "pydoc" / "answers"
SAMPLES = {  # score file -> samples per query
    "bm25-300.scores.jsonl": 1,
    "bm25-200-reader-cut32.scores.jsonl": 1,
    "bm25-truncated.scores.jsonl": 1,
    "bm25-200.scores.jsonl": 1,
    "bm25-200-sampled.scores.jsonl": 3,
}
QUERY_IDS = [json.loads(line)["id"] for line in
             (ROOT / "examples" / "pydoc" / "queries.jsonl").read_text("utf-8").splitlines()]


# The reader's answer breaks ties between sentences sharing the same terms with the question;
# with a plain sum over a set, the string hash seed 111 broke one differently (one in about 75
# seeds did). The files are the same whatever the seed.
@pytest.mark.parametrize("hash_seed", ["0", "111", "random"])
def test_score_files_are_rebuilt_byte_for_byte(hash_seed):
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, str(ANSWERS / "make_answers.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT, check=False, timeout=60,
                          env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("identical") == len(SAMPLES), done.stdout


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_query_has_its_samples_and_three_scores(name):
    lines = (ANSWERS / name).read_text("utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert lines == [json.dumps(row, sort_keys=True, ensure_ascii=False) for row in rows]
    n = SAMPLES[name]
    assert [(r["query_id"], r["sample"]) for r in rows] == [
        (qid, s) for qid in QUERY_IDS for s in range(n)]
    for row in rows:
        scores = row["scores"]
        assert sorted(scores) == ["exact_match", "matches_evidence", "token_f1"]
        assert scores["exact_match"] in (0, 1) and scores["matches_evidence"] in (0, 1)
        assert 0 <= scores["token_f1"] <= 1
        assert scores["exact_match"] <= scores["matches_evidence"]
