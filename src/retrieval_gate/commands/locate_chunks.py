"""``gate chunks locate``: a chunk table with each chunk's place, from one with its text only.

A chunk table gives each chunk's place in its document — ``start`` and ``end``, code points,
end exclusive (:mod:`retrieval_gate.formats.corpus`) —, which the gate needs to place a chunk's
items and spans. Most splitters keep only the chunk's text (LangChain's text splitters without
``add_start_index``, LlamaIndex's node parsers when ``start_char_idx`` is not kept, a plain
whitespace chunker). This command finds each chunk in its document's text and writes the
table the gate reads.

**Input.** JSON Lines, one chunk a line, in the order the splitter emitted them:
``{"id": "doc#0", "doc_id": "doc", "text": "the chunk's text", "tokens": 212}`` — ``tokens``
optional, other keys ignored; ids distinct, each a non-empty string; ``text`` a string with
something besides white space. The corpus: JSON Lines documents with their ``text``.

**Locating a chunk** in its document, in table order: splitters cut a document from its
start to its end, so a chunk starts where the previous chunk of its document starts or later,
and ends after it ends, overlapping it or following it with only white space between (a
separator dropped). Its text is looked for as written, and with white space read loosely (its words,
split at white space, in order, any run of white space between them: a splitter that joined
lines with a space, or stripped them); counted *exact* or *loose* accordingly. The first chunk
of a document is its text's first occurrence. A later one is the one occurrence that overlaps
or follows the previous chunk; found at several such places (a passage repeated within a
chunk's length) it is *ambiguous*; found at none, the first occurrence further on (after
text the splitter dropped). A chunk whose text the document holds only before that point is
*out of order* (a table not in the splitter's order); one whose text it does not hold, or
whose document is not in the corpus, *absent*. Case, accents and quotation marks are compared
as written. The search for a chunk starts where the previous one of its document started: a
document is read about once per overlap, not once per chunk.

**Output.** The table with ``id``, ``doc_id``, ``start``, ``end`` and ``tokens`` (when given),
in the input's order, written whole or not at all (a temporary file renamed). Any absent,
ambiguous or out-of-order chunk refuses the conversion (exit 2), naming the first ones with
their lines and counts: a table with a wrong place would misplace every span it covers.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from retrieval_gate.commands.to_spans import require_new
from retrieval_gate.core.errors import InputError
from retrieval_gate.core.untrusted import capped
from retrieval_gate.formats import Source, source_blob
from retrieval_gate.formats.atomic import write_text_atomic
from retrieval_gate.formats.corpus import document_texts, read_corpus
from retrieval_gate.formats.jsonfmt import check_id, json_lines, whole_number

SHOWN = 3  # unplaced chunks named in the refusal


@dataclass
class Located:
    """What a location found: the table's lines (with places), and how each chunk was
    found — ``exact``, or ``loose`` (white space read loosely) — over ``documents``
    documents."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    exact: int = 0
    loose: int = 0
    documents: int = 0


@dataclass(frozen=True)
class _Chunk:
    id: str
    doc: str
    text: str
    tokens: int | None
    line: int


def write_located(output: str | os.PathLike[str], chunks: Source, corpus: Source) -> Located:
    """:func:`locate`, written to ``output`` atomically. InputError when ``output`` is one of
    the inputs (it would be replaced)."""
    require_new(output, (chunks, corpus), "location", "the located table")
    done = locate(chunks, corpus)
    write_text_atomic(output, "".join(json.dumps(line, ensure_ascii=False) + "\n"
                                      for line in done.lines))
    return done


def locate(chunks: Source, corpus: Source) -> Located:
    """Every chunk of the table ``chunks`` (text, no place) located in its document of
    ``corpus`` (see the module docstring). InputError (exit 2) naming the line of a malformed
    chunk, and the first chunks that cannot be placed."""
    name, table = _read(chunks)
    corpus_blob = source_blob(corpus, map_from=1 << 24)
    pinned = read_corpus(corpus_blob)
    if pinned.lengths is None:
        raise InputError(corpus_blob.name, "has no text (a list of document ids): a chunk is "
                         "found in its document's text", "give the corpus as JSON Lines "
                         'documents with their "text"')
    texts = document_texts(pinned, corpus_blob, {c.doc for c in table})
    done = Located(documents=len({c.doc for c in table}))
    previous: dict[str, tuple[int, int]] = {}  # per document: the last chunk's place
    unplaced: list[tuple[_Chunk, str]] = []
    for chunk in table:
        text = texts.get(chunk.doc)
        place, how = (None, "absent: its document is not in the corpus") \
            if text is None else _place(chunk.text, text, previous.get(chunk.doc))
        if place is None:
            unplaced.append((chunk, how))
            continue
        previous[chunk.doc] = place
        setattr(done, how, getattr(done, how) + 1)
        line: dict[str, Any] = {"id": chunk.id, "doc_id": chunk.doc, "start": place[0],
                                "end": place[1]}
        if chunk.tokens is not None:
            line["tokens"] = chunk.tokens
        done.lines.append(line)
    if unplaced:
        _refuse(unplaced, name, len(table))
    return done


