"""Per-query scores as a run's evidence: score files, their pinning, and gating score:NAME.

On the Cranfield example (225 answerable queries) with score files written here, and on the
pydoc example's answer scores (examples/pydoc/answers: a real offline reader)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import BASELINE, ROOT, RUNS, SNAPSHOT, gate
from scipy.stats import binomtest

from retrieval_gate.core.errors import InputError
from retrieval_gate.formats import schema
from retrieval_gate.formats.scores import read_scores
from retrieval_gate.formats.scores.rows import ScoreRows
from retrieval_gate.formats.source import Blob
from retrieval_gate.inputs.answer_scores import load_query_scores
from retrieval_gate.inputs.config import parse_gate_option
from retrieval_gate.inputs.snapshot import load_snapshot, load_test_set

QUERIES = [json.loads(line)["id"] for line in
           (ROOT / "examples/cranfield/queries.jsonl").read_text().splitlines()]
PYDOC = ROOT / "examples" / "pydoc"


def blob(text: str, name: str = "s.jsonl") -> Blob:
    return Blob(name, text.encode())


def write_scores(path: Path, values: dict[str, list[float | None]],
                 samples: int = 1) -> Path:
    """A JSON Lines score file: for each score name, one value per (query, sample) in query
    order, samples innermost."""
    lines = []
    for i, qid in enumerate(QUERIES):
        for s in range(samples):
            scores = {name: column[i * samples + s] for name, column in values.items()}
            line = {"query_id": qid, "scores": scores}
            if samples > 1:
                line["sample"] = s
            lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n")
    return path


def pinned(tmp_path: Path, role: str, run: Path, scores: Path, *judge: str) -> Path:
    """A copy of ``run`` with a manifest pinning ``scores`` (judged by ``judge`` KEY=VALUEs)."""
    target = tmp_path / f"{role}.trec"
    shutil.copy(run, target)
    args = [a for j in judge for a in ("--judge", j)]
    code, _, err = gate("run-manifest", "--snapshot", SNAPSHOT, "--run", target, "--scores",
                        scores, *args)
    assert code == 0, err
    return target


def check(baseline: Path, candidate: Path, *gates: str, config: Path | None = None,
          extra: tuple[str, ...] = ()) -> tuple[int, str, str, dict]:
    """``gate check`` of the two runs; its JSON report is written beside the candidate (a
    copy in the test's folder)."""
    report = candidate.parent / "report.json"
    where = ["--config", config] if config else ["--no-config", "--snapshot", SNAPSHOT]
    code, out, err = gate("check", *where, "--baseline", baseline, "--candidate", candidate,
                          *(a for g in gates for a in ("--gate", g)), "--json", report, *extra)
    document = json.loads(report.read_text()) if report.exists() else {}
    return code, out, err, document


# --------------------------------------------------------------------------------------------
# Reading score files


def test_json_lines_and_csv_read_the_same_scores() -> None:
    jsonl = read_scores(blob('{"query_id": "q1", "scores": {"f": 0.5, "ok": true}}\n'
                             '{"query_id": "q2", "scores": {"f": null, "ok": 0}, "answer": "x"}\n'))
    csv = read_scores(blob("query_id,f,ok\nq1,0.5,1\nq2,,0\n", "s.csv"))
    for rows in (jsonl, csv):
        assert rows.keys == ("q1", "q2") and rows.names == ("f", "ok")
        assert rows.values[0].tolist() == [0.5, 1.0]
        assert math.isnan(rows.values[1, 0]) and rows.values[1, 1] == 0.0
    assert jsonl.places == (1, 2) and csv.places == (2, 3)


@pytest.mark.parametrize(("text", "message"), [
    ('{"query_id": "q1", "scores": {"f": "high"}}\n', "s.jsonl:1: score 'f' is \"high\", not a number"),
    ('{"query_id": "q1", "scores": {"f": 1e400}}\n', "s.jsonl:1:"),
    ('{"query_id": "q1", "scores": {"a b": 1}}\n', "score name \"a b\""),
    ('{"query_id": "q1"}\n', 's.jsonl:1: the line has no "scores" object'),
    ('{"query_id": "q1", "scores": {"f": 1}, "sample": 0}\n{"query_id": "q1", "scores": {"f": 1}, "sample": 0}\n',
     "s.jsonl:2: query q1 sample 0 is given twice"),
    ('{"query_id": "q1", "scores": {"f": 1}, "sample": 0}\n{"query_id": "q1", "scores": {"f": 1}}\n',
     "s.jsonl:2: this line has no sample number"),
    ('{"query_id": "q1", "scores": {"f": 1}, "sample": -1}\n', "sample -1 is not a whole number"),
    ('{\n "results": []\n}\n', "is one JSON document, not JSON Lines of scores"),
    ('[{"query_id": "q1"}]\n', "is one JSON document"),
    ('{"query_id": "q1", "scores": {"f": 1.3e154}}\n', "s.jsonl:1: score 'f' is 1.3e+154, beyond ±1e+12"),
    ('{"query_id": "q1", "scores": {"f": 1}}\n{"query_id": "q2", "scores": {"g": 1}}\n',
     None),
])
def test_bad_score_lines_name_the_line(text: str, message: str | None) -> None:
    if message is None:  # a score absent from a line: NaN there, not an error
        assert np.isnan(read_scores(blob(text)).values).sum() == 2
        return
    with pytest.raises(InputError, match=None) as caught:
        read_scores(blob(text))
    assert message in str(caught.value)


def test_nan_is_a_failed_score_and_sparse_files_are_refused() -> None:
    """Python's json.dumps writes a failed score as NaN; a file whose lines each give another
    score would make a matrix far larger than the file."""
    rows = read_scores(blob('{"query_id": "q1", "scores": {"f": NaN, "g": 1}, "t": "NaN"}\n'))
    assert np.isnan(rows.values[0, 0]) and rows.values[0, 1] == 1
    with pytest.raises(InputError, match="Infinity"):
        read_scores(blob('{"query_id": "q1", "scores": {"f": Infinity}}\n'))
    sparse = "".join(json.dumps({"query_id": f"q{i}", "scores": {f"s{i}": 1}}) + "\n"
                     for i in range(600))
    with pytest.raises(InputError) as caught:
        read_scores(blob(sparse))
    assert str(caught.value).startswith("s.jsonl:1: the file names 600 scores, and this line "
                                        "gives 1 of them")


@pytest.mark.parametrize(("lines", "refused"), [(256, False), (258, False), (260, True)])
def test_a_sparse_file_is_refused_only_beyond_the_documented_size(lines: int,
                                                                    refused: bool) -> None:
    """n lines of one name each make an n × n table: refused when n² > 4n + 65,536 (the
    per-query-scores page's rule), so 256 and 258 lines are read and 260 are not."""
    assert (lines * lines > 4 * lines + 65_536) == refused
    sparse = "".join(json.dumps({"query_id": f"q{i}", "scores": {f"s{i}": 1}}) + "\n"
                     for i in range(lines))
    if refused:
        with pytest.raises(InputError, match="this line gives 1 of them"):
            read_scores(blob(sparse))
    else:
        assert int(np.isfinite(read_scores(blob(sparse)).values).sum()) == lines


@pytest.mark.parametrize(("text", "message"), [
    ("id,f\nq1,1\n", "s.csv:1: the header has no query_id column"),
    ("query_id,f\nq1,abc\n", "s.csv:2: score 'f' is \"abc\", not a number"),
    ("query_id,f\nq1,1,2\n", "s.csv:2: the line has 3 cells, the header 2"),
    ("query_id,f,f\nq1,1,2\n", "s.csv:1: a column is named twice"),
    ("query_id\nq1\n", "s.csv:1: the header names no score column"),
    ("query_id,f\nq1,1_0\n", "s.csv:2:"),
    ("query_id,f\nq1,1\rq2,2\n", "s.csv:2: a line ends with a bare carriage return"),
    ("query_id,sample,f\nq1,1_0,1\n", "s.csv:2: sample \"1_0\" is not a whole number"),
    ("query_id,sample,f\nq1,+3,1\n", "s.csv:2: sample \"+3\""),
    ("query_id,sample,f\nq1,\u0663,1\n", "s.csv:2: sample"),
    ("query_id,f\nq1,1e200\n", "s.csv:2: score 'f' is 1e+200, beyond ±1e+12"),
    ("query_id,f\nq1,1000000000001\n", "s.csv:2: score 'f' is 1000000000001.0, beyond ±1e+12"),
])
def test_bad_csv_names_the_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        read_scores(blob(text, "s.csv"), "csv")
    assert message in str(caught.value)


def test_samples_are_averaged_per_query_with_their_spread() -> None:
    snap = load_snapshot(SNAPSHOT)
    test_set = load_test_set(snap)
    ids = (*test_set.answerable, *test_set.unanswerable)
    lines = [json.dumps({"query_id": q, "scores": {"f": v}, "sample": s})
             for q in ids for s, v in enumerate((0.2, 0.4, 0.9) if q == ids[0] else (0.5,))]
    scores = load_query_scores(blob("\n".join(lines)), None, test_set.queries, ids)
    assert scores.samples[0] == 3 and (scores.samples[1:] == 1).all()
    assert scores.column("f")[0] == pytest.approx(0.5) and scores.column("f")[1] == 0.5
    # one query with samples: the spread is its sample standard deviation (ddof 1)
    assert scores.spread[0] == pytest.approx(float(np.std([0.2, 0.4, 0.9], ddof=1)))


def test_a_query_without_score_or_outside_the_snapshot_is_refused() -> None:
    test_set = load_test_set(load_snapshot(SNAPSHOT))
    ids = (*test_set.answerable, *test_set.unanswerable)
    some = "\n".join(json.dumps({"query_id": q, "scores": {"f": 1}}) for q in ids[1:])
    with pytest.raises(InputError, match=f"query {ids[0]} of the snapshot has no score"):
        load_query_scores(blob(some), None, test_set.queries, ids)
    extra = some + "\n" + json.dumps({"query_id": "nope", "scores": {"f": 1}})
    with pytest.raises(InputError, match=r"s.jsonl:225: query nope is not a query"):
        load_query_scores(blob(extra), None, test_set.queries, ids)


def test_query_texts_match_exactly_and_ambiguity_is_refused() -> None:
    """A tool that records the question only: its text is matched whole, and a text two
    queries share cannot be matched."""
    from retrieval_gate.core.model import Query
    from retrieval_gate.inputs.answer_scores import _positions

    queries = (Query("a", "What is X?"), Query("b", "What is Y?"), Query("c", "What is Y?"))
    rows = ScoreRows(("What is X?",), True, (1,), (None,), ("f",), np.ones((1, 1)), "t")
    assert _positions(rows, queries, ("a", "b", "c"), "t.csv").tolist() == [0]
    for text, message in (("What is Y?", "is the text of queries b, c"),
                          ("what is x?", "is not the text of any query")):
        rows = ScoreRows((text,), True, (7,), (None,), ("f",), np.ones((1, 1)), "t")
        with pytest.raises(InputError, match=f"t.csv:7: the question .* {message}"):
            _positions(rows, queries, ("a", "b", "c"), "t.csv")


def test_score_gates_parse_with_their_slice() -> None:
    assert parse_gate_option("score:faithfulness=0.05").measure == "score:faithfulness"
    gate_ = parse_gate_option("score:correct:paraphrase=0.1")
    assert (gate_.measure, gate_.slice, gate_.margin) == ("score:correct", "paraphrase", 0.1)


# --------------------------------------------------------------------------------------------
# Gating scores


@pytest.fixture(scope="module")
def cranfield_scores(tmp_path_factory) -> dict[str, np.ndarray]:
    """Per-query scores of two runs: the candidate's faith 0.1 lower on most queries, its
    correct a 0/1 decision with known discordant pairs, and a harm that rises."""
    rng = np.random.default_rng(7)
    n = len(QUERIES)
    faith = rng.uniform(0.3, 1.0, n)
    correct = (rng.uniform(size=n) < 0.7).astype(float)
    flipped = correct.copy()
    flipped[:40] = 1 - flipped[:40]  # 40 discordant pairs
    return {"faith_b": faith, "faith_c": faith - 0.1 * (rng.uniform(size=n) < 0.9),
            "correct_b": correct, "correct_c": flipped}


def runs_with(tmp_path: Path, base: dict, cand: dict, judges=((), ())) -> tuple[Path, Path]:
    b = pinned(tmp_path, "base", BASELINE, write_scores(tmp_path / "b.jsonl", base), *judges[0])
    c = pinned(tmp_path, "cand", RUNS / "hybrid.trec", write_scores(tmp_path / "c.jsonl", cand),
               *judges[1])
    return b, c


def test_a_score_drop_is_a_regression_with_the_papers_numbers(tmp_path, cranfield_scores):
    s = cranfield_scores
    b, c = runs_with(tmp_path, {"faith": s["faith_b"].tolist(), "correct": s["correct_b"].tolist()},
                     {"faith": s["faith_c"].tolist(), "correct": s["correct_c"].tolist()},
                     (("model=judge-1",), ("model=judge-1",)))
    code, out, _, report = check(b, c, "score:faith=0.05", "score:correct=0.05", "nDCG@10=0.02")
    assert code == 1 and out.startswith("REGRESSION: material regression in score:faith (all)")
    schema.validate(report, "report", "report.json")
    assert report["schema"] == "urn:retrieval-gate:schema:report:3"
    rows = {c_["measure"]: c_ for c_ in report["comparisons"]}
    faith = rows["score:faith"]
    # hand-computed: the mean of the per-query differences, and the counts of the sign test
    diff = s["faith_c"] - s["faith_b"]
    assert faith["mean_diff"] == pytest.approx(math.fsum(diff.tolist()) / len(diff), abs=1e-15)
    assert (faith["wins"], faith["losses"]) == (0, int((diff < 0).sum()))
    assert faith["decision"] == "regression" and faith["n"] == 225
    # a 0/1 score is a decision: its sign test on the discordant pairs is the exact McNemar test
    correct = rows["score:correct"]
    d = s["correct_c"] - s["correct_b"]
    better, worse = int((d > 0).sum()), int((d < 0).sum())
    assert (correct["wins"], correct["losses"]) == (better, worse) and better + worse == 40
    assert correct["sign_p"] == pytest.approx(
        binomtest(better, better + worse, 0.5, alternative="less").pvalue)
    summary = {x["name"]: x for x in report["answer_scores"]["scores"]}
    assert summary["score:correct"]["kind"] == "decision"
    assert summary["score:faith"]["kind"] == "score"
    assert report["answer_scores"]["judges"] == [{"model": "judge-1"}, {"model": "judge-1"}]
    assert report["settings"]["family"] == 3  # one family: the scores and nDCG@10
    assert "score:faith: the per-query mean" in out
    # the per-query values are in the report, for the HTML per-query plot
    assert report["queries"][0]["baseline"]["score:faith"] == s["faith_b"][0]
    # same inputs: the same bytes
    again = tmp_path / "again.json"
    gate("check", "--no-config", "--snapshot", SNAPSHOT, "--baseline", b, "--candidate", c,
         "--gate", "score:faith=0.05", "--gate", "score:correct=0.05", "--gate",
         "nDCG@10=0.02", "--json", again)
    assert again.read_bytes() == (tmp_path / "report.json").read_bytes()


def test_a_harm_that_rises_is_a_regression_when_lower_is_better(tmp_path, cranfield_scores):
    s = cranfield_scores
    b, c = runs_with(tmp_path, {"halluc": (1 - s["faith_b"]).tolist()},
                     {"halluc": (1 - s["faith_c"]).tolist()})
    config = tmp_path / "gate.toml"
    config.write_text('[[gate]]\nmeasure = "score:halluc"\nmargin = 0.05\nlower-is-better = true\n')
    code, out, _, report = check(b, c, config=config, extra=("--snapshot", str(SNAPSHOT)))
    assert code == 1, out
    assert report["comparisons"][0]["lower_is_better"] is True
    assert report["settings"]["gates"][0]["lower_is_better"] is True
    # a warning says no judge was recorded
    assert any("neither run records its judge" in w for w in report["warnings"])


def test_a_judge_recorded_by_one_run_only_is_not_comparable(tmp_path, cranfield_scores):
    """Dropping --judge from the candidate must not let a changed judge through."""
    s = cranfield_scores
    b, c = runs_with(tmp_path, {"faith": s["faith_b"].tolist()}, {"faith": s["faith_b"].tolist()},
                     (("model=gpt-a",), ()))
    code, _, err, _ = check(b, c, "score:faith=0.05")
    assert code == 3 and "judge model is 'gpt-a' for the baseline" in err
    assert "and not recorded for the candidate" in err


def test_different_judges_are_not_comparable(tmp_path, cranfield_scores):
    s = cranfield_scores
    b, c = runs_with(tmp_path, {"faith": s["faith_b"].tolist()}, {"faith": s["faith_b"].tolist()},
                     (("model=gpt-a", "prompt=sha256:1"), ("model=gpt-b", "prompt=sha256:1")))
    code, _, err, _ = check(b, c, "score:faith=0.05")
    assert code == 3
    assert "judge model is 'gpt-a' for the baseline" in err and "'gpt-b' for the candidate" in err


def test_failed_scores_by_policy(tmp_path, cranfield_scores):
    s = cranfield_scores
    base = s["faith_b"].tolist()
    cand = s["faith_b"].tolist()
    base[3] = None
    cand[5] = None
    b, c = runs_with(tmp_path, {"faith": base}, {"faith": cand})
    code, _, err, _ = check(b, c, "score:faith=0.05")
    assert code == 2 and f"score:faith of query {QUERIES[3]} is missing or failed" in err
    for policy, n in (("drop-pair", 223), ("worst", 225)):
        config = tmp_path / f"{policy}.toml"
        config.write_text(f'missing = "{policy}"\n[[gate]]\nmeasure = "score:faith"\n'
                          'margin = 0.05\n')
        code, out, _, report = check(b, c, config=config, extra=("--snapshot", str(SNAPSHOT)))
        assert code == 0, out
        assert report["comparisons"][0]["n"] == n
        summary = report["answer_scores"]["scores"][0]
        assert (summary["failed"], summary["pairs"], summary["missing"]) == ([1, 1], 2, policy)
        assert any("2 failed scores (baseline 1, candidate 1)" in w for w in report["warnings"])
    worst = min(v for v in base + cand if v is not None)
    # worst: the failed baseline value is the lowest seen, so query 3 is a win
    assert report["comparisons"][0]["mean_diff"] == pytest.approx(
        ((s["faith_b"][3] - worst) + (worst - s["faith_b"][5])) / 225)


def test_repeated_samples_are_averaged_and_reported(tmp_path, cranfield_scores):
    rng = np.random.default_rng(3)
    truth = cranfield_scores["faith_b"]
    draws = {role: np.clip(np.repeat(truth, 3) + rng.normal(0, 0.05, 3 * len(truth)), 0, 1)
             for role in ("b", "c")}
    b = pinned(tmp_path, "base", BASELINE,
               write_scores(tmp_path / "b.jsonl", {"faith": draws["b"].tolist()}, 3))
    c = pinned(tmp_path, "cand", RUNS / "hybrid.trec",
               write_scores(tmp_path / "c.jsonl", {"faith": draws["c"].tolist()}, 3))
    code, out, _, report = check(b, c, "score:faith=0.05")
    assert code == 0, out
    summary = report["answer_scores"]["scores"][0]
    assert summary["samples"] == [[3, 3], [3, 3]] and summary["unequal_samples"] is False
    assert summary["spread"][0] == pytest.approx(0.05, abs=0.01)
    means = draws["c"].reshape(-1, 3).mean(1) - draws["b"].reshape(-1, 3).mean(1)
    assert report["comparisons"][0]["mean_diff"] == pytest.approx(means.mean(), abs=1e-12)
    assert "3 samples per query, within-query spread" in out


@pytest.mark.parametrize(("gates", "message"), [
    (("score:nope=0.05",), "score:nope is gated, and the baseline's scores"),
    (("score:=0.05",), "score name \"\""),
])
def test_a_gated_score_the_files_lack_is_refused(tmp_path, cranfield_scores, gates, message):
    s = cranfield_scores
    b, c = runs_with(tmp_path, {"faith": s["faith_b"].tolist()}, {"faith": s["faith_b"].tolist()})
    code, _, err, _ = check(b, c, *gates)
    assert code == 2 and message in err


def test_a_run_without_scores_or_a_changed_score_file(tmp_path, cranfield_scores):
    s = cranfield_scores
    b, c = runs_with(tmp_path, {"faith": s["faith_b"].tolist()}, {"faith": s["faith_b"].tolist()})
    code, _, err, _ = check(BASELINE, c, "score:faith=0.05")
    assert code == 2 and "pins no score file" in err
    (tmp_path / "c.jsonl").write_text((tmp_path / "c.jsonl").read_text().replace("0.", "0.1", 1))
    code, _, err, _ = check(b, c, "score:faith=0.05")
    assert code == 3 and "the scores changed after the manifest was written" in err
    assert gate("validate", SNAPSHOT, c)[0] == 3


def test_judge_without_scores_and_lower_is_better_on_a_measure_are_refused(tmp_path):
    run = tmp_path / "r.trec"
    shutil.copy(BASELINE, run)
    code, _, err = gate("run-manifest", "--snapshot", SNAPSHOT, "--run", run, "--judge", "m=x")
    assert code == 2 and "--judge: says who scored, and no score file is given" in err
    config = tmp_path / "gate.toml"
    config.write_text('[[gate]]\nmeasure = "nDCG@10"\nmargin = 0.05\nlower-is-better = true\n')
    code, _, err = gate("check", "--config", config, "--snapshot", SNAPSHOT, "--baseline",
                        BASELINE, "--candidate", RUNS / "hybrid.trec")
    assert code == 2 and "lower-is-better is set on nDCG@10" in err


# --------------------------------------------------------------------------------------------
# The pydoc example: a real reader's answers beside the retrieval runs


@pytest.mark.parametrize(("candidate", "code", "decisions"), [
    (None, 0, ["pass", "pass", "pass"]),
    (PYDOC / "answers" / "bm25-200-reader-cut32.trec", 1, ["pass", "regression", "regression"]),
    (PYDOC / "runs" / "bm25-truncated.trec", 1, ["regression", "inconclusive", "inconclusive"]),
])
def test_the_pydoc_answers_example(tmp_path, candidate, code, decisions) -> None:
    args = ["check", "--config", PYDOC / "answers.toml", "--json", tmp_path / "r.json"]
    if candidate is not None:
        args += ["--candidate", candidate]
    got, out, err = gate(*args)
    assert got == code, out + err
    report = json.loads((tmp_path / "r.json").read_text())
    assert [c["measure"] for c in report["comparisons"]] \
        == ["Recall@10", "score:token_f1", "score:matches_evidence"]
    assert [c["decision"] for c in report["comparisons"]] == decisions


def test_the_reader_cut_keeps_the_retrieval_run() -> None:
    """Candidate A is the re-chunked retrieval run itself: only the reader changed."""
    assert (PYDOC / "answers" / "bm25-200-reader-cut32.trec").read_bytes() \
        == (PYDOC / "runs" / "bm25-200.trec").read_bytes()


# --------------------------------------------------------------------------------------------
# Runs of per-query scores only (no ranking)


def scores_only(tmp_path: Path, role: str, values: dict, *judge: str) -> Path:
    scores = write_scores(tmp_path / f"{role}.scores.jsonl", values)
    code, out, err = gate("run-manifest", "--snapshot", SNAPSHOT, "--scores", scores,
                          *(a for j in judge for a in ("--judge", j)))
    assert code == 0, err
    assert out.startswith(f"{scores}.manifest.json: scores only")
    return scores


def test_runs_of_scores_only_are_gated_approved_and_validated(tmp_path, cranfield_scores):
    s = cranfield_scores
    b = scores_only(tmp_path, "base", {"faith": s["faith_b"].tolist()}, "model=j")
    c = scores_only(tmp_path, "cand", {"faith": s["faith_c"].tolist()}, "model=j")
    manifest = json.loads(Path(f"{c}.manifest.json").read_text())
    assert "run" not in manifest and manifest["scores"]["file"] == "cand.scores.jsonl"
    code, out, _, report = check(b, c, "score:faith=0.05")
    assert code == 1 and "per-query scores only: the runs have no rankings" in out
    assert "Newly failing" not in out
    schema.validate(report, "report", "report.json")
    assert report["candidate"]["ranked"] is False and report["candidate"]["means"] == {
        "Recall@10": None, "P@10": None, "Hit@10": None, "RR@10": None, "nDCG@10": None,
        "AP@10": None}
    # the default gates (Recall@10, nDCG@10) need rankings: said in one line
    code, _, err = gate("check", "--no-config", "--snapshot", SNAPSHOT, "--baseline", b,
                        "--candidate", c)
    assert code == 2 and ("the default gates (Recall@10, nDCG@10) read rankings, and the "
                          "baseline is per-query scores only") in err
    # approved into a baseline folder, the score file travels with its manifest
    folder = tmp_path / "baseline"
    assert gate("baseline", "approve", "--candidate", b, "--to", folder)[0] == 0
    assert sorted(p.name for p in (folder / "v1").iterdir()) == [
        "base.scores.jsonl", "base.scores.jsonl.manifest.json"]
    assert check(folder, c, "score:faith=0.05")[0] == 1
    assert gate("validate", SNAPSHOT, folder, c)[0] == 0
    # a scores-only manifest given for another file is refused
    other = tmp_path / "other.jsonl"
    shutil.copy(c, other)
    shutil.copy(f"{c}.manifest.json", f"{other}.manifest.json")
    code, _, err = gate("validate", SNAPSHOT, other)
    assert code == 2 and "pins scores only (cand.scores.jsonl), and is given for" in err


def test_scores_only_refuses_what_describes_a_ranking(tmp_path, cranfield_scores):
    scores = write_scores(tmp_path / "s.jsonl", {"f": cranfield_scores["faith_b"].tolist()})
    code, _, err = gate("run-manifest", "--snapshot", SNAPSHOT, "--scores", scores,
                        "--timed-on", "laptop")
    assert code == 2 and "describe a ranking" in err
    assert not Path(f"{scores}.manifest.json").exists()


def test_the_library_and_the_github_output_gate_scores(tmp_path, cranfield_scores):
    """retrieval_gate.check (what the pytest fixture calls) takes score gates as strings or
    GatedMeasure objects; gate check --github (what the Action runs) writes them in the job
    summary and the workflow annotations."""
    import retrieval_gate
    from retrieval_gate import GatedMeasure

    s = cranfield_scores
    b, c = runs_with(tmp_path, {"faith": s["faith_b"].tolist(),
                                "halluc": (1 - s["faith_b"]).tolist()},
                     {"faith": s["faith_c"].tolist(), "halluc": (1 - s["faith_c"]).tolist()})
    report = retrieval_gate.check(c, baseline=b, snapshot=SNAPSHOT, config=False, gates=[
        "score:faith=0.05", GatedMeasure("score:halluc", 0.05, lower_is_better=True)])
    assert report.exit_code == 1
    assert [c_.decision for c_ in report.comparisons] == ["regression", "regression"]
    assert report.answer_scores is not None and report.answer_scores.scores[1].lower_is_better
    summary = tmp_path / "summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    code, out, _ = gate("check", "--no-config", "--snapshot", SNAPSHOT, "--baseline", b,
                        "--candidate", c, "--gate", "score:faith=0.05", "--github", env=env)
    assert code == 1
    assert "::error title=answer regression%3A score%3Afaith::" in out
    assert "<summary>Per-query scores</summary>" in summary.read_text()


