"""The crossing matrix: every pair of the gate's features, each a generated case whose expected
report comes from an independent computation (:mod:`crossing_world`, which imports nothing of
the gate) or from a documented refusal.

Features: the evidence unit (document; chunk with its chunk table; chunk without one; span),
access data, time data, stages and budgets, costs, slices with unanswerable queries, abstention
decisions, gated answer scores, scores-only runs, unjudged items, the cache, batch latencies
and score files that leave the unanswerable queries out. A pair of two units makes no sense (a snapshot has one): :data:`NO_SENSE` says so. Pairs of two other features run on span
judgments, the unit that reads the most (places, coverage, documents).

Each case freezes the snapshot, writes both runs' manifests and runs ``gate check --json`` from
the command line, then compares the report with the oracle: every measure's value of every
query in both runs (and on condensed rankings, scored by the gate's scoring of one ranking), each gated comparison's means and n on its slice, the leaks per query, the
gated costs' statistics, the answer scores; with the cache, the reports with it on (twice)
and off are byte-identical. Where the pair is refused, the exit code and the refusal's words.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import gate
from crossing_world import (
    BATCH,
    FEATURES,
    World,
    build,
    expected_latency,
    expected_leaks,
    expected_score,
    expected_values,
    passed_on,
    tokens_of,
    write,
)

from retrieval_gate.gating.pipeline import score_ranking
from retrieval_gate.inputs.run_manifest import read_run_file
from retrieval_gate.inputs.snapshot import load_snapshot, load_test_set
from retrieval_gate.scoring.measures import parse_measure

NO_SENSE = "a snapshot has one evidence unit"
# Pairs the gate refuses, with the words of the refusal (docs/concepts/access-time.md,
# per-query-scores.md): access and time data name documents, and chunk judgments without a
# chunk table name none; a run of scores only has no latency to gate.
REFUSED = {
    frozenset({"unit:chunk-no-table", "access"}): (2, "pin no chunk table"),
    frozenset({"unit:chunk-no-table", "time"}): (2, "pin no chunk table"),
    frozenset({"scores-only", "costs"}): (2, "per-query scores only"),
}
TOLERANCE = 1e-12
BUDGET = {"max": 28.0}  # the absolute latency budget of a world with batch latencies


def _pairs() -> list[tuple[str, str]]:
    return list(itertools.combinations(FEATURES, 2))


def _case(pair: tuple[str, str]) -> frozenset[str]:
    """The features of a pair's case: the pair, on span judgments unless it names a unit."""
    units = [f for f in pair if f.startswith("unit:")]
    return frozenset(pair) | (frozenset() if units else frozenset({"unit:span"}))


@pytest.mark.parametrize("pair", _pairs(), ids=lambda p: "×".join(p))
def test_crossing(tmp_path: Path, pair: tuple[str, str]) -> None:
    if all(f.startswith("unit:") for f in pair):
        pytest.skip(NO_SENSE)
    features = _case(pair)
    world = build(features, seed=sum(map(ord, "×".join(pair))))
    files = write(world, tmp_path)
    refused = REFUSED.get(frozenset(pair))
    code, err = _freeze(world, files, tmp_path / "snapshot.json")
    if code:
        assert refused is not None and (code, refused[1]) == (code, refused[1]), err
        assert code == refused[0] and refused[1] in err and err.startswith("error: "), err
        return
    runs = {run: _manifest(world, files, tmp_path, run) for run in ("baseline", "candidate")}
    config = _config(world, tmp_path / "gate.toml")
    cache = "on" if "cache" in features else "off"
    code, report, err = _check(tmp_path, config, runs, cache)
    if refused is not None:
        assert code == refused[0] and refused[1] in err and err.startswith("error: "), err
        return
    assert code == 0, err
    if "cache" in features:  # used twice, then off: the same report, byte for byte
        assert _check(tmp_path, config, runs, "on")[1] == report
        assert _check(tmp_path, config, runs, "off")[1] == report
    _compare(world, json.loads(report))
    if "scores-only" not in world.features:
        _compare_condensed(world, files, tmp_path / "snapshot.json")


def _freeze(world: World, files: dict[str, Path], out: Path) -> tuple[int, str]:
    unit = world.unit
    args: list[str | Path] = ["--queries", files["queries"], "--qrels", files["qrels"],
                              "--corpus-version", "c", "--permissions-version", "p"]
    if unit != "chunk-no-table":
        args += ["--corpus-file", files["corpus"]]
    if unit == "document":
        args += ["--unit", "document"]
    if unit.startswith("chunk"):
        args += ["--unit", "chunk", "--chunking-version", "c20"]
    if unit == "chunk":
        args += ["--chunks", files["chunks"]]
    if "permissions" in files:
        args += ["--permissions-file", files["permissions"]]
    if "stages" in world.features:
        args += ["--stage", "candidates:8", "--stage", "context:6:25"]
    for measure in world.measures():
        args += ["-m", measure]
    code, _, err = gate("snapshot", "freeze", *args, "-o", out)
    return code, err


