"""The pytest plugin, run in pytest sessions of its own (``pytester``, in process): the
``retrieval_gate`` fixture found through the package's entry point, a passing verdict, a
regression failing the test with the text report, invalid input failing it with the error,
and ``--gate-report-dir`` / ``gate_report_dir`` writing the reports of every call."""

from __future__ import annotations

import json
import os
import shutil
from importlib.metadata import entry_points
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import BASELINE, ROOT, RUNS, SNAPSHOT, imported_by

import retrieval_gate
from retrieval_gate import pytest_plugin
from retrieval_gate.report.html import failure_html, report_html
from retrieval_gate.report.json import failure_json, report_json

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.skipif(bool(os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")),
                                reason="the plugin is loaded by its entry point, and "
                                       "PYTEST_DISABLE_PLUGIN_AUTOLOAD turns that off")

PROJECT = f"""\
[tool.pytest.ini_options]

[tool.retrieval-gate]
snapshot = "{SNAPSHOT.as_posix()}"
baseline = "{BASELINE.parent.as_posix()}"
candidate = "{(RUNS / 'hybrid.trec').as_posix()}"
"""


@pytest.fixture(scope="module", autouse=True)
def _loaded() -> None:
    """Run the gate and its renderers once in this process first, and import hypothesis (its
    plugin imports it at the end of every session): the in-process sessions drop the modules
    they import when they end, numpy cannot be imported twice, and each import of hypothesis
    in a session costs a second of assertion rewriting."""
    import hypothesis  # noqa: F401

    report = retrieval_gate.check(root=ROOT)
    report_json(report), report_html(report), failure_json("x", 2), failure_html("x", 2)


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A project configured like this repository's (absolute paths to its Cranfield example),
    with the regressing run and a run changed after its manifest under ``runs/``, and an
    empty folder ``sub/``."""
    pytester.makefile(".toml", pyproject=PROJECT)
    runs = pytester.mkdir("runs")
    for name in ("bm25-titles.trec", "bm25-titles.trec.manifest.json",
                 "hybrid.trec.manifest.json"):
        shutil.copy(RUNS / name, runs / name)
    (runs / "hybrid.trec").write_bytes((RUNS / "hybrid.trec").read_bytes().rstrip(b"\n"))
    pytester.mkdir("sub")
    return pytester.path


def test_the_plugin_is_registered_by_its_entry_point(pytestconfig):
    points = {point.name: point.value for point in entry_points(group="pytest11")}
    assert points.get("retrieval_gate") == "retrieval_gate.pytest_plugin", \
        "the installed metadata predates the plugin: pip install -e ."
    assert pytestconfig.pluginmanager.get_plugin("retrieval_gate") is pytest_plugin


def test_a_passing_verdict_returns_the_report(pytester, project, monkeypatch):
    pytester.makepyfile(**{"sub/test_gate": """
        def test_gate(retrieval_gate, request):
            assert request.config.pluginmanager.get_plugin("retrieval_gate") is not None
            report = retrieval_gate()
            assert (report.verdict, report.exit_code) == ("pass", 0)

        def test_fail_on_never(retrieval_gate):
            report = retrieval_gate(candidate="runs/bm25-titles.trec", fail_on="never")
            assert (report.verdict, report.exit_code) == ("regression", 0)
    """})
    monkeypatch.chdir(project / "sub")  # the configuration and runs/ are in the rootdir
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=2)
    assert f"rootdir: {project}" in result.stdout.str()


def test_a_regression_fails_the_test_with_the_text_report(pytester, project):
    pytester.makepyfile(test_gate="""
        def test_gate(retrieval_gate):
            retrieval_gate(candidate="runs/bm25-titles.trec")
    """)
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "REGRESSION: material regression in Recall@10 (all), nDCG@10 (all) (exit 1)",
        "candidate bm25 (indexed=title) (runs/bm25-titles.trec) vs baseline *",
        "measure * slice * decision",
        "Recall@10 * all * regression",
        "FAILED test_gate.py::test_gate - Failed: REGRESSION: material regression in R*",
    ])
    assert "Traceback" not in result.stdout.str()
    assert "retrieval_gate(candidate" not in result.stdout.str()  # no code: pytrace=False


REPLAY = f"""
    from pathlib import Path

    def replay(name):
        \"\"\"A retriever that answers each query with a shipped run's ranking.\"\"\"
        rows = {{}}
        for line in Path("{RUNS.as_posix()}", name).read_text().splitlines():
            query, _, doc, rank, score, _ = line.split()
            rows.setdefault(query, []).append((int(rank), doc, float(score)))
        return lambda query: [(doc, score) for _, doc, score in sorted(rows.get(query.id, []))]
"""


def test_a_retriever_is_run_then_checked(pytester, project):
    """``retrieval_gate(retriever=...)``: gate run, then gate check on its run — the same
    numbers as checking the run the retriever replays; a regressing retriever fails the
    test with the report; the run lands in the test's temporary folder."""
    expected = retrieval_gate.check(root=ROOT, candidate=RUNS / "hybrid.trec")
    pytester.makepyfile(test_gate=REPLAY + f"""
    def test_hybrid(retrieval_gate, tmp_path):
        report = retrieval_gate(retriever=replay("hybrid.trec"))
        assert report.verdict == "pass"
        assert [c.mean_diff for c in report.comparisons] == {
            [c.mean_diff for c in expected.comparisons]!r}
        assert report.candidate.path == str(tmp_path / "candidate.jsonl")
        report = retrieval_gate(retriever=replay("hybrid.trec"))  # a second call: its own file
        assert report.candidate.path == str(tmp_path / "candidate-2.jsonl")

    def test_titles(retrieval_gate):
        retrieval_gate(retriever=replay("bm25-titles.trec"))

    def test_both(retrieval_gate):
        retrieval_gate(candidate="runs/hybrid.trec", retriever=replay("hybrid.trec"))
    """)
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*REGRESSION: material regression in Recall@10 (all), nDCG@10 (all) (exit 1)*",
        ("*retriever: and candidate both given — give the run to check (candidate=) or the "
         "retriever to make it (retriever=), not both*"),
    ])
    assert "Traceback" not in result.stdout.str()


