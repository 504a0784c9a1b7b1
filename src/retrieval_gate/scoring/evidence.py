"""Evidence units: where a run's items lie in the corpus, and span judgments turned into the
per-item gains every measure reads.

**Places.** A run of chunk ids gets each chunk's document, offsets and token count from its
chunk table (:func:`attach_chunks`); JSON Lines runs may carry them per item. Every document an
item names must be in the pinned corpus, and its offsets inside the document's text
(:func:`require_in_corpus`): an item outside the corpus is invalid input, never an unjudged
item.

**Span coverage** (:func:`judge_spans`). A span (characters ``[start, end)`` of a document) is
*covered at rank r* when the items ranked 1…r, together, contain at least ``min_coverage`` of
its characters — the union of their ranges in the span's document. So a span that a chunker cut
in two is covered once both halves are retrieved, and not before; an item that a pipeline
truncated holds only what it still holds.

- No credit for repetition: the item at rank r earns the highest grade among the spans that
  become covered at r; an item that completes no span is non-relevant at its rank (judged, when
  its document has a judged span for the query: text outside the judged spans of a judged
  document is judged non-relevant; unjudged when its document has none).
- Units: R is the number of spans with grade ≥ the threshold, Recall@k the relevant spans
  covered within the top k over R, and the ideal ranking of nDCG the spans' grades, best first.
  Every other measure reads the ranking of per-item gains exactly as for documents.
- When every item is exactly one judged span, this is chunk scoring of the same data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.model import NEVER, ChunkTable, Corpus, ItemIds, Places, RunRows, Span
from retrieval_gate.core.ranking import IdIndex, hash_ids, take_items

_SHOWN = 3  # unknown ids named in a message, before "and N more"
_BLOCK = 1 << 20  # rows checked at a time


def _named(ids: Sequence[bytes], count: int) -> str:
    shown = ", ".join(f"'{i.decode(errors='replace')}'" for i in ids[:_SHOWN])
    return shown + (f" and {count - _SHOWN} more" if count > _SHOWN else "")


def attach_chunks(run: RunRows, table: ChunkTable) -> RunRows:
    """``run`` with each item's document, offsets and tokens from the chunk ``table`` (the
    rest as the run gives it: scores, latencies, abstentions). InputError (exit 2) naming the
    first unknown chunk ids and their count."""
    index = IdIndex(table.ids)
    rows = np.arange(len(run.qcodes))
    found = np.concatenate([index.find(take_items(run.items, rows[i:i + _BLOCK]))
                            for i in range(0, len(rows), _BLOCK)] or [np.zeros(0, np.int64)])
    unknown = np.flatnonzero(found < 0)
    if len(unknown):
        ids = list(dict.fromkeys(take_items(run.items, unknown).tolist()))
        line = None if run.lines is None else int(run.lines[np.array([unknown[0]])][0])
        raise InputError(run.source, f"{len(ids)} item id{'s' if len(ids) > 1 else ''} not in "
                         f"the chunk table {table.source}: {_named(ids, len(ids))}",
                         "rank chunks of this chunking only, or give the run's own chunk "
                         "table", line)
    return replace(run, doc_ids=table.doc[found], starts=table.start[found],
                   ends=table.end[found], tokens=table.tokens[found])


def require_in_corpus(source: str, corpus: Corpus, docs: np.ndarray | ItemIds,
                      starts: np.ndarray | None = None, ends: np.ndarray | None = None,
                      what: str = "item") -> None:
    """InputError (exit 2) unless every document in ``docs`` (an ``S`` array or a reader's
    :class:`~retrieval_gate.core.model.ItemIds`) is in ``corpus``, and, with ``starts`` and
    ``ends`` and a corpus with text, each place lies inside its document's text. The message
    names the first documents outside the corpus and their count."""
    index = corpus_index(corpus)
    outside: list[bytes] = []
    count = 0
    for first in range(0, len(docs), _BLOCK):
        rows = np.arange(first, min(first + _BLOCK, len(docs)))
        names = take_items(docs, rows)
        at = index.find(names)
        missing = at < 0
        count += int(missing.sum())
        outside.extend(names[missing][:_SHOWN].tolist())
        if starts is None or ends is None or corpus.lengths is None:
            continue
        limit = corpus.lengths[np.maximum(at, 0)]
        beyond = np.flatnonzero(~missing & (ends[rows] > limit))
        if len(beyond):
            i = int(beyond[0])
            raise InputError(source, f"{what} at {int(starts[rows[i]])}:{int(ends[rows[i]])} of "
                             f"'{names[i].decode(errors='replace')}' ends past the document's "
                             f"{int(limit[i])} characters in {corpus.source}",
                             "give offsets into the pinned corpus text (code points, end "
                             "exclusive)")
    if count:
        distinct = list(dict.fromkeys(outside))
        raise InputError(source, f"{count} {what}{'s name' if count > 1 else ' names'} a "
                         f"document that is not in the corpus {corpus.source}: "
                         f"{_named(distinct, count)}", "retrieve from the pinned corpus only "
                         "(a run of chunk ids needs its chunk table)" if what == "item" else
                         f"give {what}s of the pinned corpus's documents only")


def corpus_index(corpus: Corpus) -> IdIndex:
    """The exact index of the corpus ids (already in hash order: nothing to compute)."""
    return IdIndex(corpus.ids, keys=corpus.keys)


def spans_in_corpus(spans: dict[str, tuple[Span, ...]], corpus: Corpus, source: str) -> None:
    """InputError (exit 2) unless every span's document is in ``corpus`` with text, and the
    span lies inside it."""
    if corpus.lengths is None:
        raise InputError(source, f"span judgments need the documents' text, and the corpus "
                         f"{corpus.source} is a list of ids",
                         "pin a corpus of JSON Lines documents with their 'text'")
    flat = [(q, s) for q, given in spans.items() for s in given]
    if not flat:
        return
    found = corpus_index(corpus).find(np.array([s.doc.encode() for _, s in flat], dtype="S"))
    for (qid, span), at in zip(flat, found.tolist()):
        if at < 0:
            raise InputError(source, f"query '{qid}': span {span.key} judges a document that "
                             f"is not in the corpus {corpus.source}",
                             "judge documents of the pinned corpus only")
        if span.end > corpus.lengths[at]:
            raise InputError(source, f"query '{qid}': span {span.key} ends past the document's "
                             f"{int(corpus.lengths[at])} characters",
                             "give offsets into the pinned corpus text (code points, end "
                             "exclusive)")


def judge_spans(row_qidx: np.ndarray, rank: np.ndarray, places: Places,
                span_qidx: np.ndarray, spans: Sequence[Span], min_coverage: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per ranked row, its grade and whether it is judged; per span, the rank at which it is
    covered (:data:`~retrieval_gate.core.model.NEVER` if not). Rows are grouped by query
    (``row_qidx`` non-decreasing), ranks 1, 2, … within each; ``span_qidx`` gives each span's
    query. See the module docstring for the rule."""
    n_rows, n_spans = len(rank), len(spans)
    grade = np.zeros(n_rows, dtype=np.int64)
    judged = np.zeros(n_rows, dtype=bool)
    covered = np.full(n_spans, NEVER, dtype=np.int64)
    if not n_rows or not n_spans:
        return grade, judged, covered
    s_doc = np.array([s.doc.encode() for s in spans], dtype="S")
    s_start = np.array([s.start for s in spans], dtype=np.int64)
    s_end = np.array([s.end for s in spans], dtype=np.int64)
    s_grade = np.array([s.grade for s in spans], dtype=np.int64)

    row, span = _same_document(row_qidx, places.doc, span_qidx, s_doc)
    judged_doc = np.zeros(n_rows, dtype=bool)
    judged_doc[row[s_grade[span] >= 0]] = True
    lo = np.maximum(places.start[row], s_start[span])
    hi = np.minimum(places.end[row], s_end[span])
    overlap = lo < hi
    row, span, lo, hi = row[overlap], span[overlap], lo[overlap], hi[overlap]
    covered = _covered_rank(span, rank[row], lo, hi, s_start, s_end, min_coverage)

    done = np.flatnonzero(covered != NEVER)
    if len(done):
        first_row = np.searchsorted(row_qidx, span_qidx[done])
        at = first_row + covered[done] - 1  # the row of that query at that rank
        completed = np.zeros(n_rows, dtype=bool)
        completed[at] = True
        best = np.full(n_rows, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(best, at, s_grade[done])
        grade = np.where(completed, best, 0)
    return grade, judged_doc, covered


def _same_document(row_qidx: np.ndarray, row_doc: np.ndarray, span_qidx: np.ndarray,
                   span_doc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (row, span) pair of one query and one document, as two index arrays."""
    span_keys = hash_ids(span_doc, span_qidx)
    order = np.argsort(span_keys, kind="stable")
    sorted_keys = span_keys[order]
    keys = hash_ids(row_doc, row_qidx)
    first = np.searchsorted(sorted_keys, keys, "left")
    last = np.searchsorted(sorted_keys, keys, "right")
    counts = last - first
    row = np.repeat(np.arange(len(keys)), counts)
    within = np.arange(len(row)) - np.repeat(np.cumsum(counts) - counts, counts)
    span = order[np.repeat(first, counts) + within]
    same = (row_qidx[row] == span_qidx[span]) & (row_doc[row] == span_doc[span])  # hashes
    return row[same], span[same]


def _covered_rank(span: np.ndarray, rank: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                  s_start: np.ndarray, s_end: np.ndarray, min_coverage: float) -> np.ndarray:
    """Per span, the smallest rank r at which the pairs of rank ≤ r cover ``min_coverage`` of
    its characters. The span is cut into elementary segments at every pair's ends; a segment is
    covered from the smallest rank of a pair holding it; sorting a span's segments by that rank
    and adding their lengths gives the coverage after each rank."""
    n_spans = len(s_start)
    covered = np.full(n_spans, NEVER, dtype=np.int64)
    if not len(span):
        return covered
    length = s_end - s_start
    base = np.cumsum(length + 1) - (length + 1)  # each span's boundaries: base + local offset
    bounds = np.unique(np.concatenate([base, base + length, base[span] + lo - s_start[span],
                                       base[span] + hi - s_start[span]]))
    first = np.searchsorted(bounds, base[span] + lo - s_start[span])
    last = np.searchsorted(bounds, base[span] + hi - s_start[span])
    counts = last - first  # segments each pair holds
    segment = np.repeat(first, counts) + (np.arange(counts.sum())
                                          - np.repeat(np.cumsum(counts) - counts, counts))
    best = np.full(len(bounds), NEVER, dtype=np.int64)
    np.minimum.at(best, segment, np.repeat(rank, counts))
    held = np.flatnonzero(best != NEVER)  # segments some pair holds (never the last bound)
    owner = np.searchsorted(base, bounds[held], "right") - 1
    seg_length = bounds[held + 1] - bounds[held]
    order = np.lexsort((best[held], owner))
    owner, seg_rank, seg_length = owner[order], best[held][order], seg_length[order]
    total = np.cumsum(seg_length)
    start_of = np.searchsorted(owner, owner)  # first segment of the same span
    within = total - (total[start_of] - seg_length[start_of])
    need = min_coverage * length[owner] - 1e-9 * length[owner]
    enough = np.flatnonzero(within >= need)
    spans_done, first_enough = np.unique(owner[enough], return_index=True)
    covered[spans_done] = seg_rank[enough[first_enough]]
    return covered