def test_judge_values_are_bounded_and_given_once(tmp_path, cranfield_scores):
    scores = write_scores(tmp_path / "s.jsonl", {"f": cranfield_scores["faith_b"].tolist()})
    code, _, err = gate("run-manifest", "--snapshot", SNAPSHOT, "--scores", scores, "--judge",
                        "model=" + "x" * 501)
    assert code == 2 and err.startswith("error: --judge: model's value is 501 characters")
    code, _, err = gate("run-manifest", "--snapshot", SNAPSHOT, "--scores", scores, "--judge",
                        "model=a", "--judge", "model=b")
    assert code == 2 and "--judge: model is given twice" in err
    assert not Path(f"{scores}.manifest.json").exists()


def test_the_manifest_schema_names_every_score_format() -> None:
    from retrieval_gate.formats.schema import schema as load
    from retrieval_gate.formats.scores import FORMATS

    scores = load("run-manifest")["properties"]["scores"]["properties"]
    assert tuple(scores["format"]["enum"]) == FORMATS


def test_a_harm_keeps_its_direction_on_the_command_line(tmp_path, cranfield_scores):
    """--gate cannot say lower-is-better: a score the config marks so stays so, and
    --lower-is-better marks one; a harm's rise is never read as an improvement."""
    s = cranfield_scores
    b, c = runs_with(tmp_path, {"halluc": (1 - s["faith_b"]).tolist()},
                     {"halluc": (1 - s["faith_c"]).tolist()})
    config = tmp_path / "gate.toml"
    config.write_text('[[gate]]\nmeasure = "score:halluc"\nmargin = 0.05\n'
                      'lower-is-better = true\n')
    base = ["check", "--snapshot", SNAPSHOT, "--baseline", b, "--candidate", c, "--gate",
            "score:halluc=0.05"]
    assert gate(*base, "--config", config)[0] == 1
    assert gate(*base, "--no-config", "--lower-is-better", "score:halluc")[0] == 1
    code, _, err = gate(*base, "--no-config", "--lower-is-better", "score:other")
    assert code == 2 and "'score:other' is not a score gated with --gate" in err


