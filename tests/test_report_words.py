"""The report in plain words: what was retrieved instead, nothing changed, pool bias, the
inconclusive sentence, systems by name, and the HTML page from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from retrieval_gate.cli import cli
from retrieval_gate.commands.validate import record_run
from retrieval_gate.decide.policy import GatedMeasure, GatePolicy
from retrieval_gate.gating.gate import run_gate
from retrieval_gate.inputs.snapshot import freeze
from retrieval_gate.report.text import report_text

ROOT = Path(__file__).resolve().parent.parent


def _set(tmp_path: Path, runs: dict[str, dict[str, list[str]]], n_extra: int = 0,
         measures: tuple[str, ...] = ("Recall@3",)) -> dict:
    """Two queries judged by hand (q1: d1 grade 2, d2 grade 1; q2: d3), a corpus with text,
    and runs of document ids in rank order."""
    docs = [{"id": f"d{i}", "text": f"text of document {i} " * 5} for i in range(1, 10)]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [{"id": "q1", "text": "first"}, {"id": "q2", "text": "second"}]
    qrels = [{"query_id": "q1", "doc_id": "d1", "grade": 2},
             {"query_id": "q1", "doc_id": "d2", "grade": 1},
             {"query_id": "q2", "doc_id": "d3", "grade": 1}]
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (tmp_path / "qrels.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qrels))
    freeze(tmp_path / "snapshot.json", queries=tmp_path / "queries.jsonl",
           qrels=tmp_path / "qrels.jsonl", corpus_version="c", corpus_file=tmp_path /
           "corpus.jsonl", permissions_version="p", unit="document", measures=list(measures))
    paths = {}
    for name, rankings in runs.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"query_id": q, "items": [{"id": d} for d in docs]})
                                + "\n" for q, docs in rankings.items()))
        record_run(tmp_path / "snapshot.json", path, {"name": name}, "abc",
                   "2026-12-01T00:00:00Z")
        paths[name] = path
    return paths


POLICY = GatePolicy(gates=(GatedMeasure("Recall@3"),), min_queries=1)


def test_what_was_retrieved_instead_by_hand(tmp_path: Path) -> None:
    runs = _set(tmp_path, {"base": {"q1": ["d1", "d9", "d2"], "q2": ["d3"]},
                           "cand": {"q1": ["d8", "d2", "d7"], "q2": ["d3"]}})
    report = run_gate(tmp_path / "snapshot.json", runs["base"], runs["cand"], POLICY)
    (q1,) = report.instead
    assert q1.query == "q1"
    assert [(e.unit, e.grade, e.baseline_rank, e.candidate_rank) for e in q1.evidence] == [
        ("d1", 2, 1, None), ("d2", 1, 3, 2)]
    assert [(t.rank, t.item) for t in q1.candidate_top] == [(1, "d8"), (2, "d2"), (3, "d7")]
    assert q1.candidate_top[0].snippet == ("text of document 8 " * 5).strip()
    text = report_text(report)
    assert "  q1  relevant: d1 (grade 2): #1 → not retrieved; d2 (grade 1): #3 → #2" in text
    assert 'candidate\'s top: #1 d8 "text of document 8' in text
    assert "candidate cand (" in text and "vs baseline base (" in text


def test_identical_runs_say_nothing_changed(tmp_path: Path) -> None:
    runs = _set(tmp_path, {"base": {"q1": ["d1"], "q2": ["d3"]}})
    report = run_gate(tmp_path / "snapshot.json", runs["base"], runs["base"], POLICY)
    text = report_text(report)
    assert report.unchanged and text.startswith("PASS: nothing changed")
    assert "Detectable drop" not in text and not report.instead


def test_pool_bias_is_warned_only_when_the_candidate_surfaces_clearly_more(
        tmp_path: Path, monkeypatch) -> None:
    import retrieval_gate.gating.unjudged as unjudged

    monkeypatch.setattr(unjudged, "POOL_ITEMS", 1)  # a test set of 6 slots
    runs = _set(tmp_path, {"base": {"q1": ["d1", "d2", "d9"], "q2": ["d3", "d8", "d7"]},
                           "same": {"q1": ["d2", "d1", "d9"], "q2": ["d3", "d7", "d8"]},
                           "new": {"q1": ["d1", "d7", "d8"], "q2": ["d3", "d5", "d6"]},
                           "judged": {"q1": ["d1", "d2"], "q2": ["d3"]},
                           "short": {"q1": ["d1"], "q2": ["d3"]}})
    # the same three unjudged items in both: no news
    shared = run_gate(tmp_path / "snapshot.json", runs["base"], runs["same"], POLICY)
    assert not any("pool bias" in w for w in shared.warnings)
    # unjudged items: none of the baseline's 3 (its other 3 slots are empty), 4 of the
    # candidate's 6 slots
    report = run_gate(tmp_path / "snapshot.json", runs["judged"], runs["new"], POLICY)
    (warning,) = [w for w in report.warnings if "pool bias" in w]
    assert warning.startswith("the candidate surfaces 4 more unjudged items in its top 3 "
                              "than the baseline (baseline 0.0%, candidate 66.7% of the "
                              "slots): they score as non-relevant")
    # fewer items are no unjudged items (a packing bug, a short list): judging cannot help —
    # unjudged or empty, the candidate's slots would be 4 of 6 against the baseline's 3
    short = run_gate(tmp_path / "snapshot.json", runs["base"], runs["short"], POLICY)
    assert not any("pool bias" in w for w in short.warnings)


def test_pool_bias_without_a_cutoff_counts_items_not_empty_rankings(tmp_path: Path,
                                                                     monkeypatch) -> None:
    """A gated measure without @k reads whole rankings: an empty ranking is no unjudged item,
    and a candidate that returns less (a packing bug) is no pool bias."""
    import retrieval_gate.gating.unjudged as unjudged

    monkeypatch.setattr(unjudged, "POOL_ITEMS", 1)
    runs = _set(tmp_path, {"base": {"q1": ["d1", "d9"], "q2": ["d3", "d8"]},
                           "empty": {"q1": ["d1", "d9"], "q2": []},
                           "more": {"q1": ["d1", "d9", "d7"], "q2": ["d3", "d8", "d6"]}},
                measures=("Recall",))
    policy = GatePolicy(gates=(GatedMeasure("Recall"),), min_queries=1)
    # the baseline's 2 unjudged of 4 items; q2 empty: 1 unjudged of 2 — a higher share of
    # what it returned was never the question, and an empty list is no unjudged item
    empty = run_gate(tmp_path / "snapshot.json", runs["base"], runs["empty"], policy)
    assert not empty.pool_bias and not any("pool bias" in w for w in empty.warnings)
    more = run_gate(tmp_path / "snapshot.json", runs["base"], runs["more"], policy)
    assert more.pool_bias
    (warning,) = [w for w in more.warnings if "pool bias" in w]
    assert warning.startswith("the candidate surfaces 2 more unjudged items in its rankings "
                              "than the baseline (baseline 50.0%, candidate 66.7% of the "
                              "items)")


def test_inconclusive_says_how_many_queries_would_decide() -> None:
    report = run_gate(ROOT / "examples/pydoc/snapshot.json", ROOT / "baselines/pydoc",
                   ROOT / "examples/pydoc/runs/bm25-200.trec",
                   GatePolicy(gates=(GatedMeasure("Recall@10", 0.03),)))
    first = report_text(report).splitlines()[0]
    assert first.startswith("INCONCLUSIVE: can't rule out a drop larger than 0.03 on "
                            "Recall@10 (all) — this test set would need about ")
    c = report.comparisons[0]
    needed = int(first.split("about ")[1].split(" ")[0].replace(",", ""))
    assert needed == -(-c.n * (c.mde / c.margin) ** 2 // 1)  # ceil(n (mde / margin)²)


def test_html_from_the_command_line_on_every_outcome(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["check", "--config", str(ROOT / "pyproject.toml"),
                                      "--html", str(page)])
    assert result.exit_code == 0 and page.read_text().startswith("<!DOCTYPE html>")
    assert "PASS" in page.read_text()
    result = CliRunner().invoke(cli, ["check", "--config", str(ROOT / "pyproject.toml"),
                                      "--candidate", str(tmp_path / "missing.trec"),
                                      "--html", str(page)])
    assert result.exit_code == 2
    html = page.read_text()
    assert "INVALID ⛔ retrieval-gate" in html and "missing.trec" in html
