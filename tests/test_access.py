"""Access and time: visibility and effective dates on their boundaries, leaks that fail the
gate, stale items and mixed versions, abstention compared paired, the policies example.

The fixture: documents

- ``pub`` — public, always in force;
- ``a1`` — ACL [acme]; ``a2`` — ACL [acme-finance]; ``ag`` — ACL [acme, globex];
- ``g1`` — ACL [globex];
- ``old`` — public, in force until 2026-02-28 (inclusive); ``new`` — public, from 2026-03-01,
  supersedes ``old``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import gate
from scipy.stats import binom

from retrieval_gate.cli import cli
from retrieval_gate.commands.validate import record_run
from retrieval_gate.core.errors import InputError
from retrieval_gate.core.model import Query
from retrieval_gate.decide.policy import GatedMeasure, GatePolicy
from retrieval_gate.formats.permissions import read_access
from retrieval_gate.gating.gate import run_gate
from retrieval_gate.inputs.snapshot import freeze, load_snapshot, load_test_set
from retrieval_gate.scoring.visibility import askers, item_access

ROOT = Path(__file__).resolve().parent.parent
DOCS = [
    {"id": "pub", "text": "public"},
    {"id": "a1", "text": "acme", "acl": ["acme"]},
    {"id": "a2", "text": "acme finance", "acl": ["acme-finance"]},
    {"id": "ag", "text": "shared", "acl": ["acme", "globex"]},
    {"id": "g1", "text": "globex", "acl": ["globex"]},
    {"id": "old", "text": "old rule", "valid_to": "2026-02-28"},
    {"id": "new", "text": "new rule", "valid_from": "2026-03-01", "supersedes": "old"},
]


def _lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _table(tmp_path: Path, docs: list[dict] = DOCS):
    return read_access(_lines(tmp_path / "corpus.jsonl", docs))


def _day(text: str) -> int:
    import datetime as dt
    return dt.date.fromisoformat(text).toordinal()


@pytest.mark.parametrize(("scope", "doc", "visible"), [
    (("acme",), "a1", True), (("acme",), "a2", False), (("acme-finance",), "a2", True),
    (("acme",), "ag", True), (("globex",), "ag", True), (("initech",), "ag", False),
    ((), "pub", True), ((), "a1", False), (None, "pub", True), (None, "a1", False),
    (("acme", "globex"), "g1", True), (("globex",), "unlisted", True),
])
def test_visibility(tmp_path: Path, scope, doc: str, visible: bool) -> None:
    table = _table(tmp_path)
    who = askers(table, [Query("q", scope=scope)])
    flags = item_access(table, who, np.array([0]), np.array([doc.encode()], dtype="S"))
    assert bool(flags.visible[0]) is visible


@pytest.mark.parametrize(("day", "doc", "in_force"), [
    ("2026-02-28", "old", True), ("2026-03-01", "old", False),  # valid_to is inclusive
    ("2026-02-28", "new", False), ("2026-03-01", "new", True),  # valid_from is inclusive
    (None, "old", True), (None, "new", True),  # no day: nothing is out of force
    ("1990-01-01", "pub", True),
])
def test_effective_dates(tmp_path: Path, day: str | None, doc: str, in_force: bool) -> None:
    table = _table(tmp_path)
    who = askers(table, [Query("q", as_of=None if day is None else _day(day))])
    flags = item_access(table, who, np.array([0]), np.array([doc.encode()], dtype="S"))
    assert bool(flags.in_force[0]) is in_force


@pytest.mark.parametrize(("line", "problem"), [
    ({"id": "x", "acl": "acme"}, "'acl' is not a list of principals"),
    ({"id": "x", "valid_from": "2026-13-01"}, 'valid_from "2026-13-01" is not a date'),
    ({"id": "x", "valid_to": "01/02/2026"}, 'valid_to "01/02/2026" is not a date'),
    ({"id": "x", "valid_from": "2026-03-02", "valid_to": "2026-03-01"},
     "valid_from is after valid_to"),
    ({"id": "x", "supersedes": 7}, "supersedes 7 is not a non-empty string"),
])
def test_malformed_access_data_is_refused_with_its_line(tmp_path: Path, line: dict,
                                                        problem: str) -> None:
    with pytest.raises(InputError) as caught:
        _table(tmp_path, [DOCS[0], line])
    assert problem in str(caught.value) and ":2:" in str(caught.value)


def _test_set(tmp_path: Path, queries: list[dict], qrels: list[dict]) -> Path:
    _lines(tmp_path / "corpus.jsonl", DOCS)
    _lines(tmp_path / "queries.jsonl", queries)
    _lines(tmp_path / "qrels.jsonl", qrels)
    freeze(tmp_path / "snapshot.json", queries=tmp_path / "queries.jsonl",
           qrels=tmp_path / "qrels.jsonl", corpus_version="c", corpus_file=tmp_path /
           "corpus.jsonl", permissions_version="in-corpus", unit="document",
           measures=["Recall@3", "P@3", "Stale@3", "MixedVersions@3"])
    return tmp_path / "snapshot.json"


def _run(tmp_path: Path, name: str, rankings: dict[str, list[str]],
         abstained: dict[str, bool] | None = None) -> Path:
    rows = []
    for qid, docs in rankings.items():
        row = {"query_id": qid, "items": [{"id": d, "score": 10 - i} for i, d in enumerate(docs)]}
        if abstained is not None:
            row["abstained"] = abstained[qid]
        rows.append(row)
    run = _lines(tmp_path / f"{name}.jsonl", rows)
    record_run(tmp_path / "snapshot.json", run, {}, "abc", "2026-12-01T00:00:00Z")
    return run


QUERIES = [{"id": "qa", "scope": ["acme"], "as_of": "2026-03-15"},
           {"id": "qg", "scope": ["globex"], "as_of": "2026-02-01"}]
QRELS = [{"query_id": "qa", "doc_id": "a1", "grade": 1},
         {"query_id": "qa", "doc_id": "new", "grade": 1},
         {"query_id": "qa", "doc_id": "g1", "grade": 1},  # a slip: qa may not see g1
         {"query_id": "qg", "doc_id": "g1", "grade": 1},
         {"query_id": "qg", "doc_id": "old", "grade": 1}]


def test_leaks_and_stale_items_gain_nothing_and_unacceptable_judgments_leave_r(
        tmp_path: Path) -> None:
    snapshot = _test_set(tmp_path, QUERIES, QRELS)
    warnings = load_test_set(load_snapshot(snapshot)).warnings
    assert any("1 relevant judgments are of documents their query may not see" in w
               and "qa: g1 (not visible)" in w for w in warnings)
    clean = _run(tmp_path, "clean", {"qa": ["a1", "new", "pub"], "qg": ["g1", "old", "pub"]})
    # qa: g1 leaks (and would be "relevant"); old is stale beside new: mixed versions.
    # qg: a1 leaks; new is not yet in force on 2026-02-01: stale, beside old.
    dirty = _run(tmp_path, "dirty", {"qa": ["g1", "old", "new"], "qg": ["a1", "new", "old"]})
    report = run_gate(snapshot, clean, dirty, GatePolicy(gates=(GatedMeasure("Recall@3"),),
                                                      min_queries=1))
    base, cand = report.baseline.means, report.candidate.means
    assert base["Recall@3"] == 1.0  # qa: R = 2 (g1's judgment is not counted)
    assert cand["Recall@3"] == (1 / 2 + 1 / 2) / 2  # only new (qa) and old (qg) count
    assert cand["P@3"] == (1 / 3 + 1 / 3) / 2
    assert cand["Stale@3"] == (1 / 3 + 1 / 3) / 2 and base["Stale@3"] == 0.0
    assert cand["MixedVersions@3"] == 1.0 and base["MixedVersions@3"] == 0.0
    assert report.leaks is not None and report.leaks.fails and report.reasons[0] == "leak"
    assert report.verdict == "regression" and report.exit_code == 1
    leaks = {(leak.query, leak.rank, leak.document, leak.allowed)
             for leak in report.leaks.candidate.rows}
    assert leaks == {("qa", 1, "g1", ("globex",)), ("qg", 1, "a1", ("acme",))}
    assert report.leaks.baseline.count == 0


@pytest.mark.parametrize(("policy", "base_leaks", "cand_leaks", "fails"), [
    ("fail", False, True, True), ("fail", True, False, True), ("fail", True, True, True),
    ("candidate", True, False, False), ("candidate", False, True, True),
    ("warn", True, True, False), ("fail", False, False, False),
])
def test_leak_policy(tmp_path: Path, policy: str, base_leaks: bool, cand_leaks: bool,
                     fails: bool) -> None:
    snapshot = _test_set(tmp_path, QUERIES, QRELS)
    clean = {"qa": ["a1", "new"], "qg": ["g1", "old"]}
    leaky = {"qa": ["a1", "new", "g1"], "qg": ["g1", "old"]}
    base = _run(tmp_path, "base", leaky if base_leaks else clean)
    cand = _run(tmp_path, "cand", leaky if cand_leaks else clean)
    report = run_gate(snapshot, base, cand, GatePolicy(gates=(GatedMeasure("Recall@3"),),
                                                    min_queries=1, leaks=policy))
    assert report.leaks is not None and report.leaks.fails is fails
    assert ("leak" in report.reasons) is fails
    if fails:
        assert report.verdict == "regression"


def test_a_leak_in_any_stage_of_a_pipeline_fails(tmp_path: Path) -> None:
    """Leaks are looked for in every stage of the contract, not only in the gated one: a
    candidate stage that sees another tenant's documents is a broken permission filter even
    when the reranker drops them."""
    _lines(tmp_path / "corpus.jsonl", DOCS)
    _lines(tmp_path / "queries.jsonl", QUERIES)
    _lines(tmp_path / "qrels.jsonl", QRELS)
    from retrieval_gate.core.stages import StageContract
    freeze(tmp_path / "snapshot.json", queries=tmp_path / "queries.jsonl",
           qrels=tmp_path / "qrels.jsonl", corpus_version="c",
           corpus_file=tmp_path / "corpus.jsonl", permissions_version="p", unit="document",
           measures=["Recall [context]"], stages=(StageContract("candidates", 3),
                                                  StageContract("context", 2)))
    runs = []
    for name, candidates in (("clean", ["a1", "new", "pub"]), ("leaky", ["g1", "a1", "new"])):
        folder = tmp_path / name
        folder.mkdir()
        stage_files = []
        for stage, docs in (("candidates", candidates), ("context", ["a1", "new"])):
            path = _lines(folder / f"{stage}.jsonl", [
                {"query_id": q, "items": [{"id": d, "score": 9 - i} for i, d in enumerate(docs)]}
                for q in ("qa", "qg")])
            stage_files.append((stage, path))
        record_run(tmp_path / "snapshot.json", None, {}, "abc", "2026-12-01T00:00:00Z",
                   stages=stage_files)
        runs.append(stage_files[-1][1])
    report = run_gate(tmp_path / "snapshot.json", runs[0], runs[1],
                   GatePolicy(gates=(GatedMeasure("Recall [context]"),), min_queries=1))
    assert report.leaks is not None and report.leaks.fails
    stages = {(leak.query, leak.stage, leak.document) for leak in report.leaks.candidate.rows}
    assert ("qa", "candidates", "g1") in stages
    assert report.leaks.baseline.count == 2  # qg may not see a1: in candidates and in context
    assert report.baseline.means["Recall [context]"] == report.candidate.means[
        "Recall [context]"]


def _abstention_set(tmp_path: Path, n: int) -> Path:
    queries = [{"id": f"q{i:02d}"} for i in range(n)] + [
        {"id": f"u{i}", "answerable": False} for i in range(3)]
    qrels = [{"query_id": f"q{i:02d}", "doc_id": "pub", "grade": 1} for i in range(n)]
    return _test_set(tmp_path, queries, qrels)


@pytest.mark.parametrize(("flips_worse", "flips_better"), [(9, 0), (7, 2), (5, 5)])
def test_false_abstain_is_an_exact_binomial_on_discordant_pairs(
        tmp_path: Path, flips_worse: int, flips_better: int) -> None:
    n = 30
    snapshot = _abstention_set(tmp_path, n)
    ids = [f"q{i:02d}" for i in range(n)] + ["u0", "u1", "u2"]
    rankings = {q: ["pub"] for q in ids}
    base_said = {q: False for q in ids}
    cand_said = dict(base_said)
    for i in range(flips_worse):  # the candidate wrongly abstains
        cand_said[ids[i]] = True
    for i in range(flips_worse, flips_worse + flips_better):  # only the baseline did
        base_said[ids[i]] = True
    base = _run(tmp_path, "base", rankings, base_said)
    cand = _run(tmp_path, "cand", rankings, cand_said)
    report = run_gate(snapshot, base, cand, GatePolicy(
        gates=(GatedMeasure("Recall@3"), GatedMeasure("FalseAbstain", 0.05))))
    row = next(c for c in report.comparisons if c.measure == "FalseAbstain")
    discordant = flips_worse + flips_better
    # P(at least flips_worse of the discordant pairs go the candidate's worse way | p = 1/2)
    assert row.sign_p == pytest.approx(binom.sf(flips_worse - 1, discordant, 0.5), rel=1e-12)
    assert (row.wins, row.losses) == (flips_better, flips_worse)
    assert row.mean_diff == pytest.approx((flips_worse - flips_better) / n)
    assert row.lower_is_better and row.slice == "all"
    assert (row.decision == "regression") is (flips_worse == 9)


def test_abstain_on_the_unanswerable_slice(tmp_path: Path) -> None:
    snapshot = _abstention_set(tmp_path, 30)
    ids = [f"q{i:02d}" for i in range(30)] + ["u0", "u1", "u2"]
    rankings = {q: ["pub"] for q in ids}
    base = _run(tmp_path, "base", rankings, {q: q.startswith("u") for q in ids})
    cand = _run(tmp_path, "cand", rankings, {q: q == "u0" for q in ids})
    policy = GatePolicy(gates=(GatedMeasure("Abstain", 0.1),), slices=("all", "unanswerable"),
                        min_queries=1)
    report = run_gate(snapshot, base, cand, policy)
    (row,) = report.comparisons
    assert (row.measure, row.slice, row.n) == ("Abstain", "unanswerable", 3)
    assert (row.baseline_mean, row.candidate_mean) == (1.0, 1 / 3)
    assert row.sign_p == pytest.approx(0.25)  # two discordant pairs, both the worse way
    assert [(u.query, u.baseline.abstained, u.candidate.abstained)
            for u in report.unanswerable] == [("u0", True, True), ("u1", True, False),
                                              ("u2", True, False)]


def test_without_abstention_decisions_the_report_says_so(tmp_path: Path) -> None:
    snapshot = _abstention_set(tmp_path, 2)
    ids = ["q00", "q01", "u0", "u1", "u2"]
    run = _run(tmp_path, "plain", {q: ["pub", "a1"] if q == "u1" else [] for q in ids})
    report = run_gate(snapshot, run, run, GatePolicy(gates=(GatedMeasure("Recall@3"),)))
    sides = {u.query: u.candidate for u in report.unanswerable}
    assert (sides["u1"].returned, sides["u1"].top_score, sides["u1"].leaks,
            sides["u1"].abstained) == (2, 10.0, 1, None)
    from retrieval_gate.report.text import report_text
    text = report_text(report)
    assert "record no abstention decision" in text
    with pytest.raises(InputError, match="FalseAbstain is gated, and the baseline records no "
                       "abstained decision"):
        run_gate(snapshot, run, run, GatePolicy(gates=(GatedMeasure("FalseAbstain"),)))


def test_the_unanswerable_slice_in_config_needs_unanswerable_queries(tmp_path: Path) -> None:
    snapshot = _test_set(tmp_path, QUERIES, QRELS)
    run = _run(tmp_path, "r", {"qa": ["a1"], "qg": ["g1"]})
    with pytest.raises(InputError, match="slice 'unanswerable' is empty"):
        run_gate(snapshot, run, run, GatePolicy(gates=(GatedMeasure("Recall@3"),),
                                             slices=("unanswerable",)))


# -- the policies example ---------------------------------------------------------------------

def _gate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["check", "--config",
                                      str(ROOT / "examples" / "policies" / "gate.toml"), *args])
    return result.exit_code, result.output


def test_the_policies_example_catches_leak_stale_and_abstention(tmp_path: Path) -> None:
    code, out = _gate("--json", str(tmp_path / "leak.json"), "--junit", str(tmp_path / "j.xml"))
    assert code == 1
    assert out.startswith("REGRESSION: leak: the candidate returns 489 items (95 queries) its "
                          "askers may not see; the baseline 0 — fails the gate")
    report = json.loads((tmp_path / "leak.json").read_text())
    assert report["reasons"][0] == "leak" and report["leaks"]["candidate"]["count"] == 489
    junit = (tmp_path / "j.xml").read_text()
    assert junit.index('name="leaks"') < junit.index('name="Recall@10 (all)"')
    code, out = _gate("--candidate", str(ROOT / "examples/policies/runs/stale-index.jsonl"))
    assert code == 1 and "Stale@10 (all)" in out.splitlines()[0]
    code, out = _gate("--candidate", str(ROOT / "examples/policies/runs/eager-abstain.jsonl"))
    assert code == 1 and out.splitlines()[0] == ("REGRESSION: material regression in "
                                                 "FalseAbstain (all) (exit 1)")
    code, out = _gate("--candidate", str(ROOT / "examples/policies/runs/baseline.jsonl"))
    assert code == 0


def _examples_pin(distribution: str) -> str:
    """The requirement of ``distribution`` in pyproject.toml's ``examples`` extra."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return next(r for r in extras["project"]["optional-dependencies"]["examples"]
                if r.startswith(f"{distribution}=="))


