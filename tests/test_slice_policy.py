"""Per-slice policy: margins per measure and slice, report-only comparisons, a minimum number
of queries per gate, and the command line's --gate and --no-config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from retrieval_gate.cli import cli
from retrieval_gate.core.errors import InputError
from retrieval_gate.decide.policy import GatedMeasure, GatePolicy
from retrieval_gate.gating.gate import run_gate
from retrieval_gate.inputs.config import config_from_mapping, parse_gate_option

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "examples" / "pydoc" / "snapshot.json"
BASELINE = ROOT / "baselines" / "pydoc"
TRUNCATED = ROOT / "examples" / "pydoc" / "runs" / "bm25-truncated.trec"


def _check(*gates: GatedMeasure, slices: tuple[str, ...] = ("all",)):
    return run_gate(SNAPSHOT, BASELINE, TRUNCATED, GatePolicy(gates=gates, slices=slices))


def test_a_margin_per_slice() -> None:
    report = _check(GatedMeasure("Recall@10", 0.08),
                    GatedMeasure("Recall@10", 0.5, slice="exceptions", min_queries=1))
    rows = {(c.measure, c.slice): c for c in report.comparisons}
    assert set(rows) == {("Recall@10", "all"), ("Recall@10", "exceptions")}
    assert rows[("Recall@10", "all")].margin == 0.08
    assert rows[("Recall@10", "exceptions")].margin == 0.5


def test_report_only_is_shown_never_gating_and_outside_the_family() -> None:
    gated = _check(GatedMeasure("Recall@10", 0.08))
    both = _check(GatedMeasure("Recall@10", 0.08), GatedMeasure("nDCG@10", 0.0,
                                                                 report_only=True))
    only = {c.measure: c for c in both.comparisons}
    assert only["nDCG@10"].report_only and not only["nDCG@10"].gating
    assert both.verdict == gated.verdict == "regression"
    assert both.family == 1  # the Bonferroni level and Holm span the gating one only
    assert only["Recall@10"].ci_high_adjusted == gated.comparisons[0].ci_high_adjusted
    assert only["Recall@10"].sign_p_holm == gated.comparisons[0].sign_p_holm
    passing = _check(GatedMeasure("FactCoverage@10", 0.5),
                     GatedMeasure("Recall@10", 0.01, report_only=True))
    assert passing.verdict == "pass" and passing.exit_code == 0


def test_below_its_min_queries_a_slice_is_too_small_to_decide() -> None:
    report = _check(GatedMeasure("Recall@10", 0.08),
                    GatedMeasure("Recall@10", 0.0, slice="exceptions", min_queries=500))
    small = next(c for c in report.comparisons if c.slice == "exceptions")
    assert small.too_small and small.decision == "inconclusive" and not small.gating
    assert "too small to decide" in (small.decision_note or "")
    from retrieval_gate.report.text import report_text
    assert "too small to decide" in report_text(report)
    assert report.verdict == "regression"  # from 'all' only


def test_gate_option_syntax() -> None:
    assert parse_gate_option("Recall@10=0.02") == GatedMeasure("Recall@10", 0.02)
    assert parse_gate_option("RR(rel=2)@10=0.03") == GatedMeasure("RR(rel=2)@10", 0.03)
    assert parse_gate_option("nDCG@10:paraphrase=0.05") == GatedMeasure("nDCG@10", 0.05,
                                                                        "paraphrase")
    assert parse_gate_option("Recall@50 [candidates]:all=0.1") == GatedMeasure(
        "Recall@50 [candidates]", 0.1, "all")
    for bad in ("Recall@10", "Recall@10=-1", "Recall@10=nan", "=0.1", ":all=0.1"):
        with pytest.raises(InputError):
            parse_gate_option(bad)


def test_config_gates_per_slice_and_twice_on_one_slice_is_refused(tmp_path: Path) -> None:
    config = config_from_mapping({"gate": [
        {"measure": "Recall@10", "margin": 0.08},
        {"measure": "Recall@10", "margin": 0.2, "slice": "exceptions", "report-only": True,
         "min-queries": 3}]}, "gate.toml", tmp_path)
    assert config.policy.gates[1] == GatedMeasure("Recall@10", 0.2, "exceptions", True, 3)
    with pytest.raises(InputError, match="gated twice on one slice"):
        _check(GatedMeasure("Recall@10", 0.08), GatedMeasure("R@10", 0.1))


def test_command_line_gates_replace_the_config_and_no_config_reads_none(tmp_path: Path,
                                                                        monkeypatch) -> None:
    (tmp_path / "gate.toml").write_text('[[gate]]\nmeasure = "Recall@5"\nmargin = 0.02\n')
    monkeypatch.chdir(tmp_path)
    args = ["check", "--snapshot", str(SNAPSHOT), "--baseline", str(BASELINE),
            "--candidate", str(TRUNCATED), "--json", str(tmp_path / "r.json")]
    runner = CliRunner()
    result = runner.invoke(cli, [*args, "--gate", "FactCoverage@10:all=0.5"])
    report = json.loads((tmp_path / "r.json").read_text())
    assert [c["measure"] for c in report["comparisons"]] == ["FactCoverage@10"]
    assert result.exit_code == 0
    result = runner.invoke(cli, [*args, "--no-config"])
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["settings"]["config"] is None
    assert [c["measure"] for c in report["comparisons"]] == ["Recall@10", "nDCG@10"]
    result = runner.invoke(cli, [*args, "--no-config", "--config", "gate.toml"])
    assert result.exit_code == 2 and "--no-config" in result.output
