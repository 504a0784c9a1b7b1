"""How much memory does ``gate run`` take as the run grows: does it stream?

Run by hand from the project root, with the venv's Python (Linux: it reads ``/proc``)::

    python benchmarks/run_memory.py            # --help for the options

For each size (10⁴ and 10⁵ queries by default) a synthetic snapshot is written to a temporary
folder with the project's own commands: the queries (``q0`` …), a list of 10,000 document ids
as its corpus, one judgment per query; document unit. The retriever is an in-process function
returning the same top 100 ``(id, score)`` pairs for every query, so the run holds 100 hits a
query (10⁷ lines of TREC at 10⁵ queries, about 0.3 GB).

Each ``gate run`` (``retrieval_gate.run``, the run written as TREC; ``--format jsonl``: JSON
Lines) runs in a fresh process, after a warm-up run on a snapshot of 10 queries (so that what
gate run imports counts with the imports). Its phases are told apart from the kernel's count
of the process's resident memory — ``VmRSS``, and ``VmHWM``, its peak, reset at the start of
each phase by writing 5 to ``/proc/self/clear_refs``:

* **snapshot**: resident memory once the snapshot, its test set and its query lines are
  loaded (the last step before the calls), less that after the imports;
* **runner**: the peak from there until the manifest's scoring begins — the calls, the
  checks, the journal, the run files streamed to disk — less the memory at its start: the
  runner's own;
* **scoring**: the peak while the manifest's scoring runs — the run read back and scored on
  the snapshot, as ``gate run-manifest`` does — less the memory when it began;
* **peak**: the whole process's.

Printed per size, then the ratio of the runner's own peak at the largest size to that at the
smallest. Target (spec): the runner's memory independent of the number of queries, within 2×
(PASS/FAIL). The scoring reads every line of the run into arrays: it grows with the run, and is
printed beside it. ``--before SRC`` measures the ``gate run`` of the package in the folder
``SRC`` too (another version's ``src``), side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = 10_000
HITS = 100
TOP = [(f"d{i}", float(HITS - i)) for i in range(HITS)]
MIB = 1 << 20


def fixed(query: object) -> list[tuple[str, float]]:
    """The retriever: the same top 100 for every query."""
    return TOP


def write_snapshot(folder: Path, queries: int) -> Path:
    """The synthetic snapshot of the module docstring; returns its path."""
    folder.mkdir(parents=True)
    (folder / "corpus.txt").write_text("".join(f"d{i}\n" for i in range(DOCUMENTS)))
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "text": f"question {i}"}) + "\n" for i in range(queries)))
    (folder / "qrels.trec").write_text("".join(f"q{i} 0 d{i % HITS} 1\n"
                                               for i in range(queries)))
    done = subprocess.run([sys.executable, "-m", "retrieval_gate", "snapshot", "freeze",
                           "--queries", folder / "queries.jsonl", "--qrels",
                           folder / "qrels.trec", "--corpus-version", "v1", "--corpus-file",
                           folder / "corpus.txt", "--unit", "document",
                           "--permissions-version", "p", "-o", folder / "snapshot.json"],
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return folder / "snapshot.json"


def now(traced: bool) -> dict[str, int]:
    """This process's resident memory (``rss``) and its peak since the last :func:`reset`
    (``peak``), bytes; with ``traced``, also the Python allocations tracemalloc counts, now
    (``traced``) and at their peak (``traced peak``)."""
    found = {}
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found["rss" if key == "VmRSS" else "peak"] = int(value.split()[0]) * 1024
    if traced:
        import tracemalloc

        found["traced"], found["traced peak"] = tracemalloc.get_traced_memory()
    return found


def reset(traced: bool) -> None:
    """Start the peaks again from the memory now (``VmHWM`` by writing 5 to
    ``/proc/self/clear_refs``; tracemalloc's)."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
        handle.write("5")
    if traced:
        import tracemalloc

        tracemalloc.reset_peak()


def run_memory(snapshot: Path, output: Path, traced: bool) -> dict[str, dict[str, int]]:
    """Memory at the phases' ends in one gate run (see the module docstring), after a warm-up
    run on the snapshot of 10 queries beside ``snapshot``'s folder, which imports what gate run
    uses: after the imports; when the snapshot is loaded (its query lines read, the last step
    before the calls); when the manifest's scoring starts; when it ends — each with the peak
    since the previous end (see :func:`now`)."""
    import retrieval_gate
    import retrieval_gate.runner.run as runner

    warm = snapshot.parent.parent / "warm"
    retrieval_gate.run(fixed, snapshot=warm / "snapshot.json", output=warm / output.name,
                       commit="none")
    if traced:
        import tracemalloc

        tracemalloc.start()
    found = {"imports": now(traced)}

    def ends(function: Callable[..., Any], at_start: str | None, at_end: str
             ) -> Callable[..., Any]:
        """``function``, a phase ending where it starts (``at_start``) and where it ends."""
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if at_start is not None:
                found[at_start] = now(traced)
                reset(traced)
            try:
                return function(*args, **kwargs)
            finally:
                found[at_end] = now(traced)
                reset(traced)
        return wrapper

    runner.query_lines = ends(runner.query_lines, None, "loaded")
    runner.run_manifest_document = ends(runner.run_manifest_document, "scoring starts",
                                        "scored")
    reset(traced)
    retrieval_gate.run(fixed, snapshot=snapshot, output=output, commit="none")
    return found


def measure(snapshot: Path, output: Path, source: Path, traced: bool
            ) -> dict[str, dict[str, int]]:
    """:func:`run_memory` in a fresh process importing the package from ``source``."""
    done = subprocess.run([sys.executable, __file__, "--measure", str(snapshot), str(output),
                           "traced" if traced else "rss"],
                          env={**os.environ, "PYTHONPATH": str(source)},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    value: dict[str, dict[str, int]] = json.loads(done.stdout)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--format", choices=("trec", "jsonl"), default="trec")
    parser.add_argument("--before", type=Path, help="another version's src folder")
    parser.add_argument("--traced", action="store_true",
                        help="also the runner's Python allocations (a run with tracemalloc)")
    parser.add_argument("--measure", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        snapshot, output, how = args.measure
        print(json.dumps(run_memory(Path(snapshot), Path(output), how == "traced")))
        return
    sources = {"gate run": ROOT / "src"}
    if args.before:
        sources["before: gate run"] = args.before
    own: dict[str, list[float]] = {name: [] for name in sources}
    print(f"{HITS} hits a query, {args.format}; MiB:")
    print(f"  {'':18} {'queries':>8} {'snapshot':>9} {'runner':>8} "
          f"{'(traced)' if args.traced else '':>8} {'scoring':>8} {'peak':>8}")
    with tempfile.TemporaryDirectory() as temporary:
        write_snapshot(Path(temporary) / "warm", 10)
        for queries in args.queries:
            folder = Path(temporary) / str(queries)
            snapshot = write_snapshot(folder, queries)
            for name, source in sources.items():
                output = folder / f"run.{args.format}"
                found = measure(snapshot, output, source, False)
                loaded, starts, scored = found["loaded"], found["scoring starts"], found["scored"]
                runner = starts["peak"] - loaded["rss"]
                traced = ""
                if args.traced:
                    steps = measure(snapshot, output, source, True)
                    allocated = steps["scoring starts"]["traced peak"] - steps["loaded"]["traced"]
                    traced = f"{allocated / MIB:8.0f}"
                own[name].append(runner)
                print(f"  {name:18} {queries:8,} "
                      f"{(loaded['rss'] - found['imports']['rss']) / MIB:9.0f} "
                      f"{runner / MIB:8.0f} {traced:>8} {(scored['peak'] - starts['rss']) / MIB:8.0f} "
                      f"{max(loaded['peak'], starts['peak'], scored['peak']) / MIB:8.0f}")
    for name, values in own.items():
        ratio = values[-1] / max(values[0], MIB)
        print(f"{name}: the runner's own peak at {args.queries[-1]:,} queries is ×{ratio:.2f} "
              f"that at {args.queries[0]:,} (at least 1 MiB) — target ≤ 2×: "
              f"{'PASS' if ratio <= 2 else 'FAIL'}")


if __name__ == "__main__":
    main()
