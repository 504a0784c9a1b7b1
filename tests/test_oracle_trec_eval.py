"""retrieval_gate against trec_eval: pytrec_eval (trec_eval's own C code) as a live oracle, and
trec_eval 10.0's expected-output files from its test suite.

The oracle side never goes through retrieval_gate's readers: qrels and runs are parsed here by a
tiny independent reader (first whitespace fields, ``#`` lines skipped), so a parsing bug in the
library cannot hide in both sides of a comparison.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")

from retrieval_gate import InputError, ScoringPolicy, parse_measures, score_run
from retrieval_gate.formats import read_qrels, read_run

DATA = Path(__file__).parent / "data"
TE = DATA / "trec_eval"
CRANFIELD = Path(__file__).parent.parent / "examples" / "cranfield"
CRANFIELD_RUNS = {"bm25": CRANFIELD.parent.parent / "baselines" / "cranfield" / "bm25.trec",
                  "dense": CRANFIELD / "runs" / "dense.trec",
                  "hybrid": CRANFIELD / "runs" / "hybrid.trec"}

CUTOFFS = (1, 5, 10, 20, 100, 1000)
ORACLE_TOL = 1e-9
FILE_TOL = 5e-5


# ---------------------------------------------------------------------------------------------
# independent oracle side


def oracle_read_run(path: Path) -> dict[str, dict[str, float]]:
    """qid -> docid -> score from the first 6 whitespace fields of each data line."""
    run: dict[str, dict[str, float]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            assert len(fields) >= 6, line
            qid, _, doc, _, score, _ = fields[:6]
            per_query = run.setdefault(qid, {})
            assert doc not in per_query, f"duplicate {qid} {doc} in {path}"
            per_query[doc] = float(score)
    return run


def oracle_read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            qid, _, doc, grade = fields[:4]
            qrels.setdefault(qid, {})[doc] = int(grade)
    return qrels


def trec_sorted(docs: dict[str, float]) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, then docid descending in byte order."""
    return sorted(docs.items(), key=lambda kv: (kv[1], kv[0].encode("utf-8")), reverse=True)


def _cut(kind: str, cutoffs) -> str:
    return f"{kind}." + ",".join(str(k) for k in cutoffs)


# ours -> trec_eval (pytrec_eval key); RR@k is computed on a truncated run.
def measure_map(cutoffs=CUTOFFS) -> dict[str, str]:
    names = {"AP": "map", "RR": "recip_rank", "nDCG(gain=linear)": "ndcg", "P": "set_P"}
    for k in cutoffs:
        names.update({
            f"P@{k}": f"P_{k}",
            f"Recall@{k}": f"recall_{k}",
            f"AP@{k}": f"map_cut_{k}",
            f"nDCG(gain=linear)@{k}": f"ndcg_cut_{k}",
            f"Hit@{k}": f"success_{k}",
            f"RR@{k}": None,
        })
    return names


def oracle_scores(qrels, run, threshold: int = 1, cutoffs=CUTOFFS
                  ) -> dict[str, dict[str, float]]:
    """Per query, our measure name -> value computed by pytrec_eval."""
    requested = {"map", "recip_rank", "ndcg", "set_P", _cut("P", cutoffs),
                 _cut("recall", cutoffs), _cut("map_cut", cutoffs), _cut("ndcg_cut", cutoffs),
                 _cut("success", cutoffs)}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, requested, relevance_level=threshold)
    raw = evaluator.evaluate(run)
    out: dict[str, dict[str, float]] = {}
    for qid, values in raw.items():
        out[qid] = {ours: values[theirs] for ours, theirs in measure_map(cutoffs).items()
                    if theirs is not None}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=threshold)
    for k in cutoffs:
        truncated = {q: dict(trec_sorted(docs)[:k]) for q, docs in run.items()}
        for qid, values in rr.evaluate(truncated).items():
            out[qid][f"RR@{k}"] = values["recip_rank"]
    return out


