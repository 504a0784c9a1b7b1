"""How much memory and time does reading a 1 GB JSON Lines corpus take?

Run by hand from the project root, with the venv's Python::

    python benchmarks/corpus_scale.py            # --help for the options

Generated once (seeded numpy Generator, into benchmarks/data/corpus-SIZE/, which git ignores):
a JSON Lines corpus of short passages, ``{"id": "p1234567", "text": "..."}``, each text 8–24
words drawn from a small English vocabulary (about 92 bytes a line: 10.9 million documents make
1 GB), and a query set and document judgments of 200 queries over it.

Timed as whole processes (wall clock, best of --repeat after one untimed warm-up; peak
resident memory from ``os.wait4``):

* **json, line by line** (the peer): ``for line in file: json.loads(line)``, nothing kept;
* **gate, parse**: ``retrieval_gate.formats.corpus.read_corpus`` with the cache off — the
  batches of lines parsed into the arrays the gate keeps (ids, hashes, text lengths, line
  places);
* **gate, cached**: the same call reading the corpus's cache entry (written by an untimed
  first call), as every later command on a machine does;
* **gate snapshot freeze**: the whole command pinning the corpus with ``--unit document``
  (hashing the file, parsing it, checking every judged id against it), cache off.

Targets (spec): at 1 GB, peak memory of the parse ≤ 2× the corpus file, and its time ≤ 3× the
peer's (PASS/FAIL). ``--compare-src DIR`` also times the cached read with the package's
sources in DIR (for instance a worktree of an older commit) — its entry is written first,
which parses the corpus the old way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GATE = Path(sys.executable).parent / "gate"
BYTES_PER_DOC = 92
QUERIES, JUDGED = 200, 3
VOCABULARY = b"""the of and to in a is that for it as was with be by on not he this are or his from
at which but have an they you were their one all we can her has there been if more when will
would who so no retrieval passage evidence index answer"""
PEER = "import json, sys\nfor line in open(sys.argv[1], 'rb'):\n    json.loads(line)\n"
READ = ("import sys\nfrom retrieval_gate.formats.corpus import read_corpus\n"
        "print(len(read_corpus(sys.argv[1]).ids))\n")
PARSE_LIMIT, TIME_LIMIT = 2.0, 3.0  # peak memory / file size; parse time / peer time


def generate(folder: Path, size: int, seed: int) -> dict[str, Path]:
    """The corpus of about ``size`` bytes, its queries and judgments (made once)."""
    files = {name: folder / name for name in ("corpus.jsonl", "queries.jsonl", "qrels.jsonl")}
    if all(f.exists() for f in files.values()):
        return files
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    docs = size // BYTES_PER_DOC
    vocab = np.array(VOCABULARY.split(), dtype=object)
    tmp = files["corpus.jsonl"].with_suffix(".tmp")
    with open(tmp, "wb") as handle:
        for first in range(0, docs, 200_000):
            n = min(200_000, docs - first)
            counts = rng.integers(8, 25, size=n)
            words = vocab[rng.integers(0, len(vocab), size=int(counts.sum()))]
            ends = np.cumsum(counts)
            handle.write(b"".join(
                b'{"id": "p%d", "text": "%s"}\n' % (first + i, b" ".join(words[end - c:end]))
                for i, (c, end) in enumerate(zip(counts.tolist(), ends.tolist()))))
    os.replace(tmp, files["corpus.jsonl"])
    judged = rng.choice(docs, size=(QUERIES, JUDGED), replace=False)
    files["queries.jsonl"].write_text("".join(
        json.dumps({"id": f"q{q}", "text": f"question {q}"}) + "\n" for q in range(QUERIES)))
    files["qrels.jsonl"].write_text("".join(
        json.dumps({"query_id": f"q{q}", "doc_id": f"p{d}", "grade": 1}) + "\n"
        for q in range(QUERIES) for d in judged[q].tolist()))
    return files


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock seconds and peak resident MiB of one process; SystemExit if it fails. The
    process is spawned, not forked, so that its peak does not count this one's memory."""
    with tempfile.TemporaryFile() as errors:
        actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                   (os.POSIX_SPAWN_DUP2, errors.fileno(), 2)]
        start = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(argv[:3])} failed:\n{errors.read().decode()}")
    return seconds, usage.ru_maxrss / 1024


def best(argv: list[str], env: dict[str, str], repeat: int) -> tuple[float, float]:
    """Best time and largest peak of ``repeat`` runs after an untimed one."""
    run(argv, env)
    runs = [run(argv, env) for _ in range(repeat)]
    return min(s for s, _ in runs), max(m for _, m in runs)


def environment(cache: str, src: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["RETRIEVAL_GATE_CACHE"] = cache
    if src is not None:
        env["PYTHONPATH"] = src
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=float, default=1.0, help="corpus size in GB (1e9 bytes)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare-src", help="time the cached read of these sources too")
    args = parser.parse_args()
    folder = ROOT / "benchmarks" / "data" / f"corpus-{args.size:g}g-seed{args.seed}"
    files = generate(folder, int(args.size * 1e9), args.seed)
    corpus = files["corpus.jsonl"]
    size_mib = corpus.stat().st_size / 2**20
    off = environment("off")
    rows: list[tuple[str, float, float]] = []
    peer = best([sys.executable, "-c", PEER, str(corpus)], off, args.repeat)
    rows.append(("json, line by line", *peer))
    parse = best([sys.executable, "-c", READ, str(corpus)], off, args.repeat)
    rows.append(("gate, parse (cache off)", *parse))
    with tempfile.TemporaryDirectory(dir=folder) as cache:
        rows.append(("gate, cached", *best([sys.executable, "-c", READ, str(corpus)],
                                           environment(cache), args.repeat)))
        if args.compare_src:
            rows.append((f"cached, {args.compare_src}", *best(
                [sys.executable, "-c", READ, str(corpus)],
                environment(cache, args.compare_src), args.repeat)))
    manifest = folder / "snapshot.json"
    manifest.unlink(missing_ok=True)
    freeze = [str(GATE), "snapshot", "freeze", "--queries", str(files["queries.jsonl"]),
              "--qrels", str(files["qrels.jsonl"]), "--corpus-file", str(corpus),
              "--corpus-version", "bench", "--permissions-version", "none",
              "--unit", "document", "-o", str(manifest)]
    rows.append(("gate snapshot freeze", *run(freeze, off)))
    manifest.unlink()
    print(f"corpus: {corpus} ({size_mib:,.0f} MiB, {int(args.size * 1e9) // BYTES_PER_DOC:,} "
          "documents)")
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  {'best s':>8}  {'peak MiB':>9}  {'x file':>7}")
    for label, seconds, peak in rows:
        print(f"{label:{width}}  {seconds:8.2f}  {peak:9,.0f}  {peak / size_mib:7.2f}")
    memory, speed = parse[1] / size_mib, parse[0] / peer[0]
    print(f"parse peak memory / file: {memory:.2f}x <= {PARSE_LIMIT}x  "
          f"{'PASS' if memory <= PARSE_LIMIT else 'FAIL'}")
    print(f"parse time / json line by line: {speed:.2f}x <= {TIME_LIMIT}x  "
          f"{'PASS' if speed <= TIME_LIMIT else 'FAIL'}")


if __name__ == "__main__":
    main()
