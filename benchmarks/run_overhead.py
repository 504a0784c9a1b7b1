"""What does ``gate run`` add to calling a retriever yourself?

Run by hand from the project root, with the venv's Python::

    python benchmarks/run_overhead.py            # --help for the options

A synthetic snapshot is written to a temporary folder: 10⁵ queries (``q0`` …), a list of 1,000
document ids as its corpus, one judgment per query; document unit. The retriever is an
in-process function returning the same top 10 ``(id, score)`` pairs for every query — the
cheapest retriever there is, so that what is measured is the runner's own work.

Timed in this process, each side --repeat times, interleaved, the median counting (wall
clock, ``time.perf_counter``):

* **bare loop**: for every query (read from the query set as ``gate run`` reads it, outside
  the timing), call the function with a query object of its fields and write its 10 TREC
  lines to a file — the loop every team writes by hand;
* **gate run, TREC**: ``retrieval_gate.run(function, snapshot=…, output="run.trec")`` — the
  same calls, plus what the runner adds: loading the snapshot, a fresh copy of each query for
  its call, timing each call, checking every hit (type, finite score, order, duplicates,
  corpus membership), the journal line flushed per query, the run written, and the manifest
  (the run re-read, checked and scored on the snapshot, as ``gate run-manifest`` does);
* **gate run, JSON Lines**: the same with ``output="run.jsonl"`` (latencies kept).

Printed: each median, the ratios gate run / bare loop, the runner's cost per query and the
slowest retriever for which it stays within 10 %. Target (spec): ≤ 1.10× the bare loop for
the in-process retriever at 10⁵ queries (PASS/FAIL, on the TREC side, the like for like).
Against a retriever that costs nothing the ratio measures only the runner's own checks,
journal and manifest, so it is the cost per query that says what a real retriever pays.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import retrieval_gate
from retrieval_gate.runner.target import RunnerQuery

TOP = [(f"d{i}", 10.0 - i) for i in range(10)]


def fixed(query: object) -> list[tuple[str, float]]:
    """The retriever: the same top 10 for every query."""
    return TOP


def write_snapshot(folder: Path, queries: int) -> Path:
    """The synthetic snapshot of the module docstring; returns its path."""
    (folder / "corpus.txt").write_text("".join(f"d{i}\n" for i in range(1000)))
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "text": f"question {i}"}) + "\n" for i in range(queries)))
    (folder / "qrels.trec").write_text("".join(f"q{i} 0 d{i % 10} 1\n" for i in range(queries)))
    from click.testing import CliRunner

    from retrieval_gate.cli import cli

    done = CliRunner().invoke(cli, [
        "snapshot", "freeze", "--queries", str(folder / "queries.jsonl"), "--qrels",
        str(folder / "qrels.trec"), "--corpus-version", "v1", "--corpus-file",
        str(folder / "corpus.txt"), "--unit", "document", "--permissions-version", "p",
        "-o", str(folder / "snapshot.json")])
    assert done.exit_code == 0, done.output
    return folder / "snapshot.json"


def bare_loop(snapshot: Path, output: Path) -> float:
    """Seconds for the hand-written loop: call, write TREC lines."""
    from retrieval_gate.inputs.snapshot import load_snapshot
    from retrieval_gate.runner.target import query_lines

    lines = query_lines(load_snapshot(snapshot))
    start = time.perf_counter()
    with open(output, "w", encoding="utf-8") as handle:
        for fields in lines:
            qid = fields["id"]
            handle.writelines(f"{qid} Q0 {doc} {rank} {score!r} bare\n"
                              for rank, (doc, score) in enumerate(fixed(RunnerQuery(fields)), 1))
    return time.perf_counter() - start


def gate_run(snapshot: Path, output: Path) -> float:
    """Seconds for ``retrieval_gate.run`` writing ``output`` and its manifest."""
    start = time.perf_counter()
    retrieval_gate.run(fixed, snapshot=snapshot, output=output, commit="none")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        snapshot = write_snapshot(folder, args.queries)
        times: dict[str, list[float]] = {"bare loop": [], "gate run, TREC": [],
                                         "gate run, JSON Lines": []}
        for _ in range(args.repeat):
            times["bare loop"].append(bare_loop(snapshot, folder / "bare.trec"))
            times["gate run, TREC"].append(gate_run(snapshot, folder / "run.trec"))
            times["gate run, JSON Lines"].append(gate_run(snapshot, folder / "run.jsonl"))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"{args.queries:,} queries, top 10 each, median of {args.repeat}:")
    for name, seconds in medians.items():
        ratio = seconds / medians["bare loop"]
        print(f"  {name:22} {seconds:8.3f} s   ×{ratio:.2f}")
    for name in ("gate run, TREC", "gate run, JSON Lines"):
        extra = (medians[name] - medians["bare loop"]) / args.queries
        print(f"  {name}: {extra * 1e6:.0f} µs a query more than the bare loop — within 1.10× "
              f"for a retriever taking {extra * 10 * 1e3:.2f} ms a query or more")
    ratio = medians["gate run, TREC"] / medians["bare loop"]
    print(f"target: gate run ≤ 1.10× the bare loop (TREC): ×{ratio:.2f} — "
          f"{'PASS' if ratio <= 1.10 else 'FAIL'}")


if __name__ == "__main__":
    main()