# ---------------------------------------------------------------------------------------------
# our side


MEASURES = parse_measures(list(measure_map()))


def ours(qrels_path: Path, run_path: Path, threshold: int = 1, **policy):
    qrels = read_qrels(qrels_path)
    run = read_run(run_path)
    return score_run(qrels, run, MEASURES, ScoringPolicy(threshold=threshold, **policy))


def assert_agree(mine: dict[str, dict[str, float]], oracle: dict[str, dict[str, float]],
                 tol: float) -> int:
    """Every oracle value matches ours; returns the number of values compared."""
    problems = []
    compared = 0
    for qid, values in oracle.items():
        assert qid in mine, f"query {qid} scored by the oracle but not by us"
        for name, expected in values.items():
            got = mine[qid][name]
            compared += 1
            if not abs(got - expected) <= tol:
                problems.append(f"{qid} {name}: ours {got!r}, oracle {expected!r}")
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:30])
    return compared


def test_measure_names_are_canonical():
    # the per_query keys are str(Measure); the mapping above must use those exact names
    assert [str(m) for m in MEASURES] == list(measure_map())


# ---------------------------------------------------------------------------------------------
# trec_eval's test files vs pytrec_eval


def test_qrels_test_results_test_vs_pytrec_eval():
    scores = ours(TE / "qrels.test", TE / "results.test")
    oracle = oracle_scores(oracle_read_qrels(TE / "qrels.test"),
                           oracle_read_run(TE / "results.test"))
    assert set(scores.query_ids) == set(oracle) == {"301", "302", "303"}
    assert assert_agree(scores.per_query(), oracle, ORACLE_TOL) == 3 * len(MEASURES)
    assert scores.warnings == ()


def test_rel_level_threshold_2_vs_pytrec_eval():
    scores = ours(TE / "qrels.rel_level", TE / "results.test", threshold=2)
    oracle = oracle_scores(oracle_read_qrels(TE / "qrels.rel_level"),
                           oracle_read_run(TE / "results.test"), threshold=2)
    assert set(scores.query_ids) == set(oracle) == {"301", "302", "303"}
    assert assert_agree(scores.per_query(), oracle, ORACLE_TOL) == 3 * len(MEASURES)
    # the threshold matters: some binary measure differs from the threshold-1 scores
    at_1 = ours(TE / "qrels.rel_level", TE / "results.test", threshold=1).per_query()
    assert any(at_1[q]["AP"] != scores.per_query()[q]["AP"] for q in at_1)
    # ... and nDCG ignores it (trec_eval's ndcg does too)
    for q in at_1:
        assert at_1[q]["nDCG(gain=linear)"] == scores.per_query()[q]["nDCG(gain=linear)"]


def test_truncated_run_missing_zero_vs_pytrec_eval():
    with pytest.raises(InputError, match="302"):
        ours(TE / "qrels.test", TE / "results.trunc")  # missing='error' is the default
    scores = ours(TE / "qrels.test", TE / "results.trunc", missing="zero")
    oracle = oracle_scores(oracle_read_qrels(TE / "qrels.test"),
                           oracle_read_run(TE / "results.trunc"))
    assert set(oracle) == {"301", "303"}
    assert set(scores.query_ids) == {"301", "302", "303"}
    per_query = scores.per_query()
    assert assert_agree(per_query, oracle, ORACLE_TOL) == 2 * len(MEASURES)
    assert per_query["302"] == {str(m): 0.0 for m in MEASURES}
    assert any("302" in w for w in scores.warnings)
    # trailing junk on lines is ignored: the run has 584 items
    assert len(read_run(TE / "results.trunc").items) == 584


