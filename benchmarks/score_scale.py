"""How fast, and how lean, is ``gate score`` at MS MARCO-dev scale, against pytrec_eval?

Run by hand from the project root, with the venv's Python::

    python benchmarks/score_scale.py            # --help for the options

Two synthetic cases are generated once (seeded, into benchmarks/data/, which git ignores):

* large: 6,980 queries x 1,000 passages each (the size of an MS MARCO dev run), passage ids
  drawn from 8,841,823 without replacement within a query, scores with 6 decimals in
  descending order (so ties occur), and TREC qrels with 1-2 relevant passages (grade 1) per
  query, some of them retrieved;
* small: 500 queries x 20 items, where process start-up dominates.

Each case is timed as whole processes (wall clock, best of --repeat, after one untimed warm-up
run; bytecode caching on, as in an installed package):

* ``gate score QRELS RUN --output-format json -o OUT`` with the ``fast`` extra (pyarrow);
* the same with ``RETRIEVAL_GATE_NO_ARROW=1`` in its environment, so the run is read by the
  numpy reader (if the reader does not honour the variable, both gate rows time the same path);
* pytrec_eval: a Python process that parses the same files with ``pytrec_eval.parse_qrel`` /
  ``parse_run``, evaluates recall.10, P.10, success.10, recip_rank, ndcg_cut.10 and map_cut.10
  (the counterparts of gate's default set Recall, P, Hit, RR, nDCG, AP @10) and writes the
  per-query results as JSON.

Peak memory (maximum resident set size) comes from ``/usr/bin/time -f %M`` when it exists.
The script prints a table, the performance targets marked MET or MISSED, and a check that the
per-query numbers of both gate runs agree with pytrec_eval's to 1e-9; it exits 1 if they do not.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PASSAGES = 8_841_823  # the MS MARCO passage collection
QUERY_ID_SPACE = 1_000_000  # query ids: distinct decimal integers below this
SCORE_MICROS = (5_000_000, 40_000_000)  # scores 5.000000-39.999999, in millionths
IN_RUN = 0.6  # chance that a relevant passage is one of the retrieved ones
RANK_DECAY = 0.1  # retrieved relevant passages sit at a geometric rank (p = this)
TOLERANCE = 1e-9

GATE = Path(sys.executable).parent / "gate"
TIME = Path("/usr/bin/time")

# gate's default measure -> pytrec_eval's key; RR@10 is derived from the uncut recip_rank.
COUNTERPARTS = {
    "Recall@10": "recall_10",
    "P@10": "P_10",
    "Hit@10": "success_10",
    "RR@10": "recip_rank",
    "nDCG@10": "ndcg_cut_10",
    "AP@10": "map_cut_10",
}

PEER = """\
import json, sys
import pytrec_eval
qrels_path, run_path, out_path = sys.argv[1:]
with open(qrels_path) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(run_path) as f:
    run = pytrec_eval.parse_run(f)
measures = {'recall.10', 'P.10', 'success.10', 'recip_rank', 'ndcg_cut.10', 'map_cut.10'}
results = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
with open(out_path, 'w') as f:
    json.dump(results, f)