def test_policies_runs_are_rebuilt_byte_for_byte() -> None:
    import subprocess
    import sys

    pytest.importorskip("bm25s")
    pytest.importorskip("Stemmer")
    from importlib import metadata

    stemmer = metadata.version("PyStemmer")
    if _examples_pin("PyStemmer") != f"PyStemmer=={stemmer}":  # the runners extra's is older
        pytest.skip(f"PyStemmer {stemmer} is installed: the runs are made with the examples "
                    f"extra's, {_examples_pin('PyStemmer')} (pip install -e '.[examples]')")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "make_policies_runs.py"),
                           "--check"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_freeze_warns_about_unacceptable_judgments_and_unknown_principals(tmp_path: Path
                                                                          ) -> None:
    _lines(tmp_path / "corpus.jsonl", DOCS)
    _lines(tmp_path / "queries.jsonl", [{"id": "qa", "scope": ["acme", "acmee"]},
                                        {"id": "qb", "scope": ["acme"]}])
    _lines(tmp_path / "qrels.jsonl", [{"query_id": "qa", "doc_id": "g1", "grade": 1},
                                      {"query_id": "qa", "doc_id": "a1", "grade": 1},
                                      {"query_id": "qb", "doc_id": "a1", "grade": 1}])
    result = CliRunner().invoke(cli, [
        "snapshot", "freeze", "--queries", str(tmp_path / "queries.jsonl"), "--qrels",
        str(tmp_path / "qrels.jsonl"), "--corpus-file", str(tmp_path / "corpus.jsonl"),
        "--corpus-version", "c", "--permissions-version", "p", "--unit", "document",
        "-o", str(tmp_path / "snapshot.json")])
    assert result.exit_code == 0, result.output
    assert "warning: 1 query has principals in their scope that no document's ACL names " \
           "(they grant nothing): qa (acmee)" in result.output
    assert "qa: g1 (not visible)" in result.output
    # a principal in two scopes: both askers see a1
    table = read_access(tmp_path / "corpus.jsonl")
    who = askers(table, [Query("qa", scope=("acme", "acmee")), Query("qb", scope=("acme",))])
    flags = item_access(table, who, np.array([0, 1]), np.array([b"a1", b"a1"], dtype="S"))
    assert flags.visible.tolist() == [True, True]


