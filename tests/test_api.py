"""The one-call library API on the embedded Cranfield example: ``retrieval_gate.check`` with
the repository's configuration and with arguments winning over it, ``retrieval_gate.score``
on paths and on objects already read, and the lazy top-level exports."""

from __future__ import annotations

import json
import pickle
import re
import shutil
from pathlib import Path

import pytest
from conftest import BASELINE, CRANFIELD, ROOT, RUNS, SNAPSHOT, imported_by

import retrieval_gate
from retrieval_gate import GatedMeasure, GateError, InputError, Report
from retrieval_gate.core.errors import NotComparableError
from retrieval_gate.formats import read_qrels, read_run

TITLES = RUNS / "bm25-titles.trec"
QRELS = CRANFIELD / "qrels.tsv"


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The repository's root as the current folder (its pyproject.toml configures the gate)."""
    monkeypatch.chdir(ROOT)
    return ROOT


def gated(report: Report) -> list[tuple[str, str, float]]:
    """(measure, slice, margin) of every comparison the report made."""
    return [(c.measure, c.slice, c.margin) for c in report.comparisons]


# -- check -----------------------------------------------------------------------------------

def test_check_with_the_repositorys_configuration_passes(at_root):
    report = retrieval_gate.check()
    assert (report.verdict, report.exit_code, report.config) == ("pass", 0, "pyproject.toml")
    assert report.candidate.path.endswith("hybrid.trec")


def test_a_candidate_given_wins_over_the_configuration(at_root):
    report = retrieval_gate.check("examples/cranfield/runs/bm25-titles.trec")
    assert (report.verdict, report.exit_code) == ("regression", 1)
    assert report.candidate.path == "examples/cranfield/runs/bm25-titles.trec"
    assert "measures" in report.reasons


def test_gates_given_replace_the_configurations(at_root):
    report = retrieval_gate.check(TITLES, gates=["Recall@10=0.5"])
    assert gated(report) == [("Recall@10", "all", 0.5)]
    assert (report.verdict, report.exit_code) == ("pass", 0)
    one = retrieval_gate.check(TITLES, gates=GatedMeasure("nDCG@10", 0.5))
    assert gated(one) == [("nDCG@10", "all", 0.5)]


def test_fail_on_given_wins_over_the_configuration(at_root):
    report = retrieval_gate.check(TITLES, fail_on="never")
    assert (report.verdict, report.exit_code) == ("regression", 0)


def test_no_configuration_with_explicit_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = retrieval_gate.check(TITLES, baseline=BASELINE, snapshot=SNAPSHOT, config=False)
    assert report.config is None and report.exit_code == 1
    assert [m for m, _, _ in gated(report)] == ["Recall@10", "nDCG@10"]  # the defaults


def test_no_configuration_needs_every_path(at_root):
    with pytest.raises(InputError, match=r"^snapshot: is required — pass snapshot=PATH") as err:
        retrieval_gate.check(TITLES, config=False)
    assert err.value.exit_code == 2


