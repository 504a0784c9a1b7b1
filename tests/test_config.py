"""The configuration under attack: what TOML can write but no setting can mean is one error line
naming the file and the key's JSON path, exit 2 — never a crash."""

from __future__ import annotations

import pytest
from conftest import gate

DEEP = "[" * 2000 + "]" * 2000
DEEP_TABLES = "{a=" * 2000 + "1" + "}" * 2000

GATE_TOML = {
    "alpha = nan": '$["alpha"]: nan is not a finite number — write a finite number',
    "alpha = inf": '$["alpha"]: inf is not a finite number',
    "tie-band = -inf": '$["tie-band"]: -inf is not a finite number',
    '[[gate]]\nmeasure = "nDCG@10"\nmargin = -nan':
        '$["gate"][0]["margin"]: nan is not a finite number',
    "resamples = inf": '$["resamples"]: inf is not a finite number',
    "snapshot = 1979-05-27T07:32:00Z": '$["snapshot"]: 1979-05-27T07:32:00+00:00 is a TOML date '
                                       "or time, which no setting takes",
    "baseline = 1979-05-27": '$["baseline"]: 1979-05-27 is a TOML date or time',
    "candidate = 07:32:00": '$["candidate"]: 07:32:00 is a TOML date or time',
    'snapshot = "a\\u0000b"': '$["snapshot"]: holds a NUL character, which no file path can '
                              "contain — remove it",
    "snapshot = 1": '$["snapshot"]: 1 is not a string',
    'baseline = ["a"]': '$["baseline"]: ["a"] is not a string',
    'candidate = {path = "x"}': '$["candidate"]: {"path": "x"} is not a string',
    f"slices = {DEEP}": '$["slices"]: nests arrays or inline tables deeper than can be read',
    f"[x]\nb.c = {DEEP_TABLES}": '$["x"]["b"]["c"]: nests arrays or inline tables deeper',
    '[[cost]]\nmetric = "latency_ms"\nstat = "p95"\nmax-increase = 0.2\nmin-queries = 0':
        '$["cost"][0]["min-queries"]: 0 is out of range',
    '[[cost]]\nmetric = "latency_ms"\nstat = "p95"\nmax-increase = 0.2\nmin-queries = 2.5':
        '$["cost"][0]["min-queries"]: 2.5 is not an integer',
}

PYPROJECT = {
    'tool = "retrieval-gate"': '$["tool"]: "retrieval-gate" is not a table — write the gate\'s '
                               "settings under [tool.retrieval-gate]",
    "[tool]\nretrieval-gate = 3": '$["tool"]["retrieval-gate"]: 3 is not a table',
    "[tool.retrieval-gate]\nalpha = nan": '$["tool"]["retrieval-gate"]["alpha"]: nan is not a '
                                          "finite number",
    "[tool.retrieval-gate]\nsnapshot = 1979-05-27":
        '$["tool"]["retrieval-gate"]["snapshot"]: 1979-05-27 is a TOML date or time',
    "[tool.retrieval-gate]\nresamples = 5": '$["tool"]["retrieval-gate"]["resamples"]: 5 is out '
                                            "of range",
    f"[tool.retrieval-gate]\nslices = {DEEP}":
        '$["tool"]["retrieval-gate"]["slices"]: nests arrays or inline tables deeper',
}


def refused(code: int, out: str, err: str, file: str, expected: str) -> None:
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: {file}:{expected}"), err
    assert " — " in err


@pytest.mark.parametrize("text", GATE_TOML, ids=[t[:30] for t in GATE_TOML])
def test_gate_toml(tmp_path, monkeypatch, text):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gate.toml").write_text(text + "\n")
    refused(*gate("check"), "gate.toml", GATE_TOML[text])


@pytest.mark.parametrize("text", PYPROJECT, ids=[t[:30] for t in PYPROJECT])
def test_pyproject_toml(tmp_path, monkeypatch, text):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(text + '\n[project]\nname = "x"\n')
    refused(*gate("check"), "pyproject.toml", PYPROJECT[text])
    refused(*gate("check", "--config", tmp_path / "pyproject.toml"),
            str(tmp_path / "pyproject.toml"), PYPROJECT[text])


def test_another_tools_table_is_not_read(tmp_path, monkeypatch):
    """Dates and NaN belong to other tools' tables; only [tool.retrieval-gate] is checked."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.other]\nwhen = 1979-05-27\nratio = nan\n[tool.retrieval-gate]\nalpha = 0.1\n")
    code, _, err = gate("check")
    assert code == 2 and err.startswith("error: --snapshot: is required — pass --snapshot PATH, "
                                        "or set snapshot = \"PATH\" in pyproject.toml")


def test_an_integer_too_long_to_convert_is_one_error_line(tmp_path):
    config = tmp_path / "gate.toml"
    config.write_text(f"alpha = {'9' * 4400}\n")
    code, _, err = gate("check", "--config", config)
    assert code == 2
    assert err == f"error: {config}: holds an integer of more than 4,300 digits — no setting " \
                  "needs more than a few digits: fix the value\n"


def test_a_path_too_long_for_the_system_is_invalid_input(repo):
    (repo / "gate.toml").write_text('snapshot = "examples/cranfield/snapshot.json"\n'
                                    'candidate = "examples/cranfield/runs/hybrid.trec"\n'
                                    f'baseline = "{"x" * 5000}"\n')
    code, _, err = gate("check")
    assert code == 2 and "cannot be used (File name too long) — give a shorter path" in err
    assert err.count("\n") == 1 and len(err) < 400