def test_changing_an_acl_changes_what_the_snapshot_pins(tmp_path: Path) -> None:
    snapshot = _test_set(tmp_path, QUERIES, QRELS)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace('"acl": ["acme"]', '"acl": ["globex"]', 1))
    run = tmp_path / "r.jsonl"
    _lines(run, [{"query_id": "qa", "items": []}, {"query_id": "qg", "items": []}])
    result = CliRunner().invoke(cli, ["validate", str(snapshot)])
    assert result.exit_code == 3 and "corpus file 'corpus.jsonl' has sha256" in result.output


def test_leaks_come_first_in_markdown_and_annotations(tmp_path: Path) -> None:
    from retrieval_gate.report.github import workflow_annotations
    from retrieval_gate.report.markdown import report_markdown

    snapshot = _test_set(tmp_path, QUERIES, QRELS)
    clean = _run(tmp_path, "clean", {"qa": ["a1"], "qg": ["g1"]})
    leaky = _run(tmp_path, "leaky", {"qa": ["g1", "a1"], "qg": ["g1"]})
    report = run_gate(snapshot, clean, leaky, GatePolicy(gates=(GatedMeasure("Recall@3"),),
                                                      min_queries=1))
    markdown = report_markdown(report)
    assert markdown.index("**Leaks:**") < markdown.index("| measure |")
    assert "| candidate | qa | 1 | g1 | g1 | globex |" in markdown
    annotations = workflow_annotations(report)
    assert annotations[0].startswith("::error title=retrieval leak::the candidate returns 1 "
                                     "item (1 query)")


