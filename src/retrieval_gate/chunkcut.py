"""Spans cut by a chunking: span judgments that begin and end where one chunking cut the text.

A span judgment made from a chunk judgment — the judged chunk's range, or overlapping judged
chunks merged — keeps that chunking's cuts as its ends. Comparing two chunkings on such spans
favours the one that cut them: its chunks hold them one for one, while another chunking needs
two or more chunks for each. (On the pydoc example, re-chunking from 300 to 200 tokens loses
0.403 Recall@10 on spans that are the judged 300-token chunks, and 0.008 on the evidence.)

**Definitions.** A chunk *boundary* of a document is the start or the end of one of its chunks.
A span is *cut by* a chunking when both its start and its end are boundaries of its document
(the two ends may belong to different chunks, as when overlapping chunks were merged), except
a span from the document's first boundary to its last (a whole short document): every
chunking cuts there, so it tells nothing about which one cut the test set. A cut span is
*exactly a chunk* when one chunk has its document, start and end. A chunking's boundaries come
from its chunk table or, for a run whose items carry their places (JSON Lines), from the
places of the items it retrieved (a chunk it never retrieved is not seen).

Counting (:func:`cut_spans`) is exact and vectorised: documents become integer codes, and
spans are looked up among the boundaries as (document, offset) pairs and among the chunks as
(document, start, end) triples.

**The warning** (:func:`cut_warning`): ``gate check`` on span judgments warns about a run when
at least :data:`CUT_SHARE` of the relevant spans (grade ≥ the threshold, each query's spans
counted) are cut by its chunking.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from retrieval_gate.model import ChunkTable, RunRows, Span

CUT_SHARE = 0.10  # the share of relevant spans cut by a run's chunking that gate check warns of


@dataclass(frozen=True)
class Cut:
    """Of ``spans`` spans, how many are ``cut`` by a chunking (both ends on its chunk
    boundaries), and how many of those are ``exact``\\ ly one of its chunks."""

    spans: int
    cut: int
    exact: int

    @property
    def noticeable(self) -> bool:
        """At least :data:`CUT_SHARE` of the spans are cut (and at least one)."""
        return self.cut > 0 and self.cut >= CUT_SHARE * self.spans


@dataclass(frozen=True, eq=False)
class Boundaries:
    """A chunking's chunks as places: per chunk its document (``S``), start and end (code
    points, end exclusive); ``from_items`` when they are the places of a run's items rather
    than a chunk table."""

    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    from_items: bool = False

    @classmethod
    def of_table(cls, table: ChunkTable) -> Boundaries:
        return cls(table.doc, table.start, table.end)

    @classmethod
    def of_items(cls, rows: RunRows) -> Boundaries | None:
        """The places of the items of a ranking, or None when they carry none."""
        if rows.doc_ids is None or rows.starts is None or rows.ends is None:
            return None
        return cls(rows.doc_ids, rows.starts, rows.ends, True)

    @classmethod
    def joined(cls, parts: list[Boundaries]) -> Boundaries | None:
        """The places of every part (the rankings of a pipeline's stages), or None for none."""
        if not parts:
            return None
        return cls(np.concatenate([p.doc for p in parts]),
                   np.concatenate([p.start for p in parts]),
                   np.concatenate([p.end for p in parts]), all(p.from_items for p in parts))


def relevant_spans(spans: Mapping[str, tuple[Span, ...]], threshold: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Document (``S``), start and end of every span with grade ≥ ``threshold`` (negative
    grades never count), each query's spans in turn."""
    kept = [s for given in spans.values() for s in given if s.grade >= max(threshold, 0)]
    return (np.array([s.doc.encode() for s in kept], dtype="S") if kept else np.zeros(0, "S1"),
            np.array([s.start for s in kept], dtype=np.int64),
            np.array([s.end for s in kept], dtype=np.int64))


def cut_spans(doc: np.ndarray, start: np.ndarray, end: np.ndarray, chunks: Boundaries) -> Cut:
    """How many of the spans (``doc`` ``S``, ``start``, ``end``) are cut by the chunking
    ``chunks``, and how many are exactly one of its chunks (see the module docstring)."""
    n = len(doc)
    if not n or not len(chunks.doc):
        return Cut(n, 0, 0)
    _, code = np.unique(np.concatenate([doc, chunks.doc]), return_inverse=True)
    code = code.ravel()
    span_doc, chunk_doc = code[:n], code[n:]
    first = np.full(int(code.max()) + 1, np.iinfo(np.int64).max)  # per document: its first
    last = np.full(len(first), -1, dtype=np.int64)  # boundary and its last
    np.minimum.at(first, chunk_doc, chunks.start)
    np.maximum.at(last, chunk_doc, chunks.end)
    on = _rows_among(np.column_stack([np.concatenate([span_doc, span_doc]),
                                      np.concatenate([start, end])]),
                     np.column_stack([np.concatenate([chunk_doc, chunk_doc]),
                                      np.concatenate([chunks.start, chunks.end])]))
    inner = (start != first[span_doc]) | (end != last[span_doc])
    cut = on[:n] & on[n:] & inner
    exact = _rows_among(np.column_stack([span_doc, start, end])[cut],
                        np.column_stack([chunk_doc, chunks.start, chunks.end]))
    return Cut(n, int(cut.sum()), int(exact.sum()))


def _rows_among(rows: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Per row of the integer matrix ``rows``, whether it is a row of ``among``: rows become
    codes (``np.unique``), looked up with ``np.isin``."""
    if not len(rows):
        return np.zeros(0, dtype=bool)
    _, code = np.unique(np.vstack([rows, among]), axis=0, return_inverse=True)
    code = code.ravel()
    return np.isin(code[:len(rows)], code[len(rows):])


def cut_warning(role: str, chunking: Mapping[str, Any] | None, cut: Cut | None) -> str | None:
    """``gate check``'s warning about the run in ``role`` whose chunking (its manifest's
    ``chunking`` record, None for item places) cut a noticeable share of the relevant spans;
    None when it did not."""
    if cut is None or not cut.noticeable:
        return None
    if chunking is None:
        whose = f"the places of the {role}'s retrieved items"
    else:
        name = PurePosixPath(chunking["file"]).name
        version = chunking.get("version")
        whose = f"chunk boundaries of the {role}'s chunking ({version + ', ' if version else ''}{name})"
    exact = f"{cut.exact} of them exactly chunks" if cut.exact < cut.cut else "all exactly chunks"
    return (f"{cut.cut} of {cut.spans} relevant spans begin and end on {whose}; {exact}: the "
            f"test set was cut by that chunking, and a comparison with another chunking "
            f"favours it — narrow the spans to their evidence (gate qrels to-spans --evidence)")