def _read(chunks: Source) -> tuple[str, list[_Chunk]]:
    """The table's name and its chunks, in order (InputError naming a malformed line)."""
    blob = source_blob(chunks, map_from=1 << 24)
    name = blob.name
    read: list[_Chunk] = []
    seen: dict[str, int] = {}
    for number, obj in json_lines(blob.text(), name):
        if not isinstance(obj, dict):
            raise InputError(name, "a chunk is a JSON object", 'write {"id": ..., "doc_id": '
                             '..., "text": ...}', number)
        ident = check_id(obj.get("id"), name, number, "id")
        doc = check_id(obj.get("doc_id"), name, number, "doc_id")
        text = obj.get("text")
        if "start" in obj and "end" in obj and text is None:
            raise InputError(name, f"chunk '{capped(ident, 80)}' has its place already (start, "
                             "end): the file is a chunk table", "give it to --chunks as it "
                             "is; gate chunks locate reads chunks with their text", number)
        if not isinstance(text, str) or not text.strip():
            raise InputError(name, f"chunk '{capped(ident, 80)}' has no text", "give each "
                             "chunk's text as the splitter cut it", number)
        if ident in seen:
            raise InputError(name, f"chunk '{capped(ident, 80)}' is listed twice (also line "
                             f"{seen[ident]})", "list each chunk once", number)
        seen[ident] = number
        tokens = obj.get("tokens")
        read.append(_Chunk(ident, doc, text, None if tokens is None else
                           whole_number(tokens, "tokens", name, number), number))
    return name, read


_SPACE = re.compile(r"\s*")
_ABSENT = "absent: its text is not in its document, even with white space read loosely"
_AMBIGUOUS = ("ambiguous: its text is found at several places that overlap or follow the "
              "previous chunk of the table (a repeated passage)")
_OUT_OF_ORDER = ("out of order: its document holds its text only before the previous chunk "
                 "of the table ends")


def _place(chunk: str, text: str, previous: tuple[int, int] | None
           ) -> tuple[tuple[int, int] | None, str]:
    """Where ``chunk`` lies in ``text`` after the ``previous`` chunk of its document (its
    place; None for the first), and how it was found (a :class:`Located` counter), or None
    and why not (see the module docstring). As written is looked for first, with
    ``str.find`` in a window a little longer than the chunk past the previous one's end —
    so that a chunk costs its own length, not the rest of its document —; the loose pattern,
    which costs a compilation, only when that finds nothing."""
    if previous is None:
        place = _first(chunk, text, 0, len(text))
        return (None, _ABSENT) if place is None else (place[:2], place[2])
    first, past = previous
    space = _SPACE.match(text, past)
    limit = past if space is None else space.end()  # the last start that follows it
    near = [place for place in _exact(chunk, text, first, limit + 1)
            if place[1] > past]
    if not near:
        window = min(len(text), limit + 2 * len(chunk) + 256)
        near = [place for place in _loose(chunk, text, first, window)
                if place[1] > past and place[0] <= limit]
    if len(near) > 1:
        return None, _AMBIGUOUS
    if near:
        return near[0][:2], near[0][2]
    later = _first(chunk, text, first, len(text), past)
    if later is not None:  # after text the splitter dropped (a separator)
        return later[:2], later[2]
    return None, (_OUT_OF_ORDER if _first(chunk, text, 0, len(text)) is not None
                  else _ABSENT)


Place = tuple[int, int, str]


def _first(chunk: str, text: str, first: int, end: int, past: int = -1) -> Place | None:
    """The first place of ``chunk`` in ``text[first:end]`` that ends after ``past``: as
    written, else read loosely."""
    return next((p for p in _exact(chunk, text, first, end) if p[1] > past), None) or next(
        (p for p in _loose(chunk, text, first, end) if p[1] > past), None)


def _exact(chunk: str, text: str, first: int, end: int) -> Iterator[Place]:
    """Every place of ``chunk`` as written in ``text`` starting in ``[first, end)``, in
    order (overlapping ones too)."""
    position = text.find(chunk, first, end - 1 + len(chunk))
    while position >= 0:
        yield position, position + len(chunk), "exact"
        position = text.find(chunk, position + 1, end - 1 + len(chunk))


def _loose(chunk: str, text: str, first: int, end: int) -> Iterator[Place]:
    """Every place of ``chunk``'s words, with any run of white space between them, in
    ``text[first:end]``, in order (overlapping ones too)."""
    loose = re.compile(r"\s+".join(re.escape(word) for word in chunk.split()))
    position = first
    while (hit := loose.search(text, position, end)) is not None:
        yield hit.start(), hit.end(), "loose"
        position = hit.start() + 1


def _refuse(unplaced: list[tuple[_Chunk, str]], name: str, total: int) -> None:
    """InputError naming the first chunks that could not be placed, and their count."""
    kinds = [why.split(":")[0] for _, why in unplaced]
    counted = ", ".join(f"{kinds.count(kind)} {kind}" for kind in ("absent", "ambiguous",
                                                                   "out of order"))
    named = "; ".join(f"'{capped(c.id, 80)}' (line {c.line}) of '{capped(c.doc, 80)}' is {why}"
                      for c, why in unplaced[:SHOWN])
    raise InputError(name, f"{len(unplaced)} of {total} chunks cannot be placed ({counted}): "
                     f"{named}", "give each "
                     "chunk's text as the splitter cut it from the corpus's documents, in the "
                     "order it cut them, or its offsets (start, end) from the splitter itself",
                     unplaced[0][0].line)