# -- the access measures' definitions, from the command line -------------------------------------

def _cli_snapshot(folder: Path, corpus: list[dict], queries: list[dict], qrels: list[dict],
                  measures: list[str], *args: str, permissions: list[dict] | None = None
                  ) -> tuple[int, str]:
    """``gate snapshot freeze`` of these files in ``folder`` (document unit unless ``args``
    say otherwise); (exit code, standard error)."""
    for name, rows in (("corpus", corpus), ("queries", queries), ("qrels", qrels),
                       ("permissions", permissions)):
        if rows is not None:
            _lines(folder / f"{name}.jsonl", rows)
    pinned = () if permissions is None else ("--permissions-file",
                                             str(folder / "permissions.jsonl"))
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
                        folder / "qrels.jsonl", "--corpus-file", folder / "corpus.jsonl",
                        "--corpus-version", "c", "--permissions-version", "p", *pinned,
                        *(args or ("--unit", "document")),
                        *(a for m in measures for a in ("-m", m)),
                        "-o", folder / "snapshot.json")
    return code, err


def _cli_run(folder: Path, name: str, rankings: dict[str, list], *stages: str) -> Path:
    """A JSON Lines run (items: an id, or a dict of item fields; scores descending) and its
    manifest, written by ``gate run-manifest``."""
    rows = [{"query_id": q, "items": [{**({"id": d} if isinstance(d, str) else d),
                                       "score": 100 - i} for i, d in enumerate(items)]}
            for q, items in rankings.items()]
    run = _lines(folder / f"{name}.jsonl", rows)
    code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json",
                        *(stages or ("--run", str(run))))
    assert code == 0, err
    return run


