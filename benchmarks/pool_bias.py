"""What does the rule "a regression must not rest on unjudged items" cost and buy? A calibration
of :data:`retrieval_gate.gating.unjudged.UNJUDGED_SHARE` on REAL runs with simulated pools.

Run by hand from the project root, with the venv's Python::

    python benchmarks/pool_bias.py            # --help for the options; --quick for a smoke run

Data. The Cranfield example shipped in the repository: 225 queries, graded judgments, and four
real runs of 100 items per query — the approved baseline ``bm25`` and three candidates:
``dense`` and ``hybrid`` (truly better than bm25 on Recall@10 and nDCG@10) and ``titles``
(bm25 over titles only: truly worse, by 0.068 Recall@10).

Truth and pools. Cranfield's judgments are taken for complete (every document they do not
name is non-relevant): the **truth**. A **pool** judges what the baseline ranks in its top d
(d ∈ {10, 20, 50, 100}): a pooled document keeps its true grade (0 when the truth does not
name it), every other document is unjudged — the test set a team builds from the system it
has, which a new retriever then meets (pool bias). The pooled judgments name non-relevant
items (grade 0), so the rule's first check applies to them. A fourth candidate, **worse
(judged)**, is the baseline with, in every other query, each relevant document of its top 10
swapped with the baseline's highest-ranked pooled non-relevant document below rank 10: truly
worse, and every item it ranks is judged (with a 10-deep pool there is none below rank 10 to
swap with, and it is the baseline itself).

Test sets. n ∈ {50, 100} queries drawn without replacement from the 225, ``--sims`` per cell
(each set frozen as a snapshot with ``extra = ignore``, so the full runs serve every set).

Decision. ``gate check``'s own code in-process (:func:`retrieval_gate.run_gate`, the default
gates Recall@10 and nDCG@10 with margin 0.02, ``--resamples``), once on the truth and once on
the pool with the rule's threshold at 0 (every positive gap checked, with at least
:data:`~retrieval_gate.gating.unjudged.MIN_ITEMS` unjudged items): the report says, for each
regression, the candidate's extra unjudged share where it lost and whether it holds on
condensed rankings,
from which the verdict at every threshold T follows (a regression whose gap is at least T and
that does not hold on condensed rankings is inconclusive). ``off`` is the gate without the
rule.

Measured (``--sims 100``, the depths in two processes; about 15 minutes on 2 quiet cores), in
docs/concepts/pool.md: the threshold 0.3 removes nearly every false alarm the pool bias makes
where it makes them (gaps of 0.37 and more), and keeps the power of a truly worse candidate
within 0.03 up to a gap of 0.25; 0.2 loses up to 0.34 of it there, 0.4 lets false alarms back.

Output, per candidate, pool depth and n: the mean extra unjudged share of the candidate's top
10 (the gap), the rate of REGRESSION verdicts on the truth, and on the pool without the rule
and with it at each T. For dense and hybrid every regression is a false alarm (the truth says
they are better); for titles and worse (judged) a regression is right, and the rule's cost is
the power it gives up.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from retrieval_gate import GatePolicy, run_gate
from retrieval_gate.commands.validate import record_run
from retrieval_gate.gating import unjudged
from retrieval_gate.inputs.snapshot import freeze
from retrieval_gate.scoring.rules import ScoringPolicy

CRANFIELD = ROOT / "examples" / "cranfield"
RUNS = {"bm25": ROOT / "baselines" / "cranfield" / "bm25.trec",
        "dense": CRANFIELD / "runs" / "dense.trec", "hybrid": CRANFIELD / "runs" / "hybrid.trec",
        "titles": CRANFIELD / "runs" / "bm25-titles.trec"}
THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6)
K = 10


def read_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    """qid → [(doc, score)] in trec_eval's order (score descending, then doc id descending)."""
    run: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run[qid].append((doc, float(score)))
    return {q: sorted(items, key=lambda p: (p[1], p[0].encode()), reverse=True)
            for q, items in run.items()}


def read_truth() -> dict[str, dict[str, int]]:
    truth: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (CRANFIELD / "qrels.tsv").read_text().splitlines():
        qid, _, doc, grade = line.split()
        truth[qid][doc] = int(grade)
    return truth


def pooled(truth: dict[str, dict[str, int]], baseline: dict[str, list[tuple[str, float]]],
           depth: int) -> dict[str, dict[str, int]]:
    """The judgments of the baseline's top ``depth``: true grades, 0 for the rest."""
    return {q: {d: truth[q].get(d, 0) for d, _ in baseline.get(q, [])[:depth]} for q in truth}


def worse_judged(baseline: dict[str, list[tuple[str, float]]], pool: dict[str, dict[str, int]]
                 ) -> dict[str, list[tuple[str, float]]]:
    """The baseline with, in every other query, each relevant document of its top 10 swapped
    with the highest pooled non-relevant one below rank 10 (scores stay with the ranks)."""
    out = {}
    for i, (q, items) in enumerate(sorted(baseline.items(), key=lambda p: int(p[0]))):
        docs = [d for d, _ in items]
        if i % 2 == 0:
            below = [j for j in range(K, len(docs)) if pool[q].get(docs[j], -1) == 0]
            for j in range(K):
                if pool[q].get(docs[j], 0) > 0 and below:
                    swap = below.pop(0)
                    docs[j], docs[swap] = docs[swap], docs[j]
        out[q] = [(d, s) for d, (_, s) in zip(docs, items)]
    return out


