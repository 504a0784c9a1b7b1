"""Chunk judgments turned into span judgments, narrowed to their evidence (``gate qrels
to-spans``).

Chunk judgments (qrels naming the chunk ids of one chunking) compare runs of that chunking
only. Span judgments compare any chunkings — if the spans are the evidence. A span that is the
judged chunk's range keeps the old chunking's cuts as its ends: the old chunking holds it in one
chunk, any other needs two, and a comparison favours the old one (see
:mod:`retrieval_gate.scoring.chunkcut`). So each judgment is narrowed to the passages a quote says are
the evidence, and what cannot be narrowed is counted.

**Inputs.**

- the chunk judgments: qrels of chunk ids, in any format the gate reads; a judgment's
  ``fact`` (JSON Lines) carries over to its spans. Span judgments are refused (nothing to do).
- the judged chunking's chunk table (JSON Lines ``{"id", "doc_id", "start", "end"}``): every
  judged chunk must be in it, its document in the corpus, its range inside the document's text.
- the corpus, JSON Lines with each document's ``text``.
- the evidence (optional), JSON Lines, one quote per line::

      {"query_id": "q1", "chunk_id": "doc#3", "evidence": "the quoted sentence", "fact": "f1"}

  ``evidence`` is the quote: text of the document as written, any length. With ``chunk_id``
  it is looked for in the chunk of that judgment (the query must judge that chunk); without
  it, in every chunk the query judges. ``fact`` (optional) is the fact the quote states,
  else the judgment's. A line may hold no other key: a misspelt ``chunk_id`` would silently
  turn a chunk's quote into the query's.

**Locating a quote** in the judged chunk's text (the chunk's range of its document): first
exactly as written; if it does not occur so, with white space read loosely — the quote's
words, split at white space, in order, any run of white space (a line break of wrapped text, a
tab, two spaces) between them. The quote is *located* when the first of the two that finds it
finds it once. Found more than once in the chunk it is *ambiguous*, and not used (quote more of
the passage); absent from the chunk, or running past its edges, it is *not found*. Case,
accents and typographic quotation marks are compared as written.

**Narrowing.** A judgment whose chunk holds at least one located quote becomes one span per
such quote: its place, the judgment's grade, the quote's fact (else the judgment's). A
judgment without one stays *chunk-wide*: one span, the chunk's range, with its grade and fact
— counted by reason: quotes given but none found, quotes found more than once, no quote.

**Snapping** (``snap="sentence"`` or ``"paragraph"``) grows each located quote to whole
sentences or paragraphs of the document: its start moves back to the start of the sentence
(paragraph) holding its first character, its end forward to the end of the one holding its
last. A paragraph ends at a blank line (a line of white space only); a sentence ends at a
paragraph's end and after ``.``, ``!`` or ``?`` (and any closing quotation marks and brackets)
followed by white space — an abbreviation such as "e.g." ends one too, which only keeps a span
shorter. White space around a sentence belongs to none. A snapped span may pass the judged
chunk's edges (a sentence the chunker cut is still one sentence); snapping never shrinks a
span. Chunk-wide spans are left as they are: trimming their partial sentences would hide the
old chunking's cuts from the warnings while keeping nearly all of its favour.

**Overlaps.** The spans of one query may not overlap, and spans made from overlapping chunks
(or a quote found in the overlap of two judged chunks) do. Each character goes to the highest
grade of the spans holding it — grades ≤ 0 are spans too, and lose to any higher one; among
equal grades, to the shortest span (the more exact evidence), then the one that starts first,
then the one with a fact, then the first fact label. Neighbouring characters of one grade and
one fact form one span, so overlapping or touching pieces merge (a quote found in two
overlapping chunks is one span), and where the fact changes the text is split, since a span
states one fact. A fact whose every character went to another span is lost, and said so.

**Output**: JSON Lines span qrels (``{"query_id", "doc_id", "start", "end", "grade",
"fact"?}``): the queries in the order of the chunk judgments, each query's spans by document
id, then start. The same inputs give the same bytes.
"""

from __future__ import annotations