def test_input_the_gate_refuses_fails_the_test_with_the_error(pytester, project):
    pytester.makepyfile(test_gate="""
        def test_missing_run(retrieval_gate):
            retrieval_gate(candidate="runs/missing.trec")

        def test_bad_gate(retrieval_gate):
            retrieval_gate(gates=["Recall@10"])

        def test_changed_run(retrieval_gate):
            retrieval_gate(candidate="runs/hybrid.trec")

        def test_hostile_path(retrieval_gate):
            retrieval_gate(candidate="runs/x\\n::error::forged\\x1b[31m.trec")
    """)
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(failed=4)
    out = result.stdout.str()
    # each failure shows the message once (the short summary repeats it in full when pytest
    # runs on CI, so count within the failure sections)
    failures = out.split("short test summary info")[0]
    assert failures.count("retrieval-gate could not decide (exit 2):") == 3
    # as gate check shows it: the line break and other control characters are escapes, so the
    # message stays one line and no line is a workflow command
    assert "runs/x\\n::error::forged\\x1b[31m.trec: run file not found" in out
    assert "\n::error::" not in out and "\x1b" not in out
    assert failures.count("retrieval-gate could not decide (exit 3):") == 1
    result.stdout.fnmatch_lines(["*runs/missing.trec*", "gates: 'Recall@10' is not *",
                                 "*runs/hybrid.trec*"])
    assert "Traceback" not in out and "retrieval_gate(" not in out
    assert "Error:" not in out and "During handling" not in out  # the message, once


def test_report_dir_writes_both_reports_on_every_outcome(pytester, project):
    pytester.makepyfile(test_reported="""
        def test_pass(retrieval_gate):
            retrieval_gate()
            retrieval_gate(gates="Recall@10=0.5")

        def test_regression(retrieval_gate):
            retrieval_gate(candidate="runs/bm25-titles.trec")

        def test_invalid(retrieval_gate):
            retrieval_gate(candidate="runs/missing.trec")

        def test_unused():
            pass
    """)
    result = pytester.runpytest_inprocess("--gate-report-dir", "reports", "--junitxml",
                                          "junit.xml")
    result.assert_outcomes(passed=2, failed=2)
    reports = project / "reports"
    verdicts = {path.stem: json.loads(path.read_text())["verdict"]
                for path in reports.glob("*.json")}
    assert verdicts == {"test_reported.py_test_pass": "pass",
                        "test_reported.py_test_pass-2": "pass",
                        "test_reported.py_test_regression": "regression",
                        "test_reported.py_test_invalid": "invalid"}
    assert {path.stem for path in reports.glob("*.html")} == set(verdicts)
    recorded = _junit_properties(project / "junit.xml")
    assert recorded["test_unused"] == []
    assert recorded["test_pass"] == [
        ("gate_report_json", str(reports / "test_reported.py_test_pass.json")),
        ("gate_report_html", str(reports / "test_reported.py_test_pass.html")),
        ("gate_report_json", str(reports / "test_reported.py_test_pass-2.json")),
        ("gate_report_html", str(reports / "test_reported.py_test_pass-2.html"))]
    assert [name for name, _ in recorded["test_invalid"]] == ["gate_report_json",
                                                              "gate_report_html"]


