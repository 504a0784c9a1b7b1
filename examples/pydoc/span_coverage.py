"""Measure how much judged evidence each pydoc run retrieves, independently of the gate.

A span (qrels.jsonl, grade >= 1) is covered at rank r when the chunks ranked 1..r for its
query, taken together, contain every character of it: the union of the character ranges of
those chunks that belong to the span's topic contains [start, end). For each run this prints,
over the answerable queries:

* spans@5, spans@10 - the share of all relevant spans covered within the top 5 / top 10
  (pooled over queries);
* recall@10 - the same per query, averaged over queries;
* facts@10 - the share of queries whose required facts are all covered within the top 10
  (a fact is covered when any one of its spans of grade 2 is).

Standard library only. Run from any directory:

    python examples/pydoc/span_coverage.py                  # the three shipped runs
    python examples/pydoc/span_coverage.py RUN CHUNK_TABLE  # any other run of chunk ids
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIPPED = [
    (HERE.parent.parent / "baselines" / "pydoc" / "bm25-300.trec", HERE / "chunks-300.jsonl"),
    (HERE / "runs" / "bm25-200.trec", HERE / "chunks-200.jsonl"),
    (HERE / "runs" / "bm25-truncated.trec", HERE / "chunks-truncated.jsonl"),
]


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def ranked_ranges(run: Path, table: Path) -> dict[str, list[tuple[str, int, int]]]:
    """Query id -> ``(topic, start, end)`` of its chunks in rank order."""
    where = {c["id"]: (c["doc_id"], c["start"], c["end"]) for c in read_jsonl(table)}
    ranked: dict[str, list[tuple[int, tuple[str, int, int]]]] = defaultdict(list)
    with run.open(encoding="utf-8") as fh:
        for line in fh:
            qid, _, chunk_id, rank, _, _ = line.split()
            ranked[qid].append((int(rank), where[chunk_id]))
    return {qid: [r for _, r in sorted(items)] for qid, items in ranked.items()}


def covered(span: dict, chunks: list[tuple[str, int, int]]) -> bool:
    """Whether the union of ``chunks`` (in the span's topic) contains the whole span."""
    reach = span["start"]
    for _, start, end in sorted(c for c in chunks if c[0] == span["doc_id"]):
        if start > reach:
            break
        reach = max(reach, end)
    return reach >= span["end"]


def measure(run: Path, table: Path, queries: list[dict], qrels: list[dict]) -> dict[str, float]:
    """spans@5, spans@10, recall@10 and facts@10 of one run."""
    ranked = ranked_ranges(run, table)
    answerable = [q for q in queries if q["answerable"]]
    spans = defaultdict(list)
    for row in qrels:
        if row["grade"] >= 1:
            spans[row["query_id"]].append(row)
    hits = {5: 0, 10: 0}
    recall, all_facts = [], []
    for q in answerable:
        top = ranked.get(q["id"], [])
        for k in hits:
            hits[k] += sum(covered(s, top[:k]) for s in spans[q["id"]])
        recall.append(sum(covered(s, top[:10]) for s in spans[q["id"]]) / len(spans[q["id"]]))
        got = {s["fact"] for s in spans[q["id"]] if s["grade"] == 2 and covered(s, top[:10])}
        all_facts.append(set(q["facts"]) <= got)
    total = sum(len(spans[q["id"]]) for q in answerable)
    return {"spans@5": hits[5] / total, "spans@10": hits[10] / total,
            "recall@10": sum(recall) / len(recall), "facts@10": sum(all_facts) / len(all_facts)}


def main(argv: list[str]) -> int:
    """Print one row per run; returns the exit code."""
    pairs = [(Path(argv[0]), Path(argv[1]))] if len(argv) == 2 else SHIPPED
    queries, qrels = read_jsonl(HERE / "queries.jsonl"), read_jsonl(HERE / "qrels.jsonl")
    print(f"{'run':<22} spans@5 spans@10 recall@10 facts@10")
    for run, table in pairs:
        m = measure(run, table, queries, qrels)
        print(f"{run.stem:<22} {m['spans@5']:7.3f} {m['spans@10']:8.3f} {m['recall@10']:9.3f} "
              f"{m['facts@10']:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
