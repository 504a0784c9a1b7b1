"""Rebuild the four BM25 runs of the multi-tenant policy example, and report on them.

What it does: reads ``policies/corpus.jsonl`` (documents with an ``acl``, the principals allowed
to read them, absent for a public document, and ``valid_from`` / ``valid_to``, ISO dates, both
inclusive, absent for unbounded), ``policies/queries.jsonl`` (each query with its asker's
``scope``, a list of principals, and ``as_of``, the date it is asked at) and
``policies/qrels.jsonl``, and first checks the collection: every document has 80 to 300
white-space tokens; a document that ``supersedes`` another starts the day after the older one
ends, for the same ``acl``; a judgment of grade 1 or 2 points at a document that its query's
scope may read (public, or ``acl`` ∩ ``scope`` non-empty) and that is in force at its
``as_of`` (``valid_from`` ≤ ``as_of`` ≤ ``valid_to``); answerable queries have one, unanswerable
queries none. Then, for every query in file order, it scores documents with bm25s 0.3.16
(Lucene BM25, k1=1.5, b=0.75, bm25s' English stopwords, the Snowball English stemmer of
PyStemmer 3.1.0, the document's text as indexed text), keeps those with score > 0, writes each
score with 6 decimals, ranks by written score descending (ties by document id descending,
trec_eval's order), and writes the top :data:`DEPTH` as one JSON line ``{"query_id", "items":
[{"id", "score"}, ...], "abstained"}``; ``abstained`` is the system's decision to answer "I
don't know": true when the list is empty or its top score is below the system's threshold. The
items are written whether or not the system abstains. Four systems, each a file
``policies/runs/NAME.jsonl``:

* ``baseline``: the index holds only the documents in force at the query's ``as_of`` (one index
  per date), and the permission filter is applied before ranking: only documents the query's
  scope may read are ranked. Abstains below :data:`THRESHOLD`.
* ``leaky-filter``: the same indexes, but the permission filter is never applied (the realistic
  bug of a filter dropped from the query), so other tenants' and other groups' documents are
  ranked with the rest. Abstains below :data:`THRESHOLD`.
* ``stale-index``: the permission filter is right, but one index holds every document, so
  superseded versions, and versions not yet in force, are ranked with the current ones.
  Abstains below :data:`THRESHOLD`.
* ``eager-abstain``: the baseline's ranking with a higher threshold,
  :data:`EAGER_THRESHOLD`, so it declines to answer questions that the baseline answers.

With ``--report`` it prints, for each shipped run: Recall@10 and MRR@10 over the answerable
queries (relevant: grade ≥ 1), the (query, item) pairs whose document the query's scope may not
read (leaks) and the items not in force at the query's ``as_of`` (stale), each with the number
of queries that have one, the queries whose first item is either, the share of unanswerable
queries abstained on, the share of answerable queries abstained on, and the answerable queries
that the run abstains on while the baseline answers (+) or the other way round (-). The
report needs only the standard library; it reads the runs as written.

Run from any directory:

    pip install -e '.[examples]'                    # bm25s 0.3.16, PyStemmer 3.1.0, pinned
    python examples/make_policies_runs.py           # checks the collection, (re)writes the runs
    python examples/make_policies_runs.py --check   # rebuild in a temp dir, compare, exit 1 on diff
    python examples/make_policies_runs.py --report  # the table of the README, from the shipped runs
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from runfiles import write_or_check

POLICIES = Path(__file__).resolve().parent / "policies"
DEPTH = 10
# Abstain when the top written score is below this: chosen by reading the baseline's top scores,
# where 2.0 falls below all but 3 of the answerable queries and above 10 of the 14 unanswerable.
THRESHOLD = 2.0
# The eager system's threshold: 9 more answerable queries have their top score in [2.0, 3.0).
EAGER_THRESHOLD = 3.0
MIN_TOKENS, MAX_TOKENS = 80, 300

Doc = Mapping[str, Any]


def visible(doc: Doc, scope: Iterable[str]) -> bool:
    """A document the scope may read: public (no ``acl``), or ``acl`` ∩ ``scope`` non-empty."""
    return "acl" not in doc or bool(set(doc["acl"]) & set(scope))


def in_force(doc: Doc, day: str) -> bool:
    """``valid_from`` ≤ ``day`` ≤ ``valid_to``, both inclusive, each absent for unbounded (ISO
    dates compare as strings)."""
    return bool(doc.get("valid_from", "0000-01-01") <= day <= doc.get("valid_to", "9999-12-31"))


def check_collection(docs: Sequence[Doc], queries: Sequence[Doc],
                     qrels: Sequence[Doc]) -> list[str]:
    """What is wrong with the collection, one line per problem (empty when nothing is)."""
    problems: list[str] = []
    by_id = {d["id"]: d for d in docs}
    if len(by_id) != len(docs):
        problems.append("corpus: a document id is repeated")
    for d in docs:
        n = len(d["text"].split())
        if not MIN_TOKENS <= n <= MAX_TOKENS:
            problems.append(f"{d['id']}: {n} tokens, not {MIN_TOKENS} to {MAX_TOKENS}")
        for key in ("valid_from", "valid_to"):
            if key in d:
                date.fromisoformat(d[key])  # raises on a malformed date
        older = by_id.get(d.get("supersedes", ""))
        if "supersedes" in d and older is None:
            problems.append(f"{d['id']}: supersedes unknown {d['supersedes']}")
        elif older is not None:
            day_before = date.fromisoformat(d["valid_from"]) - timedelta(days=1)
            if older.get("valid_to") != day_before.isoformat():
                problems.append(f"{d['id']}: {older['id']} should end on {day_before}")
            if older.get("acl") != d.get("acl"):
                problems.append(f"{d['id']}: acl differs from {older['id']}'s")
    queries_by_id = {q["id"]: q for q in queries}
    positive = {q["id"]: 0 for q in queries}
    for j in qrels:
        asked, judged = queries_by_id.get(j["query_id"]), by_id.get(j["doc_id"])
        if asked is None or judged is None:
            problems.append(f"qrels: unknown query or document in {j}")
            continue
        if j["grade"] not in (0, 1, 2):
            problems.append(f"qrels: grade {j['grade']} is not 0, 1 or 2 in {j}")
        if j["grade"] >= 1:
            positive[asked["id"]] += 1
            if not (visible(judged, asked["scope"]) and in_force(judged, asked["as_of"])):
                problems.append(f"{asked['id']}: {judged['id']} is relevant but hidden or not "
                                "in force")
    for q in queries:
        if q["answerable"] != (positive[q["id"]] > 0):
            problems.append(f"{q['id']}: answerable is {q['answerable']} but it has "
                            f"{positive[q['id']]} relevant documents")
    return problems


class Index:
    """A bm25s index over some documents; scores a query against all of them."""

    def __init__(self, docs: Sequence[Doc]) -> None:
        import bm25s
        import Stemmer

        self.bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        self.ids = [d["id"] for d in docs]
        self.retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        self.retriever.index(bm25s.tokenize([d["text"] for d in docs], stopwords="en",
                                            stemmer=self.stemmer, show_progress=False),
                             show_progress=False)

    def written(self, query: str) -> dict[str, str]:
        """Document id → score written with 6 decimals, for the documents with score > 0."""
        tokens = self.bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer,
                                     return_ids=False, show_progress=False)[0]
        known = [t for t in tokens if t in self.retriever.vocab_dict]
        if not known:
            return {}
        scores = self.retriever.get_scores(known)
        return {self.ids[i]: f"{scores[i]:.6f}" for i in range(len(self.ids)) if scores[i] > 0}


@dataclass(frozen=True)
class System:
    """A run to build: which documents its index holds for a query, whether it filters by
    permission, and below which top score it abstains."""

    name: str
    dated: bool  # the index holds only the documents in force at the query's as_of
    filtered: bool  # only documents the query's scope may read are ranked
    threshold: float


SYSTEMS = [
    System("baseline", dated=True, filtered=True, threshold=THRESHOLD),
    System("leaky-filter", dated=True, filtered=False, threshold=THRESHOLD),
    System("stale-index", dated=False, filtered=True, threshold=THRESHOLD),
    System("eager-abstain", dated=True, filtered=True, threshold=EAGER_THRESHOLD),
]


def run_line(query_id: str, ranked: Sequence[tuple[str, str]], abstained: bool) -> str:
    """One JSON line; scores are written as they were rounded (6 decimals)."""
    items = ", ".join(f'{{"id": {json.dumps(d)}, "score": {s}}}' for d, s in ranked)
    return (f'{{"query_id": {json.dumps(query_id)}, "items": [{items}], '
            f'"abstained": {json.dumps(abstained)}}}\n')


def build_run(system: System, docs: Sequence[Doc], queries: Sequence[Doc],
              index_for: Callable[[tuple[str, ...]], Index]) -> list[str]:
    """The run's lines, one per query in file order."""
    by_id = {d["id"]: d for d in docs}
    lines = []
    for q in queries:
        indexed = tuple(d["id"] for d in docs if not system.dated or in_force(d, q["as_of"]))
        written = index_for(indexed).written(q["text"])
        if system.filtered:
            written = {d: s for d, s in written.items() if visible(by_id[d], q["scope"])}
        top = sorted(written, key=lambda d: (float(written[d]), d), reverse=True)[:DEPTH]
        abstained = not top or float(written[top[0]]) < system.threshold
        lines.append(run_line(q["id"], [(d, written[d]) for d in top], abstained))
    return lines


