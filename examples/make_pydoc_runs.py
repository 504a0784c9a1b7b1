"""Rebuild the pydoc chunk tables and the BM25 runs over their chunks.

What it does: splits every topic of ``pydoc/corpus.jsonl`` into chunks of white-space tokens
(``str.split()``; a real pipeline would count with its generator's tokenizer), each chunk
recorded with character offsets into its topic - ``{"id": "TOPIC#N", "doc_id": "TOPIC",
"start": s, "end": e, "tokens": t}``, where ``text[s:e]`` runs from the first character of the
chunk's first token to the last character of its last token and N counts from 0 within the
topic. A chunk holds ``size`` tokens and the next one starts ``size - overlap`` tokens later;
the last chunk of a topic ends with its last token (and may be shorter). Each chunk table is
indexed with bm25s 0.3.16 (Lucene BM25, k1=1.5, b=0.75, bm25s' English stopwords, no
stemming, the chunk's text as indexed text); every query of ``pydoc/queries.jsonl``, the
unanswerable ones too, is scored against every chunk, chunks with score > 0 are kept, the
score is written with 6 decimals, and the top 20 by written score (ties by chunk id
descending, trec_eval's order) become TREC lines ``qid Q0 CHUNKID rank score tag``. Three
systems:

* ``bm25-300`` (the baseline, ``../baselines/pydoc/bm25-300.trec``): 300-token chunks, 50 tokens
  of overlap - ``pydoc/chunks-300.jsonl``;
* ``bm25-200`` (``pydoc/runs/bm25-200.trec``): the same retriever re-chunked, 200-token chunks,
  40 of overlap - ``pydoc/chunks-200.jsonl``;
* ``bm25-truncated`` (``pydoc/runs/bm25-truncated.trec``): a chunking bug - the chunker keeps
  only the first :data:`TRUNCATE_AT` tokens of each topic (a "max length" meant for a model's
  input, applied to the whole document) and silently drops the rest, then cuts chunks like
  ``bm25-200`` - ``pydoc/chunks-truncated.jsonl``. Seven of the 79 topics are longer.

Run from any directory:

    pip install -e '.[examples]'                # installs bm25s==0.3.16
    python examples/make_pydoc_runs.py          # (re)writes the three chunk tables and runs
    python examples/make_pydoc_runs.py --check  # rebuild into a temp dir, compare, exit 1 on diff
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
from runfiles import (
    PYDOC,
    PYDOC_BASELINES,
    jsonl_lines,
    read_jsonl,
    trec_lines,
    wants_check,
    write_or_check,
)

DEPTH = 20
TRUNCATE_AT = 2048
TOKEN = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunking:
    """How a system cuts topics: ``size`` tokens a chunk, ``overlap`` tokens shared with the next
    chunk, and (the bug) only the first ``limit`` tokens of a topic kept when set."""

    size: int
    overlap: int
    limit: int | None = None


@dataclass(frozen=True)
class System:
    """A run to build: its tag, chunking, chunk table and TREC file."""

    tag: str
    chunking: Chunking
    table: Path
    run: Path


SYSTEMS = [
    System("bm25-300", Chunking(300, 50), PYDOC / "chunks-300.jsonl",
           PYDOC_BASELINES / "bm25-300.trec"),
    System("bm25-200", Chunking(200, 40), PYDOC / "chunks-200.jsonl",
           PYDOC / "runs" / "bm25-200.trec"),
    System("bm25-truncated", Chunking(200, 40, TRUNCATE_AT), PYDOC / "chunks-truncated.jsonl",
           PYDOC / "runs" / "bm25-truncated.trec"),
]


def chunk(doc_id: str, text: str, how: Chunking) -> list[dict[str, object]]:
    """The chunks of one topic, in order; none for a text without tokens."""
    tokens = [m.span() for m in TOKEN.finditer(text)]
    if [text[s:e] for s, e in tokens] != text.split():
        raise ValueError(f"{doc_id}: the token pattern disagrees with str.split()")
    if how.limit is not None:
        tokens = tokens[:how.limit]
    chunks: list[dict[str, object]] = []
    first = 0
    while first < len(tokens):
        last = min(first + how.size, len(tokens))
        chunks.append({"id": f"{doc_id}#{len(chunks)}", "doc_id": doc_id,
                       "start": tokens[first][0], "end": tokens[last - 1][1],
                       "tokens": last - first})
        if last == len(tokens):
            break
        first += how.size - how.overlap
    return chunks


def bm25_run(texts: list[str], ids: list[str], queries: list[dict[str, str]],
             tag: str) -> list[str]:
    """Index ``texts`` (one per chunk id) and return every query's top :data:`DEPTH` as TREC
    lines."""
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False),
                    show_progress=False)
    query_tokens = bm25s.tokenize([q["text"] for q in queries], stopwords="en",
                                  return_ids=False, show_progress=False)
    lines: list[str] = []
    for query, tokens in zip(queries, query_tokens):
        known = [t for t in tokens if t in retriever.vocab_dict]
        scores = retriever.get_scores(known) if known else np.zeros(len(ids))
        written = {ids[i]: f"{scores[i]:.6f}" for i in np.flatnonzero(scores > 0)}
        lines += trec_lines(query["id"], written, tag, DEPTH)
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    check = wants_check(__doc__.splitlines()[0], argv)
    docs = read_jsonl(PYDOC / "corpus.jsonl")
    queries = read_jsonl(PYDOC / "queries.jsonl")
    status = 0
    for system in SYSTEMS:
        chunks, texts = [], []
        for doc in docs:
            for c in chunk(doc["id"], doc["text"], system.chunking):
                chunks.append(c)
                texts.append(doc["text"][int(c["start"]):int(c["end"])])
        run = bm25_run(texts, [str(c["id"]) for c in chunks], queries, system.tag)
        status |= not write_or_check(system.table, jsonl_lines(chunks), check)
        status |= not write_or_check(system.run, run, check)
    return status


if __name__ == "__main__":
    sys.exit(main())