def _manifest(world: World, files: dict[str, Path], folder: Path, run: str) -> Path:
    """The run's manifest written by gate run-manifest; the run (or score file) it is for."""
    scored = bool({"scores", "scores-only", "unscored-unanswerable"} & world.features)
    if run == "candidate" and "scores-only" in world.features:
        target = files[f"{run}:scores"]
        code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json",
                            "--scores", target)
        assert code == 0, err
        return target
    if "stages" in world.features:
        ranking = [a for s in world.stages for a in ("--stage", f"{s}={files[f'{run}:{s}']}")]
        target = files[f"{run}:context"]
    else:
        target = files[f"{run}:"]
        ranking = ["--run", str(target)]
    chunking = ["--chunking-version", "c20"] if world.unit.startswith("chunk") else []
    scores = ["--scores", str(files[f"{run}:scores"])] if scored else []
    code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json", *ranking,
                        *chunking, *scores)
    assert code == 0, err
    if "batch-latency" in world.features:  # what gate run --batch-size 3 records
        manifest = Path(f"{target}.manifest.json")
        document = json.loads(manifest.read_text())
        document["provenance"]["runner"] = {
            "target": "retriever:search", "settings": {
                "batch_size": BATCH, "concurrency": 1, "timeout": None, "retries": 0,
                "on_error": "fail", "shards": 1}, "latency": "batch", "failed": []}
        manifest.write_text(json.dumps(document))
    return target


def _gated(world: World) -> list[str]:
    if "scores-only" in world.features:
        return ["score:f1"]
    abstention = (["FalseAbstain", *(["Abstain"] if "slices" in world.features else [])]
                  if "abstention" in world.features else [])
    scored = {"scores", "unscored-unanswerable"} & world.features
    return world.measures() + abstention + (["score:f1"] if scored else [])