def test_a_score_zero_everywhere_certifies_nothing(tmp_path):
    zeros = [0.0] * len(QUERIES)
    b, c = runs_with(tmp_path, {"faith": zeros}, {"faith": zeros})
    code, _, _, report = check(b, c, "score:faith=0.05")
    assert code == 0 and report["comparisons"][0]["decision"] == "inconclusive"
    assert "the judge credited nothing in either run" in report["comparisons"][0]["decision_note"]


def test_points_keep_their_bound_and_a_tiny_margin_renders(tmp_path, cranfield_scores):
    """A score on a scale of points shows its deciding bound (not 'unbounded'), and a margin
    no test set could decide renders without overflow."""
    s = cranfield_scores
    b, c = runs_with(tmp_path, {"points": (s["faith_b"] * 10_000).tolist()},
                     {"points": (s["faith_c"] * 10_000).tolist()})
    code, out, _, report = check(b, c, "score:points=500")
    assert code == 1 and "unbounded" not in out
    bound = report["comparisons"][0]["ci_high_adjusted"]
    assert f"≤ −{abs(bound):.4f}" in out
    code, out, _ = gate("check", "--no-config", "--snapshot", SNAPSHOT, "--baseline", BASELINE,
                        "--candidate", RUNS / "bm25-titles.trec", "--gate", "Recall@10=1e-200",
                        "--markdown", tmp_path / "r.md")
    assert code in (0, 1) and out.startswith(("PASS", "REGRESSION", "INCONCLUSIVE"))


