"""Reports land on every outcome: on exit 2 and 3 the requested files hold the error and no
statistics, in the report schema's error form."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner
from conftest import gate

from retrieval_gate.cli import cli
from retrieval_gate.formats import schema

ROOT = Path(__file__).resolve().parent.parent


def _check(tmp_path: Path, *args: str) -> tuple[int, dict[str, str]]:
    outs = {kind: tmp_path / f"report.{kind}" for kind in ("json", "md", "xml")}
    result = CliRunner().invoke(cli, ["check", *args, "--json", str(outs["json"]),
                                      "--markdown", str(outs["md"]), "--junit",
                                      str(outs["xml"])])
    return result.exit_code, {k: p.read_text(encoding="utf-8") for k, p in outs.items()}


@pytest.mark.parametrize("case", ["invalid", "not-comparable"])
def test_reports_land_on_exit_2_and_3(tmp_path: Path, case: str) -> None:
    snapshot = ROOT / "examples" / "cranfield" / "snapshot.json"
    candidate = tmp_path / "hybrid.trec"
    shutil.copy(ROOT / "examples" / "cranfield" / "runs" / "hybrid.trec", candidate)
    shutil.copy(ROOT / "examples" / "cranfield" / "runs" / "hybrid.trec.manifest.json",
                f"{candidate}.manifest.json")
    config = ROOT / "pyproject.toml"
    if case == "invalid":
        config = tmp_path / "gate.toml"
        config.write_text('alpha = 2\n[[gate]]\nmeasure = "<script>@10"\nmargin = 0.02\n')
        expected = 2
    else:
        with candidate.open("a") as handle:
            handle.write("1 Q0 9999 1001 0.0 changed\n")
        expected = 3
    code, files = _check(tmp_path, "--snapshot", str(snapshot), "--baseline",
                         str(ROOT / "baselines" / "cranfield"), "--candidate", str(candidate),
                         "--config", str(config))
    assert code == expected
    document = json.loads(files["json"])
    schema.validate(document, "report", "report.json")
    assert document["verdict"] == case and document["exit_code"] == expected
    assert set(document) == {"schema", "verdict", "exit_code", "errors"} and document["errors"]
    assert f"### {case.upper()} ⛔ retrieval-gate" in files["md"]
    assert "<script>" not in files["md"]
    error = ElementTree.fromstring(files["xml"]).find(".//testcase/error")
    assert error is not None and error.get("type") == case


def test_the_error_form_is_refused_with_statistics() -> None:
    with pytest.raises(Exception, match="report"):
        schema.validate({"verdict": "invalid", "exit_code": 2, "errors": ["x"],
                         "comparisons": []}, "report", "report.json")


def test_the_error_page_starts_no_workflow_command() -> None:
    """A job that prints the HTML error page must not read its lines as workflow commands."""
    from retrieval_gate.report.html import failure_html

    page = failure_html("x.jsonl:1: id ::error::forged ##[group]g — fix it", 2)
    assert "::" not in page and "##[" not in page
    assert "x.jsonl:1: id :&#58;error:&#58;forged #&#35;[group]g" in page


def test_the_not_comparable_table_is_a_table_in_markdown(repo, tmp_path):
    """A snapshot frozen again (another qrels version): exit 3, and the Markdown report (the
    pull-request comment) draws the changed-fields table as a table, one row per changed
    field with each run's value and the snapshot's, the advice as list items."""
    cranfield = repo / "examples" / "cranfield"
    assert gate("snapshot", "freeze", "--queries", cranfield / "queries.jsonl", "--qrels",
                cranfield / "qrels.tsv", "--qrels-version", "v2  with|pipe", "--unit",
                "document", "-o", cranfield / "snapshot.json")[0] == 0
    code, _, err = gate("check", "--markdown", tmp_path / "out.md")
    assert code == 3, err
    lines = (tmp_path / "out.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("| changed | baseline | candidate | snapshot |")
    assert lines[start - 1] == "" and lines[start + 1] == "|---|---|---|---|"
    rows = lines[start + 2:lines.index("", start)]
    assert "| qrels version | cranfield\\-grades\\-v1 | cranfield\\-grades\\-v1 | v2 with\\|pipe |" \
        in rows
    assert all(row.count(" | ") == 3 for row in rows)  # four cells each, the pipe escaped
    advice = [line for line in lines if line.startswith("- what to do — ")]
    assert [line.split(":")[0] for line in advice] == ["- what to do — baseline",
                                                       "- what to do — candidate"]