def test_comment_test_vs_pytrec_eval():
    scores = ours(TE / "qrels.comment.test", TE / "results.comment.test", extra="ignore",
                  unlabeled="zero")
    qrels = oracle_read_qrels(TE / "qrels.comment.test")
    oracle = oracle_scores(qrels, oracle_read_run(TE / "results.comment.test"))
    assert len(scores.query_ids) == 31
    assert set(scores.query_ids) == set(oracle) == set(qrels)
    per_query = scores.per_query()
    assert assert_agree(per_query, oracle, ORACLE_TOL) == 31 * len(MEASURES)
    unlabeled = [q for q, labels in qrels.items() if max(labels.values()) < 1]
    assert len(unlabeled) == 1
    assert per_query[unlabeled[0]] == {str(m): 0.0 for m in MEASURES}
    assert any(unlabeled[0] in w for w in scores.warnings)


def test_comment_test_policies_error_by_default():
    with pytest.raises(InputError, match="not in the qrels"):
        ours(TE / "qrels.comment.test", TE / "results.comment.test", unlabeled="zero")
    with pytest.raises(InputError, match="has no judgment at grade"):
        ours(TE / "qrels.comment.test", TE / "results.comment.test", extra="ignore")


# ---------------------------------------------------------------------------------------------
# trec_eval 10.0's expected outputs