"""


@dataclass(frozen=True)
class Case:
    name: str
    queries: int
    depth: int

    @property
    def label(self) -> str:
        return f"{self.name} {self.queries}x{self.depth}"


LARGE = Case("large", 6_980, 1_000)
SMALL = Case("small", 500, 20)


@dataclass(frozen=True)
class Tool:
    name: str
    is_gate: bool
    no_arrow: bool = False


GATE_FAST = Tool("gate (pyarrow)", is_gate=True)
GATE_NUMPY = Tool("gate (no pyarrow)", is_gate=True, no_arrow=True)
PYTREC_EVAL = Tool("pytrec_eval", is_gate=False)
TOOLS = (GATE_FAST, GATE_NUMPY, PYTREC_EVAL)


@dataclass(frozen=True)
class Timing:
    seconds: float  # best wall clock
    peak_kib: int | None  # largest maximum resident set size over the repeats


@dataclass(frozen=True)
class Files:
    qrels: Path
    run: Path


# -- data --------------------------------------------------------------------------------------


def _decimal(values: np.ndarray) -> np.ndarray:
    """Non-negative integers as a numpy bytes array just wide enough for the largest."""
    return values.astype(f"S{len(str(int(values.max())))}")


def _lines(*fields: np.ndarray | bytes) -> bytes:
    """Concatenate byte columns (and literal separators) row-wise into one text."""
    joined = fields[0]
    for field in fields[1:]:
        joined = np.char.add(joined, field)
    raw = np.ascontiguousarray(joined).view(np.uint8).reshape(len(joined), -1)
    return raw[raw != 0].tobytes()  # drop the NUL padding of the fixed-width rows


def _distinct_rows(rng: np.random.Generator, rows: int, width: int) -> np.ndarray:
    """Passage ids, ``width`` per row, with no repeat within a row."""
    ids = rng.integers(0, PASSAGES, size=(rows, width))
    pending = np.arange(rows)
    while pending.size:
        ordered = np.sort(ids[pending], axis=1)
        pending = pending[(ordered[:, 1:] == ordered[:, :-1]).any(axis=1)]
        ids[pending] = rng.integers(0, PASSAGES, size=(pending.size, width))
    return ids


def generate(case: Case, files: Files, rng: np.random.Generator) -> None:
    """Write the case's TREC run and qrels."""
    qids = np.sort(rng.choice(QUERY_ID_SPACE, size=case.queries, replace=False))
    # Two extra ids per query, never retrieved for it, for relevant passages the run misses.
    ids = _distinct_rows(rng, case.queries, case.depth + 2)
    retrieved = ids[:, : case.depth]
    micros = np.sort(rng.integers(*SCORE_MICROS, size=(case.queries, case.depth)), axis=1)
    micros = micros[:, ::-1].ravel()
    files.run.write_bytes(_lines(
        np.repeat(_decimal(qids), case.depth), b" Q0 ",
        _decimal(retrieved.ravel()), b" ",
        _decimal(np.tile(np.arange(1, case.depth + 1), case.queries)), b" ",
        _decimal(micros // 1_000_000), b".", np.char.zfill(_decimal(micros % 1_000_000), 6),
        b" synthetic\n",
    ))

    in_run = rng.random((case.queries, 2)) < IN_RUN
    ranks = np.minimum(rng.geometric(RANK_DECAY, size=(case.queries, 2)) - 1, case.depth - 1)
    in_run[:, 1] &= ~(in_run[:, 0] & (ranks[:, 0] == ranks[:, 1]))  # two distinct passages
    rows = np.arange(case.queries)[:, None]
    relevant = np.where(in_run, retrieved[rows, ranks], ids[:, case.depth:])
    keep = np.arange(2) < rng.integers(1, 3, size=case.queries)[:, None]  # 1 or 2 per query
    files.qrels.write_bytes(_lines(
        np.repeat(_decimal(qids), 2)[keep.ravel()], b" 0 ",
        _decimal(relevant[keep]), b" 1\n",
    ))


def case_files(case: Case, data: Path, seed: int, regenerate: bool) -> Files:
    """The case's files in ``data``, generated (from the seed alone) when missing or asked to."""
    stem = data / f"{case.name}-{case.queries}x{case.depth}-seed{seed}"
    files = Files(stem.with_suffix(".qrels"), stem.with_suffix(".run"))
    if regenerate or not (files.qrels.exists() and files.run.exists()):
        start = time.perf_counter()
        generate(case, files, np.random.default_rng([seed, case.queries, case.depth]))
        print(f"generated {files.run.name} and {files.qrels.name} "
              f"in {time.perf_counter() - start:.1f} s")
    return files


# -- timing ------------------------------------------------------------------------------------


def command(tool: Tool, files: Files, out: Path) -> list[str]:
    if tool.is_gate:
        return [str(GATE), "score", str(files.qrels), str(files.run),
                "--output-format", "json", "-o", str(out)]
    return [sys.executable, "-c", PEER, str(files.qrels), str(files.run), str(out)]


def run_once(argv: Sequence[str], env: Mapping[str, str]) -> tuple[float, int | None]:
    """Wall-clock seconds and peak resident KiB (None without /usr/bin/time) of one process."""
    measured = TIME.exists()
    full = [str(TIME), "-f", "%M", *argv] if measured else list(argv)
    start = time.perf_counter()
    done = subprocess.run(full, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:2])} failed ({done.returncode}):\n{done.stderr}")
    return seconds, int(done.stderr.strip().splitlines()[-1]) if measured else None


