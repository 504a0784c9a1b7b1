"""CI integration of `gate check`: GitHub mode (summary, annotations, outputs), JUnit XML and
zero-config runs (`gate baseline approve` is tested in test_approve.py)."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import ROOT, RUNS, gate

# bm25-titles against bm25: Recall@10 a regression; nDCG@10 (Δ −0.043) inconclusive at 0.05
MARGINS = ("--gate", "Recall@10=0.02", "--gate", "nDCG@10=0.05")

from retrieval_gate.report.github import MAX_PER_KIND, escape_data, escape_property


@pytest.fixture
def actions(tmp_path: Path) -> dict[str, str]:
    """A simulated GitHub Actions environment (files the runner would provide)."""
    return {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
            "GITHUB_OUTPUT": str(tmp_path / "output"), "RUNNER_TEMP": str(tmp_path)}


def outputs(path: str) -> dict[str, str]:
    """Parse ``name<<DELIMITER`` blocks (and ``name=value`` lines) of $GITHUB_OUTPUT."""
    lines, found = Path(path).read_text().splitlines(), {}
    i = 0
    while i < len(lines):
        name, sep, delimiter = lines[i].partition("<<")
        if sep:
            end = lines.index(delimiter, i + 1)
            found[name] = "\n".join(lines[i + 1:end])
            i = end + 1
        else:
            key, _, value = lines[i].partition("=")
            found[key] = value
            i += 1
    return found


# -- escaping ---------------------------------------------------------------------------------

def test_annotation_escaping():
    assert escape_data("50% of\r\nqueries: a,b") == "50%25 of%0D%0Aqueries: a,b"
    assert escape_property("50% of\r\nqueries: a,b") == "50%25 of%0D%0Aqueries%3A a%2Cb"
    assert escape_data("%0A") == "%250A"  # an escape sequence in the data is not decoded


# -- GitHub mode -------------------------------------------------------------------------------

def test_github_mode_regression(actions, tmp_path):
    # nDCG@10 drops by 0.043 (95% CI [−0.0735, −0.0150]): inconclusive at a margin of 0.05
    code, out, _ = gate("check", "--candidate", RUNS / "bm25-titles.trec", *MARGINS, env=actions)
    assert code == 1
    summary = Path(actions["GITHUB_STEP_SUMMARY"]).read_text()
    assert summary.splitlines()[1] == "### REGRESSION ❌ retrieval-gate"
    found = outputs(actions["GITHUB_OUTPUT"])
    assert found["verdict"] == "regression" and found["exit-code"] == "1"
    report = Path(found["report"])
    assert report == tmp_path / "retrieval-gate-report.json"
    assert json.loads(report.read_text())["verdict"] == "regression"
    commands = [line for line in out.splitlines() if line.startswith(("::error", "::warning"))]
    assert commands[0].startswith("::error title=retrieval regression%3A Recall@10::Recall@10")
    assert any(c.startswith("::warning title=retrieval inconclusive%3A nDCG@10::") for c in
               commands)
    assert "95%25 CI" in commands[0]


def test_github_mode_pass_is_explicit_and_json_goes_where_asked(actions, tmp_path, repo):
    code, out, _ = gate("check", "--github", "--json", tmp_path / "r.json", env={
        **actions, "GITHUB_ACTIONS": ""})
    assert code == 0 and out.splitlines()[1].startswith("PASS")  # after ::stop-commands::
    assert outputs(actions["GITHUB_OUTPUT"]) == {"verdict": "pass", "exit-code": "0",
                                                 "report": str(tmp_path / "r.json")}
    assert not any(line.startswith("::error") for line in out.splitlines())


def test_no_github_flag_writes_nothing_for_actions(actions):
    code, out, _ = gate("check", "--no-github", "--snapshot",
                        ROOT / "examples" / "cranfield" / "snapshot.json", "--baseline",
                        ROOT / "baselines" / "cranfield", "--candidate", RUNS / "hybrid.trec",
                        env=actions)
    assert code == 0 and "::" not in out
    assert not Path(actions["GITHUB_OUTPUT"]).exists()


@pytest.mark.parametrize("candidate, code, verdict", [
    ("missing.trec", 2, "invalid"),
])
def test_github_mode_invalid_input(actions, repo, candidate, code, verdict):
    got, out, err = gate("check", "--candidate", candidate, env=actions)
    assert got == code and err.startswith(f"error: {candidate}: run file not found")
    assert outputs(actions["GITHUB_OUTPUT"])["verdict"] == verdict
    assert out.startswith("::error title=retrieval-gate%3A invalid::missing.trec")
    assert "### INVALID" in Path(actions["GITHUB_STEP_SUMMARY"]).read_text()


def test_github_mode_not_comparable(actions, repo):
    (repo / "examples" / "cranfield" / "qrels.tsv").write_text(
        (repo / "examples" / "cranfield" / "qrels.tsv").read_text() + "1 0 2 1\n")
    code, out, _ = gate("check", env=actions)
    assert code == 3 and outputs(actions["GITHUB_OUTPUT"])["verdict"] == "not-comparable"
    assert "qrels file 'qrels.tsv' has sha256" in out


def test_annotations_are_capped_at_ten_per_kind(repo, actions):
    """Eleven small tagged slices: eleven small-n warnings plus the report's others, so ten
    ::warning lines and a summary line for the rest."""
    queries = repo / "examples" / "cranfield" / "queries.jsonl"
    rows = [json.loads(line) for line in queries.read_text().splitlines()]
    for i, row in enumerate(rows):
        row["tags"] = [f"t{i % 11}"]
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert gate("snapshot", "freeze", "--queries", queries, "--qrels",
                queries.with_name("qrels.tsv"), "--corpus-version", "c", "--unit",
                "document", "--permissions-version", "p", "-o", queries.with_name("snapshot.json"))[0] == 0
    for run in ("examples/cranfield/runs/bm25-titles.trec", "baselines/cranfield/bm25.trec"):
        assert gate("run-manifest", "--snapshot", queries.with_name("snapshot.json"),
                    "--run", run)[0] == 0
    slices = ", ".join(f'"t{i}"' for i in range(11))
    (repo / "gate.toml").write_text(
        'snapshot = "examples/cranfield/snapshot.json"\nbaseline = "baselines/cranfield"\n'
        'candidate = "examples/cranfield/runs/bm25-titles.trec"\nresamples = 1000\n'
        f'slices = [{slices}]\n[[gate]]\nmeasure = "Recall@10"\nmargin = 0.02\n')
    code, out, _ = gate("check", "--fail-on", "never", env=actions)
    assert code == 0
    report = json.loads(Path(outputs(actions["GITHUB_OUTPUT"])["report"]).read_text())
    expected = len(report["warnings"]) + sum(c["decision"] == "inconclusive"
                                             for c in report["comparisons"])
    assert expected > MAX_PER_KIND
    warnings = [line for line in out.splitlines() if line.startswith("::warning")]
    assert len(warnings) == MAX_PER_KIND + 1
    assert warnings[-1] == (f"::warning title=retrieval-gate::{expected - MAX_PER_KIND} more — "
                            "see the job summary and the JSON report")


# -- JUnit -------------------------------------------------------------------------------------

def test_junit_has_one_case_per_comparison(tmp_path, repo):
    code, _, _ = gate("check", "--candidate", "examples/cranfield/runs/bm25-titles.trec",
                      *MARGINS, "--junit", tmp_path / "junit.xml")
    assert code == 1
    suites = ElementTree.parse(tmp_path / "junit.xml").getroot()
    cases = suites.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["Recall@10 (all)", "nDCG@10 (all)"]
    assert suites.get("tests") == "2" and suites.get("failures") == "1"
    assert cases[0].find("failure").get("type") == "regression"
    assert cases[1].find("failure") is None  # inconclusive passes unless --fail-on inconclusive
    gate("check", "--candidate", "examples/cranfield/runs/bm25-titles.trec", *MARGINS,
         "--junit", tmp_path / "strict.xml", "--fail-on", "inconclusive")
    strict = ElementTree.parse(tmp_path / "strict.xml").getroot()
    assert strict.get("failures") == "2"


# -- zero-config -------------------------------------------------------------------------------

def test_bare_gate_check_runs_the_embedded_example(repo):
    code, out, _ = gate("check")
    assert code == 0
    assert out.startswith("PASS: no material regression; improved: Recall@10 (all), nDCG@10 "
                          "(all)")
    assert "candidate rrf (k=60) (examples/cranfield/runs/hybrid.trec) vs baseline bm25 " \
           "(library=bm25s==0.3.16) (baselines/cranfield/bm25.trec)" in out


def test_gate_toml_wins_over_pyproject_and_options_win_over_files(repo):
    (repo / "gate.toml").write_text(
        'snapshot = "examples/cranfield/snapshot.json"\nbaseline = "baselines/cranfield"\n'
        'candidate = "examples/cranfield/runs/bm25-titles.trec"\nfail-on = "never"\n')
    assert gate("check")[0] == 0  # the regression, but fail-on never
    assert gate("check", "--fail-on", "regression")[0] == 1
    assert gate("check", "--candidate", "examples/cranfield/runs/hybrid.trec",
                "--fail-on", "regression")[0] == 0


def test_pyproject_without_the_table_is_not_a_config(repo):
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\n')
    code, _, err = gate("check")
    assert code == 2 and "--snapshot: is required" in err
    code, _, err = gate("check", "--config", "pyproject.toml")
    assert code == 2 and "has no [tool.retrieval-gate] table" in err


def test_config_paths_are_relative_to_the_config_file(repo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = gate("check", "--config", repo / "pyproject.toml")
    assert code == 0 and f"candidate rrf (k=60) ({repo / 'examples/cranfield/runs/hybrid.trec'})" in out