def test_a_score_credited_nowhere_says_what_to_check(tmp_path):
    zeros = [0.0] * len(QUERIES)
    b, c = runs_with(tmp_path, {"h": zeros}, {"h": zeros})
    _, out, _, _ = check(b, c, "score:h=0.05")
    assert out.splitlines()[1] == ("Next: check the score files: both runs score 0 on every "
                                   "query of score:h (a judge that failed writes null, not 0)")


def test_a_mixed_check_still_checks_the_ranked_runs_chunk_table(tmp_path):
    """The pydoc baseline (ranked, with a chunk table) beside a scores-only candidate."""
    folder = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "pydoc", folder / "examples" / "pydoc")
    shutil.copytree(ROOT / "baselines" / "pydoc", folder / "baselines" / "pydoc")
    snapshot = folder / "examples" / "pydoc" / "snapshot.json"
    scores = folder / "cut.jsonl"
    shutil.copy(PYDOC / "answers" / "bm25-200-reader-cut32.scores.jsonl", scores)
    judge = ("--judge", "reader-scoring=squad-token-f1+exact-match+evidence-match", "--judge",
             "gold=examples/pydoc/label.py direct quotes")
    assert gate("run-manifest", "--snapshot", snapshot, "--scores", scores, *judge,
                "-o", Path(f"{scores}.manifest.json").resolve())[0] == 0
    args = ("check", "--no-config", "--snapshot", snapshot, "--baseline",
            folder / "baselines" / "pydoc", "--candidate", scores, "--gate",
            "score:token_f1=0.05")
    code, out, _ = gate(*args)
    assert code == 1 and "the candidate has no ranking" in out
    with (folder / "examples" / "pydoc" / "chunks-300.jsonl").open("a") as table:
        table.write('{"id": "extra#0", "doc_id": "assert", "start": 0, "end": 10, "tokens": 3}\n')
    code, _, err = gate(*args)
    assert code == 3 and "chunk table" in err