def parse_out(path: Path) -> dict[tuple[str, str], float]:
    """(trec_eval measure, qid or 'all') -> value, numeric lines only."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        measure, qid, value = line.split("\t")
        try:
            out[(measure.strip(), qid.strip())] = float(value)
        except ValueError:
            pass  # runid, relstring
    return out


OUT_CUTOFFS = (1, 5, 10, 15, 20, 30, 100, 200, 500, 1000)  # every cutoff in the out.* files
TREC_TO_OURS = {v: k for k, v in measure_map(OUT_CUTOFFS).items() if v is not None}


def compare_with_out(path: Path, scores, per_query_lines: bool) -> set[str]:
    expected = parse_out(path)
    per_query, means = scores.per_query(), scores.means()
    names = {str(m) for m in scores.measures}
    seen_qids = set()
    compared = set()
    problems = []
    for (trec_name, qid), value in expected.items():
        mine = TREC_TO_OURS.get(trec_name)
        if mine is None:
            continue
        assert mine in names, f"{trec_name} -> {mine} was not computed"
        if qid == "all":
            got = means[mine]
        else:
            seen_qids.add(qid)
            got = per_query[qid][mine]
        compared.add(trec_name)
        if not abs(got - value) <= FILE_TOL:
            problems.append(f"{trec_name} {qid}: ours {got!r}, trec_eval {value}")
    assert not problems, f"{path.name}: " + "\n".join(problems)
    if per_query_lines:
        assert seen_qids == set(scores.query_ids)
    else:
        assert not seen_qids
    assert int(expected[("num_q", "all")]) == len(scores.query_ids)
    return compared


def _out_measures(cutoffs=OUT_CUTOFFS):
    return parse_measures(k for k, v in measure_map(cutoffs).items() if v is not None)


def _score(qrels_name, run_name, **policy):
    return score_run(read_qrels(TE / qrels_name), read_run(TE / run_name), _out_measures(),
                     ScoringPolicy(**policy))


EXPECTED_ALL_TREC = {"map", "recip_rank", "ndcg", "set_P", "P_5", "P_10", "P_1000",
                     "recall_5", "recall_1000", "map_cut_5", "map_cut_1000", "ndcg_cut_10",
                     "success_1", "success_5", "success_10"}


def test_out_test_aq():
    compared = compare_with_out(TE / "out.test.aq", _score("qrels.test", "results.test"), True)
    assert EXPECTED_ALL_TREC <= compared


def test_out_test_aqc_missing_zero():
    scores = _score("qrels.test", "results.trunc", missing="zero")
    compared = compare_with_out(TE / "out.test.aqc", scores, True)
    assert EXPECTED_ALL_TREC <= compared
    assert len(scores.query_ids) == 3  # the mean is over all three qrels topics


def test_out_test_aql_threshold_2():
    scores = _score("qrels.rel_level", "results.test", threshold=2)
    compared = compare_with_out(TE / "out.test.aql", scores, True)
    assert EXPECTED_ALL_TREC <= compared


def test_out_comment_test():
    scores = _score("qrels.comment.test", "results.comment.test", extra="ignore",
                    unlabeled="zero")
    compared = compare_with_out(TE / "out.comment.test", scores, False)
    assert {"map", "recip_rank", "P_5", "P_10", "P_1000"} <= compared


@pytest.mark.parametrize("qrels_name", ["qrels.test", "qrels.test.with-comments"])
def test_out_test_default_measures(qrels_name):
    compared = compare_with_out(TE / "out.test", _score(qrels_name, "results.test"), False)
    assert {"map", "recip_rank", "P_5", "P_30", "P_1000"} <= compared


def test_qrels_with_comments_same_as_qrels_test():
    plain = read_qrels(TE / "qrels.test")
    commented = read_qrels(TE / "qrels.test.with-comments")
    # only a leading '#' starts a comment: 'CR#93E-1860' is a docid, the comment lines are not
    assert commented.judgments["301"]["CR#93E-1860"] == 0
    assert "CR93E-1860" not in commented.judgments["301"]
    renamed = {q: dict(d) for q, d in commented.judgments.items()}
    renamed["301"]["CR93E-1860"] = renamed["301"].pop("CR#93E-1860")
    assert renamed == plain.judgments
    assert sum(map(len, plain.judgments.values())) == 3681
    run = read_run(TE / "results.test")
    a = score_run(plain, run, MEASURES).per_query()
    b = score_run(commented, run, MEASURES).per_query()
    assert a == b


# ---------------------------------------------------------------------------------------------
# Cranfield reference runs


@pytest.mark.parametrize("run_name", ["bm25", "dense", "hybrid"])
def test_cranfield_runs_vs_pytrec_eval(run_name):
    run_path = CRANFIELD_RUNS[run_name]
    scores = ours(CRANFIELD / "qrels.tsv", run_path)
    oracle = oracle_scores(oracle_read_qrels(CRANFIELD / "qrels.tsv"), oracle_read_run(run_path))
    assert len(scores.query_ids) == len(oracle) == 225
    assert assert_agree(scores.per_query(), oracle, ORACLE_TOL) == 225 * len(MEASURES)


# ---------------------------------------------------------------------------------------------
# Condensed rankings: trec_eval -J (pytrec_eval's judged_docs_only_flag)


def oracle_condensed(qrels, run, threshold: int = 1) -> dict[str, dict[str, float]]:
    """Per query, our measure name -> value of trec_eval over the judged documents only (RR@k
    is left out: trec_eval computes it on a run truncated before the unjudged are removed)."""
    requested = {"map", "ndcg", "set_P", _cut("P", CUTOFFS), _cut("recall", CUTOFFS),
                 _cut("map_cut", CUTOFFS), _cut("ndcg_cut", CUTOFFS), _cut("success", CUTOFFS)}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, requested, relevance_level=threshold,
                                               judged_docs_only_flag=True)
    return {qid: {ours: values[theirs] for ours, theirs in measure_map().items()
                  if theirs not in (None, "recip_rank")}
            for qid, values in evaluator.evaluate(run).items()}


@pytest.mark.parametrize(("qrels_name", "run_path", "threshold"), [
    ("qrels.test", TE / "results.test", 1), ("qrels.rel_level", TE / "results.test", 2),
    *((str(CRANFIELD / "qrels.tsv"), path, 1) for path in CRANFIELD_RUNS.values())])
def test_condensed_rankings_vs_trec_eval_judged_only(qrels_name, run_path, threshold):
    """Sakai's condensed rankings (the unjudged items removed before the cutoff) are what
    trec_eval -J computes: every query, every measure, on trec_eval's test files (graded pools
    with judged non-relevant documents) and on Cranfield (relevant documents judged only, so
    a condensed ranking holds the relevant documents alone)."""
    qrels_path = Path(qrels_name) if "/" in qrels_name else TE / qrels_name
    mine = score_run(read_qrels(qrels_path), read_run(run_path), MEASURES,
                     ScoringPolicy(threshold=threshold, missing="zero", unlabeled="zero"),
                     condensed=True).per_query()
    oracle = oracle_condensed(oracle_read_qrels(qrels_path), oracle_read_run(run_path),
                              threshold)
    assert assert_agree(mine, oracle, ORACLE_TOL) == len(oracle) * (len(MEASURES) - 7)
    assert mine != ours(qrels_path, run_path, threshold, missing="zero",
                        unlabeled="zero").per_query()


def test_condensed_rankings_by_hand(tmp_path):
    """u1 and u2 are unjudged: the condensed ranking is r1 n1 r2 (r relevant, n not); R = 3
    (r3 never retrieved)."""
    (tmp_path / "qrels").write_text("q 0 r1 1\nq 0 r2 1\nq 0 r3 1\nq 0 n1 0\n")
    (tmp_path / "run").write_text("".join(f"q Q0 {d} {i} {10 - i} t\n" for i, d in
                                          enumerate(["u1", "r1", "u2", "n1", "r2"], 1)))
    measures = parse_measures(["P@2", "Recall@2", "RR@2", "AP@3", "Judged@3", "Hit@1"])
    got = score_run(read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run"), measures,
                    condensed=True).per_query()["q"]
    assert got == pytest.approx({"P@2": 0.5, "Recall@2": 1 / 3, "RR@2": 1.0,
                                 "AP@3": (1 + 2 / 3) / 3, "Judged@3": 1.0, "Hit@1": 1.0})
    standard = score_run(read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run"),
                         measures).per_query()["q"]
    assert standard == pytest.approx({"P@2": 0.5, "Recall@2": 1 / 3, "RR@2": 0.5,
                                      "AP@3": 0.5 / 3, "Judged@3": 1 / 3, "Hit@1": 0.0})


def test_rank_weighted_judged_share_by_hand(tmp_path):
    """Judged(weight=rank): rank r weighs 1/r, over H_k (or over the items returned). u1 and u2
    are unjudged in u1 r1 u2 n1 r2."""
    (tmp_path / "qrels").write_text("q 0 r1 1\nq 0 r2 1\nq 0 n1 0\n")
    (tmp_path / "run").write_text("".join(f"q Q0 {d} {i} {10 - i} t\n" for i, d in
                                          enumerate(["u1", "r1", "u2", "n1", "r2"], 1)))
    measures = parse_measures(["Judged(weight=rank)@3", "Judged(weight=rank)@10",
                               "Judged(weight=rank)", "Judged@3"])
    got = score_run(read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run"),
                    measures).per_query()["q"]
    h = [sum(1 / r for r in range(1, n + 1)) for n in range(11)]
    assert got == pytest.approx({"Judged(weight=rank)@3": (1 / 2) / h[3],
                                 "Judged(weight=rank)@10": (1 / 2 + 1 / 4 + 1 / 5) / h[10],
                                 "Judged(weight=rank)": (1 / 2 + 1 / 4 + 1 / 5) / h[5],
                                 "Judged@3": 1 / 3}, abs=1e-15)


def test_harmonic_numbers_are_exact_to_the_last_digits():
    from retrieval_gate.scoring.measures import harmonic
    exact = np.cumsum([0.0] + [1 / r for r in range(1, 5001)])
    n = np.arange(5001)
    assert np.allclose(harmonic(n), exact, rtol=1e-14, atol=0)


def test_cranfield_hybrid_has_ties_at_cutoffs():
    # the hybrid run's ties are real: the tie warning fires and the comparison above covers them
    run = oracle_read_run(CRANFIELD / "runs" / "hybrid.trec")
    tied_top10 = sum(
        1 for docs in run.values()
        for (_, a), (_, b) in zip(trec_sorted(docs)[:10], trec_sorted(docs)[1:11]) if a == b)
    assert tied_top10 > 0
    scores = ours(CRANFIELD / "qrels.tsv", CRANFIELD / "runs" / "hybrid.trec")
    assert any("ties straddle cutoff" in w for w in scores.warnings)


def test_cranfield_readme_means():
    """The README's table (4 decimals) for the three runs."""
    table = {"bm25": (0.3367, 0.7039, 0.4912, 0.2204, 0.2671),
             "dense": (0.3736, 0.7756, 0.5346, 0.2440, 0.3166),
             "hybrid": (0.4035, 0.7798, 0.5769, 0.2604, 0.3344)}
    names = ["nDCG(gain=linear)@10", "Recall@100", "RR@10", "P@10", "AP"]
    for run_name, expected in table.items():
        scores = score_run(read_qrels(CRANFIELD / "qrels.tsv"),
                           read_run(CRANFIELD_RUNS[run_name]),
                           parse_measures(names))
        means = scores.means()
        for name, value in zip(names, expected):
            assert means[name] == pytest.approx(value, abs=FILE_TOL), (run_name, name)