def _cli_check(folder: Path, baseline: Path, candidate: Path, measure: str,
               env: dict[str, str] | None = None) -> dict:
    """The JSON report of ``gate check`` (leaks reported, not failing)."""
    (folder / "gate.toml").write_text(f'resamples = 1000\nmin-queries = 1\nleaks = "warn"\n'
                                      f'[[gate]]\nmeasure = "{measure}"\nmargin = 0.1\n')
    code, out, err = gate("check", "--config", folder / "gate.toml", "--snapshot",
                          folder / "snapshot.json", "--baseline", baseline, "--candidate",
                          candidate, "--output-format", "json", env=env)
    assert code in (0, 1), err
    return json.loads(out)


def _per_query(report: dict, side: str = "candidate") -> dict[str, dict[str, float]]:
    return {row["query"]: row[side] for row in report["queries"]}


def test_mixed_versions_counts_documents_not_items(tmp_path: Path) -> None:
    """Span unit, so that items stay items: two chunks of the superseded ``old`` with no other
    version beside them are one document of the family (0); a chunk of ``new`` beside a chunk
    of ``old`` is two (1)."""
    corpus = [{"id": "old", "text": "o" * 20, "valid_to": "2026-02-28"},
              {"id": "new", "text": "n" * 20, "valid_from": "2026-03-01", "supersedes": "old"},
              {"id": "pub", "text": "p" * 20}]
    queries = [{"id": "q1", "as_of": "2026-03-15"}, {"id": "q2", "as_of": "2026-03-15"}]
    qrels = [{"query_id": q, "doc_id": "new", "start": 0, "end": 10, "grade": 1}
             for q in ("q1", "q2")]
    code, err = _cli_snapshot(tmp_path, corpus, queries, qrels, ["MixedVersions@3", "Stale@3"],
                              "--unit", "span")
    assert code == 0, err

    def chunk(doc: str, start: int) -> dict:
        return {"id": f"{doc}#{start}", "doc_id": doc, "start": start, "end": start + 10}

    base = _cli_run(tmp_path, "base", {"q1": [chunk("pub", 0)], "q2": [chunk("new", 0)]})
    cand = _cli_run(tmp_path, "cand", {"q1": [chunk("old", 0), chunk("old", 10), chunk("pub", 0)],
                                       "q2": [chunk("new", 0), chunk("old", 0)]})
    got = _per_query(_cli_check(tmp_path, base, cand, "MixedVersions@3"))
    assert got["q1"]["MixedVersions@3"] == 0.0  # one document (was 1: two items)
    assert got["q1"]["Stale@3"] == 2 / 3  # both chunks of old are stale
    assert got["q2"]["MixedVersions@3"] == 1.0 and got["q2"]["Stale@3"] == 1 / 3


CHAIN = [{"id": "old", "text": "old rule"},  # no access field: public, always in force
         {"id": "new", "text": "new rule", "valid_from": "2026-03-01", "supersedes": "old"},
         {"id": "pub", "text": "public"}]