def child_env(no_arrow: bool = False) -> dict[str, str]:
    """The timed processes' environment: this one, with bytecode caching on (an installed
    package has its .pyc files; ``PYTHONDONTWRITEBYTECODE`` would make every run recompile the
    sources) and pyarrow hidden from the reader only when asked."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RETRIEVAL_GATE_NO_ARROW", "PYTHONDONTWRITEBYTECODE")}
    if no_arrow:
        env["RETRIEVAL_GATE_NO_ARROW"] = "1"
    return env


def measure(tool: Tool, files: Files, out: Path, repeat: int) -> Timing:
    """Best of ``repeat`` timed runs, after one untimed run that warms the caches (.pyc files,
    the page cache)."""
    env = child_env(tool.no_arrow)
    run_once(command(tool, files, out), env)
    runs = [run_once(command(tool, files, out), env) for _ in range(repeat)]
    peaks = [kib for _, kib in runs if kib is not None]
    return Timing(min(s for s, _ in runs), max(peaks) if peaks else None)


# -- agreement ---------------------------------------------------------------------------------


def peer_value(gate_measure: str, row: Mapping[str, float]) -> float:
    value = row[COUNTERPARTS[gate_measure]]
    if gate_measure == "RR@10":  # recip_rank is uncut: 1/rank counts only for rank <= 10
        return value if value >= 0.1 - TOLERANCE else 0.0
    return value


@dataclass(frozen=True)
class Agreement:
    per_query: float  # largest |gate - pytrec_eval| over queries and measures
    means: dict[str, tuple[float, float]]  # measure -> (gate's reported mean, pytrec_eval's)

    @property
    def ok(self) -> bool:
        return self.per_query <= TOLERANCE and all(
            abs(ours - theirs) <= TOLERANCE for ours, theirs in self.means.values())


def agreement(gate_out: Path, peer_out: Path) -> Agreement:
    """Compare gate's JSON report with pytrec_eval's per-query results, query by query."""
    document = json.loads(gate_out.read_text())
    gate, peer = document["per_query"], json.loads(peer_out.read_text())
    if gate.keys() != peer.keys():
        return Agreement(math.inf, {})
    worst = 0.0
    means = {}
    for name in COUNTERPARTS:
        ours = np.array([gate[q][name] for q in peer])
        theirs = np.array([peer_value(name, row) for row in peer.values()])
        worst = max(worst, float(np.abs(ours - theirs).max()))
        means[name] = (document["means"][name], float(theirs.mean()))
    return Agreement(worst, means)


# -- report ------------------------------------------------------------------------------------


def mib(kib: int | None) -> str:
    return "n/a" if kib is None else f"{kib / 1024:.0f}"


def table(results: Mapping[Case, Mapping[Tool, Timing]]) -> str:
    rows = [("case", "tool", "best s", "peak MiB", "gate/pytrec_eval")]
    for case, timings in results.items():
        peer = timings[PYTREC_EVAL].seconds
        for tool, timing in timings.items():
            ratio = f"{timing.seconds / peer:.2f}x" if tool.is_gate else "-"
            rows.append((case.label, tool.name, f"{timing.seconds:.3f}", mib(timing.peak_kib),
                         ratio))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                  for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows)


def target(label: str, value: float | None, limit: float, unit: str, digits: int) -> str:
    if value is None:
        return f"{label}: n/a (no /usr/bin/time)"
    verdict = "MET" if value <= limit else "MISSED"
    return f"{label}: {value:.{digits}f}{unit} <= {limit:.{digits}f}{unit}  {verdict}"


def targets(results: Mapping[Case, Mapping[Tool, Timing]]) -> list[str]:
    def ratio(case: Case, tool: Tool) -> float:
        return results[case][tool].seconds / results[case][PYTREC_EVAL].seconds

    peaks = [results[LARGE][t].peak_kib for t in (GATE_FAST, GATE_NUMPY)]
    known = [kib for kib in peaks if kib is not None]
    peak = max(known) / 1024 if len(known) == len(peaks) else None
    return [
        target("large, gate with pyarrow / pytrec_eval", ratio(LARGE, GATE_FAST), 0.2, "x", 2),
        target("large, gate without pyarrow / pytrec_eval", ratio(LARGE, GATE_NUMPY), 1.0, "x", 2),
        target("small, whole gate process / pytrec_eval", ratio(SMALL, GATE_FAST), 1.3, "x", 2),
        target("large, gate peak memory (worse gate row)", peak, 1024, " MiB", 0),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).parent / "data",
                        help="folder of the generated files (default: benchmarks/data)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--regenerate", action="store_true",
                        help="write the data again even if the files exist")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per tool and case; the best time counts (default: 3)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if not GATE.exists():
        parser.error(f"no gate executable next to {sys.executable}")

    args.data.mkdir(parents=True, exist_ok=True)
    cases = {case: case_files(case, args.data, args.seed, args.regenerate)
             for case in (LARGE, SMALL)}
    print(f"python {sys.version.split()[0]}; pyarrow importable: "
          f"{importlib.util.find_spec('pyarrow') is not None}; peak memory: "
          f"{'/usr/bin/time' if TIME.exists() else 'n/a'}; best of {args.repeat}")
    print("gate (no pyarrow) sets RETRIEVAL_GATE_NO_ARROW=1; if the reader does not honour it,"
          " both gate rows time the same path")

    results: dict[Case, dict[Tool, Timing]] = {}
    checks: list[str] = []
    agree = True
    with tempfile.TemporaryDirectory() as scratch:
        for case, files in cases.items():
            outs = {tool: Path(scratch, f"{case.name}-{i}.json") for i, tool in enumerate(TOOLS)}
            results[case] = {tool: measure(tool, files, outs[tool], args.repeat)
                             for tool in TOOLS}
            for tool in (GATE_FAST, GATE_NUMPY):
                found = agreement(outs[tool], outs[PYTREC_EVAL])
                agree &= found.ok
                shown = ", ".join(f"{m} {g:.6f}/{p:.6f}" for m, (g, p) in found.means.items()
                                  if m in ("Recall@10", "P@10"))
                checks.append(f"{case.label}, {tool.name}: {'AGREE' if found.ok else 'DISAGREE'}"
                              f" (max per-query |diff| {found.per_query:.1e} over "
                              f"{len(COUNTERPARTS)} measures; means gate/pytrec_eval {shown})")

    print()
    print(table(results))
    print()
    print("targets:")
    print("\n".join(f"  {line}" for line in targets(results)))
    print()
    print(f"agreement with pytrec_eval (per query and means, tolerance {TOLERANCE:g}; RR@10 from"
          " the uncut recip_rank):")
    print("\n".join(f"  {line}" for line in checks))
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