def test_report_dir_written_from_another_thread(pytester, project):
    """Reports written outside the main thread, where Ctrl-C cannot be held (nor arrive):
    written as from the main thread."""
    pytester.makepyfile(test_threaded="""
        import threading

        def test_gate(retrieval_gate):
            verdicts = []
            thread = threading.Thread(target=lambda: verdicts.append(retrieval_gate().verdict))
            thread.start()
            thread.join()
            assert verdicts == ["pass"]
    """)
    result = pytester.runpytest_inprocess("--gate-report-dir", "reports")
    result.assert_outcomes(passed=1)
    reports = project / "reports"
    assert sorted(path.name for path in reports.iterdir()) == [
        "test_threaded.py_test_gate.html", "test_threaded.py_test_gate.json"]


def test_report_dir_paths_are_relative_to_the_ini_file_or_the_invocation(pytester, project,
                                                                          monkeypatch):
    pytester.makefile(".toml", pyproject=PROJECT.replace(
        "[tool.pytest.ini_options]\n", '[tool.pytest.ini_options]\ngate_report_dir = "out"\n'))
    pytester.makepyfile(test_gate="""
        def test_gate(retrieval_gate, record_property):
            retrieval_gate()
    """)
    monkeypatch.chdir(project / "sub")
    pytester.runpytest_inprocess(project).assert_outcomes(passed=1)
    assert (project / "out" / "test_gate.py_test_gate.json").is_file()
    pytester.runpytest_inprocess(project, "--gate-report-dir", "given").assert_outcomes(passed=1)
    assert (project / "sub" / "given" / "test_gate.py_test_gate.html").is_file()


def test_a_report_dir_that_cannot_be_made_fails_the_test(pytester, project):
    (project / "taken").write_text("a file\n")
    pytester.makepyfile(test_gate="""
        def test_gate(retrieval_gate):
            retrieval_gate()
    """)
    result = pytester.runpytest_inprocess("--gate-report-dir", "taken")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"--gate-report-dir {project / 'taken'}: cannot be created *"])
    assert "Traceback" not in result.stdout.str()


def _junit_properties(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Each test case's name → its recorded (name, value) properties, in order."""
    cases = ElementTree.parse(path).getroot().iter("testcase")
    return {case.get("name", ""): [(p.get("name", ""), p.get("value", ""))
                                   for p in case.iter("property")] for case in cases}


@pytest.mark.parametrize("nodeid, taken, stem", [
    ("tests/test_x.py::test_y", set(), "tests_test_x.py_test_y"),
    ("tests/test_x.py::test_y[a b/c]", set(), "tests_test_x.py_test_y_a_b_c"),
    ("tests/test_x.py::test_y", {"tests_test_x.py_test_y"}, "tests_test_x.py_test_y-2"),
    ("../.hidden::é", set(), "hidden"),
    ("::", set(), "test"),
])
def test_report_names_are_safe_file_names(nodeid, taken, stem):
    assert pytest_plugin._unique(taken, nodeid) == stem and stem in taken


def test_long_node_ids_are_shortened_and_stay_distinct():
    taken: set[str] = set()
    stems = {pytest_plugin._unique(taken, f"test_x.py::test[{'a' * 300}{i}]") for i in range(3)}
    assert len(stems) == 3 and all(len(s) == pytest_plugin._STEM for s in stems)


def test_loading_the_plugin_imports_nothing_heavy():
    assert imported_by("import retrieval_gate.pytest_plugin",
                       ("numpy", "scipy", "click", "retrieval_gate.api")) == []
