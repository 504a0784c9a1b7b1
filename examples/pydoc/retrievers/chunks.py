"""The chunks the retrievers index: every chunk of ``../chunks-300.jsonl`` (the shipped
baseline's chunking), with its text, ``corpus[doc_id][start:end]`` of ``../corpus.jsonl``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PYDOC = Path(__file__).resolve().parent.parent
DEPTH = 20  # hits per query, as many as the shipped run keeps


@dataclass(frozen=True)
class Chunk:
    """One chunk: its id (``TOPIC#N``), its document, its place in the document's text (code
    points, end exclusive) and that text."""

    id: str
    doc_id: str
    start: int
    end: int
    text: str

    @property
    def place(self) -> dict[str, object]:
        """The metadata ``gate run`` reads a span from: ``doc_id``, ``start``, ``end``."""
        return {"doc_id": self.doc_id, "start": self.start, "end": self.end}


def chunks() -> Iterator[Chunk]:
    """Every chunk of the table, in its order."""
    corpus = {}
    with open(PYDOC / "corpus.jsonl", encoding="utf-8") as lines:
        for line in lines:
            document = json.loads(line)
            corpus[document["id"]] = document["text"]
    with open(PYDOC / "chunks-300.jsonl", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            yield Chunk(row["id"], row["doc_id"], row["start"], row["end"],
                        corpus[row["doc_id"]][row["start"]:row["end"]])
