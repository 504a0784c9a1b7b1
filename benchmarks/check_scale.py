"""How fast, and how lean, is ``gate check`` at MS MARCO-dev scale?

Run by hand from the project root, with the venv's Python::

    python benchmarks/check_scale.py            # --help for the options

Two synthetic cases are generated once (seeded, into benchmarks/data/, which git ignores), each
a frozen snapshot (queries, qrels) with a baseline and a candidate run and their manifests:

* large: 6,980 queries x 1,000 passages per run (MS MARCO dev size; 7M lines per run);
* small: 500 queries x 20 items, where process start-up and imports dominate.

The baseline is generated like ``score_scale.py``'s runs; the candidate is the baseline with the
rankings of a random half of the queries rotated down by one position (the top item moves to
the bottom), a small realistic regression. Timed as whole processes (wall clock, best of
--repeat after one untimed warm-up; bytecode caching on, as in an installed package), in the
same run:

* ``gate check`` with the default policy (10,000 BCa resamples) writing its JSON report;
* ``gate score`` on the baseline and on the candidate (two processes, times added);
* pytrec_eval: one Python process that parses the qrels once and both runs, and evaluates the
  counterparts of the snapshot's six measures on both (it validates nothing and computes no
  statistics).

In the small case, where start-up is most of the time, also:

* ``gate score`` on the baseline alone against pytrec_eval scoring it alone (``score_scale.py``'s
  process, which also writes its per-query results as JSON);
* the import floor: ``python -c pass``, ``python -c "import numpy"`` and ``python -c "import
  retrieval_gate.gating.gate"`` (the orchestrator's module and everything it imports).

Targets: large ``gate check`` ≤ 1.5× the two ``gate score`` processes and at least 6× faster
than pytrec_eval; peak memory ≤ 1 GiB; small ``gate check`` ≤ 2.5× pytrec_eval's time, small
``gate score`` ≤ 1.3× pytrec_eval's on one run; importing the gate module ≤ 0.30 s.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from score_scale import (
    GATE,
    LARGE,
    SMALL,
    TIME,
    Case,
    _decimal,
    _distinct_rows,
    _lines,
    child_env,
    mib,
    target,
)
from score_scale import PEER as PEER_ONE_RUN

PEER = """\
import json, sys
import pytrec_eval
qrels_path, base_path, cand_path = sys.argv[1:]
with open(qrels_path) as f:
    qrels = pytrec_eval.parse_qrel(f)
measures = {'recall.10', 'P.10', 'success.10', 'recip_rank', 'ndcg_cut.10', 'map_cut.10'}
evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
for path in (base_path, cand_path):
    with open(path) as f:
        evaluator.evaluate(pytrec_eval.parse_run(f))
"""


@dataclass(frozen=True)
class Snapshot:
    folder: Path

    @property
    def manifest(self) -> Path:
        return self.folder / "snapshot.json"

    @property
    def qrels(self) -> Path:
        return self.folder / "qrels.tsv"

    @property
    def baseline(self) -> Path:
        return self.folder / "baseline.trec"

    @property
    def candidate(self) -> Path:
        return self.folder / "candidate.trec"


def _run_text(qids: np.ndarray, retrieved: np.ndarray, micros: np.ndarray, tag: bytes) -> bytes:
    queries, depth = retrieved.shape
    return _lines(
        np.repeat(_decimal(qids), depth), b" Q0 ", _decimal(retrieved.ravel()), b" ",
        _decimal(np.tile(np.arange(1, depth + 1), queries)), b" ",
        _decimal(micros // 1_000_000), b".", np.char.zfill(_decimal(micros % 1_000_000), 6),
        b" " + tag + b"\n")


def generate(case: Case, snap: Snapshot, rng: np.random.Generator) -> None:
    """Queries, qrels (1-2 relevant per query, mostly retrieved), baseline and candidate."""
    qids = np.sort(rng.choice(1_000_000, size=case.queries, replace=False))
    ids = _distinct_rows(rng, case.queries, case.depth + 2)
    retrieved = ids[:, : case.depth]
    micros = np.sort(rng.integers(5_000_000, 40_000_000, size=(case.queries, case.depth)),
                     axis=1)[:, ::-1].ravel()
    snap.baseline.write_bytes(_run_text(qids, retrieved, micros, b"base"))
    rotated = retrieved.copy()
    half = rng.random(case.queries) < 0.5
    rotated[half] = np.roll(retrieved[half], -1, axis=1)
    snap.candidate.write_bytes(_run_text(qids, rotated, micros, b"cand"))
    ranks = np.minimum(rng.geometric(0.1, size=(case.queries, 2)) - 1, case.depth - 1)
    in_run = rng.random((case.queries, 2)) < 0.8
    in_run[:, 1] &= ~(in_run[:, 0] & (ranks[:, 0] == ranks[:, 1]))
    rows = np.arange(case.queries)[:, None]
    relevant = np.where(in_run, retrieved[rows, ranks], ids[:, case.depth:])
    keep = np.arange(2) < rng.integers(1, 3, size=case.queries)[:, None]
    snap.qrels.write_bytes(_lines(np.repeat(_decimal(qids), 2)[keep.ravel()], b" 0 ",
                                  _decimal(relevant[keep]), b" 1\n"))
    (snap.folder / "queries.jsonl").write_bytes(_lines(
        b'{"id": "', _decimal(qids), b'", "text": "query ', _decimal(qids), b'"}\n'))


def run_once(argv: list[str], cwd: Path) -> tuple[float, int | None]:
    """Wall-clock seconds and peak resident KiB (None without /usr/bin/time) of one process run
    in ``cwd``."""
    measured = TIME.exists()
    full = [str(TIME), "-f", "%M", *argv] if measured else argv
    start = time.perf_counter()
    done = subprocess.run(full, cwd=cwd, env=child_env(), capture_output=True, text=True,
                          check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:2])} failed ({done.returncode}):\n{done.stderr}")
    return seconds, int(done.stderr.strip().splitlines()[-1]) if measured else None


def prepare(case: Case, data: Path, seed: int, regenerate: bool) -> Snapshot:
    """The case's snapshot folder, generated and frozen (with run manifests) when missing."""
    snap = Snapshot(data / f"check-{case.name}-{case.queries}x{case.depth}-seed{seed}")
    if regenerate or not (snap.baseline.with_name("candidate.trec.manifest.json")).exists():
        start = time.perf_counter()
        snap.folder.mkdir(parents=True, exist_ok=True)
        generate(case, snap, np.random.default_rng([seed, case.queries, case.depth, 1]))
        for argv in (["snapshot", "freeze", "--queries", "queries.jsonl", "--qrels", "qrels.tsv",
                      "--corpus-version", "synthetic", "--chunking-version", "passage",
                      "--permissions-version", "public", "-o", "snapshot.json"],
                     *(["run-manifest", "--snapshot", "snapshot.json", "--run", run,
                        "--chunking-version", "passage"]
                       for run in ("baseline.trec", "candidate.trec"))):
            run_once([str(GATE), *argv], snap.folder)
        print(f"prepared {snap.folder.name} in {time.perf_counter() - start:.1f} s")
    return snap