# ---------------------------------------------------------------------------------------------
# generated tie-heavy run


def _pool(rng: np.random.Generator, size: int) -> list[str]:
    """Distinct ids of varying length and case: 'd9', 'd10', 'D1x', 'd007', 'x-3_a', ..."""
    prefixes = ["d", "D", "d0", "dx", "x-", "doc"]
    suffixes = ["", "", "", "x", "_a", "0"]
    ids: set[str] = set()
    while len(ids) < size:
        n = int(rng.integers(0, 120))
        ids.add(f"{prefixes[rng.integers(len(prefixes))]}{n}"
                f"{suffixes[rng.integers(len(suffixes))]}")
    return sorted(ids)


def write_tie_heavy(tmp_path: Path, sep: str, seed: int = 20240607, n_queries: int = 200
                    ) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    run_lines, qrels_lines = [], []
    for qi in range(n_queries):
        qid = f"q{qi}"
        pool = _pool(rng, 80)
        judged = rng.choice(len(pool), size=int(rng.integers(1, 45)), replace=False)
        grades = rng.integers(0, 4, size=len(judged))
        if qi % 50 == 7:
            grades[:] = 0  # a query without relevant judgments
        if qi % 40 == 3:
            grades[0] = -1  # "in pool, unjudged"
        for j, g in zip(judged.tolist(), grades.tolist()):
            qrels_lines.append(f"{qid} 0 {pool[j]} {g}")
        retrieved = rng.choice(len(pool), size=50, replace=False)
        scores = rng.integers(0, 5, size=50)
        for rank, (d, s) in enumerate(zip(retrieved.tolist(), scores.tolist()), 1):
            text = [str(s), f"{s}.0", f"{s}.000"][rng.integers(3)]  # same float, other text
            run_lines.append(sep.join([qid, "Q0", pool[d], str(rank), text, "gen"]))
    order = rng.permutation(len(run_lines))
    run_path, qrels_path = tmp_path / "tie_heavy.trec", tmp_path / "tie_heavy.qrels"
    run_path.write_text("\n".join(run_lines[i] for i in order) + "\n", encoding="utf-8")
    qrels_path.write_text("\n".join(qrels_lines) + "\n", encoding="utf-8")
    return qrels_path, run_path


