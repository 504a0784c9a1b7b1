"""What do access checks add to ``gate check`` at MS MARCO-dev scale?

Run by hand from the project root, with the venv's Python::

    python benchmarks/access_scale.py            # --help for the options

The runs, judgments and query ids are those of benchmarks/check_scale.py's large case (6,980
queries x 1,000 passages, two TREC runs of 6,980,000 lines, 1-2 relevant passages a query;
generated there when missing). Generated once more here (seeded numpy Generator, into
benchmarks/data/access-large-seed0/, which git ignores):

* a permissions file (JSON Lines) restricting 10 % of the collection — 884,182 of the
  8,841,823 MS MARCO passage ids, drawn at random, so about one run item in ten is restricted:
  each line an ``acl`` of 1-3 of 100 principals ``p0``-``p99``; 30 % of them also dated
  (``valid_from`` and ``valid_to``, or only one of the two, between 2023 and 2026); 5 % name
  an older version (``supersedes``). The other passages have no line: public, always in force;
* the query set again, each query with a ``scope`` of 1-5 of the principals and an ``as_of``
  day in 2025. 95 % of the restricted relevant passages are made visible to, and in force for,
  their query (a principal of its scope joins the ACL, the dates widen to its day), so that
  few judgments are dropped; the other 5 % stay as drawn.

Two snapshots over the same queries, qrels and runs (hard links, each folder with its own run
manifests, as ``gate check`` reads the manifest beside a run), both frozen with ``--unit
document`` (the current format, whose permissions file is parsed):

* ``public/``: ``--permissions-version v1`` only — no access data, every item visible;
* ``restricted/``: the same version, pinning the permissions file (``--permissions-file``).

Timed as whole processes (wall clock; one untimed warm-up, then --repeat rounds, each running
both checks once, interleaved; bytecode caching on), the median counting: ``gate check
--snapshot --baseline --candidate --json --fail-on never`` with the default policy on each
snapshot. The access table is cached by the permissions file's hash in
``RETRIEVAL_GATE_CACHE``, pointed at benchmarks/data/access-large-seed0/cache/ (emptied at the
start): the first check with access data parses the file and writes the entry, and is timed
once, apart; the timed rounds read the entry, as every later check on a machine does. Peak
resident memory of each process comes from ``os.wait4``.

Target (spec): access checks at MS MARCO-dev scale (7M-line runs, 100 principals, 10 % of the
documents restricted) add ≤ 15 % to ``gate check``: median with access data / median without
≤ 1.15 (PASS/FAIL).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from check_scale import prepare as prepare_runs
from score_scale import GATE, LARGE, PASSAGES, _decimal, _lines, child_env, mib

PRINCIPALS = 100
RESTRICTED = 0.10  # share of the collection with an ACL
ACL_SIZES = (1, 3)  # principals per ACL, inclusive
SCOPE_SIZES = (1, 5)  # principals per query scope, inclusive
DATED, SUPERSEDES = 0.30, 0.05  # shares of the restricted documents
VISIBLE_RELEVANT = 0.95  # restricted relevant documents made visible to their query
AS_OF = ("2025-01-01", "2025-12-31")  # the queries' days
VALID_FROM = ("2023-01-01", "2025-12-31")
VALID_TO = ("2024-01-01", "2026-12-31")  # of documents with only an end
WINDOW_DAYS = (90, 900)  # length of a two-sided validity window
NO_DATE = -1
RUNS = ("baseline.trec", "candidate.trec")
TARGET = 1.15  # gate check with access data / without


@dataclass(frozen=True)
class Layout:
    """The generated folders: one snapshot without access data, one with it, and the cache."""

    root: Path

    @property
    def public(self) -> Path:
        return self.root / "public"

    @property
    def restricted(self) -> Path:
        return self.root / "restricted"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def permissions(self) -> Path:
        return self.restricted / "permissions.jsonl"

    @property
    def ready(self) -> Path:
        return self.restricted / "candidate.trec.manifest.json"


@dataclass(frozen=True)
class Askers:
    """Per query (in query-set order): its scope's principals (the first ``sizes``) and day."""

    qids: np.ndarray
    scope: np.ndarray
    sizes: np.ndarray
    as_of: np.ndarray


@dataclass(frozen=True)
class Restricted:
    """Per restricted document (ids ascending): its ACL (the first ``sizes`` principals), its
    validity days (:data:`NO_DATE`: unbounded) and the older version it supersedes (−1)."""

    docs: np.ndarray
    acl: np.ndarray
    sizes: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    supersedes: np.ndarray


# -- data --------------------------------------------------------------------------------------


def _day(iso: str) -> int:
    """Days since 1970-01-01."""
    return int(np.datetime64(iso, "D").astype(np.int64))


