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

Counting (:func:`cut_spans`) is a vectorised hash join: each (document, offset) pair of a span
is looked up among the chunks' boundaries by a 64-bit key made from the document id's hash and
the offset, and each key match is confirmed on the document and offset themselves (so no
match is invented; a collision of two keys could only hide one). Exact chunks are found the
same way, by (document, start, end).

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

from retrieval_gate.core.model import ChunkTable, RunRows, Span
from retrieval_gate.core.ranking import hash_ids, salted

CUT_SHARE = 0.10  # the share of relevant spans cut by a run's chunking that gate check warns of
_ODD = np.uint64(0xD6E8FEB86659FD93)  # mixes a key before a second value is folded in


@dataclass(frozen=True)
class Cut:
    """Of ``spans`` spans, how many are ``cut`` by a chunking (both ends on its chunk
    boundaries), and how many of those are ``exact``\\ ly one of its chunks; ``from_items``
    when the chunking was seen through the places of a run's items, not its chunk table."""

    spans: int
    cut: int
    exact: int
    from_items: bool = False

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
        return Cut(n, 0, 0, chunks.from_items)
    span_hash, chunk_hash = hash_ids(doc), hash_ids(chunks.doc)
    families, family = np.unique(chunk_hash, return_inverse=True)  # a document, by its hash
    family = family.ravel()
    first = np.full(len(families), np.iinfo(np.int64).max)
    last = np.full(len(families), -1, dtype=np.int64)
    np.minimum.at(first, family, chunks.start)
    np.maximum.at(last, family, chunks.end)
    bound_doc = np.concatenate([chunks.doc, chunks.doc])
    bound_at = np.concatenate([chunks.start, chunks.end])
    bounds = _Keys(salted(np.concatenate([chunk_hash, chunk_hash]), bound_at))
    on = []
    for offset in (start, end):
        at = bounds.find(salted(span_hash, offset))
        on.append(_confirmed(at, (doc, offset), (bound_doc, bound_at)))
    owner = np.concatenate([family, family])[np.maximum(at, 0)]  # from the ends' lookup
    whole = (start == first[owner]) & (end == last[owner])
    cut = on[0] & on[1] & ~whole
    rows = np.flatnonzero(cut)
    at = _Keys(_triple(chunk_hash, chunks.start, chunks.end)).find(
        _triple(span_hash[rows], start[rows], end[rows]))
    exact = _confirmed(at, (doc[rows], start[rows], end[rows]),
                       (chunks.doc, chunks.start, chunks.end))
    return Cut(n, len(rows), int(exact.sum()), chunks.from_items)


def _triple(doc_hash: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """A 64-bit key of (document, start, end), from the document's hash."""
    return salted(salted(doc_hash, start) * _ODD, end)


class _Keys:
    """64-bit keys sorted once, for lookups."""

    def __init__(self, keys: np.ndarray):
        self.order = np.argsort(keys, kind="stable")
        self.ranked = keys[self.order]

    def find(self, keys: np.ndarray) -> np.ndarray:
        """Per key, the position of an equal key among the sorted ones, or −1. The keys are
        looked up in sorted order, so the sorted ones are walked once, not probed at random."""
        needles = np.argsort(keys)
        at = np.empty(len(keys), dtype=np.int64)
        at[needles] = np.minimum(np.searchsorted(self.ranked, keys[needles]),
                                 len(self.ranked) - 1)
        return np.where(self.ranked[at] == keys, self.order[at], -1)


def _confirmed(at: np.ndarray, wanted: tuple[np.ndarray, ...],
               among: tuple[np.ndarray, ...]) -> np.ndarray:
    """Whether each key match ``at`` (−1: none) is a match of the values themselves."""
    found = at >= 0
    row = np.maximum(at, 0)
    for mine, theirs in zip(wanted, among):
        found &= mine == theirs[row]
    return found


def cut_warning(role: str, chunking: Mapping[str, Any] | None, cut: Cut | None) -> str | None:
    """``gate check``'s warning about the run in ``role`` whose chunking (named by its
    manifest's ``chunking`` record, when the cut was counted on its chunk table) cut a
    noticeable share of the relevant spans; None when it did not."""
    if cut is None or not cut.noticeable:
        return None
    if cut.from_items or chunking is None or "file" not in chunking:
        whose = f"the places of the {role}'s retrieved items"
    else:
        name = PurePosixPath(chunking["file"]).name
        version = chunking.get("version")
        whose = f"chunk boundaries of the {role}'s chunking ({version + ', ' if version else ''}{name})"
    exact = f"{cut.exact} of them exactly chunks" if cut.exact < cut.cut else "all exactly chunks"
    return (f"{cut.cut} of {cut.spans} relevant spans begin and end on {whose}; {exact}: the "
            f"test set was cut by that chunking, and a comparison with another chunking "
            f"favours it — narrow the spans to their evidence (gate qrels to-spans --evidence)")
