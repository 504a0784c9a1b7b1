"""A retriever for `gate run` (docs/recipes/run-your-retriever.md): word overlap between the
query and each Cranfield abstract, the top 10 by the number of shared words (ties by id).

    gate run --snapshot snapshot.json --retriever overlap_retriever:search -o run.jsonl

Deliberately small — no index, no dependencies: the recipe is about the runner, not the
retriever. `search` takes one query (`.id`, `.text`, and the query's other fields) and returns
its ranked hits as (document id, score) pairs, best first.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

_WORD = re.compile(r"[a-z0-9]+")
_STOP = {"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "how",
         "in", "is", "it", "of", "on", "or", "that", "the", "this", "to", "was", "what",
         "which", "with", "can", "do", "does", "there", "any", "been", "if", "not"}


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _STOP


_DOCUMENTS = [(line["id"], _words(f"{line.get('title', '')} {line.get('text', '')}"))
              for line in map(json.loads, (Path(__file__).parent / "corpus.jsonl").open())]


def search(query) -> list[tuple[str, float]]:
    """The 10 documents sharing the most words with the query, best first."""
    asked = _words(query.text)
    scored = sorted(((len(asked & words), doc) for doc, words in _DOCUMENTS),
                    key=lambda pair: (-pair[0], pair[1]))
    return [(doc, float(score)) for score, doc in scored[:10]]
