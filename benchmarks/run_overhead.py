"""What does ``gate run`` add to calling a retriever yourself?

Run by hand from the project root, with the venv's Python::

    python benchmarks/run_overhead.py            # --help for the options

A synthetic snapshot is written to a temporary folder: 10⁵ queries (``q0`` …), a list of 1,000
document ids as its corpus, one judgment per query; document unit. The retriever is an
in-process function returning the same top 10 ``(id, score)`` pairs for every query — the
cheapest retriever there is, so that what is measured is the runner's own work.

Each side is timed in a fresh process (wall clock, ``time.perf_counter``), after a warm-up
run on a snapshot of 100 queries that imports what the side uses, --repeat times, the sides
interleaved, the median counting:

* **bare loop**: for every query (read from the query set as ``gate run`` reads it, outside
  the timing), call the function with a query object of its fields and write its 10 TREC
  lines to a file — the loop every team writes by hand;
* **gate run, TREC**: ``retrieval_gate.run(function, snapshot=…, output="run.trec")`` — the
  same calls, plus what the runner adds: loading the snapshot, a fresh copy of each query for
  its call, timing each call, checking every hit (type, finite score, order, duplicates,
  corpus membership), the journal, the run written from it, and the manifest (the run read
  back, checked and scored on the snapshot, as ``gate run-manifest`` does);
* **gate run, JSON Lines**: the same with ``output="run.jsonl"`` (latencies kept);
* with ``--before SRC``, the same two ``gate run`` sides of the package found in the folder
  ``SRC`` (another version's ``src``, e.g. ``git archive main src | tar -x -C /tmp/before``
  then ``--before /tmp/before/src``), measured in the same run, side by side.

Printed: each median, the ratios gate run / bare loop, the runner's cost per query and the
slowest retriever for which it stays within 10 %. Target (spec): ≤ 1.10× the bare loop for
the in-process retriever at 10⁵ queries (PASS/FAIL, on the TREC side, the like for like).
Against a retriever that costs nothing the ratio measures only the runner's own checks,
journal and manifest, so it is the cost per query that says what a real retriever pays.

``--components`` then times the parts of one TREC ``gate run`` of this version (a fresh
process, each part's functions wrapped in a timer, which adds well under 1 µs a call): loading
the snapshot and its test set, reading the query lines, the calls themselves (the loop: a copy
of each query, the timing, the outcome), the check of the hits, the journal, writing the run
files from the journal, and the manifest's scoring.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
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
    from retrieval_gate.runner.target import RunnerQuery, query_lines

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
    import retrieval_gate

    start = time.perf_counter()
    retrieval_gate.run(fixed, snapshot=snapshot, output=output, commit="none")
    return time.perf_counter() - start


# (label, module, function) of each timed part, outermost first: a part's own time is its
# time less that of the parts inside it
PARTS = (
    ("snapshot and test set", "retrieval_gate.runner.run", "load_snapshot"),
    ("snapshot and test set", "retrieval_gate.runner.run", "load_test_set"),
    ("query lines", "retrieval_gate.runner.run", "query_lines"),
    ("calls", "retrieval_gate.runner.run", "_call"),
    ("hit checks", "retrieval_gate.runner.run", "record_of"),
    ("journal", "retrieval_gate.runner.journal", "Journal.add"),
    ("journal", "retrieval_gate.runner.journal", "Journal.close"),
    ("run files", "retrieval_gate.runner.run", "write_run"),
    ("manifest's scoring", "retrieval_gate.runner.run", "run_manifest_document"),
)


def components(snapshot: Path, output: Path) -> dict[str, float]:
    """Seconds of each part of one gate run (see the module docstring), and in all."""
    import importlib

    spent: dict[str, float] = {}
    inner: list[float] = [0.0]  # time of the parts inside the running one

    def timed(label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            outer, inner[0] = inner[0], 0.0
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                took = time.perf_counter() - start
                spent[label] = spent.get(label, 0.0) + took - inner[0]
                inner[0] = outer + took
        return wrapper

    for label, module, name in PARTS:
        owner: object = importlib.import_module(module)
        *path, attribute = name.split(".")
        for step in path:
            owner = getattr(owner, step)
        setattr(owner, attribute, timed(label, getattr(owner, attribute)))
    spent["in all"] = gate_run(snapshot, output)
    spent["the rest"] = spent["in all"] - sum(v for k, v in spent.items() if k != "in all")
    return spent


def measure(kind: str, snapshot: Path, output: Path, source: Path) -> object:
    """Run one side (see :func:`side`) in a fresh process importing the package from
    ``source``."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    done = subprocess.run([sys.executable, __file__, "--side", kind, str(snapshot),
                           str(output)], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def side(name: str, snapshot: Path, output: Path) -> object:
    """One side's measure, in this process: a warm-up run on ``warm/snapshot.json`` beside
    ``snapshot``'s folder, then the timed one."""
    warm = snapshot.parent.parent / "warm"
    (bare_loop if name == "bare" else gate_run)(warm / "snapshot.json", warm / output.name)
    sides = {"bare": bare_loop, "gate": gate_run, "components": components}
    return sides[name](snapshot, output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another version's src folder")
    parser.add_argument("--components", action="store_true")
    parser.add_argument("--side", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        name, snapshot, output = args.side
        print(json.dumps(side(name, Path(snapshot), Path(output))))
        return
    here = ROOT / "src"
    runs = {"bare loop": ("bare", here, "bare.trec"),
            "gate run, TREC": ("gate", here, "run.trec"),
            "gate run, JSON Lines": ("gate", here, "run.jsonl")}
    if args.before:
        runs |= {"before: gate run, TREC": ("gate", args.before, "before.trec"),
                 "before: gate run, JSON Lines": ("gate", args.before, "before.jsonl")}
    with tempfile.TemporaryDirectory() as temporary:
        (Path(temporary) / "warm").mkdir()
        write_snapshot(Path(temporary) / "warm", 100)
        folder = Path(temporary) / "timed"
        folder.mkdir()
        snapshot = write_snapshot(folder, args.queries)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.repeat):
            for name, (kind, source, output) in runs.items():
                seconds = measure(kind, snapshot, folder / output, source)
                assert isinstance(seconds, float)
                times[name].append(seconds)
        parts = measure("components", snapshot, folder / "parts.trec", here) \
            if args.components else None
    medians = {name: statistics.median(values) for name, values in times.items()}
    bare = medians["bare loop"]
    print(f"{args.queries:,} queries, top 10 each, median of {args.repeat}:")
    for name, seconds in medians.items():
        print(f"  {name:28} {seconds:8.3f} s   ×{seconds / bare:.2f}")
    for name, seconds in medians.items():
        if name != "bare loop":
            extra = (seconds - bare) / args.queries
            print(f"  {name}: {extra * 1e6:.0f} µs a query more than the bare loop — within "
                  f"1.10× for a retriever taking {extra * 10 * 1e3:.2f} ms a query or more")
    ratio = medians["gate run, TREC"] / bare
    print(f"target: gate run ≤ 1.10× the bare loop (TREC): ×{ratio:.2f} — "
          f"{'PASS' if ratio <= 1.10 else 'FAIL'}")
    if isinstance(parts, dict):
        print(f"one gate run, TREC, by part ({parts['in all']:.3f} s in all; the bare loop "
              f"{bare:.3f} s):")
        for label, seconds in parts.items():
            if label != "in all":
                print(f"  {label:22} {seconds:7.3f} s  {seconds / args.queries * 1e6:6.1f} µs "
                      f"a query  ×{seconds / bare:.2f} the bare loop")


if __name__ == "__main__":
    main()