def _days(rng: np.random.Generator, bounds: tuple[str, str], size: int) -> np.ndarray:
    return rng.integers(_day(bounds[0]), _day(bounds[1]) + 1, size=size)


def _iso(days: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 as ``YYYY-MM-DD`` bytes."""
    return np.datetime_as_string(days.astype("datetime64[D]")).astype("S10")


def _distinct(rng: np.random.Generator, rows: int, width: int, high: int) -> np.ndarray:
    """``width`` integers below ``high`` per row, with no repeat within a row."""
    values = rng.integers(0, high, size=(rows, width))
    pending = np.arange(rows)
    while pending.size:
        ordered = np.sort(values[pending], axis=1)
        pending = pending[(ordered[:, 1:] == ordered[:, :-1]).any(axis=1)]
        values[pending] = rng.integers(0, high, size=(pending.size, width))
    return values


def _sizes(rng: np.random.Generator, bounds: tuple[int, int], size: int) -> np.ndarray:
    return rng.integers(bounds[0], bounds[1] + 1, size=size)


def read_judgments(folder: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """check_scale's query ids (query-set order), and each relevant judgment's query position
    and passage id."""
    with open(folder / "queries.jsonl", encoding="utf-8") as handle:
        qids = np.array([int(json.loads(line)["id"]) for line in handle], dtype=np.int64)
    qrels = np.loadtxt(folder / "qrels.tsv", dtype=np.int64, ndmin=2)
    order = np.argsort(qids)
    position = order[np.searchsorted(qids[order], qrels[:, 0])]
    relevant = qrels[:, 3] > 0
    return qids, position[relevant], qrels[relevant, 2]


def draw_askers(rng: np.random.Generator, qids: np.ndarray) -> Askers:
    n = len(qids)
    return Askers(qids, _distinct(rng, n, SCOPE_SIZES[1], PRINCIPALS),
                  _sizes(rng, SCOPE_SIZES, n), _days(rng, AS_OF, n))


def draw_restricted(rng: np.random.Generator) -> Restricted:
    """10 % of the passage ids with their ACLs, dates and older versions."""
    n = round(RESTRICTED * PASSAGES)
    docs = np.sort(rng.choice(PASSAGES, size=n, replace=False))
    dated = rng.random(n) < DATED
    kind = rng.random(n)  # dated: 60 % both bounds, 20 % only a start, 20 % only an end
    start = _days(rng, VALID_FROM, n)
    end = np.where(kind < 0.8, start + _sizes(rng, WINDOW_DAYS, n), _days(rng, VALID_TO, n))
    valid_from = np.where(dated & (kind < 0.8), start, NO_DATE)
    valid_to = np.where(dated & ((kind < 0.6) | (kind >= 0.8)), end, NO_DATE)
    older = (docs + rng.integers(1, PASSAGES, size=n)) % PASSAGES  # never the document itself
    supersedes = np.where(rng.random(n) < SUPERSEDES, older, -1)
    return Restricted(docs, _distinct(rng, n, ACL_SIZES[1], PRINCIPALS),
                      _sizes(rng, ACL_SIZES, n), valid_from, valid_to, supersedes)


def open_relevant(rng: np.random.Generator, table: Restricted, who: Askers,
                  query: np.ndarray, docs: np.ndarray) -> int:
    """Make most restricted relevant documents visible to and in force for their query, in
    place: the first principal of the query's scope replaces the first of the ACL (unless the
    ACL holds it already), and the validity window widens to the query's day. Returns how many
    restricted relevant judgments there are."""
    at = np.minimum(np.searchsorted(table.docs, docs), len(table.docs) - 1)
    hit = np.flatnonzero(table.docs[at] == docs)
    chosen = hit[rng.random(len(hit)) < VISIBLE_RELEVANT]
    row, principal, day = at[chosen], who.scope[query[chosen], 0], who.as_of[query[chosen]]
    columns = np.arange(ACL_SIZES[1])
    holds = ((table.acl[row] == principal[:, None])
             & (columns < table.sizes[row][:, None])).any(axis=1)
    table.acl[row[~holds], 0] = principal[~holds]
    starts, ends = table.valid_from[row], table.valid_to[row]
    table.valid_from[row] = np.where(starts == NO_DATE, NO_DATE, np.minimum(starts, day))
    table.valid_to[row] = np.where(ends == NO_DATE, NO_DATE, np.maximum(ends, day))
    return len(hit)


def _quoted_list(values: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``"p3", "p41"`` per row: the first ``sizes`` principals of each row."""
    text = np.char.add(np.char.add(b'"p', _decimal(values[:, 0])), b'"')
    for column in range(1, values.shape[1]):
        item = np.char.add(np.char.add(b', "p', _decimal(values[:, column])), b'"')
        text = np.char.add(text, np.where(sizes > column, item, b""))
    return text