import heapq
import itertools
import os
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from retrieval_gate.commands.pool import json_line
from retrieval_gate.core.errors import InputError
from retrieval_gate.core.model import ChunkTable, Qrels, Span
from retrieval_gate.core.ranking import IdIndex
from retrieval_gate.core.untrusted import capped, visible
from retrieval_gate.formats import Source, judgment_place, read_qrels, source_blob
from retrieval_gate.formats.atomic import write_text_atomic
from retrieval_gate.formats.corpus import document_texts, read_chunk_table, read_corpus
from retrieval_gate.formats.jsonfmt import check_id, json_lines
from retrieval_gate.formats.source import Blob, display_name
from retrieval_gate.scoring.chunkcut import Boundaries, Cut, cut_spans

SNAPS = ("sentence", "paragraph")
EVIDENCE_KEYS = ("query_id", "chunk_id", "evidence", "fact")
_SENTENCE_END = re.compile(r"[.!?][\"'\u2019\u201d)\]\u00bb]*(?=\s)|(?=\n[^\S\n]*\n)")
_PARAGRAPH_END = re.compile(r"(?=\n[^\S\n]*\n)")


def _shown(text: str, limit: int = 80) -> str:
    """Untrusted text for a message: one visible line, at most ``limit`` characters."""
    return visible(capped(text, limit))


@dataclass(frozen=True)
class Quote:
    """One line of the evidence file: the quote for ``query`` (in ``chunk``, or in every
    chunk the query judges when None), the fact it states, and its line."""

    query: str
    chunk: str | None
    text: str
    fact: str | None
    line: int


@dataclass(frozen=True)
class Unused:
    """A quote that narrowed no judgment: not found in its chunk (or in any chunk of its
    query), or, when ``repeated``, found more than once in one."""

    quote: Quote
    repeated: bool


@dataclass(frozen=True)
class Conversion:
    """What :func:`to_spans` made of the chunk judgments.

    - ``judgments`` chunk judgments of ``queries`` queries; ``narrowed`` of them became their
      located quotes, ``snapped`` quotes grew to whole sentences or paragraphs;
    - ``chunk_wide`` stayed the chunk's range: ``not_found`` with quotes none of which is in
      the chunk, ``ambiguous`` with a quote found more than once (and none found once),
      ``no_evidence`` without a quote;
    - ``spans``: the span judgments, (query, span) in output order; ``cut``: how many of them
      begin and end on the chunk table's boundaries, and are exactly its chunks;
    - ``quotes``: evidence lines read, ``unused`` those that narrowed nothing;
    - ``lost``: (query, fact) labelled on a judgment or a quote and on no span;
    - ``snap``: the unit quotes were snapped to, if any.
    """

    judgments: int
    queries: int
    narrowed: int
    snapped: int
    not_found: int
    ambiguous: int
    no_evidence: int
    spans: tuple[tuple[str, Span], ...]
    cut: Cut
    quotes: int = 0
    unused: tuple[Unused, ...] = ()
    lost: tuple[tuple[str, str], ...] = ()
    snap: str | None = None

    @property
    def chunk_wide(self) -> int:
        return self.not_found + self.ambiguous + self.no_evidence


@dataclass(frozen=True)
class _Judged:
    """A chunk judgment placed in its document: query, chunk id, grade, fact, document and
    the chunk's range."""

    query: str
    chunk: str
    grade: int
    fact: str | None
    doc: str
    start: int
    end: int


@dataclass
class _Tally:
    narrowed: int = 0
    snapped: int = 0
    not_found: int = 0
    ambiguous: int = 0
    no_evidence: int = 0
    found: dict[int, int] = field(default_factory=dict)  # quote line → 1 located somewhere,
    # else 2 when found more than once in a chunk, else 0


def write_spans(output: str | os.PathLike[str], qrels: Source, chunks: Source, corpus: Source,
                evidence: Source | None = None, snap: str | None = None,
                qrels_format: str | None = None) -> Conversion:
    """:func:`to_spans`, written to ``output`` (atomically) as :func:`spans_text`. InputError
    when ``output`` names one of the inputs."""
    require_new(output, [f for f in (qrels, chunks, corpus, evidence) if f is not None],
                "conversion", "the span judgments")
    done = to_spans(qrels, chunks, corpus, evidence, snap, qrels_format)
    write_text_atomic(output, spans_text(done))
    return done


