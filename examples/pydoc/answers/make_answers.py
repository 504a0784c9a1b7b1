"""Answer-level scores for the pydoc runs: an extractive reader, scored SQuAD-style.

For each question of ``pydoc/queries.jsonl`` the reader reads the text of the top chunks of a
run (each chunk's text is ``corpus[doc_id][start:end]`` of its chunk table) and answers with
one sentence of that text, or abstains. The answer is scored against the question's reference
answers: the passages that ``label.py`` quotes as stating a required fact directly (the spans
of grade 2 in ``qrels.jsonl`` whose fact is in the query's ``facts``, as the corpus writes
them; a passage labelled in two topics is one reference).

The reader (deterministic, offline, standard library and numpy):

* **Context**: the chunks ranked 1..``top_k`` in rank order; with ``chunk_tokens`` set, each
  chunk cut to its first ``chunk_tokens`` white-space tokens; with ``dropout`` > 0 (the
  sampled reader), each sentence of the context left out with that probability, drawn from
  ``numpy.random.default_rng([SEED, query number, sample])``.
* **Sentences**: the text is split after ``.``, ``!``, ``?`` or ``:`` (and any closing quote
  or bracket) followed by white space, and at blank lines (a list bullet ``*`` after one is
  dropped); white space inside a sentence is kept as written.
* **Terms**: lower-cased ``\\w+`` words, a final ``ing``, ``ed``, ``es`` or ``s`` stripped from
  words at least four characters longer than it. A term weighs its BM25 idf over the
  sentences of the whole corpus, ``ln(1 + (N - df + 0.5) / (df + 0.5))``: function words
  weigh next to nothing (no stop-word list is needed), a term the corpus never uses the most.
* **Answer**: the sentence whose distinct terms shared with the question weigh most; ties go
  to the earlier sentence (higher-ranked chunk first). Weights are summed with ``math.fsum``
  (correctly rounded): a plain sum over a set would depend on the set's iteration order, which
  follows the process's string hash seed, and could break a tie differently from run to run. The reader **abstains** when that
  weight is below ``abstain_below`` of the question's total weight, or the context is empty.

Scores, per query (SQuAD v2's rule for questions without an answer):

* ``token_f1`` - SQuAD's token F1 between the normalised answer and the normalised reference,
  the maximum over the references. Normalised as SQuAD v1.1's evaluation script does:
  lower-cased, punctuation deleted (here every character but letters, digits and white space,
  the underscore too: SQuAD deletes ASCII punctuation, the topics also use curly quotes and
  dashes), the articles a/an/the removed, white space collapsed.
* ``exact_match`` - 1 when the normalised answer equals a normalised reference, else 0.
* ``matches_evidence`` - 1 when the normalised answer lies whole-word inside a normalised
  reference or contains one (the reader answered with part of the evidence, or with the
  evidence and more), else 0.
* Unanswerable questions (``"answerable": false``): all three are 1 when the reader
  abstained, 0 when it answered. An abstention on an answerable question scores 0.

Each output is one JSON line per query and sample, in the order of ``queries.jsonl``,
``{"query_id", "sample", "scores"}`` with keys sorted, ``token_f1`` rounded to 6 decimals.

Run from any directory:

    python examples/pydoc/answers/make_answers.py          # (re)writes the score files, prints
                                                           # each candidate against the baseline
    python examples/pydoc/answers/make_answers.py --check  # rebuild, compare byte for byte
    python examples/pydoc/answers/make_answers.py --sweep  # the reader's depth and threshold
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
from runfiles import PYDOC, PYDOC_BASELINES, read_jsonl, write_or_check

SEED = 20240601
BOOTSTRAP = 10_000
SCORES = ("exact_match", "matches_evidence", "token_f1")


@dataclass(frozen=True)
class Reader:
    """What the reader reads and when it abstains (see the module docstring)."""

    top_k: int = 5
    chunk_tokens: int | None = None
    dropout: float = 0.0
    abstain_below: float = 0.15


READER_V1 = Reader()


@dataclass(frozen=True)
class Output:
    """A score file: the run read, its chunk table, the reader, how many samples a query."""

    file: str
    run: Path
    table: Path
    reader: Reader
    samples: int = 1


RUN_300 = (PYDOC_BASELINES / "bm25-300.trec", PYDOC / "chunks-300.jsonl")
RUN_200 = (PYDOC / "runs" / "bm25-200.trec", PYDOC / "chunks-200.jsonl")
RUN_TRUNCATED = (PYDOC / "runs" / "bm25-truncated.trec", PYDOC / "chunks-truncated.jsonl")
BASELINE = Output("bm25-300.scores.jsonl", *RUN_300, READER_V1)
CANDIDATES = [
    Output("bm25-200-reader-cut32.scores.jsonl", *RUN_200, replace(READER_V1, chunk_tokens=32)),
    Output("bm25-truncated.scores.jsonl", *RUN_TRUNCATED, READER_V1),
    Output("bm25-200.scores.jsonl", *RUN_200, READER_V1),
    Output("bm25-200-sampled.scores.jsonl", *RUN_200, replace(READER_V1, dropout=0.1), 3),
]

BOUNDARY = re.compile(r"(?<=[.!?:])\s+|(?<=[.!?:][\"')\]])\s+|\n[ \t]*\n\s*(?:\*\s+)?")
WORD = re.compile(r"\w+")
SUFFIXES = ("ing", "ed", "es", "s")
ARTICLES = re.compile(r"\b(a|an|the)\b")
NOT_WORD = re.compile(r"[^\w\s]|_")


@cache
def sentences(text: str) -> tuple[str, ...]:
    """The sentences of ``text``, stripped, empty ones dropped."""
    return tuple(s.strip() for s in BOUNDARY.split(text) if s.strip())


@cache
def stem(word: str) -> str:
    """``word`` without its first matching suffix of :data:`SUFFIXES`, when at least four
    characters remain beyond it."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix) + 3:
            return word[: -len(suffix)]
    return word


