"""The output formats, by name: ``gate check --output-format``, its report-file options
(``--json``, ``--markdown``, ``--junit``, ``--html``) and their error forms all come from one
registry, and print or write exactly what the format's renderer makes of the report."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BASELINE, RUNS, SNAPSHOT, gate

import retrieval_gate
from retrieval_gate.report.files import write_reports
from retrieval_gate.report.registry import FILES, RENDERERS, STDOUT, renderer

TITLES = RUNS / "bm25-titles.trec"
RUN = ("--no-config", "--snapshot", SNAPSHOT, "--baseline", BASELINE, "--candidate", TITLES)


@pytest.fixture(scope="module")
def report() -> retrieval_gate.Report:
    """The report ``gate check RUN`` decides (a regression)."""
    return retrieval_gate.check(str(TITLES), baseline=str(BASELINE), snapshot=str(SNAPSHOT),
                                config=False)


def test_the_formats_have_one_name_and_one_suffix_each() -> None:
    assert len({r.name for r in RENDERERS}) == len({r.suffix for r in RENDERERS}) == len(RENDERERS)
    assert STDOUT == ("text", "json", "markdown")
    assert [r.name for r in FILES] == ["json", "markdown", "junit", "html"]
    assert all(r.fails is not None for r in FILES)  # a file is written on every outcome
    with pytest.raises(ValueError, match="no output format 'pdf': one of text, json"):
        renderer("pdf")
    with pytest.raises(ValueError, match="the text format has no error form"):
        renderer("text").failure("x", 2)


def test_check_offers_every_format() -> None:
    code, out, _ = gate("check", "--help")
    assert code == 0
    assert f"--output-format [{'|'.join(STDOUT)}]" in out
    for r in FILES:
        assert f"--{r.name} FILE" in out


def test_every_output_is_its_renderer_s(tmp_path: Path, report) -> None:
    files = {r.name: tmp_path / f"report{r.suffix}" for r in FILES}
    code, out, _ = gate("check", *RUN, *(a for r in FILES for a in (f"--{r.name}",
                                                                       files[r.name])))
    assert code == 1 and report.exit_code == 1
    assert out == renderer("text").render(report)
    for name, path in files.items():
        assert path.read_text(encoding="utf-8") == renderer(name).render(report), name
    assert gate("check", *RUN, "--output-format", "json")[1] == renderer("json").render(report)


def test_every_error_file_is_its_format_s_error_form(tmp_path: Path) -> None:
    files = {r.name: tmp_path / f"report{r.suffix}" for r in FILES}
    missing = tmp_path / "missing.trec"
    code, _, err = gate("check", "--no-config", "--snapshot", SNAPSHOT, "--baseline", BASELINE,
                        "--candidate", missing,
                        *(a for r in FILES for a in (f"--{r.name}", files[r.name])))
    assert code == 2
    message = err.removeprefix("error: ")
    for name, path in files.items():
        assert path.read_text(encoding="utf-8") == renderer(name).failure(message, 2), name


def test_a_report_file_of_no_format_is_refused(tmp_path: Path, report) -> None:
    with pytest.raises(ValueError, match="no report file format text"):
        write_reports(report, "text", {"text": str(tmp_path / "r.txt")})
    assert list(tmp_path.iterdir()) == []