def to_spans(qrels: Source, chunks: Source, corpus: Source, evidence: Source | None = None,
             snap: str | None = None, qrels_format: str | None = None) -> Conversion:
    """The span judgments of the chunk judgments ``qrels`` (see the module docstring), placed
    by the chunk table ``chunks`` in the ``corpus``, narrowed to the quotes of ``evidence``
    and, with ``snap`` (``sentence`` or ``paragraph``), grown to whole ones. InputError (exit
    2), naming the file and line, for span judgments, a judged chunk missing from the chunk
    table, outside the corpus or its document's text, and an evidence line that is malformed
    or names a query or chunk without a judgment."""
    if snap is not None and snap not in SNAPS:
        raise InputError("--snap", f"unknown unit '{_shown(snap)}'",
                         f"use one of {', '.join(SNAPS)}")
    qrels_blob = source_blob(qrels)
    judgments = read_qrels(qrels_blob, qrels_format)
    if judgments.spans is not None:
        first = next(iter(judgments.judgments), None)
        raise InputError(judgments.source, "judges spans already (start and end)",
                         "freeze them as they are (gate snapshot freeze); to-spans reads chunk "
                         "judgments", None if first is None else judgments.where(first))
    table = read_chunk_table(chunks)
    judged = _placed(judgments, qrels_blob, table)
    texts = _texts(corpus, judged, table)
    quotes = _read_quotes(evidence, judgments) if evidence is not None else []
    tally = _Tally()
    pieces = list(_pieces(judged, texts, quotes, snap, tally))
    spans = _resolve(pieces, list(judgments.judgments))
    labelled = {(p.query, p.fact) for p in pieces if p.fact is not None}
    kept = {(q, s.fact) for q, s in spans if s.fact is not None}
    doc = np.array([s.doc.encode() for _, s in spans], dtype="S") if spans else np.zeros(0, "S1")
    cut = cut_spans(doc, np.array([s.start for _, s in spans], dtype=np.int64),
                    np.array([s.end for _, s in spans], dtype=np.int64),
                    Boundaries.of_table(table))
    unused = tuple(Unused(q, tally.found.get(q.line, 0) > 1) for q in quotes
                   if tally.found.get(q.line) != 1)
    return Conversion(len(judged), len(judgments.judgments), tally.narrowed, tally.snapped,
                      tally.not_found, tally.ambiguous, tally.no_evidence, tuple(spans), cut,
                      len(quotes), unused, tuple(sorted(labelled - kept)), snap)


LISTED = 5  # unused quotes (and lost facts) named one by one in the summary


def conversion_lines(done: Conversion, output: str | os.PathLike[str],
                     chunks: str | os.PathLike[str],
                     evidence: str | os.PathLike[str] | None) -> list[str]:
    """What a conversion did, for its user: the counts, then warnings — the first
    :data:`LISTED` quotes not used (with their line in ``evidence``) and facts lost, and the
    spans that still begin and end on the boundaries of the chunk table ``chunks``. Names and
    ids are shown visibly (:func:`~retrieval_gate.core.untrusted.visible`)."""
    made = (f"{_count(done.judgments, 'chunk judgment')} of {_count(done.queries, 'query')} → "
            f"{_count(len(done.spans), 'span')} written to {visible(display_name(output))}")
    snapped = f", {done.snapped} grown to whole {done.snap}s" if done.snap else ""
    narrowed = (f"narrowed to their evidence: {done.narrowed}{snapped}; left chunk-wide: "
                f"{done.chunk_wide} (quotes not in the chunk {done.not_found}, found more than "
                f"once {done.ambiguous}, no quote {done.no_evidence})")
    lines = [made, narrowed]
    shown_evidence = "" if evidence is None else visible(display_name(evidence))
    for unused in done.unused[:LISTED]:
        quote = unused.quote
        where = (f"chunk '{_shown(quote.chunk)}'" if quote.chunk is not None
                 else "any chunk the query judges")
        how, fix = (("occurs more than once in", "quote more of the passage") if unused.repeated
                    else ("is not in", "quote the chunk's text as written"))
        lines.append(f"warning: {shown_evidence}:{quote.line}: the quote for query "
                     f"'{_shown(quote.query)}' {how} {where} — {fix}")
    if len(done.unused) > LISTED:
        lines.append(f"warning: and {len(done.unused) - LISTED} more quotes not used")
    for query, fact in done.lost[:LISTED]:
        lines.append(f"warning: query '{_shown(query)}': fact '{_shown(fact)}' is on no span — "
                     "its text went to spans of a higher grade or of other facts")
    if len(done.lost) > LISTED:
        lines.append(f"warning: and {len(done.lost) - LISTED} more facts on no span")
    if done.cut.cut:
        lines.append(f"warning: {done.cut.cut} of {len(done.spans)} spans begin and end on chunk "
                     f"boundaries of {visible(display_name(chunks))} ({done.cut.exact} "
                     "exactly chunks): a comparison of that chunking with another favours it — "
                     "narrow them to their evidence (--evidence)")
    return lines


