"""How much memory do per-user permissions take at production scale?

Run by hand from the project root, with the venv's Python::

    python benchmarks/acl_scale.py            # --help for the options

Generated once (seeded numpy Generator, into benchmarks/data/acl-1000000x100000-seed0/, which
git ignores):

* a permissions file (JSON Lines) of 1,000,000 documents ``d0``-``d999999`` over 100,000
  principals — 99,000 users ``u0``-``u98999`` and 1,000 groups ``g0``-``g999``: each document
  readable by 1-3 users, 30 % of them also by one group; 10 % dated (a ``valid_from`` and a
  ``valid_to``), 5 % superseding a document of a larger number (so the links form no cycle);
* 1,000 queries, each with a ``scope`` of one user and 1-4 groups and an ``as_of`` day in 2025,
  and 2 relevant documents each, made readable by the query's user and left undated;
* two TREC runs of 100 documents a query, in random order: its relevant ones, 5 drawn from
  the whole collection (mostly leaks), the rest documents of its first group (readable by it).
  The candidate is the baseline with the rankings of a random half of the queries rotated down
  by one position.

A snapshot (``--unit document``, the permissions file pinned) is frozen and the runs' manifests
written once. Timed as whole processes (wall clock; peak resident memory from ``os.wait4``),
with the gate's cache in the folder's ``cache/`` (emptied first):

* ``gate snapshot freeze`` with the cache off: it parses the permissions file (and checks the
  judgments against it);
* the first ``gate check --fail-on never``: it parses the file and writes the cache entry;
* ``gate check`` again, --repeat times (median): it reads the cache entry, as every later check
  on a machine does.

Target (spec): per-user ACLs on 10⁶ documents × 10⁵ principals in ≤ 1.5 GiB peak resident
memory for ``gate snapshot freeze`` and for ``gate check`` (PASS/FAIL each). As dense bitsets
they would take 12.5 GB (10⁶ × 10⁵ bits). ``--documents`` and ``--principals`` make other
sizes; ``--src`` runs the gate from another source tree (``PYTHONPATH``), such as an earlier
version checked out with ``git worktree add``, on the same data.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from access_scale import _distinct, _iso, run_once, summary
from score_scale import GATE, _decimal, _lines, child_env, mib

GROUPS = 1_000
ACL_USERS = (1, 3)  # users per ACL, inclusive
WITH_GROUP = 0.30  # ACLs that also name one group
DATED, SUPERSEDES = 0.10, 0.05  # shares of the documents
QUERIES = 1_000
SCOPE_GROUPS = (1, 4)  # groups per scope, inclusive (and one user)
RELEVANT = 2  # per query
DEPTH = 100  # documents per ranking
RANDOM_ITEMS = 5  # per ranking, drawn from the whole collection
AS_OF = ("2025-01-01", "2025-12-31")
TARGET_MIB = 1536  # 1.5 GiB
RUNS = ("baseline.trec", "candidate.trec")


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def permissions(self) -> Path:
        return self.root / "permissions.jsonl"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def ready(self) -> Path:
        return self.root / f"{RUNS[1]}.manifest.json"


@dataclass(frozen=True)
class Acls:
    """Per document: its users (the first ``sizes`` of each row) and group (−1: none)."""

    users: np.ndarray
    sizes: np.ndarray
    group: np.ndarray


# -- data --------------------------------------------------------------------------------------


def _day(iso: str) -> int:
    return int(np.datetime64(iso, "D").astype(np.int64))


def draw_acls(rng: np.random.Generator, documents: int, users: int) -> Acls:
    return Acls(_distinct(rng, documents, ACL_USERS[1], users),
                rng.integers(ACL_USERS[0], ACL_USERS[1] + 1, size=documents),
                np.where(rng.random(documents) < WITH_GROUP,
                         rng.integers(0, GROUPS, size=documents), -1))


def acl_text(acls: Acls) -> np.ndarray:
    """``"u3", "u41", "g7"`` per document."""
    text = np.char.add(np.char.add(b'"u', _decimal(acls.users[:, 0])), b'"')
    for column in range(1, acls.users.shape[1]):
        item = np.char.add(np.char.add(b', "u', _decimal(acls.users[:, column])), b'"')
        text = np.char.add(text, np.where(acls.sizes > column, item, b""))
    group = np.char.add(np.char.add(b', "g', _decimal(np.maximum(acls.group, 0))), b'"')
    return np.char.add(text, np.where(acls.group >= 0, group, b""))


def permissions_text(rng: np.random.Generator, acls: Acls, undated: np.ndarray) -> bytes:
    """The permissions file: ACLs, some dates (never on ``undated`` documents), some links to
    a document of a larger number."""
    n = len(acls.sizes)
    dated = (rng.random(n) < DATED) & ~undated
    start = rng.integers(_day("2023-01-01"), _day("2025-12-31") + 1, size=n)
    end = start + rng.integers(90, 900, size=n)
    older = np.arange(n) + rng.integers(1, 1000, size=n)
    linked = (rng.random(n) < SUPERSEDES) & (older < n)
    dates = np.char.add(np.char.add(np.char.add(b', "valid_from": "', _iso(start)),
                                    np.char.add(b'", "valid_to": "', _iso(end))), b'"')
    link = np.char.add(np.char.add(b', "supersedes": "d', _decimal(np.minimum(older, n - 1))),
                       b'"')
    return _lines(b'{"id": "d', _decimal(np.arange(n)), b'", "acl": [', acl_text(acls), b"]",
                  np.where(dated, dates, b""), np.where(linked, link, b""), b"}\n")


def draw_scopes(rng: np.random.Generator, users: int) -> tuple[np.ndarray, np.ndarray,
                                                                np.ndarray]:
    """Per query: its user, its groups (the first ``sizes`` of each row) and their count."""
    return (rng.integers(0, users, size=QUERIES), _distinct(rng, QUERIES, SCOPE_GROUPS[1], GROUPS),
            rng.integers(SCOPE_GROUPS[0], SCOPE_GROUPS[1] + 1, size=QUERIES))


def queries_text(rng: np.random.Generator, user: np.ndarray, groups: np.ndarray,
                 sizes: np.ndarray) -> bytes:
    scope = np.char.add(np.char.add(b'"u', _decimal(user)), b'"')
    for column in range(groups.shape[1]):
        item = np.char.add(np.char.add(b', "g', _decimal(groups[:, column])), b'"')
        scope = np.char.add(scope, np.where(sizes > column, item, b""))
    days = rng.integers(_day(AS_OF[0]), _day(AS_OF[1]) + 1, size=QUERIES)
    qids = _decimal(np.arange(QUERIES))
    return _lines(b'{"id": "q', qids, b'", "text": "query ', qids, b'", "scope": [', scope,
                  b'], "as_of": "', _iso(days), b'"}\n')


def rankings(rng: np.random.Generator, acls: Acls, groups: np.ndarray,
             relevant: np.ndarray) -> np.ndarray:
    """Per query, ``DEPTH`` distinct documents: its relevant ones at random ranks, documents
    of its first group, and a few from the whole collection."""
    n = len(acls.sizes)
    order = np.argsort(acls.group, kind="stable")
    bounds = np.searchsorted(acls.group[order], np.arange(GROUPS + 1))
    out = np.empty((QUERIES, DEPTH), dtype=np.int64)
    for q in range(QUERIES):  # a generator, not the gate: one loop per query is fine here
        pool = order[bounds[groups[q, 0]]:bounds[groups[q, 0] + 1]]
        picked = np.concatenate([relevant[q], rng.choice(n, RANDOM_ITEMS, replace=False),
                                 rng.choice(pool, min(DEPTH, len(pool)), replace=False),
                                 rng.choice(n, DEPTH, replace=False)])  # (a small group)
        _, first = np.unique(picked, return_index=True)
        out[q] = rng.permutation(picked[np.sort(first)][:DEPTH])
    return out


def run_text(ranked: np.ndarray, name: bytes) -> bytes:
    qids = np.repeat(_decimal(np.arange(QUERIES)), DEPTH)
    ranks = np.tile(np.arange(1, DEPTH + 1), QUERIES)
    scores = (1000 - ranks).astype("S4")
    return _lines(b"q", qids, b" Q0 d", _decimal(ranked.ravel()), b" ", _decimal(ranks), b" ",
                  scores, b" " + name + b"\n")


def prepare(data: Path, documents: int, principals: int, seed: int, regenerate: bool,
            env: dict[str, str]) -> Layout:
    layout = Layout(data / f"acl-{documents}x{principals}-seed{seed}")
    if layout.ready.exists() and not regenerate:
        return layout
    started = time.perf_counter()
    layout.root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, documents, principals])
    users = principals - GROUPS
    acls = draw_acls(rng, documents, users)
    user, groups, sizes = draw_scopes(rng, users)
    relevant = _distinct(rng, QUERIES, RELEVANT, documents)
    for column in range(RELEVANT):  # readable by the query's user
        acls.users[relevant[:, column], 0] = user
    undated = np.zeros(documents, dtype=bool)
    undated[relevant.ravel()] = True
    layout.permissions.write_bytes(permissions_text(rng, acls, undated))
    (layout.root / "queries.jsonl").write_bytes(queries_text(rng, user, groups, sizes))
    qids = np.repeat(_decimal(np.arange(QUERIES)), RELEVANT)
    (layout.root / "qrels.tsv").write_bytes(_lines(b"q", qids, b" 0 d",
                                                   _decimal(relevant.ravel()), b" 1\n"))
    ranked = rankings(rng, acls, groups, relevant)
    (layout.root / RUNS[0]).write_bytes(run_text(ranked, b"baseline"))
    rotated = rng.random(QUERIES) < 0.5
    ranked[rotated] = np.roll(ranked[rotated], 1, axis=1)
    (layout.root / RUNS[1]).write_bytes(run_text(ranked, b"candidate"))
    run_once([str(GATE), *freeze_argv()], layout.root, {**env, "RETRIEVAL_GATE_CACHE": "off"})
    for run in RUNS:
        run_once([str(GATE), "run-manifest", "--snapshot", "snapshot.json", "--run", run,
                  "--commit", "synthetic", "--created", "2026-01-01T00:00:00Z"], layout.root,
                 {**env, "RETRIEVAL_GATE_CACHE": "off"})
    print(f"prepared {layout.root.name} in {time.perf_counter() - started:.1f} s")
    return layout


# -- timing ------------------------------------------------------------------------------------


def freeze_argv(output: str = "snapshot.json") -> list[str]:
    return ["snapshot", "freeze", "--queries", "queries.jsonl", "--qrels", "qrels.tsv",
            "--unit", "document", "--corpus-version", "synthetic", "--permissions-version", "v1",
            "--permissions-file", "permissions.jsonl", "-m", "Recall@10", "-m", "nDCG@10",
            "-m", "Stale@10", "-m", "MixedVersions@10", "-o", output]


def check_argv(report: Path) -> list[str]:
    return ["check", "--snapshot", "snapshot.json", "--baseline", RUNS[0], "--candidate",
            RUNS[1], "--json", str(report), "--fail-on", "never"]


def verdict(label: str, kib: int) -> str:
    ok = kib / 1024 <= TARGET_MIB
    return f"  {label}: peak {mib(kib)} MiB <= {TARGET_MIB} MiB  {'PASS' if ok else 'FAIL'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).parent / "data",
                        help="folder of the generated files (default: benchmarks/data)")
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--principals", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--regenerate", action="store_true", help="write the data again")
    parser.add_argument("--repeat", type=int, default=3,
                        help="cached checks timed; the median counts (default: 3)")
    parser.add_argument("--src", type=Path,
                        help="run the gate from this source tree (PYTHONPATH)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.principals <= GROUPS + ACL_USERS[1] or args.documents < 1000:
        parser.error("--repeat >= 1, --principals > 1003, --documents >= 1000")
    if not GATE.exists():
        parser.error(f"no gate executable next to {sys.executable}")
    env = child_env()
    if args.src is not None:
        env["PYTHONPATH"] = str(args.src.resolve())
    layout = prepare(args.data, args.documents, args.principals, args.seed, args.regenerate, env)
    size = layout.permissions.stat().st_size / 2**20
    print(f"python {sys.version.split()[0]}; gate from "
          f"{args.src or 'the installed package'}; data: {layout.root}")
    print(f"  permissions: {args.documents:,} lines ({size:.0f} MiB), {args.principals:,} "
          f"principals; {QUERIES:,} queries x {DEPTH} documents, two runs\n")
    off = {**env, "RETRIEVAL_GATE_CACHE": "off"}
    cached = {**env, "RETRIEVAL_GATE_CACHE": str(layout.cache)}
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        run_once([str(GATE), "--help"], layout.root, off)  # warm-up: .pyc files
        freeze = run_once([str(GATE), *freeze_argv("timed-snapshot.json")], layout.root, off)
        (layout.root / "timed-snapshot.json").unlink()
        shutil.rmtree(layout.cache, ignore_errors=True)
        first = run_once([str(GATE), *check_argv(report)], layout.root, cached)
        again = [run_once([str(GATE), *check_argv(report)], layout.root, cached)
                 for _ in range(args.repeat)]
        found = summary(report)
    rows = [("command", "seconds", "peak MiB"),
            ("gate snapshot freeze (parses the permissions file)", f"{freeze[0]:.2f}",
             mib(freeze[1])),
            ("first gate check (parses it, writes the cache entry)", f"{first[0]:.2f}",
             mib(first[1])),
            (f"gate check, cached (median of {args.repeat})",
             f"{statistics.median(s for s, _ in again):.2f}", mib(max(k for _, k in again)))]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths))))
    print(f"\n  gate check: {found}")
    print(f"\ntarget (spec): peak resident memory <= {TARGET_MIB} MiB (1.5 GiB):")
    print(verdict("gate snapshot freeze", freeze[1]))
    print(verdict("first gate check", first[1]))
    print(verdict("cached gate check", max(k for _, k in again)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
