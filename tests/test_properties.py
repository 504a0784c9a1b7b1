"""Property-based tests of the measures: generated qrels and runs are written as TREC text,
read back with the library's readers and scored."""

from __future__ import annotations

import itertools
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from retrieval_gate import ScoringPolicy, parse_measures, score_run
from retrieval_gate.formats import read_qrels, read_run

SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

CUTOFFS = (1, 2, 3, 5, 10)

# ids: varying length, mixed case, digits, punctuation, a non-leading '#', non-ASCII
ID = st.text(alphabet="abdDXz019_-.:#é", min_size=1, max_size=5).filter(
    lambda s: not s.startswith("#"))
GRADE = st.integers(-1, 3)
SCORE = st.one_of(
    st.integers(0, 3).map(float),  # ties everywhere
    st.sampled_from([0.0, -0.0, 0.5, 1e-5]),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
)


@dataclass
class Scenario:
    qrels: dict[str, dict[str, int]]  # qid -> doc -> grade
    run: dict[str, dict[str, float]]  # qid -> doc -> score

    def run_lines(self) -> list[str]:
        return [f"{q} Q0 {d} {r} {s!r} tag" for q, docs in self.run.items()
                for r, (d, s) in enumerate(docs.items(), 1)]

    def qrels_lines(self) -> list[str]:
        return [f"{q} 0 {d} {g}" for q, labels in self.qrels.items() for d, g in labels.items()]

    def trec_top(self, qid: str, k: int | None) -> list[str]:
        """Independent trec_eval order: score descending, then id descending in byte order."""
        docs = sorted(self.run.get(qid, {}).items(), key=lambda kv: (kv[1], kv[0].encode()),
                      reverse=True)
        return [d for d, _ in (docs if k is None else docs[:k])]


@st.composite
def scenarios(draw, grades=GRADE) -> Scenario:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qi in range(draw(st.integers(1, 4))):
        qid = f"q{qi}"
        pool = draw(st.lists(ID, min_size=1, max_size=14, unique=True))
        labels = {d: g for d in pool
                  if (g := draw(st.one_of(st.none(), grades))) is not None}
        retrieved = [d for d in pool if draw(st.booleans())]
        if labels:
            qrels[qid] = labels
        if retrieved:
            run[qid] = {d: draw(SCORE) for d in retrieved}
    assume(qrels and run)
    return Scenario(qrels, run)


POLICY = {"missing": "zero", "extra": "ignore", "unlabeled": "zero"}


def score(scenario: Scenario, measures, threshold: int = 1, run_lines: list[str] | None = None):
    with tempfile.TemporaryDirectory() as tmp:
        qrels_path, run_path = Path(tmp) / "qrels", Path(tmp) / "run"
        qrels_path.write_text("\n".join(scenario.qrels_lines()) + "\n", encoding="utf-8")
        lines = scenario.run_lines() if run_lines is None else run_lines
        run_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return score_run(read_qrels(qrels_path), read_run(run_path), measures,
                         ScoringPolicy(threshold=threshold, **POLICY))


def _names(families, cutoffs=CUTOFFS, whole=True) -> list[str]:
    out = [f"{f}@{k}" for f in families for k in cutoffs]
    return out + (list(families) if whole else [])


ALL_MEASURES = parse_measures(
    _names(["P", "Recall", "Hit", "RR", "AP", "nDCG", "nDCG(gain=linear)", "CP", "Judged",
            "RR(rel=2)", "AP(rel=3)", "P(rel=0)"]))


@SETTINGS
@given(scenarios(), st.integers(0, 3))
def test_every_measure_in_unit_interval(scenario, threshold):
    scores = score(scenario, ALL_MEASURES, threshold)
    assert set(scores.query_ids) == set(scenario.qrels)
    assert scores.values.shape == (len(scenario.qrels), len(ALL_MEASURES))
    for qid, values in scores.per_query().items():
        for name, value in values.items():
            assert 0.0 <= value <= 1.0, (qid, name, value)
    for name, mean in scores.means().items():
        assert 0.0 <= mean <= 1.0, (name, mean)


RECALL_CUTOFFS = tuple(range(1, 16))
RECALLS = parse_measures([f"Recall@{k}" for k in RECALL_CUTOFFS] + ["Recall"]
                         + [f"Recall(rel=2)@{k}" for k in RECALL_CUTOFFS] + ["Recall(rel=2)"])


@SETTINGS
@given(scenarios(), st.integers(1, 2))
def test_recall_non_decreasing_in_k(scenario, threshold):
    per_query = score(scenario, RECALLS, threshold).per_query()
    for qid, values in per_query.items():
        for prefix in ("Recall", "Recall(rel=2)"):
            series = [values[f"{prefix}@{k}"] for k in RECALL_CUTOFFS] + [values[prefix]]
            assert all(a <= b for a, b in itertools.pairwise(series)), (qid, prefix, series)
            # cutoffs beyond the list length change nothing
            if len(scenario.run.get(qid, {})) <= RECALL_CUTOFFS[-1]:
                assert series[-2] == series[-1]


@SETTINGS
@given(scenarios(), st.integers(1, 2), st.randoms(use_true_random=False))
def test_scores_unchanged_when_run_lines_shuffled(scenario, threshold, rnd):
    lines = scenario.run_lines()
    shuffled = list(lines)
    rnd.shuffle(shuffled)
    a = score(scenario, ALL_MEASURES, threshold)
    b = score(scenario, ALL_MEASURES, threshold, run_lines=shuffled)
    assert a.query_ids == b.query_ids
    assert a.per_query() == b.per_query()
    assert a.means() == b.means()


NDCGS = parse_measures(_names(["nDCG", "nDCG(gain=linear)"]))


@SETTINGS
@given(scenarios(grades=st.integers(0, 1)))
def test_exponential_and_linear_ndcg_equal_for_binary_grades(scenario):
    per_query = score(scenario, NDCGS).per_query()
    for qid, values in per_query.items():
        for k in (*CUTOFFS, None):
            suffix = "" if k is None else f"@{k}"
            assert values[f"nDCG{suffix}"] == pytest.approx(
                values[f"nDCG(gain=linear){suffix}"], abs=1e-12), (qid, k)


PRECISIONS = parse_measures(_names(["P"], whole=False) + _names(["P(rel=2)"], whole=False))


@SETTINGS
@given(scenarios(), st.integers(0, 3))
def test_precision_times_k_counts_relevant_in_top_k(scenario, threshold):
    per_query = score(scenario, PRECISIONS, threshold).per_query()
    for qid, values in per_query.items():
        labels = scenario.qrels[qid]
        for k in CUTOFFS:
            for name, t in ((f"P@{k}", threshold), (f"P(rel=2)@{k}", 2)):
                expected = sum(1 for d in scenario.trec_top(qid, k)
                               if labels.get(d, -1) >= max(t, 0))
                assert abs(values[name] * k - expected) < 1e-9, (qid, name, values[name])


HITS = parse_measures(_names(["Hit", "RR", "Hit(rel=2)", "RR(rel=2)"]))


@SETTINGS
@given(scenarios(), st.integers(1, 2))
def test_hit_is_rr_positive(scenario, threshold):
    per_query = score(scenario, HITS, threshold).per_query()
    for qid, values in per_query.items():
        for k in (*CUTOFFS, None):
            suffix = "" if k is None else f"@{k}"
            for hit, rr in ((f"Hit{suffix}", f"RR{suffix}"),
                            (f"Hit(rel=2){suffix}", f"RR(rel=2){suffix}")):
                assert values[hit] in (0.0, 1.0)
                assert values[hit] == float(values[rr] > 0), (qid, hit, values)