def timed(argv_list: list[list[str]], repeat: int, cwd: Path) -> tuple[float, int | None]:
    """Best total wall clock of running the commands one after another, and the largest peak
    resident KiB of any of them."""
    best, peak = float("inf"), None
    for argv in argv_list:  # one untimed warm-up run (.pyc files, the page cache)
        run_once(argv, cwd)
    for _ in range(repeat):
        total = 0.0
        for argv in argv_list:
            seconds, kib = run_once(argv, cwd)
            total += seconds
            if kib is not None:
                peak = max(peak or 0, kib)
        best = min(best, total)
    return best, peak


IMPORTS = (("python -c pass", "pass"), ("import numpy", "import numpy"),
           ("import retrieval_gate.gating.gate", "import retrieval_gate.gating.gate"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).parent / "data")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", choices=("both", "large", "small"), default="both",
                        help="which cases to run (default: both)")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; pyarrow importable: "
          f"{importlib.util.find_spec('pyarrow') is not None}; best of {args.repeat}")
    rows, lines = [], []
    cases = {"both": (LARGE, SMALL), "large": (LARGE,), "small": (SMALL,)}[args.cases]
    for case in cases:
        snap = prepare(case, args.data, args.seed, args.regenerate)
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch)
            check = timed([[str(GATE), "check", "--snapshot", "snapshot.json", "--baseline",
                            "baseline.trec", "--candidate", "candidate.trec", "--json",
                            str(out / "report.json"), "--fail-on", "never"]],
                          args.repeat, snap.folder)
            score = timed([[str(GATE), "score", "qrels.tsv", run, "--output-format", "json",
                            "-o", str(out / f"{run}.json")]
                           for run in ("baseline.trec", "candidate.trec")],
                          args.repeat, snap.folder)
            peer = timed([[sys.executable, "-c", PEER, "qrels.tsv", "baseline.trec",
                           "candidate.trec"]], args.repeat, snap.folder)
            timings = [("gate check", check, peer), ("gate score x2", score, peer),
                       ("pytrec_eval x2", peer, peer)]
            if case is SMALL:
                one = timed([[str(GATE), "score", "qrels.tsv", "baseline.trec",
                              "--output-format", "json", "-o", str(out / "one.json")]],
                            args.repeat, snap.folder)
                peer_one = timed([[sys.executable, "-c", PEER_ONE_RUN, "qrels.tsv",
                                   "baseline.trec", str(out / "peer.json")]],
                                 args.repeat, snap.folder)
                timings += [("gate score x1", one, peer_one),
                            ("pytrec_eval x1", peer_one, peer_one)]
                imports = {name: timed([[sys.executable, "-c", code]], args.repeat, snap.folder)
                           for name, code in IMPORTS}
        for name, (seconds, kib), (reference, _) in timings:
            rows.append((case.label, name, f"{seconds:.3f}", mib(kib),
                         f"{seconds / reference:.2f}x"))
        if case is LARGE:
            lines.append(target("large, gate check / gate score x2", check[0] / score[0], 1.5,
                                "x", 2))
            speedup = peer[0] / check[0]
            lines.append(f"large, pytrec_eval x2 / gate check: {speedup:.2f}x >= 6.00x  "
                         f"{'MET' if speedup >= 6 else 'MISSED'}")
            lines.append(target("large, gate check peak memory",
                                None if check[1] is None else check[1] / 1024, 1024, " MiB", 0))
        else:
            lines.append(target("small, gate check / pytrec_eval x2", check[0] / peer[0], 2.5,
                                "x", 2))
            lines.append(target("small, gate score x1 / pytrec_eval x1", one[0] / peer_one[0],
                                1.3, "x", 2))
            numpy_s, gate_s = imports["import numpy"][0], imports[IMPORTS[-1][0]][0]
            lines.append(target("import retrieval_gate.gating.gate", gate_s, 0.30, " s", 3)
                         + f"  (import numpy {numpy_s:.3f} s, python -c pass "
                           f"{imports[IMPORTS[0][0]][0]:.3f} s)")
            rows += [("imports", name, f"{seconds:.3f}", mib(kib), "")
                     for name, (seconds, kib) in imports.items()]
    header = ("case", "command", "best s", "peak MiB", "/ pytrec_eval")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print()
    for row in [header, *rows]:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths))))
    print("\ntargets:")
    print("\n".join(f"  {line}" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
