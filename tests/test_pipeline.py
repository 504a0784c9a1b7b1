"""Pipeline runs: stage contracts, token budgets, the evidence funnel, costs and short lists.

The fixture is small enough to work out by hand. Two answerable queries, document judgments:

- q1 judges d1 (grade 2), d2, d3, d4 (grade 1): four relevant units;
- q2 judges d5, d6 (grade 1): two.

Contract: candidates (top 4) → reranked (top 2) → context (budget 100 tokens).
Baseline, q1: candidates d1 d2 d3 x1 d4 — d4 is fifth, past the cutoff: *never retrieved*;
reranked d2 d1 d3 — d3 is third: *cut at reranked*; context d2 (60 tokens) d1 (50) — 110 >
100, so d1 is *over budget*; d2 reaches the context. q2: candidates and reranked d5 d6; the
context holds d5 only: d6 is *dropped at packing*. Each loss kind once; 2 units reached.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from retrieval_gate.cli import cli
from retrieval_gate.commands.validate import record_run
from retrieval_gate.core.errors import InputError
from retrieval_gate.core.stages import StageContract, parse_contract
from retrieval_gate.decide.policy import CostGate, GatedMeasure, GatePolicy
from retrieval_gate.gating.gate import run_gate
from retrieval_gate.inputs.snapshot import freeze
from retrieval_gate.report.json import report_json
from retrieval_gate.report.junit import report_junit
from retrieval_gate.report.markdown import report_markdown
from retrieval_gate.report.text import report_text

STAGES = (StageContract("candidates", 4), StageContract("reranked", 2),
          StageContract("context", None, 100))
MEASURES = ("Recall@4 [candidates]", "Recall@2 [reranked]", "Recall [context]", "P@4 [candidates]")


def _lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _ranking(query: str, items: list[tuple[str, int]], latency: float | None = None) -> dict:
    """Items in rank order (scores descending), each with its tokens."""
    row: dict = {"query_id": query, "items": [{"id": i, "score": 10.0 - r, "tokens": t}
                                               for r, (i, t) in enumerate(items)]}
    if latency is not None:
        row["latency_ms"] = latency
    return row


@pytest.fixture
def pipeline(tmp_path: Path) -> Path:
    _lines(tmp_path / "queries.jsonl", [{"id": "q1", "text": "first"}, {"id": "q2", "text": "second"}])
    _lines(tmp_path / "qrels.jsonl", [
        {"query_id": "q1", "doc_id": d, "grade": g} for d, g in
        (("d1", 2), ("d2", 1), ("d3", 1), ("d4", 1))] + [
        {"query_id": "q2", "doc_id": d, "grade": 1} for d in ("d5", "d6")])
    freeze(tmp_path / "snapshot.json", queries=tmp_path / "queries.jsonl",
           qrels=tmp_path / "qrels.jsonl", corpus_version="c1", permissions_version="p1",
           measures=MEASURES, stages=STAGES)
    return tmp_path


def _cli_check(folder: Path, baseline: Path, candidate: Path) -> object:
    config = folder / "gate.toml"
    config.write_text('min-queries = 1\n[[gate]]\nmeasure = "Recall [context]"\nmargin = 0.1\n')
    return CliRunner().invoke(cli, ["check", "--snapshot", str(folder / "snapshot.json"),
                                    "--baseline", str(baseline), "--candidate", str(candidate),
                                    "--config", str(config)])


def _run(folder: Path, name: str, stages: dict[str, list[dict]]) -> Path:
    """Write a pipeline run's stage files and its manifest; return its last stage."""
    run = folder / name
    run.mkdir()
    files = [(stage, _lines(run / f"{stage}.jsonl", rows)) for stage, rows in stages.items()]
    record_run(folder / "snapshot.json", None, {"name": name}, "abc", "2026-12-01T00:00:00Z",
               stages=files, timed_on="ci-runner")
    return files[-1][1]


