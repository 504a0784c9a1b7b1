"""Rebuild the pydoc pipeline runs: for each system, what each stage of a RAG pipeline passed on.

What it does: runs every query of ``pydoc/queries.jsonl`` (the unanswerable ones too, in file
order) through three stages over the 300-token chunks of ``pydoc/chunks-300.jsonl`` and writes
one file per stage, ``pydoc/pipeline/SYSTEM/STAGE.jsonl``, one line per query:

    {"query_id": "p01", "items": [{"id": "compound#7", "score": 9.834215, "doc_id": "compound",
     "start": 12002, "end": 13999, "tokens": 501}, ...], "latency_ms": 0.512}

``items`` are in rank order: by score (written with exactly 6 decimals) descending, ties by
chunk id descending (trec_eval's order), so the list order and the order of the written scores
agree. ``doc_id``, ``start`` and ``end`` are the chunk's place in the corpus, copied from the
chunk table (``text[start:end]`` is the chunk's text); ``tokens`` is the length of the chunk's
text in tokens of the generator's tokenizer (below), the text alone (no BOS, no separator). A
query with nothing retrieved would get ``"items": []`` (none does). ``latency_ms`` is the
wall-clock time this script spent on that query's stage (``time.perf_counter``, 3 decimals):
tokenizing the query, scoring, sorting and cutting for the two ranking stages, tokenizing the
items and packing them for the context stage. It is measured, so it differs from one build to
the next and from one machine to another; nothing else does.

Stages:

* ``candidates`` - first-stage retrieval, as in ``make_pydoc_runs.py``: bm25s 0.3.16 (Lucene
  BM25, k1=1.5, b=0.75, bm25s' English stopwords, no stemming) over the chunk texts; chunks with
  score > 0, the top :data:`CANDIDATES` (50). Its first 20 are the baseline run
  ``../baselines/pydoc/bm25-300.trec``.
* ``reranked`` - the candidates rescored by a second, different lexical model, then cut to the
  top :data:`RERANKED` (20): bm25s' BM25+ (k1=1.2, b=0.75, delta=1.0; Lv and Zhai's lower bound
  on the term-frequency part, so long chunks are not pushed down for their length) over tokens
  stemmed with the Snowball English stemmer of PyStemmer 3.1.0, with bm25s' English stopwords;
  the model is fitted on all the chunk texts and each candidate's score is read from it.
* ``context`` - what is packed into the generator's prompt: the reranked items **in reranked
  order**, greedily: an item is taken when its tokens fit in what is left of the
  :data:`BUDGET` (1,000 tokens), and skipped when they do not - the packer goes on with the next
  item, so a smaller one further down can still fill the room; at most 20 items. The items keep
  their reranker scores.

Systems (``pydoc/pipeline/NAME/``):

* ``baseline`` - as above.
* ``packing-bug`` - the same candidates and reranked stages; the packer takes the room for the
  generator's answer out of the budget a second time. The caller already passes the context
  budget - the prompt's room with the answer's share removed - and the packer subtracts its own
  :data:`ANSWER_RESERVE` (500 tokens) from it again, so it packs against 500 tokens. Chunks run
  from 54 to 1,029 tokens (median 472), so the context mostly holds one chunk where the baseline
  holds two or three, and evidence that the reranker ranked second or third is lost at packing.
* ``more-candidates`` - the first stage keeps its top 100 instead of 50; reranked and context
  are made from them exactly as in the baseline.

The tokenizer is **Tekken**, the tokenizer of Mistral NeMo 12B (``open-mistral-nemo-2407``) and
Ministral 8B: a tiktoken-style byte-level BPE (131,072 ids, 1,000 of them special), read from the
file ``tekken_240718.json`` that ships inside the wheel of **mistral-common 1.13.1** (Mistral
AI's tokenization library, Apache-2.0; the file is part of the package under that licence), with
``MistralTokenizer.v3(is_tekken=True)``. It loads from the installed package and needs no
network: building these files inside a network namespace with no interface (``unshare -n``)
gives the same result. The 293 chunks of 300 white-space tokens hold 54 to 1,029 Tekken tokens,
on average 1.67 per white-space token. (tiktoken's own encodings fetch their BPE files from the
network on first use, so they cannot be rebuilt offline.)

The reranker is lexical because no small cross-encoder ships its weights inside a pip package
that could be pinned here: flashrank 0.2.10's wheel is 14 kB and fetches its models from the
Hugging Face Hub on first use, as sentence-transformers' CrossEncoder does, and a network fetch
at run time cannot be rebuilt offline. bm25s (MIT) is maintained and already pinned; PyStemmer
(MIT, and BSD for the Snowball stemmers) is maintained. Stemming and BM25+ make it score
differently from the first stage ("returns" meets "return"), which is what a second stage is
for; on this set it is not better than the first stage's own order (``pipeline/README.md``).

Run from any directory, with Python 3.11 or later (mistral-common 1.13.1 needs it):

    pip install -e '.[examples]'                    # bm25s, mistral-common, PyStemmer, pinned
    python examples/make_pydoc_pipeline.py          # (re)writes the nine stage files
    python examples/make_pydoc_pipeline.py --check  # rebuild into a temp dir and compare every
                                                    # line except its latency_ms; exit 1 on a
                                                    # difference
    python examples/make_pydoc_pipeline.py --report # span coverage per stage of the shipped files
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
import Stemmer
from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
from runfiles import PYDOC, read_jsonl, write_atomic

PIPELINE = PYDOC / "pipeline"
STAGES = ("candidates", "reranked", "context")
CANDIDATES = 50
RERANKED = 20
BUDGET = 1000
MAX_CONTEXT_ITEMS = 20
ANSWER_RESERVE = 500
LATENCY = re.compile(r', "latency_ms": \d+\.\d{3}\}\n\Z')


@dataclass(frozen=True)
class System:
    """A pipeline to build: its folder name, first-stage depth and (the bug) the answer reserve
    its packer takes out of the budget again."""

    name: str
    candidates: int = CANDIDATES
    reserve: int = 0


SYSTEMS = [
    System("baseline"),
    System("packing-bug", reserve=ANSWER_RESERVE),
    System("more-candidates", candidates=100),
]


def ranked(written: dict[str, str], depth: int) -> list[str]:
    """The top ``depth`` chunk ids of ``written`` (id -> score as written), by written score
    descending, ties by id descending."""
    return sorted(written, key=lambda c: (float(written[c]), c), reverse=True)[:depth]


class Pipeline:
    """The chunk table, both lexical models and the tokenizer, loaded once."""

    def __init__(self, docs: list[dict[str, str]], table: list[dict[str, object]]) -> None:
        text = {d["id"]: d["text"] for d in docs}
        self.chunks = {str(c["id"]): c for c in table}
        self.ids = list(self.chunks)
        self.row = {c: i for i, c in enumerate(self.ids)}
        self.texts = [text[str(c["doc_id"])][int(c["start"]):int(c["end"])] for c in table]
        self.first = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        self.first.index(bm25s.tokenize(self.texts, stopwords="en", show_progress=False),
                         show_progress=False)
        self.stemmer = Stemmer.Stemmer("english")
        self.second = bm25s.BM25(method="bm25+", k1=1.2, b=0.75, delta=1.0)
        self.second.index(bm25s.tokenize(self.texts, stopwords="en", stemmer=self.stemmer,
                                         show_progress=False), show_progress=False)
        tekken = MistralTokenizer.v3(is_tekken=True).instruct_tokenizer.tokenizer
        self.encode: Callable[[str], list[int]] = lambda s: tekken.encode(s, bos=False,
                                                                          eos=False)
        self.tokens = {c: len(self.encode(t)) for c, t in zip(self.ids, self.texts)}

    def _scores(self, model: bm25s.BM25, query: str, stemmer: object | None) -> np.ndarray:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, return_ids=False,
                                show_progress=False)[0]
        known = [t for t in tokens if t in model.vocab_dict]
        return model.get_scores(known) if known else np.zeros(len(self.ids))

    def candidates(self, query: str, depth: int) -> dict[str, str]:
        """First stage: the top ``depth`` chunks with score > 0, id -> score as written."""
        scores = self._scores(self.first, query, None)
        written = {self.ids[i]: f"{scores[i]:.6f}" for i in np.flatnonzero(scores > 0)}
        return {c: written[c] for c in ranked(written, depth)}

    def rerank(self, query: str, candidates: Sequence[str]) -> dict[str, str]:
        """Second stage: the candidates rescored, the top :data:`RERANKED`."""
        scores = self._scores(self.second, query, self.stemmer)
        written = {c: f"{scores[self.row[c]]:.6f}" for c in candidates}
        return {c: written[c] for c in ranked(written, RERANKED)}

    def pack(self, reranked: dict[str, str], budget: int) -> dict[str, str]:
        """Context: the reranked items in order, each taken when its tokens fit in what is left
        of ``budget`` and skipped when not; at most :data:`MAX_CONTEXT_ITEMS`."""
        packed: dict[str, str] = {}
        left = budget
        for c, score in reranked.items():
            if len(packed) == MAX_CONTEXT_ITEMS:
                break
            need = len(self.encode(self.texts[self.row[c]]))
            if need <= left:
                packed[c] = score
                left -= need
        return packed

    def line(self, query_id: str, written: dict[str, str], seconds: float) -> str:
        """One stage line; ``written`` is already in rank order."""
        items = []
        for c, score in written.items():
            chunk = self.chunks[c]
            items.append(f'{{"id": {json.dumps(c)}, "score": {score}, '
                         f'"doc_id": {json.dumps(chunk["doc_id"])}, "start": {chunk["start"]}, '
                         f'"end": {chunk["end"]}, "tokens": {self.tokens[c]}}}')
        return (f'{{"query_id": {json.dumps(query_id)}, "items": [{", ".join(items)}], '
                f'"latency_ms": {seconds * 1000:.3f}}}\n')


def build(pipeline: Pipeline, system: System,
          queries: list[dict[str, str]]) -> dict[str, list[str]]:
    """The three stage files of one system, as lines."""
    lines: dict[str, list[str]] = {stage: [] for stage in STAGES}
    for query in queries:
        qid, text = query["id"], query["text"]
        t0 = time.perf_counter()
        candidates = pipeline.candidates(text, system.candidates)
        t1 = time.perf_counter()
        reranked = pipeline.rerank(text, list(candidates))
        t2 = time.perf_counter()
        context = pipeline.pack(reranked, BUDGET - system.reserve)
        t3 = time.perf_counter()
        lines["candidates"].append(pipeline.line(qid, candidates, t1 - t0))
        lines["reranked"].append(pipeline.line(qid, reranked, t2 - t1))
        lines["context"].append(pipeline.line(qid, context, t3 - t2))
    return lines


def without_latency(line: str) -> str | None:
    """The line with its trailing ``latency_ms`` removed; None when it has none."""
    stripped, found = LATENCY.subn("}\n", line)
    return stripped if found == 1 else None


def write_or_check(shipped: Path, lines: list[str], check: bool) -> bool:
    """Write ``lines`` to ``shipped``, or (``check``) write them to a temporary folder and
    compare them with it line by line, every byte except the measured ``latency_ms``; False
    when they differ or it is missing."""
    name = f"{shipped.parent.name}/{shipped.name}"
    if not check:
        shipped.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(shipped, lines)
        print(f"wrote {shipped} ({len(lines)} lines)")
        return True
    if not shipped.exists():
        print(f"{name}: MISSING")
        return False
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / shipped.name
        write_atomic(fresh, lines)
        with fresh.open(encoding="utf-8") as a, shipped.open(encoding="utf-8") as b:
            new, old = a.readlines(), b.readlines()
    same = len(new) == len(old) and all(
        without_latency(o) is not None and without_latency(n) == without_latency(o)
        for n, o in zip(new, old))
    print(f"{name}: {'identical but for latency_ms' if same else 'DIFFERS'}")
    return same


def covered(span: dict, items: list[dict]) -> bool:
    """Whether the items (those in the span's topic), together, contain the whole span."""
    reach = span["start"]
    for start, end in sorted((i["start"], i["end"]) for i in items
                             if i["doc_id"] == span["doc_id"]):
        if start > reach:
            break
        reach = max(reach, end)
    return reach >= span["end"]


def greedy(items: list[dict], budget: int) -> list[dict]:
    """The packing rule, on items that carry their token counts."""
    packed: list[dict] = []
    left = budget
    for item in items:
        if len(packed) == MAX_CONTEXT_ITEMS:
            break
        if item["tokens"] <= left:
            packed.append(item)
            left -= item["tokens"]
    return packed


def report() -> int:
    """Print the span coverage of the shipped stage files, per system and stage, over the
    answerable queries (relevant spans: grade >= 1), as Markdown tables."""
    queries = read_jsonl(PYDOC / "queries.jsonl")
    answerable = [q["id"] for q in queries if q["answerable"]]
    spans: dict[str, list[dict]] = defaultdict(list)
    for row in read_jsonl(PYDOC / "qrels.jsonl"):
        if int(row["grade"]) >= 1:
            spans[str(row["query_id"])].append(row)
    total = sum(len(spans[q]) for q in answerable)
    recall: dict[tuple[str, str], dict[str, float]] = {}
    hits: dict[tuple[str, str], int] = {}
    shape: dict[tuple[str, str], tuple[float, float, float]] = {}
    for system in SYSTEMS:
        for stage in STAGES:
            rows = {r["query_id"]: r for r in read_jsonl(PIPELINE / system.name / f"{stage}.jsonl")}
            per = {q: [covered(s, rows[q]["items"]) for s in spans[q]] for q in answerable}
            recall[system.name, stage] = {q: sum(v) / len(v) for q, v in per.items()}
            hits[system.name, stage] = sum(sum(v) for v in per.values())
            shape[system.name, stage] = (
                float(np.mean([len(r["items"]) for r in rows.values()])),
                float(np.mean([sum(i["tokens"] for i in r["items"]) for r in rows.values()])),
                float(np.median([r["latency_ms"] for r in rows.values()])))
    print(f"Over the {len(answerable)} answerable queries and their {total} relevant spans.\n")
    print("Span recall (mean over queries of the share of its spans covered; in brackets, "
          "spans covered of all):\n")
    print("| system | " + " | ".join(STAGES) + " |")
    print("|---|" + "---|" * len(STAGES))
    for system in SYSTEMS:
        cells = [f"{np.mean(list(recall[system.name, s].values())):.3f} "
                 f"({hits[system.name, s]}/{total})" for s in STAGES]
        print(f"| {system.name} | " + " | ".join(cells) + " |")
    print("\nWhere the spans are lost (counted over the answerable queries):\n")
    print("| system | never retrieved | cut at rerank (top 20) | cut at packing | in context |")
    print("|---|---|---|---|---|")
    for system in SYSTEMS:
        c, r, x = (hits[system.name, s] for s in STAGES)
        print(f"| {system.name} | {total - c} | {c - r} | {r - x} | {x} |")
    print("\nItems, tokens (mean per query, all 99 queries) and median latency_ms per stage:\n")
    print("| system | " + " | ".join(STAGES) + " |")
    print("|---|" + "---|" * len(STAGES))
    for system in SYSTEMS:
        cells = ["{:.1f} items, {:.0f} tokens, {:.3f} ms".format(*shape[system.name, s])
                 for s in STAGES]
        print(f"| {system.name} | " + " | ".join(cells) + " |")
    top = {r["query_id"]: r["items"][:RERANKED]
           for r in read_jsonl(PIPELINE / "baseline" / "candidates.jsonl")}
    packed = {q: greedy(items, BUDGET) for q, items in top.items()}
    plain = [np.mean([np.mean([covered(s, run[q]) for s in spans[q]]) for q in answerable])
             for run in (top, packed)]
    print("\nWithout the reranker - the baseline's first-stage top 20, packed the same way in "
          f"BM25 order: span recall {plain[0]:.3f} at top 20, {plain[1]:.3f} in context.")
    print("\nPer query against the baseline (span recall, candidate minus baseline):\n")
    print("| system | stage | mean difference | worse | better | same |")
    print("|---|---|---|---|---|---|")
    for name in ("packing-bug", "more-candidates"):
        for stage in STAGES:
            diff = np.array([recall[name, stage][q] - recall["baseline", stage][q]
                             for q in answerable])
            print(f"| {name} | {stage} | {diff.mean():+.3f} | {int((diff < 0).sum())} | "
                  f"{int((diff > 0).sum())} | {int((diff == 0).sum())} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="rebuild into a temp dir and compare with the shipped files, "
                             "latency_ms aside")
    parser.add_argument("--report", action="store_true",
                        help="print the span coverage of the shipped files per stage")
    args = parser.parse_args(argv)
    if args.report:
        return report()
    pipeline = Pipeline(read_jsonl(PYDOC / "corpus.jsonl"),
                        read_jsonl(PYDOC / "chunks-300.jsonl"))
    queries = read_jsonl(PYDOC / "queries.jsonl")
    status = 0
    for system in SYSTEMS:
        for stage, lines in build(pipeline, system, queries).items():
            status |= not write_or_check(PIPELINE / system.name / f"{stage}.jsonl", lines,
                                         args.check)
    return status


if __name__ == "__main__":
    sys.exit(main())