def _config(world: World, path: Path, budget: float | None = None) -> Path:
    lines = ['resamples = 1000', 'min-queries = 1', 'fail-on = "never"', 'leaks = "warn"',
             'missing = "error"']
    if "slices" in world.features:
        lines.append('slices = ["all", "even"]')
    for name in _gated(world):
        lines += ["[[gate]]", f'measure = "{name}"', "margin = 0.1"]
    if "costs" in world.features:
        gate = (f"max = {budget if budget is not None else BUDGET['max']!r}"
                if "batch-latency" in world.features else "max-increase = 0.5")
        lines += ["[[cost]]", 'metric = "latency_ms"', 'stat = "mean"', gate]
        if "stages" in world.features:
            lines += ["[[cost]]", 'metric = "context_tokens"', 'stat = "mean"', "max = 1000"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _check(folder: Path, config: Path, runs: dict[str, Path], cache: str
           ) -> tuple[int, str, str]:
    env = {"RETRIEVAL_GATE_CACHE": str(folder / "cache") if cache == "on" else "off"}
    code, out, err = gate("check", "--config", config, "--snapshot", folder / "snapshot.json",
                          "--baseline", runs["baseline"], "--candidate", runs["candidate"],
                          "--output-format", "json", env=env)
    return code, out, err


def _close(got: float | None, expected: float) -> bool:
    return got is not None and math.isclose(got, expected, rel_tol=TOLERANCE,
                                            abs_tol=TOLERANCE)


def _compare(world: World, report: dict) -> None:
    """Every value the oracle knows, against the report."""
    rows = {row["query"]: row for row in report["queries"]}
    assert list(rows) == world.answerable
    expected = {} if "scores-only" in world.features else {
        run: expected_values(world, run) for run in ("baseline", "candidate")}
    for run, values in expected.items():
        for qid, measures in values.items():
            for name, value in measures.items():
                assert _close(rows[qid][run][name], value), (run, qid, name,
                                                             rows[qid][run][name], value)
    slices = {"all": world.answerable}
    if "slices" in world.features:
        slices["even"] = [q["id"] for q in world.queries
                          if "even" in q["tags"] and q["id"] in world.answerable]
    scored = bool({"scores", "scores-only", "unscored-unanswerable"} & world.features)
    unanswerable = [q["id"] for q in world.queries if q["id"] not in world.answerable]
    for c in report["comparisons"]:
        members = unanswerable if c["slice"] == "unanswerable" else slices[c["slice"]]
        assert c["n"] == len(members)
        for run in ("baseline", "candidate"):
            if c["measure"] == "score:f1":
                values = [expected_score(world, run, q) for q in members]
            elif c["measure"] in ("Abstain", "FalseAbstain"):
                values = [float(world.abstained[run][q]) for q in members]
            else:
                values = [expected[run][q][c["measure"]] for q in members]
            assert _close(c[f"{run}_mean"], math.fsum(values) / len(values)), (c, run)
    assert {(c["measure"], c["slice"]) for c in report["comparisons"]} == {
        (m, "unanswerable") if m == "Abstain" else (m, s) for m in _gated(world)
        for s in slices}
    if scored:
        for qid in world.answerable:
            for run in ("baseline", "candidate"):
                assert _close(rows[qid][run]["score:f1"], expected_score(world, run, qid))
    if "access" in world.features and "scores-only" not in world.features:
        for run in ("baseline", "candidate"):
            assert report["leaks"][run]["per_query"] == expected_leaks(world, run), run
    if "costs" in world.features:
        _compare_costs(world, report)


def _compare_costs(world: World, report: dict) -> None:
    costs = {(row["metric"], row["stat"]): row for row in report["costs"]}
    if "batch-latency" in world.features:  # an absolute budget decides; the values are said
        row = costs[("latency_ms", "mean")]
        assert row["decision"] == ("regression" if row["candidate"] > BUDGET["max"] else "pass"), row
        assert sum("latencies are the wall time of the batch call" in w
                   for w in report["warnings"]) == 2, report["warnings"]
    latency = [np.array(expected_latency(world, run)) for run in ("baseline", "candidate")]
    for stat, of in (("mean", lambda v: math.fsum(v.tolist()) / len(v)),
                     ("p50", lambda v: float(np.percentile(v, 50)))):
        row = costs[("latency_ms", stat)]
        assert _close(row["baseline"], of(latency[0])) and _close(row["candidate"],
                                                                   of(latency[1])), row
    if "stages" in world.features:
        row = costs[("context_tokens", "mean")]
        for run in ("baseline", "candidate"):
            tokens = [sum(map(tokens_of, passed_on(world, run, "context", q)))
                      for q in world.answerable]
            assert _close(row[run], math.fsum(tokens) / len(tokens)), (row, run)


def _compare_condensed(world: World, files: dict[str, Path], snapshot: Path) -> None:
    """Every measure on condensed rankings (the unjudged items removed: what the gate decides
    a regression on again when unjudged items put it in question), scored by the gate's own
    scoring of one ranking, against the oracle's."""
    snap = load_snapshot(snapshot)
    test_set = load_test_set(snap)
    contracts = {s.name: s for s in snap.stages}
    for run in ("baseline", "candidate"):
        expected = expected_values(world, run, condensed=True)
        for stage in world.stages:
            measures = [parse_measure(m) for m in world.measures()
                        if (f" [{stage}]" in m if stage else True)]
            got = score_ranking(snap, test_set, contracts.get(stage),
                                read_run_file(files[f"{run}:{stage}"]), measures,
                                condensed=True).per_query()
            for qid, values in got.items():
                for name, value in values.items():
                    assert _close(value, expected[qid][name]), (run, qid, name, value,
                                                                expected[qid][name])


@pytest.mark.parametrize("stages", [False, True])
@pytest.mark.parametrize("side", [-1.0, 1.0])
def test_a_budget_on_batch_latencies_decides_both_ways(tmp_path: Path, stages: bool,
                                                       side: float, monkeypatch) -> None:
    """Batch latencies under an absolute budget just below and just above the candidate's
    mean: regression, then pass — on a pipeline too, whose batch call records its latency on
    the last stage only."""
    features = frozenset({"unit:span", "costs", "batch-latency"} | ({"stages"} if stages else set()))
    world = build(features, seed=7)
    files = write(world, tmp_path)
    code, err = _freeze(world, files, tmp_path / "snapshot.json")
    assert code == 0, err
    runs = {run: _manifest(world, files, tmp_path, run) for run in ("baseline", "candidate")}
    mean = math.fsum(expected_latency(world, "candidate")) / len(world.answerable)
    budget = round(mean + side, 3)
    monkeypatch.setitem(BUDGET, "max", budget)
    code, report, err = _check(tmp_path, _config(world, tmp_path / "gate.toml", budget), runs,
                               "off")
    assert code == 0, err
    _compare(world, json.loads(report))
    row = next(r for r in json.loads(report)["costs"]
               if (r["metric"], r["stat"]) == ("latency_ms", "mean"))
    assert row["decision"] == ("pass" if side > 0 else "regression")