def test_a_document_named_only_by_supersedes_is_in_its_family(tmp_path: Path) -> None:
    """``old`` has no access field, so no line of access data; ``new`` supersedes it and is
    not yet in force on 2026-02-01: new and old side by side are mixed versions."""
    code, err = _cli_snapshot(tmp_path, CHAIN, [{"id": "q", "as_of": "2026-02-01"}],
                              [{"query_id": "q", "doc_id": "old", "grade": 1}],
                              ["MixedVersions@3", "Stale@3"])
    assert code == 0, err
    base = _cli_run(tmp_path, "base", {"q": ["old", "pub"]})
    cand = _cli_run(tmp_path, "cand", {"q": ["new", "old", "pub"]})
    report = _cli_check(tmp_path, base, cand, "MixedVersions@3")
    assert report["candidate"]["means"] == {"MixedVersions@3": 1.0, "Stale@3": 1 / 3}  # was 0
    assert report["baseline"]["means"] == {"MixedVersions@3": 0.0, "Stale@3": 0.0}


def test_the_access_cache_holds_documents_named_only_by_supersedes(tmp_path: Path) -> None:
    """The cached arrays give what a parse gives, and entries of earlier shapes (the table
    alone, without a row for ``old``; ACLs as dense bitsets) are never read."""
    import hashlib

    from retrieval_gate.core.ranking import hash_ids

    code, err = _cli_snapshot(tmp_path, CHAIN, [{"id": "q", "as_of": "2026-02-01"}],
                              [{"query_id": "q", "doc_id": "old", "grade": 1}],
                              ["MixedVersions@3"])
    assert code == 0, err
    base = _cli_run(tmp_path, "base", {"q": ["old", "pub"]})
    cand = _cli_run(tmp_path, "cand", {"q": ["new", "old", "pub"]})
    cache = tmp_path / "cache"
    sha = hashlib.sha256((tmp_path / "corpus.jsonl").read_bytes()).hexdigest()
    ids = np.array([b"new"], dtype="S")
    stale = {"ids": ids, "keys": hash_ids(ids), "acl": np.zeros((1, 1), np.uint64),
             "public": np.ones(1, np.uint8), "valid_from": np.array([_day("2026-03-01")]),
             "valid_to": np.array([np.iinfo(np.int64).max]), "family": np.array([-1]),
             "principals": np.zeros(0, "S1"), "supersedes": np.array([b""]),
             "lines": np.array([2])}
    for kind in ("access", "access-fields"):  # what they looked like: new only
        (cache / f"{kind}-v1-{sha}").mkdir(parents=True)
        for name, array in stale.items():
            np.save(cache / f"{kind}-v1-{sha}" / f"{name}.npy", array)
    env = {"RETRIEVAL_GATE_CACHE": str(cache)}
    for _ in range(2):  # the first check parses and writes the entry, the second reads it
        report = _cli_check(tmp_path, base, cand, "MixedVersions@3", env=env)
        assert report["candidate"]["means"]["MixedVersions@3"] == 1.0
        assert (cache / f"access-csr-v1-{sha}").is_dir()


MERGE_CORPUS = [{"id": "d1", "text": "one", "valid_to": "2026-02-28"},
                {"id": "d2", "text": "two", "acl": ["acme"]},
                {"id": "d3", "text": "three", "acl": ["globex"]},
                {"id": "pub", "text": "public"}]
MERGE_PERMISSIONS = [{"id": "d1", "acl": ["globex"]}, {"id": "d2", "acl": ["globex"]}]


def test_a_permissions_file_is_merged_over_the_corpus_per_document_and_field(
        tmp_path: Path) -> None:
    """d1: acl from the permissions file, valid_to from the corpus — both apply; d2: both give
    an acl, the permissions file's wins; d3: only the corpus has a line, and it applies."""
    queries = [{"id": "qa", "scope": ["acme"], "as_of": "2026-03-15"},
               {"id": "qg", "scope": ["globex"], "as_of": "2026-02-01"}]
    qrels = [{"query_id": "qa", "doc_id": "pub", "grade": 1},
             {"query_id": "qg", "doc_id": "d1", "grade": 1}]
    code, err = _cli_snapshot(tmp_path, MERGE_CORPUS, queries, qrels, ["Recall@3", "Stale@3"],
                              permissions=MERGE_PERMISSIONS)
    assert code == 0, err
    base = _cli_run(tmp_path, "base", {"qa": ["pub"], "qg": ["d1"]})
    cand = _cli_run(tmp_path, "cand", {"qa": ["d1", "d2", "d3"], "qg": ["d1", "d2", "d3"]})
    report = _cli_check(tmp_path, base, cand, "Recall@3")
    leaks = report["leaks"]["candidate"]
    # qa (acme) may see none of the three: d1 and d2 by the file's acl, d3 by the corpus's
    assert leaks["count"] == 3 and leaks["per_query"] == {"qa": 3}
    assert [(r["rank"], r["item"], r["allowed"]) for r in leaks["rows"]] == [
        (1, "d1", ["globex"]), (2, "d2", ["globex"]), (3, "d3", ["globex"])]
    got = _per_query(report)
    assert got["qa"]["Stale@3"] == 1 / 3  # d1's valid_to (the corpus's) is before 2026-03-15
    assert got["qg"] == {"Recall@3": 1.0, "Stale@3": 0.0, "Hit@3": 1.0, "Judged@3": 1 / 3}


