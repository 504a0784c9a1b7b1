"""The questions the score fixtures of tests/data/scores/ were made from (by
tests/data/scores/pydoc_cases.py): their ids in the fixtures' order, and their texts as
examples/pydoc/queries.jsonl has them."""

from __future__ import annotations

import json

from conftest import ROOT

IDS = ("p01", "p03", "p04", "p06", "p08", "p15")
_QUERIES = ROOT / "examples" / "pydoc" / "queries.jsonl"
QUESTIONS = {q["id"]: q["text"] for q in map(json.loads, _QUERIES.open(encoding="utf-8"))}
TEXTS = tuple(QUESTIONS[i] for i in IDS)
