"""`gate check` end to end on the shipped Cranfield example and on small hand-made test sets:
verdicts and exit codes, comparability, configuration, reports and determinism."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import BASELINE, CRANFIELD, RUNS, SNAPSHOT, gate, imported_by
from jsonschema import Draft202012Validator

from retrieval_gate.decide.policy import GatedMeasure, GatePolicy, decide, exit_code, verdict
from retrieval_gate.formats.schema import schema
from retrieval_gate.gating.gate import run_gate
from retrieval_gate.report.markdown import MARKER


def gate_check(candidate: Path, *extra: str | Path, baseline: Path = BASELINE,
               snapshot: Path = SNAPSHOT) -> tuple[int, str, str]:
    return gate("check", "--snapshot", snapshot, "--baseline", baseline, "--candidate",
                candidate, *extra)


def report_of(candidate: Path, *extra: str | Path, **kwargs) -> tuple[int, dict]:
    code, out, err = gate_check(candidate, "--output-format", "json", *extra, **kwargs)
    assert code in (0, 1, 4), err
    document = json.loads(out)
    Draft202012Validator(schema("report")).validate(document)
    return code, document


# -- the decision rule -----------------------------------------------------------------------

@pytest.mark.parametrize("args, expected", [
    ((50, -0.03, -0.05, -0.01, 0.01, 0.02, 0.05), "regression"),
    ((50, -0.03, -0.05, -0.01, 0.06, 0.02, 0.05), "inconclusive"),  # sign test not significant
    ((50, -0.03, -0.05, 0.001, 0.01, 0.02, 0.05), "inconclusive"),  # interval reaches 0
    ((50, -0.01, -0.03, -0.001, 0.01, 0.02, 0.05), "inconclusive"),  # drop below the margin,
    ((50, -0.01, -0.019, -0.001, 0.01, 0.02, 0.05), "pass"),        # but not non-inferior
    ((50, 0.0, -0.02, 0.02, 1.0, 0.02, 0.05), "inconclusive"),      # low end exactly −margin
    ((50, 0.05, 0.01, 0.09, 1.0, 0.02, 0.05), "pass"),
    ((0, 0.0, 0.0, 0.0, 1.0, 0.02, 0.05), "inconclusive"),          # no query
])
def test_decision_rule(args, expected):
    assert decide(*args) == expected


def test_verdict_and_exit_codes():
    assert verdict(["pass", "inconclusive", "regression"]) == "regression"
    assert verdict(["pass", "inconclusive"]) == "inconclusive"
    assert verdict(["pass", "pass"]) == "pass"
    assert [exit_code(v, "regression") for v in ("pass", "regression", "inconclusive")] == [0, 1, 0]
    assert [exit_code(v, "inconclusive") for v in ("pass", "regression", "inconclusive")] == [0, 1,
                                                                                              4]
    assert [exit_code(v, "never") for v in ("pass", "regression", "inconclusive")] == [0, 0, 0]


# -- the shipped example ---------------------------------------------------------------------

def test_cranfield_hybrid_passes_with_improvement():
    code, doc = report_of(RUNS / "hybrid.trec")
    assert code == 0 and doc["verdict"] == "pass" and doc["exit_code"] == 0
    assert [(c["measure"], c["slice"]) for c in doc["comparisons"]] == [("Recall@10", "all"),
                                                                         ("nDCG@10", "all")]
    for c in doc["comparisons"]:
        assert c["n"] == 225 and c["decision"] == "pass" and c["improvement"] is True
        assert c["ci_low"] > 0 and c["ci_method"] == "bca"
        assert c["wins"] + c["losses"] + c["ties"] == 225
        assert c["mean_diff"] == pytest.approx(c["candidate_mean"] - c["baseline_mean"],
                                               abs=1e-12)
    assert doc["snapshot"]["name"] == "cranfield"
    assert doc["baseline"]["means"]["nDCG@10"] < doc["candidate"]["means"]["nDCG@10"]


def test_cranfield_regression_candidate_exits_1_naming_the_measures():
    code, out, _ = gate_check(RUNS / "bm25-titles.trec")
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith("REGRESSION: material regression in Recall@10 (all)")
    _, doc = report_of(RUNS / "bm25-titles.trec")
    regressed = [c for c in doc["comparisons"] if c["decision"] == "regression"]
    assert regressed and all(c["ci_high"] < 0 and c["p_regression_holm"] < 0.05
                             and c["mean_diff"] <= -c["margin"] for c in regressed)
    assert doc["newly_failing"]["measure"] == "Hit@10" and doc["newly_failing"]["queries"]
    assert doc["top_regressions"] and all(r["diff"] < 0 for r in doc["top_regressions"])


def test_a_a_comparison_passes():
    code, doc = report_of(BASELINE)
    assert code == 0 and doc["verdict"] == "pass"
    for c in doc["comparisons"]:
        assert (c["mean_diff"], c["ci_low"], c["ci_high"]) == (0.0, 0.0, 0.0)
        assert c["ci_method"] == "constant" and c["ties"] == 225 and c["sign_p"] == 1.0
        assert c["improvement"] is False and c["mde"] == 0.0
    assert doc["newly_failing"]["queries"] == [] and doc["top_regressions"] == []


def test_fail_on_never_exits_0_on_regression():
    code, _, _ = gate_check(RUNS / "bm25-titles.trec", "--fail-on", "never")
    assert code == 0


def test_json_report_is_byte_identical_across_runs_and_records_the_seed(tmp_path):
    outputs = []
    for name in ("a.json", "b.json"):
        code, _, _ = gate_check(RUNS / "dense.trec", "--json", tmp_path / name)
        assert code == 0
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1]
    document = json.loads(outputs[0])
    assert document["settings"]["seed"] == 0 and document["settings"]["resamples"] == 10000


def test_markdown_and_json_outputs_are_written(tmp_path):
    code, out, _ = gate_check(RUNS / "hybrid.trec", "--json", tmp_path / "r.json", "--markdown",
                              tmp_path / "r.md")
    assert code == 0 and out.startswith("PASS: no material regression")
    markdown = (tmp_path / "r.md").read_text()
    assert markdown.startswith(MARKER + "\n### PASS ✅ retrieval-gate")
    assert "| Recall@10 | all | 225 |" in markdown and "<details>" in markdown
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "pass"


def test_run_made_on_another_snapshot_is_not_comparable(tmp_path):
    folder = tmp_path / "cranfield"
    shutil.copytree(CRANFIELD, folder)
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl",
                        "--queries-version", "cranfield-225-v1", "--qrels", folder / "qrels.tsv",
                        "--qrels-version", "cranfield-grades-v2", "--corpus-version",
                        "cran.all.1400", "--corpus-file", folder / "corpus.jsonl",
                        "--chunking-version", "whole-document", "--chunking-param",
                        "unit=document", "--permissions-version", "public", "-o",
                        folder / "snapshot.json")
    assert code == 0, err
    code, out, err = gate_check(folder / "runs" / "hybrid.trec", snapshot=folder / "snapshot.json")
    assert code == 3 and out == ""
    assert "not comparable: the baseline " in err and " and the candidate " in err
    row = next(line for line in err.splitlines() if "qrels version" in line)
    assert row.split()[1:] == ["qrels", "version", "cranfield-grades-v1", "cranfield-grades-v1",
                               "cranfield-grades-v2"]
    assert ("what to do — baseline: re-run the baseline system on the new snapshot and approve "
            "it (chunking, qrels changed)") in err
    assert "what to do — candidate: re-run it on the current snapshot (chunking, qrels changed)" in err


# -- small hand-made test sets ---------------------------------------------------------------

def _write_set(folder: Path, base: dict[str, float], cand: dict[str, float],
               tags: dict[str, list[str]] | None = None) -> None:
    """Queries q1..qN, each with one relevant document 'rel'; a run ranks 'rel' at the rank
    1/value (RR), or not at all for 0."""
    folder.mkdir(exist_ok=True)
    tags = tags or {}
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"id": q, "text": f"question {q} | with a pipe", "tags": tags.get(q, [])})
        + "\n" for q in base))
    (folder / "qrels.tsv").write_text("".join(f"{q} 0 rel 1\n" for q in base))
    for name, values in (("base.trec", base), ("cand.trec", cand)):
        lines = []
        for q, rr in values.items():
            rank_of_rel = round(1 / rr) if rr else None
            for rank in range(1, 11):
                doc = "rel" if rank == rank_of_rel else f"junk{rank}"
                lines.append(f"{q} Q0 {doc} {rank} {100 - rank} t\n")
        (folder / name).write_text("".join(lines))
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
                        folder / "qrels.tsv", "--corpus-version", "c", "--unit", "document",
                        "--permissions-version", "p", "-m", "RR@10", "-m", "Hit@10", "-m",
                        "nDCG@10", "-m", "Recall@10", "-o", folder / "snapshot.json")
    assert code == 0, err
    for run in ("base.trec", "cand.trec"):
        code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json", "--run",
                            folder / run, "--created", "2026-01-01T00:00:00Z", "--commit", "x")
        assert code == 0, err


def test_a_plain_check_imports_only_what_it_uses(tmp_path):
    """Two TREC runs on a snapshot pinning no corpus, permissions or per-query scores, the text
    report printed and the JSON one written: no jsonschema (the manifests pass the fast schema
    check), no reader of corpora, chunk tables, permissions or score files, no renderer not
    asked for, no scipy."""
    _write_set(tmp_path / "s", {f"q{i}": 1.0 for i in range(1, 9)},
               {f"q{i}": 0.5 for i in range(1, 9)})
    s = tmp_path / "s"
    args = ["check", "--snapshot", s / "snapshot.json", "--baseline", s / "base.trec",
            "--candidate", s / "cand.trec", "--no-config", "--json", tmp_path / "r.json"]
    code = ("from retrieval_gate.cli import cli\n"
            f"try:\n    cli({[str(a) for a in args]!r}, prog_name='gate')\n"
            "except SystemExit:\n    pass")
    unused = ("jsonschema", "scipy", "html", "retrieval_gate.formats.corpus",
              "retrieval_gate.formats.permissions", "retrieval_gate.formats.scores",
              "retrieval_gate.inputs.answer_scores", "retrieval_gate.scoring.visibility",
              "retrieval_gate.report.markdown", "retrieval_gate.report.html",
              "retrieval_gate.report.junit", "retrieval_gate.report.github")
    assert imported_by(code, (*unused, "numpy")) == ["numpy"]
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "inconclusive"  # 8 queries


def test_inconclusive_and_fail_on_inconclusive(tmp_path):
    base = {f"q{i}": 1.0 for i in range(1, 9)}
    cand = {**base, "q1": 0.5, "q2": 0.5, "q3": 0.0}  # a large drop on 3 of 8 queries
    _write_set(tmp_path / "s", base, cand)
    s = tmp_path / "s"
    args = {"snapshot": s / "snapshot.json", "baseline": s / "base.trec"}
    code, out, _ = gate_check(s / "cand.trec", **args)
    assert code == 0 and out.startswith("INCONCLUSIVE: can't rule out a drop larger than")
    code, _, _ = gate_check(s / "cand.trec", "--fail-on", "inconclusive", **args)
    assert code == 4
    _, doc = report_of(s / "cand.trec", "--fail-on", "inconclusive", **args)
    assert doc["verdict"] == "inconclusive" and doc["exit_code"] == 4
    assert any("only 8 queries" in w for w in doc["warnings"])


def test_config_file_margins_slices_and_errors(tmp_path):
    base = {f"q{i}": 1.0 for i in range(1, 41)}
    cand = {**base, **{f"q{i}": 0.0 for i in range(1, 21)}}  # the tagged half loses everything
    tags = {f"q{i}": ["hard"] for i in range(1, 21)}
    s = tmp_path / "s"
    _write_set(s, base, cand, tags)
    (s / "gate.toml").write_text('snapshot = "snapshot.json"\nbaseline = "base.trec"\n'
                                 'candidate = "cand.trec"\nslices = ["all", "hard"]\n'
                                 'resamples = 2000\nseed = 7\nmin-queries = 20\n'
                                 '[[gate]]\nmeasure = "MRR@10"\nmargin = 0.05\n')
    code, out, err = gate("check", "--config", s / "gate.toml", "--output-format", "json")
    assert code == 1, err
    doc = json.loads(out)
    assert [(c["measure"], c["slice"], c["n"]) for c in doc["comparisons"]] == [
        ("RR@10", "all", 40), ("RR@10", "hard", 20)]
    assert all(c["decision"] == "regression" and c["margin"] == 0.05 for c in doc["comparisons"])
    assert doc["settings"]["seed"] == 7 and doc["settings"]["config"] == str(s / "gate.toml")
    hard = doc["comparisons"][1]
    assert hard["ci_method"] == "constant" and hard["mean_diff"] == -1.0

    (s / "gate.toml").write_text('[[gate]]\nmeasure = "AP@10"\nmargin = 0.02\n')
    code, _, err = gate("check", "--config", s / "gate.toml", "--snapshot", s / "snapshot.json",
                        "--baseline", s / "base.trec", "--candidate", s / "cand.trec")
    assert code == 2 and "gated measure AP@10 is not one of the snapshot's measures" in err
    (s / "gate.toml").write_text('slices = ["nobody"]\nmargins = 1\n')
    code, _, err = gate("check", "--config", s / "gate.toml", "--snapshot", s / "snapshot.json",
                        "--baseline", s / "base.trec", "--candidate", s / "cand.trec")
    assert code == 2 and "unknown field 'margins'" in err
    (s / "gate.toml").write_text('slices = ["nobody"]\n')
    code, _, err = gate("check", "--config", s / "gate.toml", "--snapshot", s / "snapshot.json",
                        "--baseline", s / "base.trec", "--candidate", s / "cand.trec")
    assert code == 2 and "slice 'nobody' matches no answerable query" in err
    (s / "gate.toml").write_text('alpha = "x"\n[[gate]]\nmargin = -1\n')
    code, _, err = gate("check", "--config", s / "gate.toml")
    assert code == 2 and len(err.splitlines()) == 3  # every schema error at once


def test_markdown_escapes_query_text(tmp_path):
    base = {f"q{i}": 1.0 for i in range(1, 5)}
    cand = {**base, "q1": 0.0}
    _write_set(tmp_path / "s", base, cand)
    s = tmp_path / "s"
    _, out, _ = gate_check(s / "cand.trec", "--output-format", "markdown",
                           snapshot=s / "snapshot.json", baseline=s / "base.trec")
    assert "question q1 \\| with a pipe" in out and "question q1 | with" not in out


def test_missing_inputs_are_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = gate("check")
    assert code == 2 and err.startswith("error: --snapshot: is required")


def test_library_call_matches_the_cli():
    report = run_gate(SNAPSHOT, BASELINE, RUNS / "hybrid.trec",
                   GatePolicy(gates=(GatedMeasure("nDCG@10", 0.01),), resamples=1000))
    assert report.verdict == "pass" and len(report.comparisons) == 1
    assert report.comparisons[0].margin == 0.01


@pytest.mark.parametrize("extra_line", ["1 Q0 999 101 0.001 rrf60\n", "1 Q0 broken\n"])
def test_a_run_changed_after_its_manifest_is_not_comparable(tmp_path, extra_line):
    """Scored and hashed at the same time; a changed run is reported as changed (exit 3) even
    when it no longer parses."""
    run = tmp_path / "hybrid.trec"
    shutil.copy(RUNS / "hybrid.trec", run)
    shutil.copy(RUNS / "hybrid.trec.manifest.json", tmp_path / "hybrid.trec.manifest.json")
    assert gate_check(run)[0] == 0
    with open(run, "a") as handle:
        handle.write(extra_line)
    code, out, err = gate_check(run)
    assert code == 3 and out == ""
    assert "the run changed after its manifest was written" in err