def _count(n: int, noun: str) -> str:
    """``1 query``, ``2 queries``, ``1,024 spans``."""
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n:,} {noun if n == 1 else plural}"


def spans_text(done: Conversion) -> str:
    """The span judgments as JSON Lines qrels, one line per span, each ending with ``\\n``."""
    lines = []
    for query, span in done.spans:
        line: dict[str, object] = {"query_id": query, "doc_id": span.doc, "start": span.start,
                                   "end": span.end, "grade": span.grade}
        if span.fact is not None:
            line["fact"] = span.fact
        lines.append(json_line(line) + "\n")
    return "".join(lines)


# -- reading ---------------------------------------------------------------------------------

def require_new(output: str | os.PathLike[str], inputs: Sequence[Source], made: str,
                written: str) -> None:
    """InputError when ``output`` is one of the ``inputs`` (it would be replaced): ``output``
    is also an input of the ``made`` (conversion, location) — write ``written`` to a new
    file."""
    target = Path(output)
    for given in inputs:
        if isinstance(given, Blob) or not target.exists():
            continue
        try:
            same = target.samefile(given)
        except OSError:
            continue
        if same:
            raise InputError(display_name(output), f"is also an input of the {made}",
                             f"write {written} to a new file")


def _placed(qrels: Qrels, blob: Blob, table: ChunkTable) -> list[_Judged]:
    """Every judgment with its chunk's document and range, in the qrels' order. InputError
    naming the judgment's line for a chunk id not in the chunk table."""
    pairs = [(q, unit, grade) for q, units in qrels.judgments.items()
             for unit, grade in units.items()]
    at = IdIndex(table.ids).find(np.array([u.encode() for _, u, _ in pairs], dtype="S")) \
        if pairs else np.zeros(0, np.int64)
    missing = np.flatnonzero(at < 0)
    if len(missing):
        qid, unit, _ = pairs[int(missing[0])]
        raise InputError(qrels.source, f"query '{_shown(qid)}' judges chunk '{_shown(unit)}', "
                         f"which is not in the chunk table {table.source}"
                         + (f" ({len(missing)} judgments name such chunks)"
                            if len(missing) > 1 else ""),
                         "give the chunk table of the judged chunking (or fix the chunk id)",
                         judgment_place(blob, qid, unit))
    docs, starts, ends = table.doc[at].tolist(), table.start[at].tolist(), table.end[at].tolist()
    return [_Judged(q, unit, grade, qrels.fact_of(q, unit), doc.decode(), start, end)
            for (q, unit, grade), doc, start, end in zip(pairs, docs, starts, ends)]


def _texts(corpus: Source, judged: list[_Judged], table: ChunkTable) -> dict[str, str]:
    """The text of every judged document. InputError for a corpus without text, and, naming
    the chunk table's line, for a judged chunk whose document is not in the corpus or whose
    range ends past its text."""
    blob = source_blob(corpus, map_from=1 << 24)
    pinned = read_corpus(blob)  # its rules: distinct ids, every text a string
    if pinned.lengths is None:
        raise InputError(blob.name, "holds no documents' text",
                         "give the corpus as JSON Lines documents with their \"text\": spans "
                         "are places in it")
    texts = document_texts(pinned, blob, {j.doc for j in judged})
    for j in judged:
        text = texts.get(j.doc)
        if text is None:
            raise InputError(table.source, f"chunk '{_shown(j.chunk)}' (judged for query "
                             f"'{_shown(j.query)}') is in document '{_shown(j.doc)}', which "
                             f"is not in the corpus {blob.name}", "give the corpus the chunks "
                             "were cut from", _chunk_line(table, j.chunk))
        if j.end > len(text):
            raise InputError(table.source, f"chunk '{_shown(j.chunk)}' at {j.start}:{j.end} "
                             f"ends past the {len(text)} characters of document "
                             f"'{_shown(j.doc)}' in {blob.name}", "give the chunk table and "
                             "the corpus of one chunking (offsets in code points, end "
                             "exclusive)", _chunk_line(table, j.chunk))
    return texts