@cache
def terms(text: str) -> frozenset[str]:
    """The distinct reader terms of ``text``."""
    return frozenset(stem(w) for w in WORD.findall(text.lower()))


@dataclass(frozen=True)
class Weights:
    """BM25 idf of the reader's terms over ``n`` sentences: ``df`` counts the sentences that
    hold a term; a term no sentence holds has df 0 (the highest weight)."""

    df: Counter[str]
    n: int

    def __call__(self, term: str) -> float:
        d = self.df.get(term, 0)
        return math.log(1 + (self.n - d + 0.5) / (d + 0.5))


def idf(corpus: dict[str, str]) -> Weights:
    """The term weights over the sentences of every topic."""
    units = [terms(s) for text in corpus.values() for s in sentences(text)]
    return Weights(Counter(t for unit in units for t in unit), len(units))


@cache
def normalize(text: str) -> str:
    """SQuAD v1.1's answer normalisation, deleting every character but letters, digits and
    white space (SQuAD deletes ASCII punctuation; the topics also use curly quotes, dashes)."""
    kept = NOT_WORD.sub("", text.lower())
    return " ".join(ARTICLES.sub(" ", kept).split())


def token_f1(answer: str, reference: str) -> float:
    """SQuAD's F1 of the two normalised token bags; 0 when they share no token."""
    a, r = normalize(answer).split(), normalize(reference).split()
    same = sum((Counter(a) & Counter(r)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(a), same / len(r)
    return 2 * precision * recall / (precision + recall)


def within(part: str, whole: str) -> bool:
    """Whether normalised ``part`` is not empty and occurs in normalised ``whole`` on word
    boundaries."""
    return bool(part) and f" {part} " in f" {whole} "


def score(answer: str | None, references: list[str]) -> dict[str, float | int]:
    """The three scores of one answer (None: abstained); no references: unanswerable."""
    if not references or answer is None:
        hit = int(not references and answer is None)
        return {"exact_match": hit, "matches_evidence": hit, "token_f1": hit}
    said = normalize(answer)
    gold = [normalize(r) for r in references]
    return {
        "exact_match": int(said in gold),
        "matches_evidence": int(any(within(said, g) or within(g, said) for g in gold)),
        "token_f1": round(max(token_f1(answer, r) for r in references), 6),
    }


def context(chunks: Sequence[str], reader: Reader, rng: np.random.Generator | None) -> list[str]:
    """The sentences the reader reads, in order."""
    read = chunks[: reader.top_k]
    if reader.chunk_tokens is not None:
        read = [" ".join(c.split()[: reader.chunk_tokens]) for c in read]
    found = [s for c in read for s in sentences(c)]
    if rng is None or reader.dropout == 0:
        return found
    keep = rng.random(len(found)) >= reader.dropout
    return [s for s, k in zip(found, keep) if k]


def answer(question: str, read: list[str], reader: Reader, weight: Weights) -> str | None:
    """The sentence of ``read`` whose terms shared with ``question`` weigh most, or None."""
    asked = terms(question)
    total = math.fsum(weight(t) for t in asked)
    best, best_weight = None, 0.0
    for sentence in read:
        shared = math.fsum(weight(t) for t in asked & terms(sentence))
        if shared > best_weight:
            best, best_weight = sentence, shared
    if best is None or best_weight < reader.abstain_below * total:
        return None
    return best


def ranked_texts(run: Path, table: Path, corpus: dict[str, str]) -> dict[str, list[str]]:
    """Query id -> the texts of its chunks in rank order."""
    chunks: list[dict[str, Any]] = read_jsonl(table)
    text = {c["id"]: corpus[c["doc_id"]][c["start"]:c["end"]] for c in chunks}
    ranked: dict[str, list[tuple[int, str]]] = {}
    with run.open(encoding="utf-8") as fh:
        for line in fh:
            qid, _, chunk_id, rank, _, _ = line.split()
            ranked.setdefault(qid, []).append((int(rank), text[chunk_id]))
    return {qid: [t for _, t in sorted(rows)] for qid, rows in ranked.items()}


@dataclass(frozen=True)
class Data:
    """What every score file is computed from."""

    corpus: dict[str, str]
    queries: list[dict[str, Any]]
    references: dict[str, list[str]]
    weight: Weights


def load() -> Data:
    """Corpus, queries, each query's reference passages and the reader's term weights."""
    corpus = {row["id"]: row["text"] for row in read_jsonl(PYDOC / "corpus.jsonl")}
    queries: list[dict[str, Any]] = read_jsonl(PYDOC / "queries.jsonl")
    qrels: list[dict[str, Any]] = read_jsonl(PYDOC / "qrels.jsonl")
    required = {q["id"]: set(q.get("facts", [])) for q in queries}
    references: dict[str, list[str]] = {q["id"]: [] for q in queries}
    for row in qrels:
        if row["grade"] == 2 and row.get("fact") in required[row["query_id"]]:
            quote = corpus[row["doc_id"]][row["start"]:row["end"]]
            if quote not in references[row["query_id"]]:
                references[row["query_id"]].append(quote)
    return Data(corpus, queries, references, idf(corpus))


def score_rows(output: Output, data: Data) -> list[dict[str, Any]]:
    """One row per query and sample, in query order."""
    ranked = ranked_texts(output.run, output.table, data.corpus)
    rows = []
    for number, query in enumerate(data.queries):
        for sample in range(output.samples):
            rng = (np.random.default_rng([SEED, number, sample])
                   if output.reader.dropout else None)
            read = context(ranked.get(query["id"], []), output.reader, rng)
            said = answer(query["text"], read, output.reader, data.weight)
            rows.append({"query_id": query["id"], "sample": sample,
                         "scores": score(said, data.references[query["id"]])})
    return rows


def per_query(rows: list[dict[str, Any]], name: str) -> np.ndarray:
    """A score per query in row order, the mean of its samples."""
    by_query: dict[str, list[float]] = {}
    for row in rows:
        by_query.setdefault(row["query_id"], []).append(row["scores"][name])
    return np.array([np.mean(v) for v in by_query.values()])


def paired_ci(diff: np.ndarray) -> tuple[float, float]:
    """95% percentile interval of the mean of ``diff`` over :data:`BOOTSTRAP` resamples of
    the queries (seed 0)."""
    rng = np.random.default_rng(0)
    means = diff[rng.integers(0, len(diff), (BOOTSTRAP, len(diff)))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(low), float(high)


def comparison(base: list[dict[str, Any]], cand: list[dict[str, Any]], name: str) -> str:
    """One table row: baseline and candidate means, paired difference, interval, counts."""
    b, c = per_query(base, name), per_query(cand, name)
    d = c - b
    low, high = paired_ci(d)
    return (f"{name:<17} {b.mean():.3f}  {c.mean():.3f}  {d.mean():+.3f}  "
            f"[{low:+.3f}, {high:+.3f}]  {int((d > 0).sum())} better, {int((d < 0).sum())} worse")


def compare_all(rows: dict[str, list[dict[str, Any]]]) -> None:
    """Print every candidate against the baseline."""
    base = rows[BASELINE.file]
    for output in CANDIDATES:
        print(f"\n{output.file} vs {BASELINE.file} ({len(base)} queries)")
        print("score             base   cand   Δ       95% CI            queries")
        for name in SCORES:
            print(comparison(base, rows[output.file], name))


def sweep(data: Data) -> None:
    """The baseline's mean token F1 by depth and threshold, the truncated and re-chunked runs
    against it at each depth, and other reader changes on the re-chunked run (reader v1
    otherwise)."""
    print("top_k  baseline token_f1  bm25-truncated Δ [95% CI]   bm25-200 Δ [95% CI]")
    for k in range(1, 11):
        reader = replace(READER_V1, top_k=k)
        base = score_rows(Output("", *RUN_300, reader), data)
        cells = []
        for run in (RUN_TRUNCATED, RUN_200):
            d = (per_query(score_rows(Output("", *run, reader), data), "token_f1")
                 - per_query(base, "token_f1"))
            low, high = paired_ci(d)
            cells.append(f"{d.mean():+.3f} [{low:+.3f}, {high:+.3f}]")
        print(f"{k:>5}  {per_query(base, 'token_f1').mean():.3f}              "
              f"{cells[0]}   {cells[1]}")
    print("\nreader change, on bm25-200   token_f1 Δ [95% CI] vs reader v1 on the baseline")
    base_f1 = per_query(score_rows(BASELINE, data), "token_f1")
    changes = [(f"top_k={k}", replace(READER_V1, top_k=k)) for k in (1, 2)]
    changes += [(f"chunk_tokens={n}", replace(READER_V1, chunk_tokens=n))
                for n in (100, 64, 48, 32)]
    for label, reader in changes:
        d = per_query(score_rows(Output("", *RUN_200, reader), data), "token_f1") - base_f1
        low, high = paired_ci(d)
        print(f"{label:<29} {d.mean():+.3f} [{low:+.3f}, {high:+.3f}]")
    print("\nabstain_below  baseline token_f1  answerable  unanswerable (abstained)")
    answerable = np.array([q["answerable"] for q in data.queries])
    for tau in (0.0, 0.1, 0.15, 0.2, 0.25, 0.3):
        f1 = per_query(score_rows(replace(BASELINE, reader=replace(READER_V1,
                                                                   abstain_below=tau)),
                                  data), "token_f1")
        print(f"{tau:>13}  {f1.mean():.3f}              {f1[answerable].mean():.3f}"
              f"       {f1[~answerable].mean():.2f}")


def lines(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as JSON lines, keys sorted."""
    return [json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n" for row in rows]


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="rebuild into a temp dir and compare with the shipped files")
    parser.add_argument("--sweep", action="store_true",
                        help="print the baseline's score by reader depth and threshold")
    args = parser.parse_args(argv)
    data = load()
    if args.sweep:
        sweep(data)
        return 0
    rows = {o.file: score_rows(o, data) for o in [BASELINE, *CANDIDATES]}
    same = True
    for file, file_rows in rows.items():
        same &= write_or_check(HERE / file, lines(file_rows), args.check)
    if not args.check:
        compare_all(rows)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