def test_a_whole_number_id_is_read_as_its_digits_and_a_bool_is_refused() -> None:
    """Tools write numeric ids as JSON numbers: ``"query_id": 1`` is query "1" (as a CSV
    cell "1" is); true, 1.5 are not ids."""
    rows = read_scores(blob('{"query_id": 1, "scores": {"f": 0.5}}\n'
                            '{"query_id": "q2", "scores": {"f": 1}}\n'))
    assert rows.keys == ("1", "q2")
    for bad in ("true", "1.5", "9" * 1100):  # a whole number is held to an id's length too
        with pytest.raises(InputError, match="is not a non-empty string|longer than 1024"):
            read_scores(blob(f'{{"query_id": {bad}, "scores": {{"f": 0.5}}}}\n'))


def _pydoc_candidate(tmp_path: Path, drop: set[str]) -> Path:
    """The pydoc re-chunked run beside the snapshot, its manifest pinning its answer scores
    without the rows of the queries ``drop``."""
    folder = tmp_path / "pydoc"
    shutil.copytree(PYDOC, folder, ignore=shutil.ignore_patterns("*.manifest.json"))
    scores = folder / "answers" / "bm25-200.scores.jsonl"
    scores.write_text("".join(line + "\n" for line in scores.read_text().splitlines()
                              if json.loads(line)["query_id"] not in drop))
    run = folder / "runs" / "bm25-200.trec"
    code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json", "--run", run,
                        "--chunks", folder / "chunks-200.jsonl", "--chunking-version",
                        "tokens-200-overlap-40", "--scores", scores, "--commit", "none",
                        "--judge", "reader-scoring=squad-token-f1+exact-match+evidence-match",
                        "--judge", "gold=examples/pydoc/label.py direct quotes")
    assert code == 0, err
    return run