def _chunk_line(table: ChunkTable, chunk: str) -> int | None:
    """The line of ``chunk`` in the chunk table's file, when known."""
    if table.lines is None:
        return None
    return int(table.lines[np.flatnonzero(table.ids == chunk.encode())[0]])


def _read_quotes(evidence: Source, qrels: Qrels) -> list[Quote]:
    """The evidence file's quotes, in file order. InputError naming the line for a key that
    is not one of :data:`EVIDENCE_KEYS`, an empty quote, and a query or (query, chunk) that
    the chunk judgments do not judge."""
    blob = source_blob(evidence)
    name = blob.name
    quotes = []
    for line, obj in json_lines(blob.text(), name):
        unknown = [key for key in obj if key not in EVIDENCE_KEYS]
        if unknown:
            raise InputError(name, f"unknown key '{_shown(unknown[0], 40)}'",
                             f"an evidence line holds {', '.join(EVIDENCE_KEYS[:-1])} and "
                             "optionally fact", line)
        qid = check_id(obj.get("query_id"), name, line, "query_id")
        chunk = None if obj.get("chunk_id") is None else check_id(obj["chunk_id"], name, line,
                                                                  "chunk_id")
        fact = None if obj.get("fact") is None else check_id(obj["fact"], name, line, "fact")
        text = obj.get("evidence")
        if not isinstance(text, str) or not text.strip():
            raise InputError(name, "'evidence' is missing, empty or not a string",
                             "quote the passage of the judged chunk that is the evidence",
                             line)
        units = qrels.judgments.get(qid)
        if units is None:
            raise InputError(name, f"query '{_shown(qid)}' has no chunk judgment in "
                             f"{qrels.source}", "quote evidence of judged queries only (check "
                             "the query id)", line)
        if chunk is not None and chunk not in units:
            raise InputError(name, f"query '{_shown(qid)}' does not judge chunk "
                             f"'{_shown(chunk)}' in {qrels.source}", "name a chunk the query "
                             "judges, or leave chunk_id out to look in all of them", line)
        quotes.append(Quote(qid, chunk, text, fact, line))
    return quotes


# -- narrowing -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Piece:
    """A span before overlaps are resolved."""

    query: str
    doc: str
    start: int
    end: int
    grade: int
    fact: str | None


def _pieces(judged: list[_Judged], texts: dict[str, str], quotes: list[Quote],
            snap: str | None, tally: _Tally) -> Iterator[_Piece]:
    """Each judgment's spans: its located quotes (snapped), else its chunk's range."""
    by_chunk: dict[tuple[str, str | None], list[Quote]] = {}
    for quote in quotes:
        by_chunk.setdefault((quote.query, quote.chunk), []).append(quote)
    units: dict[str, tuple[list[int], list[int]]] = {}
    for j in judged:
        text = texts[j.doc]
        mine = by_chunk.get((j.query, j.chunk), []) + by_chunk.get((j.query, None), [])
        located = []
        counts = []
        for quote in mine:
            where, count = _locate(quote.text, text, j.start, j.end)
            counts.append(count)
            seen = tally.found.get(quote.line, 0)
            tally.found[quote.line] = 1 if 1 in (seen, count) else max(seen, count)
            if where is not None:
                located.append((quote, where))
        if not located:
            if not mine:
                tally.no_evidence += 1
            elif any(c > 1 for c in counts):
                tally.ambiguous += 1
            else:
                tally.not_found += 1
            yield _Piece(j.query, j.doc, j.start, j.end, j.grade, j.fact)
            continue
        tally.narrowed += 1
        for quote, (start, end) in located:
            if snap is not None:
                if j.doc not in units:
                    units[j.doc] = _units(text, snap)
                grown = _snapped(units[j.doc], start, end)
                tally.snapped += grown != (start, end)
                start, end = grown
            yield _Piece(j.query, j.doc, start, end, j.grade,
                         quote.fact if quote.fact is not None else j.fact)