BASELINE = {
    "candidates": [_ranking("q1", [("d1", 50), ("d2", 60), ("d3", 10), ("x1", 10), ("d4", 10)], 10),
                   _ranking("q2", [("d5", 30), ("d6", 30)], 20)],
    "reranked": [_ranking("q1", [("d2", 60), ("d1", 50), ("d3", 10)], 1),
                 _ranking("q2", [("d5", 30), ("d6", 30)], 2)],
    "context": [_ranking("q1", [("d2", 60), ("d1", 50)]), _ranking("q2", [("d5", 30)])],
}


def test_funnel_by_hand(pipeline: Path) -> None:
    baseline = _run(pipeline, "base", BASELINE)
    # The candidate's packer trims d1 to 40 tokens: 60 + 40 = 100, exactly the budget — in.
    candidate = _run(pipeline, "cand", {**BASELINE, "context": [
        _ranking("q1", [("d2", 60), ("d1", 40)]), _ranking("q2", [("d5", 30)])]})
    report = run_gate(pipeline / "snapshot.json", baseline, candidate,
                   GatePolicy(gates=(GatedMeasure("Recall [context]"),), min_queries=1))
    funnel = report.funnel
    assert funnel is not None and funnel.units == 6
    losses = {row.kind: (row.baseline, row.candidate) for row in funnel.losses}
    assert losses == {"candidates": (1, 1), "reranked": (1, 1), "context": (1, 1),
                      "context:budget": (1, 0)}
    assert [(name, b, c) for name, b, c in funnel.reaching] == [
        ("candidates", 5, 5), ("reranked", 4, 4), ("context", 2, 3)]
    assert {row.kind: row.label for row in funnel.losses} == {
        "candidates": "never retrieved", "reranked": "cut at reranked (top 2)",
        "context": "dropped at packing (context)",
        "context:budget": "over budget (context, 100 tokens)"}
    per_query = {q.query: (q.baseline, q.candidate) for q in funnel.queries}
    assert per_query["q1"][0] == {"reached": 1, "candidates": 1, "reranked": 1, "context": 0,
                                  "context:budget": 1}
    assert per_query["q2"][1] == {"reached": 1, "candidates": 0, "reranked": 0, "context": 1,
                                  "context:budget": 0}
    means = report.baseline.means
    # Recall [context]: q1 1/4 (d2), q2 1/2 (d5); the candidate's q1 2/4 (d1 fits exactly).
    assert means["Recall [context]"] == (1 / 4 + 1 / 2) / 2
    assert report.candidate.means["Recall [context]"] == (2 / 4 + 1 / 2) / 2
    assert means["Recall@4 [candidates]"] == (3 / 4 + 2 / 2) / 2
    assert means["Recall@2 [reranked]"] == (2 / 4 + 2 / 2) / 2
    assert report.verdict == "pass"  # the candidate reaches more: nothing lost


def test_budget_boundary_an_item_crossing_it_is_out(pipeline: Path) -> None:
    # q1's context: 60 + 41 = 101 > 100 — d1 is out, and so is d3 after it (10 would fit).
    over = _run(pipeline, "over", {**BASELINE, "context": [
        _ranking("q1", [("d2", 60), ("d1", 41), ("d3", 10)]), _ranking("q2", [("d5", 30)])]})
    exact = _run(pipeline, "exact", {**BASELINE, "context": [
        _ranking("q1", [("d2", 60), ("d1", 40), ("d3", 0)]), _ranking("q2", [("d5", 30)])]})
    report = run_gate(pipeline / "snapshot.json", over, exact,
                   GatePolicy(gates=(GatedMeasure("Recall [context]"),), min_queries=1))
    assert report.baseline.means["Recall [context]"] == (1 / 4 + 1 / 2) / 2
    assert report.candidate.means["Recall [context]"] == (3 / 4 + 1 / 2) / 2
    costs = {(r.metric, r.stat): r for r in report.costs}
    assert costs[("context_tokens", "mean")].baseline == (60 + 30) / 2
    assert costs[("context_tokens", "mean")].candidate == (100 + 30) / 2