def load(path: Path) -> list[Doc]:
    """One JSON object per line."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def measure(run: Mapping[str, Doc], base: Mapping[str, Doc], by_id: Mapping[str, Doc],
            queries: Sequence[Doc], relevant: Mapping[str, set[str]]) -> tuple[str, ...]:
    """One row of the report: Recall@10 and MRR@10 over the answerable queries (relevant: grade
    ≥ 1), leaks and stale items (pairs, and queries with one), queries whose first item is
    either, the abstentions on unanswerable and on answerable queries, and the answerable
    queries that this run abstains on and ``base`` answers (+), or the other way round (-)."""
    answerable = [q for q in queries if q["answerable"]]
    unanswerable = [q for q in queries if not q["answerable"]]
    recall = rr = 0.0
    for q in answerable:
        ids = [i["id"] for i in run[q["id"]]["items"]][:DEPTH]
        recall += len(relevant[q["id"]] & set(ids)) / len(relevant[q["id"]])
        rr += next((1 / r for r, d in enumerate(ids, 1) if d in relevant[q["id"]]), 0.0)
    leaks = stale = leak_q = stale_q = top1 = 0
    for q in queries:
        items = [by_id[i["id"]] for i in run[q["id"]]["items"]][:DEPTH]
        hidden = [not visible(d, q["scope"]) for d in items]
        old = [not in_force(d, q["as_of"]) for d in items]
        leaks, leak_q = leaks + sum(hidden), leak_q + any(hidden)
        stale, stale_q = stale + sum(old), stale_q + any(old)
        top1 += bool(items) and (hidden[0] or old[0])
    abst_u = sum(bool(run[q["id"]]["abstained"]) for q in unanswerable)
    abst_a = sum(bool(run[q["id"]]["abstained"]) for q in answerable)
    more = sum(bool(run[q["id"]]["abstained"]) > bool(base[q["id"]]["abstained"])
               for q in answerable)
    fewer = sum(bool(run[q["id"]]["abstained"]) < bool(base[q["id"]]["abstained"])
                for q in answerable)
    return (f"{recall / len(answerable):.4f}", f"{rr / len(answerable):.4f}",
            f"{leaks} ({leak_q})", f"{stale} ({stale_q})", str(top1),
            f"{abst_u}/{len(unanswerable)} = {abst_u / len(unanswerable):.2f}",
            f"{abst_a}/{len(answerable)} = {abst_a / len(answerable):.2f}", f"+{more} -{fewer}")


def report(docs: Sequence[Doc], queries: Sequence[Doc], qrels: Sequence[Doc]) -> str:
    """The table of the README, from the shipped runs."""
    by_id = {d["id"]: d for d in docs}
    relevant: dict[str, set[str]] = {q["id"]: set() for q in queries}
    for j in qrels:
        if j["grade"] >= 1:
            relevant[j["query_id"]].add(j["doc_id"])
    runs = {s.name: {r["query_id"]: r for r in load(POLICIES / "runs" / f"{s.name}.jsonl")}
            for s in SYSTEMS}
    rows: list[tuple[str, ...]] = [
        ("run", "Recall@10", "MRR@10", "leaks (queries)", "stale (queries)", "leak/stale first",
         "unanswerable abstained", "answerable abstained", "vs baseline")]
    for name, run in runs.items():
        rows.append((name, *measure(run, runs["baseline"], by_id, queries, relevant)))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="rebuild into a temp dir and compare with the shipped files")
    parser.add_argument("--report", action="store_true",
                        help="print the measures of the shipped runs (alone: rebuild nothing)")
    args = parser.parse_args(argv)
    docs = load(POLICIES / "corpus.jsonl")
    queries = load(POLICIES / "queries.jsonl")
    qrels = load(POLICIES / "qrels.jsonl")
    problems = check_collection(docs, queries, qrels)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    if args.report and not args.check:
        print(report(docs, queries, qrels))
        return 0
    indexes: dict[tuple[str, ...], Index] = {}

    def index_for(ids: tuple[str, ...]) -> Index:
        if ids not in indexes:
            wanted = set(ids)
            indexes[ids] = Index([d for d in docs if d["id"] in wanted])
        return indexes[ids]

    (POLICIES / "runs").mkdir(exist_ok=True)
    status = 0
    for system in SYSTEMS:
        lines = build_run(system, docs, queries, index_for)
        status |= not write_or_check(POLICIES / "runs" / f"{system.name}.jsonl", lines,
                                     args.check)
    if args.report:
        print(report(docs, queries, qrels))
    return status


if __name__ == "__main__":
    sys.exit(main())