def _optional(key: bytes, present: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``, "key": "value"`` where ``present``, else nothing."""
    return np.where(present, np.char.add(np.char.add(b', "' + key + b'": "', value), b'"'), b"")


def permissions_text(table: Restricted) -> bytes:
    return _lines(
        b'{"id": "', _decimal(table.docs), b'", "acl": [', _quoted_list(table.acl, table.sizes),
        b"]",
        _optional(b"valid_from", table.valid_from != NO_DATE, _iso(table.valid_from)),
        _optional(b"valid_to", table.valid_to != NO_DATE, _iso(table.valid_to)),
        _optional(b"supersedes", table.supersedes >= 0,
                  _decimal(np.maximum(table.supersedes, 0))),
        b"}\n")


def queries_text(who: Askers) -> bytes:
    return _lines(
        b'{"id": "', _decimal(who.qids), b'", "text": "query ', _decimal(who.qids),
        b'", "scope": [', _quoted_list(who.scope, who.sizes), b'], "as_of": "',
        _iso(who.as_of), b'"}\n')


def _link(source: Path, target: Path) -> None:
    """``target`` as a hard link to ``source`` (no copy of a 255 MB run)."""
    if target.exists() and target.samefile(source):
        return
    target.unlink(missing_ok=True)
    os.link(source, target)


def freeze_and_manifest(folder: Path, permissions: Path | None) -> None:
    """Freeze the folder's snapshot and write both runs' manifests on it (no cache entry)."""
    pinned = [] if permissions is None else ["--permissions-file", permissions.name]
    freeze = ["snapshot", "freeze", "--queries", "queries.jsonl", "--qrels", "qrels.tsv",
              "--unit", "document", "--corpus-version", "msmarco-passages",
              "--permissions-version", "v1", *pinned, "-o", "snapshot.json"]
    manifests = [["run-manifest", "--snapshot", "snapshot.json", "--run", run, "--commit",
                  "synthetic", "--created", "2026-01-01T00:00:00Z"] for run in RUNS]
    env = {**child_env(), "RETRIEVAL_GATE_CACHE": "off"}
    for argv in (freeze, *manifests):
        run_once([str(GATE), *argv], folder, env)


def prepare(data: Path, seed: int, regenerate: bool) -> Layout:
    """Both snapshot folders, generated, frozen and with their run manifests, when missing."""
    source = prepare_runs(LARGE, data, seed, regenerate=False).folder
    layout = Layout(data / f"access-large-seed{seed}")
    if layout.ready.exists() and not regenerate:
        return layout
    start = time.perf_counter()
    for folder in (layout.public, layout.restricted):
        folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, LARGE.queries, LARGE.depth, 7])
    qids, query, docs = read_judgments(source)
    who = draw_askers(rng, qids)
    table = draw_restricted(rng)
    restricted_relevant = open_relevant(rng, table, who, query, docs)
    (layout.restricted / "queries.jsonl").write_bytes(queries_text(who))
    layout.permissions.write_bytes(permissions_text(table))
    for name in ("qrels.tsv", *RUNS):
        _link(source / name, layout.restricted / name)
    for name in ("queries.jsonl", "qrels.tsv", *RUNS):
        _link(layout.restricted / name, layout.public / name)
    freeze_and_manifest(layout.public, None)
    freeze_and_manifest(layout.restricted, layout.permissions)
    print(f"prepared {layout.root.name} in {time.perf_counter() - start:.1f} s "
          f"({restricted_relevant:,} of {len(docs):,} relevant judgments restricted, "
          f"{VISIBLE_RELEVANT:.0%} of those opened to their query)")
    return layout


# -- timing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    label: str
    folder: Path
    argv: list[str]


def run_once(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    """Wall-clock seconds and peak resident KiB of one process run in ``cwd``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv[1:3])} in {cwd} failed ({code}):\n"
                             f"{err.read().decode(errors='replace')}")
    kib = usage.ru_maxrss // 1024 if sys.platform == "darwin" else usage.ru_maxrss
    return seconds, kib


def check_command(label: str, folder: Path, report: Path) -> Command:
    return Command(label, folder, [
        str(GATE), "check", "--snapshot", "snapshot.json", "--baseline", RUNS[0],
        "--candidate", RUNS[1], "--json", str(report), "--fail-on", "never"])


def timing_env(layout: Layout) -> dict[str, str]:
    return {**child_env(), "RETRIEVAL_GATE_CACHE": str(layout.cache)}


