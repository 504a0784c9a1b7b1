"""What do gated per-query scores (``score:NAME``) add to the time of a ``gate check``?

Run by hand from the project root, with the venv's Python::

    python benchmarks/score_signals.py            # --help for the options

The case: the Cranfield example shipped in the repository — its snapshot
(``examples/cranfield/snapshot.json``, 225 queries), the approved baseline
(``baselines/cranfield/bm25.trec``) and the hybrid candidate
(``examples/cranfield/runs/hybrid.trec``). Into a temporary folder go copies of both runs, a
score file per run (native JSON Lines, one line per query, one sample each, three scores: ``a``
and ``b`` in [0, 1] with four decimals, ``c`` 0 or 1; seeded) and a run manifest per run
written by ``gate run-manifest --scores FILE --judge model=...`` pinning it.

Checks of the same runs, the default policy's measures (Recall@10 and nDCG@10, margin 0.02)
gated in each:

* **without** — the retrieval measures alone;
* **with** — and ``score:a``, ``score:b``, ``score:c`` (margin 0.02 each): the score files are
  read, hash-checked, matched with the snapshot's queries and decided in the same family;
* **reference** — and three more retrieval measures instead (P@10, RR@10, AP@10, which the
  snapshot scores anyway): what gating three more signals of any kind costs, so that the
  difference from ``with`` is what is particular to scores (reading the score files).

Timed two ways, in one run, interleaved (each round times both, in alternating order, so that
drift of the machine falls on both alike), median of ``--rounds`` (≥ 9) after one untimed
warm-up each:

* **process** — ``gate check --no-config ... --json REPORT`` as a subprocess (wall clock,
  bytecode caching on, output discarded);
* **in-process** — :func:`retrieval_gate.run_gate` on the same paths and a
  :class:`~retrieval_gate.GatePolicy` with the same gates (imports done before the first round).

The script prints the medians and their ratios to ``without`` per way, the target (with ÷
without ≤ 1.1×) marked MET or MISSED, and checks that each report decides what its check gates
(the ``with`` one the three scores besides the retrieval measures).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from score_scale import GATE, child_env, target

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "examples" / "cranfield" / "snapshot.json"
QUERIES = ROOT / "examples" / "cranfield" / "queries.jsonl"
RUNS = {"baseline": ROOT / "baselines" / "cranfield" / "bm25.trec",
        "candidate": ROOT / "examples" / "cranfield" / "runs" / "hybrid.trec"}
MEASURES = ("Recall@10", "nDCG@10")
SCORES = ("score:a", "score:b", "score:c")
MARGIN = 0.02
TARGET = 1.1


@dataclass(frozen=True)
class Variant:
    """One of the two checks: its name and the measures it gates."""

    name: str
    gated: tuple[str, ...]


WITHOUT = Variant("without scores", MEASURES)
WITH = Variant("with 3 scores", (*MEASURES, *SCORES))
REFERENCE = Variant("3 more measures instead", (*MEASURES, "P@10", "RR@10", "AP@10"))
VARIANTS = (WITHOUT, WITH, REFERENCE)


def prepare(folder: Path, seed: int) -> dict[str, Path]:
    """Copies of both runs in ``folder``, a score file for each and a run manifest pinning it
    (written by ``gate run-manifest``); the run paths by role."""
    ids = [json.loads(line)["id"] for line in QUERIES.read_text("utf-8").splitlines()]
    rng = np.random.default_rng(seed)
    runs = {}
    for role, source in RUNS.items():
        run = folder / source.name
        shutil.copyfile(source, run)
        scores = folder / f"{run.stem}.scores.jsonl"
        a, b = np.round(rng.random((2, len(ids))), 4)
        c = rng.random(len(ids)) < 0.5
        scores.write_text("".join(
            json.dumps({"query_id": qid, "sample": 0,
                        "scores": {"a": float(a[i]), "b": float(b[i]), "c": int(c[i])}}) + "\n"
            for i, qid in enumerate(ids)), encoding="utf-8")
        subprocess.run([str(GATE), "run-manifest", "--snapshot", str(SNAPSHOT), "--run", str(run),
                        "--scores", str(scores), "--judge", "model=benchmark", "--commit", "none",
                        "--created", "2026-01-01T00:00:00Z"],
                       check=True, capture_output=True, env=child_env())
        runs[role] = run
    return runs


def process_argv(variant: Variant, runs: dict[str, Path], report: Path) -> list[str]:
    return [str(GATE), "check", "--no-config", "--snapshot", str(SNAPSHOT),
            "--baseline", str(runs["baseline"]), "--candidate", str(runs["candidate"]),
            *(arg for name in variant.gated for arg in ("--gate", f"{name}={MARGIN:g}")),
            "--json", str(report), "--fail-on", "never"]


Timer = Callable[[], tuple[float, float]]  # one timed call: wall-clock and CPU seconds


def as_process(argv: list[str]) -> Timer:
    """A timer of one process running ``argv`` (output discarded): its wall clock, and its CPU
    time (user + system, from the resource usage of this process's finished children)."""
    def timed() -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       env=child_env())
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    return timed


