"""What do evidence units cost? Span scoring against document scoring of the same runs, and the
corpus membership check of ``gate check`` at MS MARCO-dev scale.

Run by hand from the project root, with the venv's Python::

    python benchmarks/evidence_scale.py            # --help for the options

**Spans** (target: span scoring ≤ 2× document scoring). Generated once (seeded, into
benchmarks/data/evidence/, which git ignores): 20,000 documents of 2,000 characters; a chunk
table cutting each into 300-character chunks with 50 of overlap (8 chunks a document); 10,000
queries with 5 judged spans each (40–160 characters, inside 1–5 documents, grades 1–3, facts
f1–f3), and the same judgments at document level (each judged document with its best grade);
a TREC run of 100 chunk ids per query (the chunks holding its spans among them, the rest
random), scores with 6 decimals. Timed as whole processes (best of --repeat after a warm-up):

* document scoring: ``gate score DOC-QRELS RUN --chunks CHUNKS`` (items collapse to their
  documents);
* span scoring: ``gate score SPAN-QRELS RUN --chunks CHUNKS --corpus CORPUS`` (the corpus gives
  the documents' lengths);

both with the measures Recall@10, P@10, nDCG@10, AP@100 and FactCoverage@10 (document scoring
without the facts measure's spans it cannot see), and JSON output to a file.

**Corpus membership** (target: ≤ 10 % added to ``gate check``): the MS MARCO-dev-scale data of
benchmarks/check_scale.py (6,980 queries × 1,000 passages, two runs) with an 8,841,823-id
corpus list; ``gate check`` on a snapshot with ``unit: document`` pinning the corpus list
against the same snapshot pinning the corpus by version only (no membership check). Both
verify the same hashes of queries, judgments and runs; the corpus list's own hash is part of
the first. The corpus is read from its cache entry (benchmarks/data/evidence/cache), as every
check after the first one on a machine; the first check, which reads the list and writes the
entry, is timed once and printed apart.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "evidence"
GATE = Path(sys.executable).parent / "gate"
DOCS, DOC_CHARS, CHUNK, OVERLAP = 20_000, 2_000, 300, 50
QUERIES, ITEMS, SPANS = 10_000, 100, 5
MEASURES = ["Recall@10", "P@10", "nDCG@10", "AP@100", "FactCoverage@10"]


def _write(path: Path, lines) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
    os.replace(tmp, path)


def make_span_data(seed: int) -> dict[str, Path]:
    """The generated files (see the module docstring), made once."""
    DATA.mkdir(parents=True, exist_ok=True)
    files = {name: DATA / name for name in ("corpus.jsonl", "chunks.jsonl", "spans.jsonl",
                                            "docs.jsonl", "run.trec", "queries.jsonl")}
    if all(f.exists() for f in files.values()):
        return files
    rng = np.random.default_rng(seed)
    text = "x" * DOC_CHARS
    _write(files["corpus.jsonl"], (json.dumps({"id": f"d{d}", "text": text}) + "\n"
                                   for d in range(DOCS)))
    starts = np.arange(0, DOC_CHARS - OVERLAP, CHUNK - OVERLAP)
    per_doc = len(starts)
    _write(files["chunks.jsonl"], (
        json.dumps({"id": f"d{d}#{i}", "doc_id": f"d{d}", "start": int(s),
                    "end": int(min(s + CHUNK, DOC_CHARS)), "tokens": 50}) + "\n"
        for d in range(DOCS) for i, s in enumerate(starts)))
    span_lines, doc_lines, run_lines, query_lines = [], [], [], []
    for q in range(QUERIES):
        docs = rng.choice(DOCS, rng.integers(1, 6), replace=False)
        placed: dict[int, list[tuple[int, int]]] = {}
        best: dict[int, int] = {}
        for j in range(SPANS):
            doc = int(docs[j % len(docs)])
            taken = placed.setdefault(doc, [])
            for _ in range(20):  # a span apart from the document's others
                length = int(rng.integers(40, 161))
                start = int(rng.integers(0, DOC_CHARS - length))
                if all(start + length <= s or e <= start for s, e in taken):
                    break
            else:
                continue
            taken.append((start, start + length))
            grade = int(rng.integers(1, 4))
            best[doc] = max(best.get(doc, 0), grade)
            span_lines.append(json.dumps({"query_id": f"q{q}", "doc_id": f"d{doc}",
                                          "start": start, "end": start + length,
                                          "grade": grade, "fact": f"f{j % 3 + 1}"}) + "\n")
        doc_lines += [json.dumps({"query_id": f"q{q}", "doc_id": f"d{d}", "grade": g,
                                  "fact": "f1"}) + "\n" for d, g in best.items()]
        holding = {f"d{d}#{i}" for d, spans in placed.items() for s, e in spans
                   for i, c in enumerate(starts) if c < e and s < c + CHUNK}
        others = rng.choice(DOCS * per_doc, ITEMS, replace=False)
        items = list(holding) + [f"d{int(o) // per_doc}#{int(o) % per_doc}" for o in others]
        items = list(dict.fromkeys(items))[:ITEMS]
        scores = np.sort(rng.integers(1, 10**7, len(items)))[::-1]
        order = rng.permutation(len(items))
        run_lines += [f"q{q} Q0 {items[i]} {r + 1} {scores[r] / 1e6:.6f} tag\n"
                      for r, i in enumerate(order)]
        query_lines.append(json.dumps({"id": f"q{q}", "text": f"question {q}"}) + "\n")
    _write(files["spans.jsonl"], span_lines)
    _write(files["docs.jsonl"], doc_lines)
    _write(files["run.trec"], run_lines)
    _write(files["queries.jsonl"], query_lines)
    return files


def best_time(args: list[str | Path], repeat: int, cached: bool = False) -> float:
    """Best wall-clock time of ``gate ARGS`` over ``repeat`` runs, after one warm-up run
    (with ``cached``, the corpus cache in benchmarks/data/evidence/cache)."""
    command = [str(GATE), *map(str, args)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if cached:
        env["RETRIEVAL_GATE_CACHE"] = str(DATA / "cache")
    subprocess.run(command, check=True, capture_output=True, env=env)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return min(times)


def spans(repeat: int, seed: int) -> tuple[float, float]:
    files = make_span_data(seed)
    measures = [arg for m in MEASURES for arg in ("-m", m)]
    out = DATA / "out.json"
    common = [files["run.trec"], "--chunks", files["chunks.jsonl"], "--queries",
              files["queries.jsonl"], *measures, "--output-format", "json", "-o", out]
    documents = best_time(["score", files["docs.jsonl"], *common], repeat)
    spanned = best_time(["score", files["spans.jsonl"], *common, "--corpus",
                         files["corpus.jsonl"]], repeat)
    return documents, spanned


def membership(repeat: int, seed: int) -> tuple[float, float]:
    """``gate check`` on check_scale.py's large case, with and without the corpus list."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from check_scale import prepare  # the large case's data and manifests
    from score_scale import LARGE, PASSAGES

    source = prepare(LARGE, ROOT / "benchmarks" / "data", seed, regenerate=False).folder
    corpus = DATA / "passages.txt"
    if not corpus.exists():
        _write(corpus, (f"{i}\n" for i in range(PASSAGES)))
    seconds = []
    for name, pinned in (("by-version", False), ("pinned", True)):
        folder = DATA / f"membership-{name}"
        if not (folder / "candidate.trec.manifest.json").exists():
            folder.mkdir(parents=True, exist_ok=True)
            for file in ("queries.jsonl", "qrels.tsv", "baseline.trec", "candidate.trec"):
                if not (folder / file).exists():
                    os.link(source / file, folder / file)
            if pinned and not (folder / corpus.name).exists():
                os.link(corpus, folder / corpus.name)
            freeze = ["snapshot", "freeze", "--queries", "queries.jsonl", "--qrels", "qrels.tsv",
                      "--unit", "document", "--corpus-version", "msmarco-passages",
                      *(["--corpus-file", corpus.name] if pinned else []),
                      "--permissions-version", "public", "-o", "snapshot.json"]
            for argv in (freeze, *(["run-manifest", "--snapshot", "snapshot.json", "--run", run]
                                   for run in ("baseline.trec", "candidate.trec"))):
                subprocess.run([str(GATE), *argv], cwd=folder, check=True, capture_output=True)
        check = ["check", "--snapshot", folder / "snapshot.json", "--baseline",
                 folder / "baseline.trec", "--candidate", folder / "candidate.trec",
                 "--fail-on", "never", "--json", folder / "report.json"]
        if pinned:  # the first check reads the corpus list and writes its cache entry
            env = {**os.environ, "RETRIEVAL_GATE_CACHE": str(DATA / "cache")}
            shutil.rmtree(DATA / "cache", ignore_errors=True)
            start = time.perf_counter()
            subprocess.run([str(GATE), *map(str, check)], check=True, capture_output=True,
                           env=env)
            print(f"  (first gate check with the corpus list, no cache entry yet: "
                  f"{time.perf_counter() - start:.2f} s)")
        seconds.append(best_time(check, repeat, pinned))
    return seconds[0], seconds[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per command")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-membership", action="store_true",
                        help="only the span part (the membership part generates ~1 GB of data "
                             "and takes minutes)")
    options = parser.parse_args(argv)
    documents, spanned = spans(options.repeat, options.seed)
    ratio = spanned / documents
    print(f"{QUERIES:,} queries × {ITEMS} chunks, {SPANS} spans a query")
    print(f"  document scoring  {documents:7.2f} s")
    print(f"  span scoring      {spanned:7.2f} s   ratio {ratio:.2f}×   target ≤ 2×: "
          f"{'MET' if ratio <= 2 else 'MISSED'}")
    if not options.skip_membership:
        without, with_corpus = membership(options.repeat, options.seed)
        overhead = with_corpus / without - 1
        print("6,980 queries × 1,000 passages × 2 runs, 8,841,823-id corpus list")
        print(f"  gate check, corpus by version  {without:7.2f} s")
        print(f"  gate check, corpus list pinned {with_corpus:7.2f} s   +{100 * overhead:.1f} %   "
              f"target ≤ 10 %: {'MET' if overhead <= 0.10 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