def test_root_is_where_the_configuration_and_relative_paths_are_found(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert retrieval_gate.check(root=ROOT).exit_code == 0
    report = retrieval_gate.check("examples/cranfield/runs/bm25-titles.trec", root=ROOT)
    assert report.exit_code == 1 and Path(report.config or "") == ROOT / "pyproject.toml"


def test_a_named_configuration_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "gate.toml"
    config.write_text(f'snapshot = "{SNAPSHOT.as_posix()}"\nbaseline = "{BASELINE.as_posix()}"\n'
                      f'candidate = "{TITLES.as_posix()}"\nfail-on = "never"\n'
                      '[[gate]]\nmeasure = "Recall@10"\nmargin = 0.02\n')
    report = retrieval_gate.check(config="gate.toml")
    assert (report.verdict, report.exit_code, report.config) == ("regression", 0, "gate.toml")
    assert retrieval_gate.check(config="gate.toml", fail_on="regression").exit_code == 1


@pytest.mark.parametrize("options, message", [
    ({"gates": ["Recall@10"]}, "gates: 'Recall@10' is not MEASURE[:SLICE]=MARGIN"),
    ({"gates": ["Recall@10=-1"]}, "gates: 'Recall@10=-1' is not MEASURE[:SLICE]=MARGIN"),
    ({"gates": ["Nope@10=0.02"]}, "Nope"),
    ({"fail_on": "sometimes"}, "fail_on: 'sometimes' is not one of regression, inconclusive"),
    ({"config": "missing.toml"}, "missing.toml"),
])
def test_invalid_arguments_raise_input_errors(at_root, options, message):
    with pytest.raises(InputError) as err:
        retrieval_gate.check(**options)
    assert message in str(err.value) and err.value.exit_code == 2


def test_config_true_is_a_type_error(at_root):
    with pytest.raises(TypeError, match="config must be a path"):
        retrieval_gate.check(config=True)  # not a path: a type checker refuses it too


def test_a_run_changed_after_its_manifest_is_not_comparable(tmp_path, at_root):
    run = tmp_path / "hybrid.trec"
    shutil.copy(RUNS / "hybrid.trec.manifest.json", tmp_path / "hybrid.trec.manifest.json")
    run.write_bytes((RUNS / "hybrid.trec").read_bytes().rstrip(b"\n"))  # another hash
    with pytest.raises(NotComparableError) as err:
        retrieval_gate.check(run)
    assert isinstance(err.value, GateError) and err.value.exit_code == 3


# -- score -----------------------------------------------------------------------------------

def test_score_paths_with_the_default_measure():
    scores = retrieval_gate.score(QRELS, RUNS / "hybrid.trec")
    assert list(scores.means()) == ["nDCG@10"]
    assert len(scores.query_ids) == 225


def test_score_objects_already_read_equals_score_of_paths():
    by_path = retrieval_gate.score(str(QRELS), RUNS / "hybrid.trec", ["Recall@10", "nDCG@10"])
    read = retrieval_gate.score(read_qrels(QRELS), read_run(RUNS / "hybrid.trec"),
                                ("Recall@10", retrieval_gate.parse_measure("nDCG@10")))
    assert by_path.means() == read.means()
    assert by_path.per_query() == read.per_query()


def test_score_takes_one_measure_name_and_scoring_policy_fields():
    lenient = retrieval_gate.score(QRELS, TITLES, "P@10")
    strict = retrieval_gate.score(QRELS, TITLES, "P@10", threshold=3, unlabeled="zero")
    assert (strict.policy.threshold, strict.policy.unlabeled) == (3, "zero")
    assert strict.means()["P@10"] < lenient.means()["P@10"]


def test_score_refuses_an_unknown_measure():
    with pytest.raises(InputError, match="unknown measure name"):
        retrieval_gate.score(QRELS, TITLES, "Nope@10")


# -- exports ---------------------------------------------------------------------------------

def test_every_export_resolves_and_check_is_the_function():
    from retrieval_gate import api

    assert retrieval_gate.check is api.check and retrieval_gate.score is api.score
    assert callable(retrieval_gate.load_snapshot)
    for name in retrieval_gate.__all__:
        assert getattr(retrieval_gate, name) is not None
    with pytest.raises(AttributeError):
        retrieval_gate.nope  # noqa: B018


def test_importing_the_package_loads_neither_numpy_nor_the_api():
    assert imported_by("import retrieval_gate", ("numpy", "scipy", "retrieval_gate.api",
                                                 "retrieval_gate.gating.gate")) == []


def test_check_with_a_retriever_runs_it_then_checks_its_run(tmp_path: Path) -> None:
    """``check(retriever=…, candidate=PATH)``: ``gate run`` writing PATH, then ``gate check``
    on it — the same numbers as checking the run the retriever replays."""
    rows: dict[str, list[tuple[int, str, float]]] = {}
    for line in (RUNS / "hybrid.trec").read_text().splitlines():
        query, _, doc, rank, score, _ = line.split()
        rows.setdefault(query, []).append((int(rank), doc, float(score)))

    def replay(query):
        return [(doc, score) for _, doc, score in sorted(rows.get(query.id, []))]

    expected = retrieval_gate.check(root=ROOT, candidate=RUNS / "hybrid.trec")
    report = retrieval_gate.check(root=ROOT, retriever=replay, candidate=tmp_path / "run.jsonl")
    assert (tmp_path / "run.jsonl").exists() and (tmp_path / "run.jsonl.manifest.json").exists()
    assert [c.mean_diff for c in report.comparisons] == [c.mean_diff for c in expected.comparisons]
    assert report.verdict == expected.verdict
    with pytest.raises(InputError, match="candidate: is where the retriever's run is written"):
        retrieval_gate.check(root=ROOT, retriever=replay)


def test_check_with_chained_stages_runs_them_then_checks_their_run(tmp_path: Path) -> None:
    """``check(stages={...}, run_options=..., candidate=PATH)``: the pydoc pipeline's approved
    rankings given stage by stage (functions, not module paths), run at concurrency 2, then
    checked against that baseline: every stage's file holds the baseline's rankings, so every
    mean difference is 0 and the verdict is pass."""
    folder = ROOT / "baselines" / "pydoc-pipeline" / "v1"
    ranked = {stage: {row["query_id"]: row["items"] for row in map(
        json.loads, (folder / f"{stage}.jsonl").read_text().splitlines())}
        for stage in ("candidates", "reranked", "context")}

    def candidates(query):
        return ranked["candidates"][query.id]

    def reranked(query, hits):
        return ranked["reranked"][query.id]

    def context(query, hits):
        return ranked["context"][query.id]

    report = retrieval_gate.check(
        root=ROOT / "examples" / "pydoc", config=ROOT / "examples" / "pydoc" / "pipeline.toml",
        stages={"candidates": candidates, "reranked": reranked, "context": context},
        run_options={"concurrency": 2, "commit": "none"}, candidate=tmp_path / "run.jsonl")
    assert report.verdict == "pass"
    assert report.comparisons and all(c.mean_diff == 0 for c in report.comparisons)
    runner = json.loads((tmp_path / "run.jsonl.manifest.json").read_text())["provenance"]["runner"]
    assert runner["latency"] == "stage" and runner["settings"]["concurrency"] == 2
    assert [json.loads(line)["items"] for line in (tmp_path / "run.jsonl").read_text().splitlines()
            ] == [json.loads(line)["items"] for line in (folder / "context.jsonl").read_text()
                  .splitlines()]


# -- the public API --------------------------------------------------------------------------

INTERNAL = re.compile(r"retrieval_gate\.(?:core|formats|scoring|decide|inputs|gating|report|"
                      r"commands|runner)\b")


def test_every_exported_name_imports_and_is_named_as_the_package_s_own() -> None:
    """What ``retrieval_gate`` exports is its API: each name imports, and is named
    ``retrieval_gate.NAME`` whatever internal module defines it — so it prints, pickles and is
    documented so, and moving that module breaks neither imports nor pickles."""
    names = [n for n in retrieval_gate.__all__ if n != "__version__"]
    assert sorted(names) == sorted(retrieval_gate._EXPORTS)
    for name in names:
        obj = getattr(retrieval_gate, name)
        assert obj.__module__ == "retrieval_gate" and obj.__qualname__ == name, name
    assert retrieval_gate.__version__
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        retrieval_gate.nothing  # noqa: B018


def test_exported_values_pickle_under_the_package_s_name() -> None:
    policy = retrieval_gate.GatePolicy(gates=(retrieval_gate.GatedMeasure("P@10", 0.05),))
    error = retrieval_gate.InputError("q.jsonl", "a problem", "a fix", 3)
    query = retrieval_gate.Query("q1", "text", (), True)
    for value in (policy, error, query):
        data = pickle.dumps(value)
        assert INTERNAL.search(data.decode("latin-1")) is None
        again = pickle.loads(data)
        assert type(again) is type(value) and str(again) == str(value)
    assert repr(retrieval_gate.InputError).startswith("<class 'retrieval_gate.InputError'")


def test_the_user_documentation_names_no_internal_module() -> None:
    """The pages a user reads name the API, never an internal module's path (the contributing
    and performance pages, for contributors, may)."""
    pages = [ROOT / "README.md", ROOT / "docs" / "library.md", ROOT / "docs" / "index.md",
             ROOT / "docs" / "getting-started.md", *sorted((ROOT / "docs" / "recipes").glob("*.md")),
             *sorted((ROOT / "docs" / "concepts").glob("*.md"))]
    named = [f"{page.relative_to(ROOT)}: {m.group()}" for page in pages
             for m in INTERNAL.finditer(page.read_text(encoding="utf-8"))]
    assert named == []