def test_a_score_file_without_the_unanswerable_queries_is_read(tmp_path) -> None:
    """An evaluation of the answerable questions only: its scores of them are compared as
    those of a file that lists every query (the slice all is the answerable queries), and a
    score gated on the slice unanswerable is refused, naming the file."""
    test_set = load_test_set(load_snapshot(PYDOC / "snapshot.json"))
    unanswerable = set(test_set.unanswerable)
    assert len(unanswerable) == 10
    reports = []
    for name, drop in (("full", set()), ("answerable", unanswerable)):
        run = _pydoc_candidate(tmp_path / name, drop)
        code, out, err = gate("check", "--config", PYDOC / "answers.toml", "--candidate", run,
                              "--output-format", "json")
        assert code == 0, err
        reports.append(json.loads(out))
    full, answerable = ([(c["measure"], c["n"], c["baseline_mean"], c["candidate_mean"],
                          c["decision"]) for c in r["comparisons"]] for r in reports)
    assert answerable == full
    f1 = [json.loads(line) for line in (PYDOC / "answers" / "bm25-200.scores.jsonl").open()]
    kept = [r["scores"]["token_f1"] for r in f1 if r["query_id"] not in unanswerable]
    assert len(kept) == 89 and answerable[1][3] == pytest.approx(math.fsum(kept) / 89, abs=1e-12)
    run = _pydoc_candidate(tmp_path / "gated", unanswerable)
    code, _, err = gate("check", "--config", PYDOC / "answers.toml", "--candidate", run,
                        "--gate", "score:token_f1:unanswerable=0.1")
    assert code == 2 and "score:token_f1 is gated on slice 'unanswerable', and the " \
        "candidate's scores" in err and "score no unanswerable query" in err, err


