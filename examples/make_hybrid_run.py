"""Rebuild ``cranfield/runs/hybrid.trec`` by reciprocal rank fusion (RRF) of two runs.

What it does: reads ``../baselines/cranfield/bm25.trec`` and ``cranfield/runs/dense.trec``
and, per query, scores every document that appears in either list by ``sum(1 / (60 + rank))`` over the
lists it appears in (rank = the rank column of each input file). The score is written with 8
decimals; documents are ranked by that written score, descending, ties broken by docid
descending (strcmp, trec_eval's own tie order), and the top 100 are kept. Tag: ``rrf60``.

Standard library only. Run from any directory:

    python examples/make_hybrid_run.py           # writes examples/cranfield/runs/hybrid.trec
    python examples/make_hybrid_run.py --check   # rebuild into a temp dir, compare, exit 1 on diff

The output is deterministic and byte-identical to the shipped ``hybrid.trec`` (the inputs are
the shipped files, so dense float noise does not enter here).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

from runfiles import BASELINES, DATA, trec_lines, wants_check, write_or_check

INPUTS = (BASELINES / "bm25.trec", DATA / "runs" / "dense.trec")
OUTPUT = "hybrid.trec"
K = 60
TAG = "rrf60"


def read_ranks(path: Path) -> dict[str, dict[str, int]]:
    """Return ``{qid: {docid: rank}}`` from a TREC run file."""
    ranks: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            qid, _q0, docid, rank, _score, _tag = line.split()
            ranks[qid][docid] = int(rank)
    return ranks


def fuse(runs: list[dict[str, dict[str, int]]], k: int = K,
         weights: tuple[float, ...] | None = None, tag: str = TAG) -> list[str]:
    """Return the fused run as TREC lines (with trailing newlines): per query, every document
    scored ``Σ weight / (k + rank)`` over the runs it appears in (weights 1 by default)."""
    lines: list[str] = []
    qids = sorted({q for run in runs for q in run}, key=int)
    for qid in qids:
        scores: dict[str, float] = defaultdict(float)
        for run, weight in zip(runs, weights or (1.0,) * len(runs)):
            for docid, rank in run.get(qid, {}).items():
                scores[docid] += weight / (k + rank)
        lines += trec_lines(qid, {d: f"{s:.8f}" for d, s in scores.items()}, tag)
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    check = wants_check(__doc__.splitlines()[0], argv)
    lines = fuse([read_ranks(path) for path in INPUTS])
    return 0 if write_or_check(DATA / "runs" / OUTPUT, lines, check) else 1


if __name__ == "__main__":
    sys.exit(main())