def test_a_stage_missing_from_a_run_is_exit_2_naming_it(pipeline: Path) -> None:
    with pytest.raises(InputError, match="stage 'reranked' of the snapshot's pipeline is "
                       "missing"):
        _run(pipeline, "two", {k: v for k, v in BASELINE.items() if k != "reranked"})
    baseline = _run(pipeline, "base", BASELINE)
    manifest = Path(f"{baseline}.manifest.json")
    document = json.loads(manifest.read_text())
    document["stages"] = [s for s in document["stages"] if s["name"] != "reranked"]
    manifest.write_text(json.dumps(document))
    result = _cli_check(pipeline, baseline, baseline)
    assert result.exit_code == 2, result.output
    assert "stage 'reranked' of the snapshot's pipeline is missing from the run" in result.output


def test_a_contract_changed_since_the_run_is_exit_3_naming_the_stage(pipeline: Path) -> None:
    baseline = _run(pipeline, "base", BASELINE)
    freeze(pipeline / "snapshot.json", queries=pipeline / "queries.jsonl",
           qrels=pipeline / "qrels.jsonl", corpus_version="c1", permissions_version="p1",
           measures=MEASURES, stages=(*STAGES[:2], StageContract("context", None, 80)))
    result = _cli_check(pipeline, baseline, baseline)
    assert result.exit_code == 3, result.output
    row = next(line for line in result.output.splitlines() if "stages context" in line)
    assert row.split()[-6:] == ["budget=100,", "position=2", "budget=100,", "position=2",
                                "budget=80,", "position=2"]


def test_a_changed_stage_file_is_exit_3_naming_the_stage(pipeline: Path) -> None:
    baseline = _run(pipeline, "base", BASELINE)
    reranked = baseline.parent / "reranked.jsonl"
    reranked.write_text(reranked.read_text().replace('"d2"', '"d9"', 1))
    result = _cli_check(pipeline, baseline, baseline)
    assert result.exit_code == 3 and "stage reranked's run file" in result.output


def test_a_budget_needs_token_counts(pipeline: Path) -> None:
    context = [{"query_id": "q1", "items": [{"id": "d2", "score": 1}]},
               {"query_id": "q2", "items": []}]
    with pytest.raises(InputError, match="budget of 100 tokens, and its items carry no token"):
        _run(pipeline, "untokened", {**BASELINE, "context": context})


def _latency_set(folder: Path, n: int, ratio: float,
                 places: tuple[str | None, str | None] = ("runner-a", "runner-a")
                 ) -> tuple[Path, Path]:
    """n queries, one stage each; the candidate takes ``ratio`` times the baseline's time;
    each run timed on its place of ``places`` (None: not recorded)."""
    ids = [f"q{i:02d}" for i in range(n)]
    _lines(folder / "queries.jsonl", [{"id": q} for q in ids])
    _lines(folder / "qrels.jsonl", [{"query_id": q, "doc_id": "d", "grade": 1} for q in ids])
    freeze(folder / "snapshot.json", queries=folder / "queries.jsonl",
           qrels=folder / "qrels.jsonl", corpus_version="c", permissions_version="p",
           measures=["Recall@1"])
    runs = []
    for (name, factor), place in zip((("base", 1.0), ("cand", ratio)), places):
        run = _lines(folder / f"{name}.jsonl", [
            _ranking(q, [("d", 5)], latency=(10.0 + i) * factor) for i, q in enumerate(ids)])
        record_run(folder / "snapshot.json", run, {}, "abc", "2026-12-01T00:00:00Z",
                   timed_on=place)
        runs.append(run)
    return runs[0], runs[1]