@pytest.mark.parametrize(("in_corpus", "in_file", "start_from", "end_from"), [
    ("valid_from", "valid_to", "corpus.jsonl:2", "this line"),
    ("valid_to", "valid_from", "this line", "corpus.jsonl:2"),
])
def test_a_merged_record_in_force_on_no_day_is_refused_naming_both_files(
        tmp_path: Path, in_corpus: str, in_file: str, start_from: str, end_from: str) -> None:
    day = {"valid_from": "2026-03-02", "valid_to": "2026-03-01"}
    code, err = _cli_snapshot(
        tmp_path, [{"id": "pub", "text": "p"}, {"id": "d1", "text": "one",
                                               in_corpus: day[in_corpus]}],
        [{"id": "q"}], [{"query_id": "q", "doc_id": "pub", "grade": 1}], ["Recall@3"],
        permissions=[{"id": "d1", "acl": ["acme"], in_file: day[in_file]}])
    assert code == 2
    start_from, end_from = (str(tmp_path / w) if w != "this line" else w
                            for w in (start_from, end_from))
    assert err == (
        f"error: {tmp_path / 'permissions.jsonl'}:1: document 'd1': valid_from 2026-03-02 "
        f"({start_from}) is after valid_to 2026-03-01 ({end_from}) — give the first and the "
        "last day the document is in force (the permissions file's fields win over the "
        "corpus's, per field)\n")
    assert not (tmp_path / "snapshot.json").exists()


def test_a_merged_table_follows_a_change_of_either_file(tmp_path: Path) -> None:
    """Each file is cached by its own hash and the two are merged after loading: changing the
    permissions file, then the corpus, changes what the check finds."""
    env = {"RETRIEVAL_GATE_CACHE": str(tmp_path / "cache")}
    queries = [{"id": "qa", "scope": ["acme"], "as_of": "2026-03-15"}]
    qrels = [{"query_id": "qa", "doc_id": "pub", "grade": 1}]
    permissions = list(MERGE_PERMISSIONS)
    corpus = list(MERGE_CORPUS)
    found = []
    for change in ("none", "permissions", "corpus"):
        if change == "permissions":  # the file's valid_to wins over the corpus's
            permissions[0] = {**permissions[0], "valid_to": "2026-12-31"}
        elif change == "corpus":  # d3 public: no longer a leak
            corpus[2] = {"id": "d3", "text": "three"}
        code, err = _cli_snapshot(tmp_path, corpus, queries, qrels, ["Stale@3"],
                                  permissions=permissions)
        assert code == 0, err
        base = _cli_run(tmp_path, "base", {"qa": ["pub"]})
        cand = _cli_run(tmp_path, "cand", {"qa": ["d1", "d2", "d3"]})
        for _ in range(2):  # parsed, then from the cache
            report = _cli_check(tmp_path, base, cand, "Stale@3", env=env)
            found.append((report["candidate"]["means"]["Stale@3"],
                          report["leaks"]["candidate"]["count"]))
    assert found == [(1 / 3, 3)] * 2 + [(0.0, 3)] * 2 + [(0.0, 2)] * 2


def test_leaked_and_stale_items_count_as_judged(tmp_path: Path) -> None:
    """Judged@k: an item the asker may not see, or not in force on its day, has a known value
    for the query (it gains 0 by rule, whatever a judgment would say): judged, though nobody
    judged it. qa sees a1 and pub; g1 leaks, old is stale on 2026-03-15, neither is judged."""
    queries = [{"id": "qa", "scope": ["acme"], "as_of": "2026-03-15"}]
    code, err = _cli_snapshot(tmp_path, DOCS, queries,
                              [{"query_id": "qa", "doc_id": "a1", "grade": 1}], ["Judged@4"])
    assert code == 0, err
    base = _cli_run(tmp_path, "base", {"qa": ["a1", "pub"]})
    cand = _cli_run(tmp_path, "cand", {"qa": ["g1", "old", "pub", "a1"]})
    report = _cli_check(tmp_path, base, cand, "Judged@4")
    assert report["candidate"]["means"]["Judged@4"] == 3 / 4  # g1, old, a1; pub is unjudged
    assert report["baseline"]["means"]["Judged@4"] == 1 / 4