def in_process(variant: Variant, runs: dict[str, Path]) -> Timer:
    """A timer of one :func:`run_gate` call of ``variant`` (imports done here, untimed): wall
    clock and this process's CPU time (every thread; the runs are too small to be scored in a
    forked child)."""
    from retrieval_gate import GatedMeasure, GatePolicy, run_gate

    policy = GatePolicy(gates=tuple(GatedMeasure(name, MARGIN) for name in variant.gated))

    def timed() -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        run_gate(SNAPSHOT, runs["baseline"], runs["candidate"], policy)
        return time.perf_counter() - start, time.process_time() - cpu

    return timed


Medians = dict[Variant, tuple[float, float]]  # median wall-clock and CPU seconds


def interleaved(timers: dict[Variant, Timer], rounds: int) -> Medians:
    """Median wall-clock and CPU seconds of each timer over ``rounds`` rounds, after one
    untimed warm-up each; round r runs the timers in order, reversed when r is odd."""
    for timer in timers.values():
        timer()
    seconds: dict[Variant, list[tuple[float, float]]] = {v: [] for v in timers}
    order = list(timers)
    for r in range(rounds):
        for variant in (order if r % 2 == 0 else order[::-1]):
            seconds[variant].append(timers[variant]())
    return {v: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s))
            for v, s in seconds.items()}


def check_reports(folder: Path) -> None:
    """Each report decides exactly what its check gates."""
    for variant in VARIANTS:
        report = json.loads((folder / f"{variant.name}.json").read_text("utf-8"))
        decided = sorted(c["measure"] for c in report["comparisons"])
        if decided != sorted(variant.gated):
            raise SystemExit(f"the {variant.name} report decides {decided}, not what was "
                             f"gated: {sorted(variant.gated)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=11,
                        help="timed rounds per way (default 11; at least 9)")
    parser.add_argument("--seed", type=int, default=0, help="score files' seed (default 0)")
    args = parser.parse_args()
    if args.rounds < 9:
        parser.error("--rounds must be at least 9")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        runs = prepare(folder, args.seed)
        process = interleaved({v: as_process(process_argv(v, runs, folder / f"{v.name}.json"))
                               for v in VARIANTS}, args.rounds)
        check_reports(folder)
        inside = interleaved({v: in_process(v, runs) for v in VARIANTS}, args.rounds)
    print(f"python {sys.version.split()[0]}; Cranfield example, 225 queries; median of "
          f"{args.rounds} interleaved rounds; wall clock (CPU time in brackets)\n")
    print("| way | " + " | ".join(v.name for v in VARIANTS) + " | with ÷ without | reference "
          "÷ without |\n|---|" + "---:|" * (len(VARIANTS) + 2))
    lines = []
    for way, medians in (("process (gate check)", process), ("in-process (run_gate)", inside)):
        def ratio(variant: Variant, medians: Medians = medians) -> str:
            wall, cpu = (medians[variant][i] / medians[WITHOUT][i] for i in (0, 1))
            return f"{wall:.3f}× ({cpu:.3f}×)"

        print(f"| {way} | " + " | ".join(f"{1000 * medians[v][0]:.0f} ms "
                                         f"({1000 * medians[v][1]:.0f})" for v in VARIANTS)
              + f" | {ratio(WITH)} | {ratio(REFERENCE)} |")
        lines.append(target(f"{way}, with / without, wall clock",
                            medians[WITH][0] / medians[WITHOUT][0], TARGET, "x", 3))
    print("\ntargets:")
    print("\n".join(f"  {line}" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