@pytest.mark.parametrize(("increase", "decision"), [(0.2, "regression"), (0.6, "pass")])
def test_latency_gate_on_a_known_ratio(tmp_path: Path, increase: float, decision: str) -> None:
    baseline, candidate = _latency_set(tmp_path, 60, 1.5)
    policy = GatePolicy(gates=(GatedMeasure("Recall@1"),),
                        costs=(CostGate("latency_ms", "p95", max_increase=increase),))
    report = run_gate(tmp_path / "snapshot.json", baseline, candidate, policy)
    row = next(r for r in report.costs if r.stat == "p95")
    # Every query takes 1.5 times as long: every resample's ratio is 1.5.
    assert row.ratio == pytest.approx(1.5) and row.ratio_low == pytest.approx(1.5)
    assert row.ratio_high == pytest.approx(1.5)
    assert row.decision == decision and report.verdict == decision
    assert row.baseline == pytest.approx(10 + 0.95 * 59)  # numpy's linear p95 of 10..69
    junit = report_junit(report)
    assert 'name="latency_ms p95"' in junit
    assert f'failures="{int(decision == "regression")}"' in junit


TIMED = {  # where each run was timed → the cost section's words (text; Markdown escapes "-")
    "one place": (("ci: ubuntu-24.04", "ci: ubuntu-24.04"),
                  "both runs' latencies timed on “ci: ubuntu-24.04”"),
    "two places": (("laptop", "ci: ubuntu-24.04"), ("latencies timed in different places: "
                   "the baseline's on “laptop”, the candidate's on “ci: ubuntu-24.04”")),
    "the baseline's only": (("laptop", None),
                            ("the baseline's latencies timed on “laptop”, the candidate's "
                            "place not recorded")),
    "the candidate's only": ((None, "laptop"),
                             ("the candidate's latencies timed on “laptop”, the baseline's "
                             "place not recorded")),
    "neither": ((None, None), "neither run records where its latencies were timed"),
}


@pytest.mark.parametrize("case", TIMED)
def test_the_cost_section_says_where_latencies_were_timed(tmp_path: Path, case: str) -> None:
    places, words = TIMED[case]
    baseline, candidate = _latency_set(tmp_path, 3, 1.0, places)
    result = CliRunner().invoke(cli, [
        "check", "--no-config", "--snapshot", str(tmp_path / "snapshot.json"), "--baseline",
        str(baseline), "--candidate", str(candidate), "--gate", "Recall@1=0.02", "--markdown",
        str(tmp_path / "report.md"), "--html", str(tmp_path / "report.html")])
    assert result.exit_code == 0, result.output
    assert f"Cost (paired over the queries both runs record; {words}):\n" in result.stdout
    markdown = (tmp_path / "report.md").read_text()
    escaped = words.replace("-", "\\-").replace(".", "\\.")
    assert f"**Cost** (paired over the queries both runs record; {escaped}):\n" in markdown
    page = (tmp_path / "report.html").read_text()
    assert f"<p>Paired over the queries both runs record; {words}.</p>" in page


def test_a_p95_of_too_few_queries_certifies_nothing_and_the_report_says_why(
        tmp_path: Path) -> None:
    baseline, candidate = _latency_set(tmp_path, 30, 1.5)
    policy = GatePolicy(gates=(GatedMeasure("Recall@1"),),
                        costs=(CostGate("latency_ms", "p95", max_increase=0.2),))
    report = run_gate(tmp_path / "snapshot.json", baseline, candidate, policy)
    row = next(r for r in report.costs if r.stat == "p95" and r.gate is not None)
    assert row.ratio == pytest.approx(1.5) and row.decision == "inconclusive"
    assert report.verdict == "inconclusive" and report.family == 1  # Recall@1 alone
    text = report_text(report)
    assert text.splitlines()[0] == (
        "INCONCLUSIVE: can't tell whether latency_ms p95 grew by more than the gate allows — "
        "30 queries, and at least 50 are needed to certify it (exit 0)")
    # numpy's p95 of 30 values lies between the 28th and 29th smallest: two lie above it
    assert ("  note: latency_ms p95: p95 of 30 queries lies between its 3rd-slowest and its "
            "2nd-slowest: at least 50 "
            "queries are needed to certify it; expected bias of the p95 of 30 queries "
            "(log-normal model): baseline −") in text
    document = json.loads(report_json(report))
    cost = next(r for r in document["costs"] if r["gate"] is not None)
    assert (cost["min_queries"], cost["in_family"]) == (50, False)
    assert cost["baseline_bias"] < 0 and cost["candidate_bias"] < 0
    assert "lies between its 3rd\\-slowest" in report_markdown(report)
    assert "lies between its 3rd-slowest" in report_junit(report)


