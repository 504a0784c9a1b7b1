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
from scipy.stats import binom

from retrieval_gate.access import askers, item_access
from retrieval_gate.cli import cli
from retrieval_gate.errors import InputError
from retrieval_gate.formats.access import read_access
from retrieval_gate.gate import check
from retrieval_gate.model import Query
from retrieval_gate.policy import GatedMeasure, GatePolicy
from retrieval_gate.snapshot import freeze, load_snapshot, load_test_set
from retrieval_gate.validate import record_run

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
    report = check(snapshot, clean, dirty, GatePolicy(gates=(GatedMeasure("Recall@3"),),
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
    report = check(snapshot, base, cand, GatePolicy(gates=(GatedMeasure("Recall@3"),),
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
    from retrieval_gate.stages import StageContract
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
    report = check(tmp_path / "snapshot.json", runs[0], runs[1],
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
    report = check(snapshot, base, cand, GatePolicy(
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
    report = check(snapshot, base, cand, policy)
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
    report = check(snapshot, run, run, GatePolicy(gates=(GatedMeasure("Recall@3"),)))
    sides = {u.query: u.candidate for u in report.unanswerable}
    assert (sides["u1"].returned, sides["u1"].top_score, sides["u1"].leaks,
            sides["u1"].abstained) == (2, 10.0, 1, None)
    from retrieval_gate.report.text import report_text
    text = report_text(report)
    assert "record no abstention decision" in text
    with pytest.raises(InputError, match="FalseAbstain is gated, and the baseline records no "
                       "abstained decision"):
        check(snapshot, run, run, GatePolicy(gates=(GatedMeasure("FalseAbstain"),)))


def test_the_unanswerable_slice_in_config_needs_unanswerable_queries(tmp_path: Path) -> None:
    snapshot = _test_set(tmp_path, QUERIES, QRELS)
    run = _run(tmp_path, "r", {"qa": ["a1"], "qg": ["g1"]})
    with pytest.raises(InputError, match="slice 'unanswerable' is empty"):
        check(snapshot, run, run, GatePolicy(gates=(GatedMeasure("Recall@3"),),
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


def test_policies_runs_are_rebuilt_byte_for_byte() -> None:
    import subprocess
    import sys

    pytest.importorskip("bm25s")
    pytest.importorskip("Stemmer")
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
    report = check(snapshot, clean, leaky, GatePolicy(gates=(GatedMeasure("Recall@3"),),
                                                      min_queries=1))
    markdown = report_markdown(report)
    assert markdown.index("**Leaks:**") < markdown.index("| measure |")
    assert "| candidate | qa | 1 | g1 | g1 | globex |" in markdown
    annotations = workflow_annotations(report)
    assert annotations[0].startswith("::error title=retrieval leak::the candidate returns 1 "
                                     "item (1 query)")
