"""Score files with repeated samples, from the user's side: a query's samples are averaged
before the runs are compared, and a bad sample number is refused at its line."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

from conftest import BASELINE, CRANFIELD, RUNS, SNAPSHOT, gate

QUERY_IDS = [json.loads(line)["id"] for line in
             (CRANFIELD / "queries.jsonl").read_text("utf-8").splitlines()]


def write_scores(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def pinned_run(folder: Path, source: Path, scores: list[dict]) -> Path:
    """A copy of the run ``source`` with a manifest pinning ``scores``."""
    run = folder / source.name
    shutil.copyfile(source, run)
    file = write_scores(folder / f"{run.stem}.scores.jsonl", scores)
    code, _, err = gate("run-manifest", "--snapshot", SNAPSHOT, "--run", run, "--scores", file,
                        "--judge", "model=test")
    assert code == 0, err
    return run


def test_samples_are_averaged_per_query_before_the_comparison(tmp_path):
    # three samples per query; the candidate's are the baseline's plus 0.03, in another order
    base = {q: [(i % 7) / 10, (i % 5) / 10, 0.5] for i, q in enumerate(QUERY_IDS)}
    rows = {role: [{"query_id": q, "sample": s, "scores": {"a": v + shift}}
                   for q, values in base.items() for s, v in enumerate(values[::order])]
            for role, shift, order in (("baseline", 0.0, 1), ("candidate", 0.03, -1))}
    baseline = pinned_run(tmp_path, BASELINE, rows["baseline"])
    candidate = pinned_run(tmp_path, RUNS / "hybrid.trec", rows["candidate"])
    report = tmp_path / "report.json"
    code, _, err = gate("check", "--no-config", "--snapshot", SNAPSHOT, "--baseline", baseline,
                        "--candidate", candidate, "--gate", "score:a=0.02", "--json", report)
    assert code == 0, err
    (row,) = json.loads(report.read_text("utf-8"))["comparisons"]
    means = [math.fsum(v) / 3 for v in base.values()]
    assert row["measure"] == "score:a" and row["n"] == len(QUERY_IDS)
    assert math.isclose(row["baseline_mean"], math.fsum(means) / len(means), abs_tol=1e-12)
    assert math.isclose(row["mean_diff"], 0.03, abs_tol=1e-12)
    assert row["wins"] == len(QUERY_IDS) and row["decision"] == "pass"


def test_a_bad_sample_number_is_refused_at_its_line(tmp_path):
    run = tmp_path / "bm25.trec"
    shutil.copyfile(BASELINE, run)
    rows = [{"query_id": q, "sample": s, "scores": {"a": 0.5}} for q in QUERY_IDS
            for s in (0, 1)]
    rows[3]["sample"] = -1
    file = write_scores(tmp_path / "bm25.scores.jsonl", rows)
    code, out, err = gate("run-manifest", "--snapshot", SNAPSHOT, "--run", run, "--scores", file)
    assert code == 2 and out == ""
    assert err.splitlines() == [(f'error: {file}:4 $["sample"]: sample -1 is not a whole '
                                 "number from 0 to 1000000 — number the samples of a query 0, "
                                 "1, 2, ...")]
    assert not (tmp_path / "bm25.trec.manifest.json").exists()