def write_run(path: Path, run: dict[str, list[tuple[str, float]]]) -> Path:
    path.write_text("".join(f"{q} Q0 {d} {r} {s!r} x\n" for q, items in run.items()
                            for r, (d, s) in enumerate(items, 1)))
    return path


def write_qrels(path: Path, qrels: dict[str, dict[str, int]], queries: list[str]) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q in queries for d, g in qrels[q].items()))
    return path


@contextmanager
def threshold(share: float) -> Iterator[None]:
    """The rule's threshold set to ``share`` for the block."""
    kept = unjudged.UNJUDGED_SHARE
    unjudged.UNJUDGED_SHARE = share
    try:
        yield
    finally:
        unjudged.UNJUDGED_SHARE = kept


def gap(pool: dict[str, dict[str, int]], baseline: dict[str, list[tuple[str, float]]],
        candidate: dict[str, list[tuple[str, float]]], queries: list[str]) -> float:
    """The candidate's extra unjudged share of its top 10 over the baseline's, on ``queries``."""
    def unjudged(run: dict[str, list[tuple[str, float]]]) -> int:
        return sum(d not in pool[q] for q in queries for d, _ in run.get(q, [])[:K])
    return (unjudged(candidate) - unjudged(baseline)) / (K * len(queries))


def verdicts(folder: Path, qrels: dict[str, dict[str, int]], queries: list[str],
             runs: dict[str, Path], candidate: str, policy: GatePolicy
             ) -> tuple[bool, dict[float | str, bool]]:
    """One test set judged by ``qrels``: whether the gate without the rule says regression,
    and whether it does at each threshold (and ``off``)."""
    (folder / "queries.jsonl").write_text("".join(json.dumps({"id": q}) + "\n" for q in queries))
    write_qrels(folder / "qrels.tsv", qrels, queries)
    freeze(folder / "snapshot.json", queries=folder / "queries.jsonl",
           qrels=folder / "qrels.tsv", corpus_version="c", permissions_version="p",
           unit="document", measures=["Recall@10", "nDCG@10"],
           policy=ScoringPolicy(extra="ignore", unlabeled="zero"))
    for name in ("bm25", candidate):
        record_run(folder / "snapshot.json", runs[name], commit="none",
                   output=folder / f"{name}.manifest.json")
    with threshold(0.0):
        report = run_gate(folder / "snapshot.json", runs["bm25"], runs[candidate], policy,
                          baseline_manifest=folder / "bm25.manifest.json",
                          candidate_manifest=folder / f"{candidate}.manifest.json")
    depends = {(u.measure, u.slice): u for u in report.unjudged if u.depends}
    regressions = [c for c in report.comparisons if c.decision == "regression"]
    gaps = {key: u.gap for key, u in depends.items()}
    at: dict[float | str, bool] = {"off": bool(regressions or depends)}
    for t in THRESHOLDS:  # a regression stands unless its gap reaches t and it depends
        at[t] = bool(regressions) or any(g < t for g in gaps.values())
    return bool(regressions or depends), at


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=40, help="test sets per cell")
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100])
    parser.add_argument("--depths", type=int, nargs="+", default=[10, 20, 50, 100])
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 sets, n 50")
    args = parser.parse_args()
    if args.quick:
        args.sims, args.sizes, args.depths = 3, [50], [20]
    rng = np.random.default_rng(0)
    truth = read_truth()
    runs = {name: read_run(path) for name, path in RUNS.items()}
    policy = replace(GatePolicy(), resamples=args.resamples, min_queries=25)
    print(f"{'candidate':15} {'pool':>4} {'n':>4}  {'gap':>5}  {'truth':>5}  {'off':>5}  "
          + "  ".join(f"T={t:<4g}" for t in THRESHOLDS))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for depth in args.depths:
            pool = pooled(truth, runs["bm25"], depth)
            files = {name: write_run(folder / f"{name}.trec", run) for name, run in runs.items()}
            worse = worse_judged(runs["bm25"], pool)
            files["worse (judged)"] = write_run(folder / "worse.trec", worse)
            ranked = {**runs, "worse (judged)": worse}
            for candidate in ("dense", "hybrid", "titles", "worse (judged)"):
                for n in args.sizes:
                    counts: dict[str, int] = defaultdict(int)
                    gap_sum = 0.0
                    for _ in range(args.sims):
                        queries = sorted(rng.choice(sorted(truth), n, replace=False).tolist(),
                                         key=int)
                        counts["truth"] += verdicts(folder, truth, queries, files, candidate,
                                                    policy)[0]
                        _, at = verdicts(folder, pool, queries, files, candidate, policy)
                        gap_sum += gap(pool, runs["bm25"], ranked[candidate], queries)
                        for key, flagged in at.items():
                            counts[str(key)] += flagged
                    rate = {key: value / args.sims for key, value in counts.items()}
                    print(f"{candidate:15} {depth:>4} {n:>4}  {gap_sum / args.sims:5.2f}  "
                          f"{rate['truth']:5.2f}  {rate['off']:5.2f}  "
                          + "  ".join(f"{rate[str(t)]:6.2f}" for t in THRESHOLDS), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