def _locate(quote: str, text: str, start: int, end: int) -> tuple[tuple[int, int] | None, int]:
    """Where ``quote`` occurs in ``text[start:end]`` — exactly, else with white space read
    loosely — and how often at the first of the two that finds it (0, 1, or 2 for more than
    once); the place only when it occurs once."""
    first = text.find(quote, start, end)
    if first >= 0:
        again = text.find(quote, first + 1, end)
        return ((first, first + len(quote)), 1) if again < 0 else (None, 2)
    pattern = re.compile(r"\s+".join(re.escape(word) for word in quote.split()))
    hit = pattern.search(text, start, end)
    if hit is None:
        return None, 0
    if pattern.search(text, hit.start() + 1, end) is not None:
        return None, 2
    return hit.span(), 1


def _units(text: str, snap: str) -> tuple[list[int], list[int]]:
    """The starts and ends of the sentences or paragraphs of ``text`` (see the module
    docstring), in order."""
    cuts = [0, *(m.end() for m in (_SENTENCE_END if snap == "sentence" else _PARAGRAPH_END)
                 .finditer(text)), len(text)]
    starts, ends = [], []
    for a, b in itertools.pairwise(cuts):
        part = text[a:b]
        stripped = part.strip()
        if stripped:
            lead = len(part) - len(part.lstrip())
            starts.append(a + lead)
            ends.append(a + lead + len(stripped))
    return starts, ends


def _snapped(units: tuple[list[int], list[int]], start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` grown to the start of the unit holding its first character and the
    end of the unit holding its last."""
    starts, ends = units
    first = bisect_right(ends, start)  # the first unit ending after start
    if first < len(starts) and starts[first] <= start:
        start = starts[first]
    last = bisect_left(starts, end) - 1  # the last unit starting before end
    if last >= 0 and ends[last] >= end:
        end = ends[last]
    return start, end


# -- overlaps --------------------------------------------------------------------------------

def _resolve(pieces: list[_Piece], order: list[str]) -> list[tuple[str, Span]]:
    """The spans of the pieces without overlaps (see the module docstring): queries in
    ``order``, each one's spans by document, then start."""
    grouped: dict[tuple[str, str], list[_Piece]] = {}
    for piece in pieces:
        grouped.setdefault((piece.query, piece.doc), []).append(piece)
    position = {q: i for i, q in enumerate(order)}
    out: list[tuple[str, Span]] = []
    for (query, doc) in sorted(grouped, key=lambda key: (position[key[0]], key[1].encode())):
        out.extend((query, span) for span in _apart(doc, grouped[(query, doc)]))
    return out


def _priority(piece: _Piece) -> tuple[int, int, int, bool, str]:
    """Which piece a character goes to: the smallest of these."""
    return (-piece.grade, piece.end - piece.start, piece.start, piece.fact is None,
            piece.fact or "")


def _apart(doc: str, pieces: list[_Piece]) -> list[Span]:
    """The pieces of one query in one document as spans that do not overlap: a sweep over
    the pieces' ends, the winner of each stretch from a heap (ended pieces leave it when they
    reach its top)."""
    pieces = sorted(pieces, key=lambda p: p.start)
    bounds = sorted({p.start for p in pieces} | {p.end for p in pieces})
    heap: list[tuple[tuple[int, int, int, bool, str], int]] = []
    spans: list[Span] = []
    i = 0
    for x, y in itertools.pairwise(bounds):
        while i < len(pieces) and pieces[i].start <= x:
            heapq.heappush(heap, (_priority(pieces[i]), i))
            i += 1
        while heap and pieces[heap[0][1]].end <= x:
            heapq.heappop(heap)
        if not heap:
            continue
        top = pieces[heap[0][1]]
        last = spans[-1] if spans else None
        if last is not None and last.end == x and (last.grade, last.fact) == (top.grade,
                                                                              top.fact):
            spans[-1] = Span(doc, last.start, y, last.grade, last.fact)
        else:
            spans.append(Span(doc, x, y, top.grade, top.fact))
    return spans
