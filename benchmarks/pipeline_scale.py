"""What does a three-stage pipeline check cost, against scoring the stage files one by one?

Run by hand from the project root, with the venv's Python::

    python benchmarks/pipeline_scale.py            # --help for the options

Generated once (seeded numpy Generator, into benchmarks/data/, which git ignores): a snapshot
of 5,000 queries (``--queries``) with document judgments — per query a pool of 200 distinct
documents, 5 of them relevant (grades 1–3) and 5 judged non-relevant (grade 0) — frozen with
the stages ``candidates:100``, ``reranked:20``, ``context:8:2000`` (a 2,000-token budget) and
the measures ``Recall@100 [candidates]``, ``Recall@20 [reranked]``, ``nDCG@10 [reranked]``,
``Recall [context]``. Two pipeline runs, ``baseline`` and ``candidate``, of three stage files
each, made like a pipeline: a first-stage score (relevant documents pushed up) picks 100 of
the pool; a reranker score (partly the first one, plus the grade) keeps the top 20 of those;
the context is the reranked top 8. The candidate's first stage is a little better, its
reranker a little worse. Formats:

* ``candidates`` and ``reranked``: TREC (``qid Q0 docid rank score tag``), the faster format
  to read (vectorised, with pyarrow when present; ``--stage-format jsonl`` writes them as JSON
  Lines instead, parsed line by line);
* ``context``: JSON Lines, ``{"query_id", "items": [{"id", "score", "tokens"}], "latency_ms"}``
  — the budget needs each item's tokens (120–330, fixed per document, so 8 items sometimes
  exceed 2,000), and the query's latency is recorded there.

Each run's manifest is written by ``gate run-manifest --stage NAME=FILE`` (three, in pipeline
order; the manifest lies beside the context file), and a ``gate.toml`` gates the four
measures (margin 0.02) and two costs (mean context tokens ≤ 2,000; p95 latency at most +50 %).

Timed as whole processes (wall clock; one untimed warm-up round, then --repeat rounds, each
running every command once, interleaved; bytecode caching on, as in an installed package), the
median of the rounds counting:

* ``gate check --snapshot --baseline --candidate --config --json --fail-on never``: one
  process scoring both runs' three stages, with the funnel, the costs and the bootstrap;
* three ``gate score QRELS STAGE-FILE -m MEASURE... --output-format json -o OUT`` processes,
  one per stage file of the candidate run, with that stage's measures by their plain names
  (``gate score`` knows no stages: the context file is scored whole, without the budget);
* the same for the baseline's three files: six ``gate score`` processes in all, as a check
  scores two runs.

Target (spec): the three-stage check at 5,000 queries (100 / 20 / 8 items) ≤ 1.5× the time of
the three single-stage ``gate score`` processes on the same files — checked, literally, against
the three processes of one run (PASS/FAIL); the ratio to the six processes of both runs is
printed beside it for context. Peak resident memory of each process comes from ``os.wait4``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from score_scale import GATE, _decimal, _distinct_rows, _lines, child_env, mib

QUERIES = 5_000
POOL, RELEVANT, JUDGED_NONRELEVANT = 200, 5, 5  # documents per query; the first 10 are judged
STAGES = (("candidates", 100, None), ("reranked", 20, None), ("context", 8, 2_000))
MEASURES = {  # stage -> its measures in the snapshot (gate score takes the plain names)
    "candidates": ("Recall@100",),
    "reranked": ("Recall@20", "nDCG@10"),
    "context": ("Recall",),
}
TARGET = 1.5  # gate check / three gate score processes


@dataclass(frozen=True)
class System:
    """How a synthetic pipeline run is made: the first stage's push for relevant documents,
    the reranker's weight on the first-stage score and its push per grade, the latency."""

    name: str
    tag: str
    first_boost: float
    carry: float
    grade_boost: float
    latency_ms: float


BASELINE = System("baseline", "base", first_boost=1.3, carry=0.5, grade_boost=0.8,
                  latency_ms=40.0)
CANDIDATE = System("candidate", "cand", first_boost=1.4, carry=0.5, grade_boost=0.7,
                   latency_ms=42.0)


@dataclass(frozen=True)
class Judged:
    """The test set: query ids, each query's pool of document ids (the first RELEVANT
    relevant, the next JUDGED_NONRELEVANT judged non-relevant) and the pool's grades."""

    qids: np.ndarray
    pool: np.ndarray
    grades: np.ndarray