def first_check(command: Command, layout: Layout) -> tuple[float, int]:
    """The check with access data on an empty cache: it parses the permissions file."""
    shutil.rmtree(layout.cache, ignore_errors=True)
    return run_once(command.argv, command.folder, timing_env(layout))


def timed(commands: list[Command], repeat: int, layout: Layout
          ) -> dict[str, list[tuple[float, int]]]:
    """Each command's (seconds, peak KiB) per round, the commands interleaved."""
    env = timing_env(layout)
    results: dict[str, list[tuple[float, int]]] = {c.label: [] for c in commands}
    for _ in range(repeat):
        for command in commands:
            results[command.label].append(run_once(command.argv, command.folder, env))
    return results


# -- report ------------------------------------------------------------------------------------


def data_lines(layout: Layout) -> list[str]:
    with open(layout.permissions, "rb") as handle:
        lines = sum(1 for _ in handle)
    run_mib = (layout.public / RUNS[0]).stat().st_size / 2**20
    runs = f"  runs: 2 x {LARGE.queries * LARGE.depth:,} lines ({run_mib:.0f} MiB each)"
    permissions = (f"  permissions: {lines:,} lines ({lines / PASSAGES:.1%} of {PASSAGES:,} "
                   f"passages, {layout.permissions.stat().st_size / 2**20:.0f} MiB), "
                   f"{PRINCIPALS} principals")
    return [f"data: {layout.root}", runs, permissions]


def summary(report: Path) -> str:
    """The verdict, the leaks among the items the measures read and nDCG@10 of each run."""
    document = json.loads(report.read_text())
    leaks = document.get("leaks") or {}
    shown = ", ".join(f"{role} {(leaks.get(role) or {}).get('count', 0):,}"
                      for role in ("baseline", "candidate")) if leaks else "none (no access data)"

    def ndcg(role: str) -> str:
        value = (document.get(role) or {}).get("means", {}).get("nDCG@10")
        return "n/a" if value is None else f"{value:.4f}"

    return (f"verdict {document.get('verdict')}; leaks: {shown}; nDCG@10 baseline "
            f"{ndcg('baseline')}, candidate {ndcg('candidate')}")


def table(results: dict[str, list[tuple[float, int]]], first: tuple[float, int]
          ) -> list[str]:
    rows = [("command", "median s", "min s", "max s", "peak MiB")]
    for label, runs in results.items():
        seconds = [s for s, _ in runs]
        rows.append((label, f"{statistics.median(seconds):.3f}", f"{min(seconds):.3f}",
                     f"{max(seconds):.3f}", mib(max(k for _, k in runs))))
    rows.append(("first check with access data (parses, caches)", f"{first[0]:.3f}", "", "",
                 mib(first[1])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                      for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in rows]


def verdict_lines(results: dict[str, list[tuple[float, int]]], without: Command,
                  with_access: Command, first: tuple[float, int]) -> list[str]:
    base = statistics.median(s for s, _ in results[without.label])
    access = statistics.median(s for s, _ in results[with_access.label])
    ratio = access / base
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    measured = (f"  gate check with access / without = {ratio:.3f}x "
                f"({100 * (ratio - 1):+.1f} %) <= {TARGET:.2f}x  {verdict}")
    parse = (f"first check with access data (parses the permissions file, writes the cache "
             f"entry): {first[0] / base:.3f}x the check without access data")
    return ["target (spec): access checks add <= 15 % to gate check (cached access table):",
            measured, parse]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).parent / "data",
                        help="folder of the generated files (default: benchmarks/data)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--regenerate", action="store_true",
                        help="write the access data, snapshots and manifests again (the runs "
                             "are check_scale.py's)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed rounds; the median counts (default: 3)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if not GATE.exists():
        parser.error(f"no gate executable next to {sys.executable}")
    layout = prepare(args.data, args.seed, args.regenerate)
    print(f"python {sys.version.split()[0]}; pyarrow importable: "
          f"{importlib.util.find_spec('pyarrow') is not None}; median of {args.repeat} rounds "
          f"after a warm-up; RETRIEVAL_GATE_CACHE={layout.cache}")
    print("\n".join(data_lines(layout)))
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        without = check_command("gate check, no access data", layout.public,
                                out / "public.json")
        with_access = check_command("gate check, access data (cached)", layout.restricted,
                                    out / "restricted.json")
        run_once(without.argv, without.folder, timing_env(layout))  # warm-up: .pyc, page cache
        first = first_check(with_access, layout)  # also the warm-up of the access check
        results = timed([without, with_access], args.repeat, layout)
        print(f"  without access data: {summary(out / 'public.json')}")
        print(f"  with access data:    {summary(out / 'restricted.json')}\n")
    print("\n".join(table(results, first)))
    print()
    print("\n".join(verdict_lines(results, without, with_access, first)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