def test_context_budget_gate_is_absolute(tmp_path: Path) -> None:
    baseline, candidate = _latency_set(tmp_path, 30, 1.0)
    policy = GatePolicy(gates=(GatedMeasure("Recall@1"),),
                        costs=(CostGate("context_tokens", "mean", max=4),))
    with pytest.raises(InputError, match="a cost is gated, and the baseline records no "
                       "context_tokens"):
        run_gate(tmp_path / "snapshot.json", baseline, candidate, policy)


def test_a_run_without_latency_has_no_latency_rows(tmp_path: Path) -> None:
    ids = [f"q{i}" for i in range(3)]
    _lines(tmp_path / "queries.jsonl", [{"id": q} for q in ids])
    _lines(tmp_path / "qrels.jsonl", [{"query_id": q, "doc_id": "d", "grade": 1} for q in ids])
    freeze(tmp_path / "snapshot.json", queries=tmp_path / "queries.jsonl",
           qrels=tmp_path / "qrels.jsonl", corpus_version="c", permissions_version="p",
           measures=["Recall@1"])
    run = _lines(tmp_path / "run.jsonl", [_ranking(q, [("d", 1)]) for q in ids])
    record_run(tmp_path / "snapshot.json", run, {}, "abc", "2026-12-01T00:00:00Z")
    report = run_gate(tmp_path / "snapshot.json", run, run,
                   GatePolicy(gates=(GatedMeasure("Recall@1"),)))
    assert report.costs == () and report.funnel is None
    assert not any("latency" in w for w in report.warnings)


def test_latency_on_some_queries_only_is_refused(tmp_path: Path) -> None:
    baseline, _ = _latency_set(tmp_path, 3, 1.0)
    rows = [json.loads(line) for line in baseline.read_text().splitlines()]
    del rows[1]["latency_ms"]
    _lines(baseline, rows)
    result = CliRunner().invoke(cli, ["score", str(tmp_path / "qrels.jsonl"), str(baseline)])
    assert result.exit_code == 2 and "query 'q01' has no latency_ms, and others do" in \
        result.output