@pytest.mark.parametrize("sep", [" ", "\t"], ids=["spaces", "tabs"])
@pytest.mark.parametrize("threshold", [1, 2])
def test_tie_heavy_generated_run_vs_pytrec_eval(tmp_path, sep, threshold):
    qrels_path, run_path = write_tie_heavy(tmp_path, sep)
    oracle_run = oracle_read_run(run_path)
    # ties are everywhere, also across cutoffs
    assert all(len(set(docs.values())) <= 5 for docs in oracle_run.values())
    scores = ours(qrels_path, run_path, threshold=threshold, unlabeled="zero")
    oracle = oracle_scores(oracle_read_qrels(qrels_path), oracle_run, threshold=threshold)
    assert len(scores.query_ids) == len(oracle) == 200
    assert assert_agree(scores.per_query(), oracle, ORACLE_TOL) == 200 * len(MEASURES)
    assert any("ties straddle cutoff" in w for w in scores.warnings)


def test_tie_break_is_byte_order_descending(tmp_path):
    # d9 > d10 > D1x in byte order; all scores equal, file order the opposite
    (tmp_path / "q").write_text("1 0 d9 1\n1 0 d10 2\n1 0 D1x 3\n")
    (tmp_path / "r").write_text("1 Q0 D1x 1 1.0 t\n1 Q0 d10 2 1 t\n1 Q0 d9 3 1.00 t\n")
    scores = score_run(read_qrels(tmp_path / "q"), read_run(tmp_path / "r"),
                       parse_measures(["RR(rel=1)@1", "RR(rel=2)@1", "RR(rel=2)", "RR(rel=3)"]))
    assert scores.per_query()["1"] == {"RR(rel=1)@1": 1.0, "RR(rel=2)@1": 0.0,
                                       "RR(rel=2)": 0.5, "RR(rel=3)": 1 / 3}


