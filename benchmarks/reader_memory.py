"""How much memory does reading a large input take, as a multiple of its size?

Run by hand from the project root, with the venv's Python::

    python benchmarks/reader_memory.py            # --help for the options

The gate names an estimate when the machine refuses memory while it reads an input ("not
enough memory for reading the corpus corpus.jsonl: needs about 2.1 GiB"): the file's size times
the factor its reader gives ``retrieval_gate.core.errors.memory_for`` (in read_run and read_qrels of
retrieval_gate/formats/__init__.py, read_corpus and the access data reader). This script
measures those factors: the peaks it printed for files of 60 MB were 1.06 (corpus, JSON
Lines, read in batches), 6.9 (corpus, ids), 5.2 (access data, read in batches; 13.4 read whole), 3.8 and 4.9 (TREC run, pyarrow
and numpy), 14.6 (run, JSON Lines; 6.7 since it is read in batches, at 100 MB), 7.1 (qrels, TREC) and 13.8 (qrels, JSON Lines). Generated once (seeded, into benchmarks/data/reader-memory/,
which git ignores), each about --megabytes MB:

* corpus: JSON Lines documents of 200 ASCII characters, and a list of ids;
* access data: JSON Lines with ``acl`` (1-3 of 100 principals), dates and ``supersedes``;
* runs: TREC (read by pyarrow, and by the numpy reader with ``RETRIEVAL_GATE_NO_ARROW=1``) and
  JSON Lines of 100 items a query;
* qrels: TREC and JSON Lines, 20 judgments a query.

Each file is read once in a fresh process with the cache off: the peak resident set
(``ru_maxrss``) after reading, less the one after the imports, divided by the file's size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "reader-memory"

_PROBE = """
import resource, sys
from retrieval_gate import formats
from retrieval_gate.formats import arrow, corpus, permissions
if arrow.available():
    import pyarrow.csv
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
{call}
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024)
"""

READERS = {  # name: (file, call, environment)
    "corpus, JSON Lines": ("corpus.jsonl", "corpus.read_corpus(sys.argv[1])", {}),
    "corpus, id list": ("ids.txt", "corpus.read_corpus(sys.argv[1])", {}),
    "access data": ("access.jsonl", "permissions.read_access(sys.argv[1])", {}),
    "run, TREC (pyarrow)": ("run.trec", "formats.read_run(sys.argv[1])", {}),
    "run, TREC (numpy)": ("run.trec", "formats.read_run(sys.argv[1])",
                          {"RETRIEVAL_GATE_NO_ARROW": "1"}),
    "run, JSON Lines": ("run.jsonl", "formats.read_run(sys.argv[1])", {}),
    "qrels, TREC": ("qrels.trec", "formats.read_qrels(sys.argv[1])", {}),
    "qrels, JSON Lines": ("qrels.jsonl", "formats.read_qrels(sys.argv[1])", {}),
}


def _write(path: Path, lines) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
    os.replace(tmp, path)


def make_data(megabytes: int, seed: int) -> Path:
    """The generated files (see the module docstring), made once per size."""
    folder = DATA / f"{megabytes}mb-seed{seed}"
    done = folder / "done"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    size = megabytes * 10**6
    text = "x" * 200
    _write(folder / "corpus.jsonl", (json.dumps({"id": f"doc-{d}", "text": text}) + "\n"
                                     for d in range(size // 230)))
    _write(folder / "ids.txt", (f"passage-{d}\n" for d in range(size // 15)))
    principals = [f"p{i}" for i in range(100)]

    def record(d: int) -> str:
        acl = list(rng.choice(principals, int(rng.integers(1, 4)), replace=False))
        return json.dumps({"id": f"doc-{d}", "acl": acl, "valid_from": "2025-01-01",
                           "valid_to": "2026-12-31", "supersedes": f"doc-{d}-old"}) + "\n"

    _write(folder / "access.jsonl", (record(d) for d in range(size // 140)))
    queries = size // (100 * 40)
    _write(folder / "run.trec", (f"q{q} Q0 passage-{int(d)} {r + 1} {100 - r / 10:.4f} tag\n"
                                 for q in range(queries)
                                 for r, d in enumerate(rng.integers(0, 10**7, 100))))
    _write(folder / "run.jsonl", (json.dumps({"query_id": f"q{q}", "items": [
        {"id": f"passage-{int(d)}", "score": 100 - r / 10}
        for r, d in enumerate(rng.integers(0, 10**7, 100))]}) + "\n"
        for q in range(size // (100 * 42))))
    _write(folder / "qrels.trec", (f"q{q} 0 passage-{q * 20 + j} {int(g)}\n"
                                   for q in range(size // (20 * 25))
                                   for j, g in enumerate(rng.integers(0, 4, 20))))
    _write(folder / "qrels.jsonl", (json.dumps({"query_id": f"q{q}", "doc_id": f"passage-{d}",
                                                "grade": 1}) + "\n"
                                    for q in range(size // (20 * 60)) for d in range(20)))
    done.touch()
    return folder


def measure(folder: Path) -> dict[str, float]:
    """Each reader's peak resident memory over its file's size."""
    factors = {}
    for name, (file, call, env) in READERS.items():
        path = folder / file
        result = subprocess.run(
            [sys.executable, "-c", _PROBE.format(call=call), str(path)], check=True,
            capture_output=True, text=True,
            env={**os.environ, "RETRIEVAL_GATE_CACHE": "off", **env})
        factors[name] = int(result.stdout.split()[-1]) / path.stat().st_size
        print(f"{name:22s} {path.stat().st_size / 1e6:7.1f} MB  ×{factors[name]:.2f}",
              flush=True)
    return factors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=100, help="size of each file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    measure(make_data(args.megabytes, args.seed))


if __name__ == "__main__":
    main()