def test_a_score_file_with_some_unanswerable_queries_only_is_refused(tmp_path) -> None:
    test_set = load_test_set(load_snapshot(PYDOC / "snapshot.json"))
    ids = (*test_set.answerable, *test_set.unanswerable)
    lines = "\n".join(json.dumps({"query_id": q, "scores": {"f": 1}})
                      for q in ids if q != test_set.unanswerable[3])
    with pytest.raises(InputError, match=rf"unanswerable query {test_set.unanswerable[3]} of "
                       r"the snapshot has no score: the file scores 9 of its 10 unanswerable "
                       r"queries — score every unanswerable query, or none"):
        load_query_scores(blob(lines), None, test_set.queries, ids, None, 10)
    lines = "\n".join(json.dumps({"query_id": q, "scores": {"f": 1}})
                      for q in test_set.answerable[1:])
    with pytest.raises(InputError, match=f"query {ids[0]} of the snapshot has no score"):
        load_query_scores(blob(lines), None, test_set.queries, ids, None, 10)
    scores = load_query_scores(blob(lines + "\n" + json.dumps(
        {"query_id": ids[0], "scores": {"f": 0.5}})), None, test_set.queries, ids, None, 10)
    assert scores.absent.tolist() == [False] * 89 + [True] * 10
    assert not scores.scores_unanswerable and np.isnan(scores.column("f")[89:]).all()