def test_scores_compared_as_float64(tmp_path):
    # trec_eval 10 keeps scores as double. (pytrec_eval 0.5.x stores them as float32 and would
    # tie these pairs, which is why the generated runs above use integer scores.)
    (tmp_path / "q").write_text("1 0 a 1\n2 0 a 1\n")
    (tmp_path / "r").write_text("1 Q0 z 1 1.0 t\n1 Q0 a 2 1.00000001 t\n"
                                "2 Q0 z 1 0 t\n2 Q0 a 2 1e-300 t\n")
    scores = score_run(read_qrels(tmp_path / "q"), read_run(tmp_path / "r"),
                       parse_measures(["RR"]))
    assert scores.per_query() == {"1": {"RR": 1.0}, "2": {"RR": 1.0}}


# ---------------------------------------------------------------------------------------------
# exponential-gain nDCG (the default nDCG@k)


def reference_ndcg(ranking: list[str], judgments: dict[str, int], k: int | None,
                   exponential: bool = True) -> float:
    def gain(g: int) -> float:
        g = max(g, 0)
        return 2.0 ** g - 1.0 if exponential else float(g)

    top = ranking if k is None else ranking[:k]
    dcg = sum(gain(judgments.get(d, 0)) / math.log2(i + 1) for i, d in enumerate(top, 1))
    ideal = sorted((g for g in judgments.values() if g > 0), reverse=True)
    ideal = ideal if k is None else ideal[:k]
    idcg = sum(gain(g) / math.log2(i + 1) for i, g in enumerate(ideal, 1))
    return dcg / idcg if idcg > 0 else 0.0


SMALL_QRELS = {
    "q1": {"a": 3, "b": 2, "c": 0, "d": 1, "e": 1, "f": -1},  # e is never retrieved
    "q2": {"d9": 0, "d10": 2, "z": 1},
    "q3": {"m": 4},
}
SMALL_RUN = {  # doc -> score
    "q1": {"c": 0.9, "b": 0.8, "x": 0.7, "a": 0.6, "f": 0.5, "d": 0.4},
    "q2": {"d9": 1.0, "d10": 1.0, "z": 0.5},  # tie: d9 before d10 (byte order, descending)
    "q3": {"n": 2.0, "o": 1.0, "m": 0.5},
}


