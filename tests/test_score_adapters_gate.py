"""Every evaluation tool's real output gated end to end: a snapshot of the questions the
fixtures hold (tests/data/scores/, made by the tools themselves), score-only runs pinned with
``gate run-manifest --scores FILE --scores-format TOOL``, and ``gate check`` on ``score:NAME``.
A tool's file keyed by query ids and its file keyed by question texts agree query by query."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, gate

PYDOC = ROOT / "examples" / "pydoc"
SCORES = ROOT / "tests" / "data" / "scores"


def snapshot_of(folder: Path, ids: set[str]) -> Path:
    """A snapshot of the pydoc questions ``ids`` with their span judgments and the corpus."""
    queries = [line for line in (PYDOC / "queries.jsonl").read_text().splitlines()
               if json.loads(line)["id"] in ids]
    qrels = [line for line in (PYDOC / "qrels.jsonl").read_text().splitlines()
             if json.loads(line)["query_id"] in ids]
    (folder / "queries.jsonl").write_text("\n".join(queries) + "\n")
    (folder / "qrels.jsonl").write_text("\n".join(qrels) + "\n")
    shutil.copy(PYDOC / "corpus.jsonl", folder / "corpus.jsonl")
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
                        folder / "qrels.jsonl", "--corpus-version", "3.11.7", "--corpus-file",
                        folder / "corpus.jsonl", "--permissions-version", "public", "-o",
                        folder / "snapshot.json")
    assert code == 0, err
    return folder / "snapshot.json"


def pin(folder: Path, source: Path, role: str, fmt: str, snapshot: Path) -> Path:
    target = folder / f"{role}{source.suffix}"
    shutil.copy(source, target)
    code, _, err = gate("run-manifest", "--snapshot", snapshot, "--scores", target,
                        "--scores-format", fmt, "--judge", "tool=fixture")
    assert code == 0, err
    return target


CASES = [
    ("ragas", "ragas/result.csv", "ragas/result-ids.csv", "rouge_score_mode_fmeasure",
     {"p01", "p03", "p04", "p06", "p08", "p15"}),
    ("ragas", "ragas/result.jsonl", "ragas/result-ids.jsonl", "exact_match",
     {"p01", "p03", "p04", "p06", "p08", "p15"}),
    ("deepeval", "deepeval/latest_test_run.json", "deepeval/test_run-ids.json", "token_f1",
     {"p01", "p03", "p04", "p06", "p08", "p15"}),
    ("promptfoo", "promptfoo/ids.json", "promptfoo/ids.json", "mentions_finally",
     {f"p0{i}" for i in range(1, 7)}),
    ("promptfoo", "promptfoo/text.json", "promptfoo/text.json", "promptfoo.score",
     {f"p0{i}" for i in range(1, 7)}),
    ("inspect", "inspect_ai/text.eval", "inspect_ai/ids.eval", "length_ratio",
     {f"p0{i}" for i in range(1, 7)}),
    ("inspect", "inspect_ai/epochs.eval", "inspect_ai/epochs.eval", "match",
     {"p01", "p02", "p03"}),
]


@pytest.mark.parametrize(("fmt", "baseline", "candidate", "score", "ids"), CASES,
                         ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_a_tools_scores_gate_end_to_end(tmp_path, fmt, baseline, candidate, score, ids):
    pytest.importorskip("zstandard") if baseline.endswith(".eval") else None
    snapshot = snapshot_of(tmp_path, ids)
    b = pin(tmp_path, SCORES / baseline, "baseline", fmt, snapshot)
    c = pin(tmp_path, SCORES / candidate, "candidate", fmt, snapshot)
    config = tmp_path / "gate.toml"
    config.write_text(f'min-queries = 2\nmissing = "drop-pair"\n[[gate]]\n'
                      f'measure = "score:{score}"\nmargin = 0.05\n')
    report = tmp_path / "report.json"
    code, out, err = gate("check", "--config", config, "--snapshot", snapshot, "--baseline", b,
                          "--candidate", c, "--json", report)
    assert code == 0, out + err
    document = json.loads(report.read_text())
    (comparison,) = document["comparisons"]
    # the same tool's scores, keyed by ids on one side and by texts on the other: equal pairs
    assert comparison["mean_diff"] == 0 and comparison["wins"] == comparison["losses"] == 0
    assert comparison["n"] + document["answer_scores"]["scores"][0]["pairs"] == len(ids)
    assert document["answer_scores"]["tools"][0].startswith(
        {"inspect": "inspect_ai"}.get(fmt, fmt))
    if "epochs" in baseline:
        assert document["answer_scores"]["scores"][0]["samples"] == [[3, 3], [3, 3]]


def test_a_tools_file_is_refused_in_another_format(tmp_path):
    snapshot = snapshot_of(tmp_path, {"p01", "p03", "p04", "p06", "p08", "p15"})
    target = tmp_path / "run.json"
    shutil.copy(SCORES / "deepeval" / "test_run-ids.json", target)
    code, _, err = gate("run-manifest", "--snapshot", snapshot, "--scores", target)
    assert code == 2 and 'run.json:1: the line has no "query_id"' in err
    assert "--scores-format (ragas, deepeval, promptfoo, inspect)" in err
    code, _, err = gate("run-manifest", "--snapshot", snapshot, "--scores", target,
                        "--scores-format", "promptfoo")
    assert code == 2 and "run.json: is not promptfoo's JSON output" in err
    code, _, err = gate("run-manifest", "--snapshot", snapshot, "--scores", target,
                        "--scores-format", "trulens")
    assert code == 2 and "unknown score format 'trulens'" in err
    assert not (tmp_path / "run.json.manifest.json").exists()
