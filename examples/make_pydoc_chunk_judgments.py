"""Derive chunk judgments of the pydoc example: what a team that judged 300-token chunks has.

From the example's span judgments (``pydoc/qrels.jsonl``, labelled by quoting the evidence) and
its baseline's chunk table (``pydoc/chunks-300.jsonl``: 300 white-space tokens, 50 of overlap),
this writes into ``pydoc/chunk-judgments/``:

* ``qrels-chunks-300.jsonl`` — chunk judgments ``{"query_id", "doc_id": CHUNK_ID, "grade"}``,
  judged as an assessor reading chunks would: a chunk that holds a span whole is judged with
  the highest grade of the spans it holds whole; a span that no chunk holds whole (the chunker
  cut it) makes each chunk holding part of it judged with its grade. Chunks without evidence
  are not judged. No fact labels: a chunk may hold the evidence of several facts.
* ``evidence.jsonl`` — the quote behind each chunk judgment, one line per span and chunk
  judged for it: ``{"query_id", "chunk_id", "evidence", "fact"?}``; the quote is the span's
  text (a span runs from the first to the last character of its quoted passage), the fact
  its label. For a span the chunker cut, the quote runs past the chunk's edge.
* ``queries.jsonl`` — the questions without their ``facts`` lists (chunk judgments label no
  facts, so a query set made for them lists none).

Lines are sorted (queries by id; chunks by topic and position; quotes by place), so the files
are the same bytes on every run. Run from any directory:

    python examples/make_pydoc_chunk_judgments.py          # (re)writes the three files
    python examples/make_pydoc_chunk_judgments.py --check  # rebuild, compare, exit 1 on diff
"""

from __future__ import annotations

import sys
from collections import defaultdict

from runfiles import PYDOC, jsonl_lines, read_jsonl, wants_check, write_or_check

OUT = PYDOC / "chunk-judgments"


def judged_chunks(spans: list[dict], chunks: list[dict]) -> tuple[list[dict], list[dict]]:
    """(chunk judgments, evidence lines) of the span judgments (see the module docstring)."""
    by_topic: dict[str, list[dict]] = defaultdict(list)
    for chunk in chunks:
        by_topic[chunk["doc_id"]].append(chunk)
    order = {chunk["id"]: i for i, chunk in enumerate(chunks)}
    grades: dict[tuple[str, str], int] = {}
    quotes: list[tuple[str, int, int, dict]] = []
    corpus = {row["id"]: row["text"] for row in read_jsonl(PYDOC / "corpus.jsonl")}
    for span in spans:
        topic, start, end = span["doc_id"], span["start"], span["end"]
        whole = [c for c in by_topic[topic] if c["start"] <= start and end <= c["end"]]
        held = whole or [c for c in by_topic[topic] if c["start"] < end and start < c["end"]]
        for chunk in held:
            key = (span["query_id"], chunk["id"])
            grades[key] = max(grades.get(key, span["grade"]), span["grade"])
            line = {"query_id": span["query_id"], "chunk_id": chunk["id"],
                    "evidence": corpus[topic][start:end]}
            if "fact" in span:
                line["fact"] = span["fact"]
            quotes.append((span["query_id"], order[chunk["id"]], start, line))
    judgments = [{"query_id": q, "doc_id": c, "grade": grades[(q, c)]}
                 for q, c in sorted(grades, key=lambda key: (key[0], order[key[1]]))]
    return judgments, [line for *_, line in sorted(quotes, key=lambda row: row[:3])]


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    check = wants_check(__doc__.splitlines()[0], argv)
    judgments, evidence = judged_chunks(read_jsonl(PYDOC / "qrels.jsonl"),
                                        read_jsonl(PYDOC / "chunks-300.jsonl"))
    queries = [{k: v for k, v in row.items() if k != "facts"}
               for row in read_jsonl(PYDOC / "queries.jsonl")]
    OUT.mkdir(exist_ok=True)
    same = write_or_check(OUT / "qrels-chunks-300.jsonl", jsonl_lines(judgments), check)
    same &= write_or_check(OUT / "evidence.jsonl", jsonl_lines(evidence), check)
    same &= write_or_check(OUT / "queries.jsonl", jsonl_lines(queries), check)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