@pytest.mark.parametrize("policy", ["error", "drop-pair", "worst"])
def test_absent_queries_are_neither_failed_nor_covered(policy: str) -> None:
    """An unanswerable query a file leaves out is no failed score: under every policy it is
    left out of the signal, uncounted, and the worst value is taken from the scored queries."""
    from retrieval_gate.decide.signals import apply_missing

    nan = math.nan
    base = np.array([0.4, nan, 0.9, nan, nan])
    cand = np.array([0.6, 0.7, 0.8, nan, 0.2])
    absent = np.array([False, False, False, True, True])
    if policy == "error":
        with pytest.raises(InputError, match="score:f of query q1 is missing or failed"):
            apply_missing("score:f", base, cand, False, "error", ["q0", "q1", "q2", "u0", "u1"],
                          ("b", "c"), absent)
        base[1] = 0.5
    signal, count = apply_missing("score:f", base, cand, False, policy,  # type: ignore[arg-type]
                                  ["q0", "q1", "q2", "u0", "u1"], ("b", "c"), absent)
    failed = 0 if policy == "error" else 1
    assert (count.baseline, count.candidate, count.pairs) == (failed, 0, failed)
    covered = {"error": [True, True, True, False, False],
               "drop-pair": [True, False, True, False, False],
               "worst": [True, True, True, False, False]}[policy]
    assert signal.covers.tolist() == covered
    expected = {"error": 0.5, "drop-pair": 0.0, "worst": 0.4}[policy]  # worst: min of scored
    assert signal.baseline[1] == expected and not np.isnan(signal.baseline).any()
