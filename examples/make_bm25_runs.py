"""Rebuild the Cranfield BM25 run and a titles-only BM25 regression run with bm25s.

What it does: indexes ``cranfield/corpus.jsonl`` with bm25s 0.3.16 (Lucene BM25, k1=1.5,
b=0.75, bm25s' English stopwords, no stemming), scores every query of
``cranfield/queries.jsonl`` against every document, keeps documents with score > 0, writes the
score with 6 decimals, ranks by that written score (descending, ties by docid descending,
strcmp: trec_eval's own order) and keeps the top 100 as TREC lines
``qid Q0 docid rank score tag``. Two runs:

* ``../baselines/cranfield/bm25.trec`` (tag ``bm25``, the example's approved baseline): the indexed text is the abstract (``text``),
  which already starts with the title; for the two documents whose abstract does not start
  with the exact title (1000 and 1369, small source typos) the title is prepended. This
  reproduces the shipped reference run byte for byte.
* ``cranfield/runs/bm25-titles.trec`` (tag ``bm25-titles``): a realistic regression - the same
  retriever, but the ingestion mapped the wrong field and only document titles are indexed.

Run from any directory:

    pip install -e '.[examples]'               # installs bm25s==0.3.16
    python examples/make_bm25_runs.py          # (re)writes both runs
    python examples/make_bm25_runs.py --check  # rebuild into a temp dir, compare, exit 1 on diff
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import bm25s
import numpy as np
from runfiles import (
    BASELINES,
    DATA,
    full_text,
    read_jsonl,
    trec_lines,
    wants_check,
    write_or_check,
)


def title_only(doc: dict[str, str]) -> str:
    """The regression: only the title is indexed."""
    return doc["title"]


# output file -> (tag, indexed text)
RUNS: dict[Path, tuple[str, Callable[[dict[str, str]], str]]] = {
    BASELINES / "bm25.trec": ("bm25", full_text),
    DATA / "runs" / "bm25-titles.trec": ("bm25-titles", title_only),
}


def bm25_run(
    docs: list[dict[str, str]],
    queries: list[dict[str, str]],
    field: Callable[[dict[str, str]], str],
    tag: str,
) -> list[str]:
    """Index ``field(doc)`` for every doc and return the run as TREC lines."""
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    corpus_tokens = bm25s.tokenize([field(d) for d in docs], stopwords="en", show_progress=False)
    retriever.index(corpus_tokens, show_progress=False)
    query_tokens = bm25s.tokenize(
        [q["text"] for q in queries], stopwords="en", return_ids=False, show_progress=False
    )
    lines: list[str] = []
    for query, tokens in zip(queries, query_tokens):
        known = [t for t in tokens if t in retriever.vocab_dict]
        scores = retriever.get_scores(known) if known else np.zeros(len(docs))
        written = {docs[i]["id"]: f"{scores[i]:.6f}" for i in np.flatnonzero(scores > 0)}
        lines += trec_lines(query["id"], written, tag)
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    check = wants_check(__doc__.splitlines()[0], argv)
    docs = read_jsonl(DATA / "corpus.jsonl")
    queries = read_jsonl(DATA / "queries.jsonl")
    status = 0
    for shipped, (tag, field) in RUNS.items():
        status |= not write_or_check(shipped, bm25_run(docs, queries, field, tag), check)
    return status


if __name__ == "__main__":
    sys.exit(main())