def test_leaks_of_a_budgeted_stage_are_counted_within_its_cutoff(tmp_path: Path) -> None:
    """The context stage passes on 4 items within 50 tokens; the measure reads its first. Its
    leaks are counted among the 4: g1 (rank 2, packed but below the measure's depth) and g2
    (rank 3, over the budget), not g3 (rank 5, below the cutoff)."""
    corpus = [{"id": "pub", "text": "p"}, {"id": "p2", "text": "p"},
              *({"id": g, "text": "g", "acl": ["globex"]} for g in ("g1", "g2", "g3"))]
    code, err = _cli_snapshot(tmp_path, corpus, [{"id": "qa", "scope": ["acme"]}],
                              [{"query_id": "qa", "doc_id": "pub", "grade": 1}],
                              ["Recall@1 [context]"], "--unit", "document", "--stage",
                              "candidates:5", "--stage", "context:4:50")
    assert code == 0, err

    def items(*pairs: tuple[str, int]) -> list[dict]:
        return [{"id": d, "tokens": t} for d, t in pairs]

    runs = []
    for name, context in (("base", items(("pub", 10), ("p2", 10))),
                          ("cand", items(("pub", 10), ("g1", 10), ("g2", 100), ("p2", 1),
                                         ("g3", 1)))):
        folder = tmp_path / name
        folder.mkdir()
        stages = [(stage, _lines(folder / f"{stage}.jsonl", [{"query_id": "qa", "items": [
            {**item, "score": 9 - i} for i, item in enumerate(ranking)]}]))
            for stage, ranking in (("candidates", items(("pub", 1), ("p2", 1))),
                                   ("context", context))]
        code, _, err = gate("run-manifest", "--snapshot", tmp_path / "snapshot.json",
                            *(a for s, f in stages for a in ("--stage", f"{s}={f}")))
        assert code == 0, err
        runs.append(stages[-1][1])
    report = _cli_check(tmp_path, runs[0], runs[1], "Recall@1 [context]")
    leaks = report["leaks"]["candidate"]
    assert [(r["stage"], r["rank"], r["item"]) for r in leaks["rows"]] == [
        ("context", 2, "g1"), ("context", 3, "g2")]
    assert leaks["count"] == 2 and report["leaks"]["baseline"]["count"] == 0
    assert report["candidate"]["means"]["Recall@1 [context]"] == 1.0


@pytest.mark.parametrize("permissions", [b"\xef\xbb\xbf\n", b'{"id": "zz"}\n'],
                         ids=["a byte-order mark alone", "lines without access data"])
def test_a_permissions_file_without_access_data_restricts_nothing(tmp_path: Path,
                                                                   permissions: bytes) -> None:
    """A pinned permissions file that holds no access data is an empty table: every document
    is public and always in force, and a check reads it without a fault."""
    queries = [{"id": "q1", "scope": ["acme"]}, {"id": "q2"}]
    qrels = [{"query_id": "q1", "doc_id": "a1", "grade": 1},
             {"query_id": "q2", "doc_id": "pub", "grade": 1}]
    docs = [{"id": d["id"], "text": d["text"]} for d in DOCS]
    (tmp_path / "permissions.jsonl").write_bytes(permissions)
    code, err = _cli_snapshot(tmp_path, docs, queries, qrels, ["Recall@3"], "--unit",
                              "document", "--permissions-file",
                              str(tmp_path / "permissions.jsonl"))
    assert code == 0, err
    run = _cli_run(tmp_path, "run", {"q1": ["a1", "g1"], "q2": ["g1", "pub"]})
    report = _cli_check(tmp_path, run, run, "Recall@3")
    assert report["leaks"]["candidate"]["count"] == 0
    assert _per_query(report)["q1"]["Recall@3"] == 1.0


def test_a_check_whose_judgments_are_all_hidden_scores_zero(tmp_path: Path) -> None:
    """Every judgment is of a document its query may not see: none counts, every query scores
    0 (the measures' empty-R rule), and nothing faults."""
    queries = [{"id": "q1", "scope": ["globex"]}, {"id": "q2", "scope": ["globex"]}]
    qrels = [{"query_id": "q1", "doc_id": "a1", "grade": 1},
             {"query_id": "q2", "doc_id": "a2", "grade": 1}]
    code, err = _cli_snapshot(tmp_path, DOCS, queries, qrels, ["Recall@3", "P@3"])
    assert code == 0, err
    run = _cli_run(tmp_path, "run", {"q1": ["a1", "pub"], "q2": ["a2", "g1"]})
    report = _cli_check(tmp_path, run, run, "P@3")
    assert {q: row["P@3"] for q, row in _per_query(report).items()} == {"q1": 0.0, "q2": 0.0}
    assert report["leaks"]["candidate"]["count"] == 2


def test_a_warning_quoting_a_line_break_stays_one_line(tmp_path: Path) -> None:
    """A scope principal holding a line break, named by freeze's unknown-principal warning:
    the warning is one line, the break shown as its escape."""
    code, out, err = _freeze_one_query(tmp_path, _lines(tmp_path / "corpus.jsonl", DOCS),
                                       {"id": "q1", "scope": ["ne\nw"]})
    assert code == 0, err
    (warning,) = [line for line in out.splitlines() if line.startswith("warning:")]
    assert "q1 (ne\\nw)" in warning and "w)" not in out.replace(warning, "")


def test_a_corpus_list_of_ids_is_never_read_for_access_data(tmp_path: Path) -> None:
    """An id list whose ids hold an access key's spelling (quotes and all) is a list of ids,
    not JSON Lines with access data."""
    (tmp_path / "ids.txt").write_text('pub\n"acl"\na1\n')
    code, _, err = _freeze_one_query(tmp_path, tmp_path / "ids.txt", {"id": "q1"})
    assert code == 0, err


def _freeze_one_query(folder: Path, corpus: Path, query: dict) -> tuple[int, str, str]:
    """``gate snapshot freeze`` of ``query`` judged relevant to ``pub`` in ``corpus``."""
    _lines(folder / "queries.jsonl", [query])
    _lines(folder / "qrels.jsonl", [{"query_id": query["id"], "doc_id": "pub", "grade": 1}])
    return gate("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
                folder / "qrels.jsonl", "--corpus-file", corpus, "--corpus-version", "c",
                "--permissions-version", "p", "--unit", "document",
                "-o", folder / "snapshot.json")
