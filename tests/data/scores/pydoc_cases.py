"""The six answered questions of the pydoc example that the score fixtures are made from.

``cases()`` reads ``pydoc-cases.json`` beside this file (answers and references written for
the fixtures; retrieved passages as ``[doc_id, start, end]`` character spans of
examples/pydoc/corpus.jsonl) and returns one dict per case: ``id``, ``question`` (the exact
text of examples/pydoc/queries.jsonl), ``answer``, ``reference``, ``retrieved`` and
``retrieved_ids`` (the passages' texts and document ids), ``reference_contexts`` and
``reference_ids`` (the distinct judged spans of examples/pydoc/qrels.jsonl, and the
distinct documents that hold them). Used by the fixture scripts only, never by the tests.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYDOC = HERE.parents[2] / "examples" / "pydoc"


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (PYDOC / name).read_text("utf-8").splitlines() if line]


def cases() -> list[dict]:
    questions = {q["id"]: q["text"] for q in _lines("queries.jsonl")}
    docs = {d["id"]: d["text"] for d in _lines("corpus.jsonl")}
    out = []
    for case in json.loads((HERE / "pydoc-cases.json").read_text("utf-8")):
        rows = [row for row in _lines("qrels.jsonl") if row["query_id"] == case["id"]]
        judged = {docs[r["doc_id"]][r["start"]:r["end"]]: None for r in rows}
        out.append({
            "id": case["id"], "question": questions[case["id"]],
            "answer": case["answer"], "reference": case["reference"],
            "retrieved": [docs[d][s:e] for d, s, e in case["retrieved"]],
            "retrieved_ids": [d for d, _, _ in case["retrieved"]],
            "reference_contexts": list(judged),
            "reference_ids": list({r["doc_id"]: None for r in rows}),
        })
    return out