@pytest.mark.parametrize("latency", [1e308, 10**400, 1e12 + 1])
def test_a_latency_too_large_to_sum_is_refused_at_its_line(pipeline: Path, latency) -> None:
    """Two stages of 1e308 ms each would sum to infinity: every latency is bounded, so no
    per-query total (and no cost statistic) can overflow."""
    stages = {stage: [dict(row) for row in rows] for stage, rows in BASELINE.items()}
    for stage in ("candidates", "reranked"):
        stages[stage][1]["latency_ms"] = latency
    run = pipeline / "huge"
    run.mkdir()
    args = [f"--stage={stage}={_lines(run / f'{stage}.jsonl', rows)}"
            for stage, rows in stages.items()]
    result = CliRunner().invoke(cli, ["run-manifest", "--snapshot",
                                      str(pipeline / "snapshot.json"), "--system", "name=huge",
                                      *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {run / 'candidates.jsonl'}:2: latency_ms ")
    assert "is not a number of milliseconds from 0 to 1,000,000,000,000" in result.stderr
    assert result.stderr.count("\n") == 1 and "Warning" not in result.output
    result = CliRunner().invoke(cli, ["score", str(pipeline / "qrels.jsonl"),
                                      str(run / "reranked.jsonl")])
    assert result.exit_code == 2 and f"{run / 'reranked.jsonl'}:2: latency_ms" in result.stderr
    stages["candidates"][1]["latency_ms"] = 1e12  # the largest accepted
    _lines(run / "candidates.jsonl", stages["candidates"])
    result = CliRunner().invoke(cli, ["score", str(pipeline / "qrels.jsonl"),
                                      str(run / "candidates.jsonl")])
    assert result.exit_code == 0, result.output


def test_short_lists_are_counted_and_score_no_better(tmp_path: Path) -> None:
    ids = [f"q{i}" for i in range(2)]
    _lines(tmp_path / "queries.jsonl", [{"id": q} for q in ids])
    _lines(tmp_path / "qrels.jsonl", [{"query_id": q, "doc_id": d, "grade": g} for q in ids
                                      for d, g in (("a", 1), ("b", 0), ("c", 0))])
    freeze(tmp_path / "snapshot.json", queries=tmp_path / "queries.jsonl",
           qrels=tmp_path / "qrels.jsonl", corpus_version="c", permissions_version="p",
           measures=["P@3"])
    full = _lines(tmp_path / "full.jsonl", [_ranking(q, [("a", 1), ("b", 1), ("c", 1)])
                                            for q in ids])
    short = _lines(tmp_path / "short.jsonl", [_ranking(q, [("a", 1)]) for q in ids])
    for run in (full, short):
        record_run(tmp_path / "snapshot.json", run, {}, "abc", "2026-12-01T00:00:00Z")
    report = run_gate(tmp_path / "snapshot.json", full, short,
                   GatePolicy(gates=(GatedMeasure("P@3"),), min_queries=1))
    assert report.baseline.unjudged_share == 0.0
    assert report.candidate.unjudged_share == pytest.approx(2 / 3)  # 2 empty slots of 3
    assert any(w.startswith("P@3: 2 queries of the candidate (baseline 0) rank fewer than 3")
               for w in report.warnings)


def test_stage_measures_parse_and_print() -> None:
    assert parse_contract("context:20:1000") == StageContract("context", 20, 1000)
    assert parse_contract("context::1000") == StageContract("context", None, 1000)
    assert parse_contract("candidates") == StageContract("candidates")
    for bad in ("a b:1", "x:0", "x:1:2:3", "x:-1", ":5"):
        with pytest.raises(InputError):
            parse_contract(bad)


def test_reports_show_the_funnel_and_a_regression_names_the_stage(pipeline: Path) -> None:
    baseline = _run(pipeline, "base", BASELINE)
    dropped = _run(pipeline, "drop", {**BASELINE, "context": [
        _ranking("q1", [("x1", 5)]), _ranking("q2", [("x1", 5)])]})
    # Two queries cannot certify a regression (the sign test's smallest p is 0.25): the
    # headline's wording for one is checked on the same report, its verdict set by hand.
    report = run_gate(pipeline / "snapshot.json", baseline, dropped,
                   GatePolicy(gates=(GatedMeasure("Recall [context]"),), min_queries=1))
    assert report.funnel is not None and report.funnel.worst is not None
    assert (report.funnel.worst.kind, report.funnel.worst.baseline,
            report.funnel.worst.candidate) == ("context", 1, 4)  # d6; and d1, d2, d5, d6
    failed = dataclasses.replace(report, verdict="regression", exit_code=1)
    text = report_text(failed)
    assert text.splitlines()[0].endswith("; evidence lost: dropped at packing (context), 1 → 4 "
                                         "of 6 units (exit 1)")
    assert "reach context (all items, 100 tokens)" in text
    assert "both runs' latencies timed on “ci-runner”" in text
    markdown = report_markdown(failed)
    assert "**Evidence funnel**" in markdown and "dropped at packing \\(context\\)" in markdown
    document = json.loads(report_json(report))
    assert document["funnel"]["worst"]["kind"] == "context"
    assert document["candidate"]["stages"] == ["candidates", "reranked", "context"]
    assert document["candidate"]["timed_on"] == "ci-runner"
    assert {(r["metric"], r["stat"]) for r in document["costs"]} == {
        ("latency_ms", "p50"), ("latency_ms", "p95"), ("context_tokens", "mean"),
        ("context_tokens", "p95")}


@pytest.mark.parametrize(("measures", "problem"), [
    (["Recall@4 [ranker]"], "reads stage 'ranker', which is not a stage of the snapshot"),
    (["Recall@5 [candidates]"], "reads 5 items of stage 'candidates', which passes on 4"),
    (["Recall [context]", "Recall"], "measure Recall [context] is listed twice"),
])
def test_snapshot_measures_must_read_a_stage_of_its_pipeline(tmp_path: Path, measures: list[str],
                                                             problem: str) -> None:
    _lines(tmp_path / "queries.jsonl", [{"id": "q1"}])
    _lines(tmp_path / "qrels.jsonl", [{"query_id": "q1", "doc_id": "d", "grade": 1}])
    with pytest.raises(InputError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        freeze(tmp_path / "snapshot.json", queries=tmp_path / "queries.jsonl",
               qrels=tmp_path / "qrels.jsonl", corpus_version="c", permissions_version="p",
               measures=measures, stages=STAGES)
    with pytest.raises(InputError, match="names a stage, and the snapshot has no pipeline"):
        freeze(tmp_path / "snapshot.json", queries=tmp_path / "queries.jsonl",
               qrels=tmp_path / "qrels.jsonl", corpus_version="c", permissions_version="p",
               measures=["Recall@4 [candidates]"])
    assert not (tmp_path / "snapshot.json").exists()


def test_stage_files_travel_with_an_approved_baseline(pipeline: Path) -> None:
    from retrieval_gate.commands.approve import approve_baseline

    run = _run(pipeline, "base", BASELINE)
    approval = approve_baseline(run, pipeline / "baselines", pipeline / "snapshot.json")
    assert sorted(p.name for p in approval.run.parent.iterdir()) == [
        "candidates.jsonl", "context.jsonl", "context.jsonl.manifest.json", "reranked.jsonl"]
    report = run_gate(pipeline / "snapshot.json", pipeline / "baselines", run,
                   GatePolicy(gates=(GatedMeasure("Recall [context]"),), min_queries=1))
    assert report.funnel is not None and all(r.diff == 0 for r in report.funnel.losses)


def test_resampled_percentiles_are_numpys() -> None:
    from retrieval_gate.decide.cost import _Sorted

    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 997, 5_000):
        values = rng.lognormal(size=n).round(1)  # ties too
        picks = rng.integers(0, n, size=(40, n))
        # resamples short of the top region a p95 is read from (a chance under 1e-9 in a
        # real one): all on the smallest value, and on the lower half
        picks[0] = np.argmin(values)
        picks[1] = np.argsort(values, kind="stable")[rng.integers(0, n // 2 + 1, size=n)]
        for stat, q in (("p50", 50), ("p95", 95)):
            assert np.array_equal(_Sorted(values).resampled(picks, stat),
                                  np.percentile(values[picks], q, axis=1))


def test_a_budgeted_stage_that_passes_on_nothing_needs_no_token_counts(pipeline: Path) -> None:
    """A packer that packed nothing wrote empty rankings: no item needs a token count, and the
    context loses every unit that reached the reranker."""
    baseline = _run(pipeline, "base", BASELINE)
    empty = _run(pipeline, "empty", {**BASELINE, "context": [{"query_id": "q1", "items": []},
                                                             {"query_id": "q2", "items": []}]})
    report = run_gate(pipeline / "snapshot.json", baseline, empty,
                   GatePolicy(gates=(GatedMeasure("Recall [context]"),), min_queries=1))
    assert report.candidate.means["Recall [context]"] == 0.0
    assert report.funnel is not None
    assert [(name, c) for name, _, c in report.funnel.reaching] == [
        ("candidates", 5), ("reranked", 4), ("context", 0)]