@dataclass(frozen=True)
class Case:
    folder: Path
    stage_format: str

    def stage_file(self, system: System, stage: str) -> Path:
        suffix = "jsonl" if stage == "context" else self.stage_format
        return self.folder / system.name / f"{stage}.{suffix}"

    def manifest(self, system: System) -> Path:
        context = self.stage_file(system, "context")
        return context.with_name(context.name + ".manifest.json")


# -- data --------------------------------------------------------------------------------------


def judgments(rng: np.random.Generator, queries: int) -> Judged:
    qids = np.sort(rng.choice(1_000_000, size=queries, replace=False))
    pool = _distinct_rows(rng, queries, POOL)
    grades = np.zeros((queries, POOL), dtype=np.int64)
    grades[:, :RELEVANT] = rng.integers(1, 4, size=(queries, RELEVANT))
    return Judged(qids, pool, grades)


def top(scores: np.ndarray, columns: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``k`` highest scores (descending) and their columns."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(columns, order, axis=1)


def rankings(judged: Judged, system: System, rng: np.random.Generator
             ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(scores, pool columns) of each stage, rows in rank order."""
    queries = len(judged.qids)
    relevant = judged.grades > 0
    first = rng.standard_normal((queries, POOL)) + system.first_boost * relevant
    columns = np.broadcast_to(np.arange(POOL), (queries, POOL))
    cand_scores, cand_cols = top(first, columns, STAGES[0][1])
    grade = np.take_along_axis(judged.grades, cand_cols, axis=1)
    rerank = (system.carry * cand_scores + rng.standard_normal(cand_scores.shape)
              + system.grade_boost * grade)
    rer_scores, rer_cols = top(rerank, cand_cols, STAGES[1][1])
    depth = STAGES[2][1]
    return {"candidates": (cand_scores, cand_cols), "reranked": (rer_scores, rer_cols),
            "context": (rer_scores[:, :depth], rer_cols[:, :depth])}


def micros(scores: np.ndarray) -> np.ndarray:
    """Scores as positive millionths (written with 6 decimals; the order is kept)."""
    return np.rint((scores + 20.0) * 1e6).astype(np.int64)


def tokens_of(doc_ids: np.ndarray) -> np.ndarray:
    """A document's token count, fixed by its id: 120–330."""
    return 120 + doc_ids % 211


def trec_text(qids: np.ndarray, docs: np.ndarray, scores: np.ndarray, tag: str) -> bytes:
    queries, depth = docs.shape
    value = micros(scores).ravel()
    return _lines(
        np.repeat(_decimal(qids), depth), b" Q0 ", _decimal(docs.ravel()), b" ",
        _decimal(np.tile(np.arange(1, depth + 1), queries)), b" ",
        _decimal(value // 1_000_000), b".", np.char.zfill(_decimal(value % 1_000_000), 6),
        f" {tag}\n".encode())


def jsonl_text(qids: np.ndarray, docs: np.ndarray, scores: np.ndarray,
               latency: np.ndarray | None) -> bytes:
    """One ``{"query_id", "items": [{"id", "score", "tokens"}], "latency_ms"?}`` line per
    query."""
    value = micros(scores)
    tokens = tokens_of(docs)
    lines = []
    for q, qid in enumerate(qids.tolist()):
        items = ", ".join(
            f'{{"id": "{d}", "score": {v // 1_000_000}.{v % 1_000_000:06d}, "tokens": {t}}}'
            for d, v, t in zip(docs[q].tolist(), value[q].tolist(), tokens[q].tolist()))
        tail = "" if latency is None else f', "latency_ms": {latency[q]:.3f}'
        lines.append(f'{{"query_id": "{qid}", "items": [{items}]{tail}}}\n')
    return "".join(lines).encode()


def write_judgments(case: Case, judged: Judged) -> None:
    judged_cols = RELEVANT + JUDGED_NONRELEVANT
    (case.folder / "qrels.tsv").write_bytes(_lines(
        np.repeat(_decimal(judged.qids), judged_cols), b" 0 ",
        _decimal(judged.pool[:, :judged_cols].ravel()), b" ",
        _decimal(judged.grades[:, :judged_cols].ravel()), b"\n"))
    (case.folder / "queries.jsonl").write_bytes(_lines(
        b'{"id": "', _decimal(judged.qids), b'", "text": "query ', _decimal(judged.qids),
        b'"}\n'))


def write_run(case: Case, judged: Judged, system: System, rng: np.random.Generator) -> None:
    """The system's three stage files."""
    (case.folder / system.name).mkdir(exist_ok=True)
    rows = np.arange(len(judged.qids))[:, None]
    for stage, (scores, cols) in rankings(judged, system, rng).items():
        docs = judged.pool[rows, cols]
        path = case.stage_file(system, stage)
        if path.suffix == ".trec":
            path.write_bytes(trec_text(judged.qids, docs, scores, system.tag))
        else:
            latency = (rng.lognormal(np.log(system.latency_ms), 0.4, len(judged.qids))
                       if stage == "context" else None)
            path.write_bytes(jsonl_text(judged.qids, docs, scores, latency))


def write_config(case: Case) -> None:
    gates = "".join(f'[[gate]]\nmeasure = "{m} [{stage}]"\nmargin = 0.02\n\n'
                    for stage, names in MEASURES.items() for m in names)
    (case.folder / "gate.toml").write_text(
        "# written by benchmarks/pipeline_scale.py\n\n" + gates
        + '[[cost]]\nmetric = "context_tokens"\nstat = "mean"\nmax = 2000\n\n'
        + '[[cost]]\nmetric = "latency_ms"\nstat = "p95"\nmax-increase = 0.5\n')


def freeze_argv() -> list[str]:
    stages = [f"{name}:{cutoff}" + ("" if budget is None else f":{budget}")
              for name, cutoff, budget in STAGES]
    measures = [f"{m} [{stage}]" for stage, names in MEASURES.items() for m in names]
    return ["snapshot", "freeze", "--queries", "queries.jsonl", "--qrels", "qrels.tsv",
            "--unit", "document", "--corpus-version", "synthetic", "--permissions-version",
            "public", *flags("--stage", stages), *flags("-m", measures), "-o", "snapshot.json"]


def manifest_argv(case: Case, system: System) -> list[str]:
    stages = [f"{name}={case.stage_file(system, name).relative_to(case.folder)}"
              for name, _, _ in STAGES]
    return ["run-manifest", "--snapshot", "snapshot.json", *flags("--stage", stages),
            "--timed-on", "synthetic", "--system", f"name={system.name}",
            "--commit", "synthetic", "--created", "2026-01-01T00:00:00Z"]


def flags(option: str, values: Sequence[str]) -> list[str]:
    return [arg for value in values for arg in (option, value)]


def prepare(data: Path, queries: int, seed: int, stage_format: str, regenerate: bool) -> Case:
    """The case's folder, generated, frozen and with both manifests, when missing."""
    case = Case(data / f"pipeline-{queries}q-{stage_format}-seed{seed}", stage_format)
    if not regenerate and case.manifest(CANDIDATE).exists():
        return case
    start = time.perf_counter()
    case.folder.mkdir(parents=True, exist_ok=True)
    judged = judgments(np.random.default_rng([seed, queries, 0]), queries)
    write_judgments(case, judged)
    for i, system in enumerate((BASELINE, CANDIDATE), start=1):
        write_run(case, judged, system, np.random.default_rng([seed, queries, i]))
    write_config(case)
    for argv in (freeze_argv(), manifest_argv(case, BASELINE), manifest_argv(case, CANDIDATE)):
        run_once([str(GATE), *argv], case.folder)
    print(f"prepared {case.folder.name} in {time.perf_counter() - start:.1f} s")
    return case


# -- timing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    label: str
    argv: list[str]


def run_once(argv: list[str], cwd: Path) -> tuple[float, int]:
    """Wall-clock seconds and peak resident KiB of one process run in ``cwd``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, env=child_env(), stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv[1:3])} failed ({process.returncode}):\n"
                             f"{err.read().decode(errors='replace')}")
    kib = usage.ru_maxrss // 1024 if sys.platform == "darwin" else usage.ru_maxrss
    return seconds, kib


def commands(case: Case, out: Path) -> tuple[Command, list[Command], list[Command]]:
    """The check, the candidate's three gate score processes, the baseline's three."""
    check = Command("gate check (2 runs x 3 stages)", [
        str(GATE), "check", "--snapshot", "snapshot.json",
        "--baseline", str(case.stage_file(BASELINE, "context").relative_to(case.folder)),
        "--candidate", str(case.stage_file(CANDIDATE, "context").relative_to(case.folder)),
        "--config", "gate.toml", "--json", str(out / "check.json"), "--fail-on", "never"])

    def scores(system: System) -> list[Command]:
        out_list = []
        for stage, names in MEASURES.items():
            path = case.stage_file(system, stage).relative_to(case.folder)
            out_list.append(Command(f"gate score {path} {' '.join(names)}", [
                str(GATE), "score", "qrels.tsv", str(path), *flags("-m", names),
                "--output-format", "json", "-o", str(out / f"{system.name}-{stage}.json")]))
        return out_list

    return check, scores(CANDIDATE), scores(BASELINE)


def timed(all_commands: list[Command], repeat: int, cwd: Path
          ) -> dict[str, list[tuple[float, int]]]:
    """Each command's (seconds, peak KiB) per round, after one untimed warm-up round."""
    for command in all_commands:
        run_once(command.argv, cwd)
    results: dict[str, list[tuple[float, int]]] = {c.label: [] for c in all_commands}
    for _ in range(repeat):
        for command in all_commands:
            results[command.label].append(run_once(command.argv, cwd))
    return results


# -- report ------------------------------------------------------------------------------------


def median_total(results: dict[str, list[tuple[float, int]]], labels: Sequence[str]) -> float:
    """The median over rounds of the commands' summed seconds."""
    rounds = len(results[labels[0]])
    return statistics.median(sum(results[label][r][0] for label in labels)
                             for r in range(rounds))


def data_line(case: Case) -> str:
    sizes = ", ".join(f"{p.relative_to(case.folder)} {p.stat().st_size / 2**20:.1f} MiB"
                      for p in (case.stage_file(CANDIDATE, s) for s, _, _ in STAGES))
    return f"data: {case.folder}\n  candidate run: {sizes}"


def report(results: dict[str, list[tuple[float, int]]], check: Command, three: list[Command],
           six: list[Command]) -> list[str]:
    rows = [("command", "median s", "peak MiB")]
    for label, runs in results.items():
        rows.append((label, f"{statistics.median(s for s, _ in runs):.3f}",
                     mib(max(k for _, k in runs))))
    check_s = statistics.median(s for s, _ in results[check.label])
    three_s = median_total(results, [c.label for c in three])
    six_s = median_total(results, [c.label for c in six])
    rows += [("sum of the 3 gate score (candidate run)", f"{three_s:.3f}", ""),
             ("sum of the 6 gate score (both runs)", f"{six_s:.3f}", "")]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join((c.ljust(w) if i == 0 else c.rjust(w))
                       for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in rows]
    ratio3, ratio6 = check_s / three_s, check_s / six_s
    peak = max(k for _, k in results[check.label])
    verdict = "PASS" if ratio3 <= TARGET else "FAIL"
    return lines + [
        "",
        "target (spec) is checked against the three gate score processes of one run:",
        f"  gate check / 3 x gate score = {ratio3:.2f}x <= {TARGET:.2f}x  {verdict}",
        "for context (a check scores two runs):",
        f"  gate check / 6 x gate score = {ratio6:.2f}x",
        f"gate check peak RSS: {peak / 1024:.0f} MiB",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).parent / "data",
                        help="folder of the generated files (default: benchmarks/data)")
    parser.add_argument("--queries", type=int, default=QUERIES,
                        help=f"queries in the test set (default: {QUERIES:,})")
    parser.add_argument("--stage-format", choices=("trec", "jsonl"), default="trec",
                        help="format of the candidates and reranked files (default: trec)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--regenerate", action="store_true",
                        help="write the data again even if it exists")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed rounds; the median counts (default: 3)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.queries < 1:
        parser.error("--repeat and --queries must be at least 1")
    if not GATE.exists():
        parser.error(f"no gate executable next to {sys.executable}")
    case = prepare(args.data, args.queries, args.seed, args.stage_format, args.regenerate)
    print(f"python {sys.version.split()[0]}; pyarrow importable: "
          f"{importlib.util.find_spec('pyarrow') is not None}; {args.queries:,} queries; "
          f"candidates and reranked as {args.stage_format.upper()}, context as JSONL; "
          f"median of {args.repeat} rounds after a warm-up")
    print(data_line(case))
    with tempfile.TemporaryDirectory() as scratch:
        check, three, others = commands(case, Path(scratch))
        six = three + others
        results = timed([check, *six], args.repeat, case.folder)
        verdict = json.loads((Path(scratch) / "check.json").read_text()).get("verdict")
    print(f"gate check verdict on the synthetic runs: {verdict}\n")
    print("\n".join(report(results, check, three, six)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