def _write_small(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "small.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, labels in SMALL_QRELS.items()
                             for d, g in labels.items()))
    run = tmp_path / "small.run"
    run.write_text("".join(f"{q}\tQ0\t{d}\t{r}\t{s}\tsmall\n" for q, docs in SMALL_RUN.items()
                           for r, (d, s) in enumerate(docs.items(), 1)))
    return qrels, run


def test_exponential_ndcg_hand_computed(tmp_path):
    qrels_path, run_path = _write_small(tmp_path)
    cutoffs = [1, 2, 3, 5, 10, None]
    names = [f"nDCG@{k}" if k else "nDCG" for k in cutoffs]
    linear = [f"nDCG(gain=linear)@{k}" if k else "nDCG(gain=linear)" for k in cutoffs]
    scores = score_run(read_qrels(qrels_path), read_run(run_path),
                       parse_measures(names + linear)).per_query()
    for qid, docs in SMALL_RUN.items():
        ranking = [d for d, _ in trec_sorted(docs)]
        for k, name, lin in zip(cutoffs, names, linear):
            assert scores[qid][name] == pytest.approx(
                reference_ndcg(ranking, SMALL_QRELS[qid], k), abs=1e-12), (qid, name)
            assert scores[qid][lin] == pytest.approx(
                reference_ndcg(ranking, SMALL_QRELS[qid], k, exponential=False),
                abs=1e-12), (qid, lin)
    # literal values, worked by hand
    # q1 ranking c b x a f d: gains 0 3 0 7 0 1; ideal a b d e: 7 3 1 1
    dcg3 = 3 / math.log2(3)
    idcg3 = 7 + 3 / math.log2(3) + 1 / 2
    assert scores["q1"]["nDCG@3"] == pytest.approx(dcg3 / idcg3, abs=1e-12)
    dcg = 3 / math.log2(3) + 7 / math.log2(5) + 1 / math.log2(7)
    idcg = 7 + 3 / math.log2(3) + 1 / 2 + 1 / math.log2(5)
    assert scores["q1"]["nDCG"] == pytest.approx(dcg / idcg, abs=1e-12)
    assert scores["q1"]["nDCG"] != pytest.approx(scores["q1"]["nDCG(gain=linear)"], abs=1e-3)
    # q2: tie broken d9 (gain 0) before d10 (gain 3)
    assert scores["q2"]["nDCG@1"] == 0.0
    assert scores["q2"]["nDCG@2"] == pytest.approx((3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    # q3: the only relevant doc at rank 3
    assert scores["q3"]["nDCG@2"] == 0.0
    assert scores["q3"]["nDCG"] == pytest.approx(0.5)
    assert scores["q3"]["nDCG@10"] == pytest.approx(0.5)


def test_exponential_ndcg_vs_ranx(tmp_path):
    ranx = pytest.importorskip("ranx")
    qrels_path, run_path = _write_small(tmp_path)
    # ranx keeps ties in list order, so compare on a tie-free run
    run = {q: {d: s + 1e-3 * i for i, (d, s) in enumerate(docs.items())}
           for q, docs in SMALL_RUN.items()}
    run_path.write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run.items()
                                for d, s in docs.items()))
    qrels = {q: {d: g for d, g in labels.items() if g >= 0} for q, labels in SMALL_QRELS.items()}
    for k in (1, 3, 5):
        got = score_run(read_qrels(qrels_path), read_run(run_path),
                        parse_measures([f"nDCG@{k}"])).per_query()
        for qid, docs in run.items():  # one query at a time: no assumption on ranx's order
            expected = ranx.evaluate(ranx.Qrels({qid: qrels[qid]}), ranx.Run({qid: docs}),
                                     f"ndcg_burges@{k}")
            assert got[qid][f"nDCG@{k}"] == pytest.approx(float(expected), abs=1e-9), (qid, k)
