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

**Locating a chunk** in its document: first its text exactly as written; where it does not
occur so, with white space read loosely — its words, split at white space, in order, any run of
white space between them (a splitter that joined lines with a space, or stripped them) — as
``gate qrels to-spans`` locates quotes. A text found once is *located*. A text found more than
once in its document (a repeated passage) is placed at its first occurrence that starts after
the previous chunk of the same document (in table order) starts — the order splitters cut a
document in, overlapping or not — counted as *placed by order*; when none starts after it, the
chunk is *ambiguous*. A text not found is *absent*, as is a chunk whose document is not in the
corpus. Case, accents and quotation marks are compared as written.

**Output.** The table with ``id``, ``doc_id``, ``start``, ``end`` and ``tokens`` (when given),
in the input's order, written whole or not at all (a temporary file renamed). Any absent or
ambiguous chunk refuses the conversion (exit 2), naming the first ones with their lines and
counts: a table with a wrong place would misplace every span it covers.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.untrusted import capped
from retrieval_gate.formats import Source, source_blob
from retrieval_gate.formats.atomic import write_text_atomic
from retrieval_gate.formats.corpus import document_texts, read_corpus
from retrieval_gate.formats.jsonfmt import check_id, json_lines, whole_number
from retrieval_gate.formats.source import display_name

SHOWN = 3  # unplaced chunks named in the refusal


@dataclass
class Located:
    """What a location found: the table's lines (with places), and how each chunk was
    placed — ``exact``, ``loose`` (white space read loosely), ``by_order`` (a repeated text
    placed by the table's order) — over ``documents`` documents."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    exact: int = 0
    loose: int = 0
    by_order: int = 0
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
    for given in (chunks, corpus):
        if isinstance(given, (str, os.PathLike)) and os.path.exists(output) and \
                os.path.samefile(output, given):
            raise InputError(display_name(output), "is also an input of the location",
                             "write the located table to a new file")
    done = locate(chunks, corpus)
    write_text_atomic(output, "".join(json.dumps(line, ensure_ascii=False) + "\n"
                                      for line in done.lines))
    return done


def locate(chunks: Source, corpus: Source) -> Located:
    """Every chunk of the table ``chunks`` (text, no place) located in its document of
    ``corpus`` (see the module docstring). InputError (exit 2) naming the line of a malformed
    chunk, and the first absent or ambiguous chunks."""
    name, table = _read(chunks)
    corpus_blob = source_blob(corpus, map_from=1 << 24)
    texts = document_texts(read_corpus(corpus_blob), corpus_blob, {c.doc for c in table})
    done = Located(documents=len({c.doc for c in table}))
    cursor: dict[str, int] = {}  # per document: where the next chunk may start
    unplaced: list[tuple[_Chunk, str]] = []
    for chunk in table:
        text = texts.get(chunk.doc)
        place, how = (None, "absent: its document is not in the corpus (or has no text)") \
            if text is None else _place(chunk.text, text, cursor.get(chunk.doc, 0))
        if place is None:
            unplaced.append((chunk, how))
            continue
        cursor[chunk.doc] = place[0] + 1
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


_AMBIGUOUS = ("ambiguous: its text is found more than once in its document, none after the "
              "previous chunk's start")
_ABSENT = "absent: its text is not in its document, even with white space read loosely"


def _place(chunk: str, text: str, cursor: int) -> tuple[tuple[int, int] | None, str]:
    """Where ``chunk`` lies in ``text`` and how it was placed (a :class:`Located` counter),
    or None and why not (see the module docstring); ``cursor``: where the document's next
    chunk may start."""
    exact = re.compile(re.escape(chunk))
    loose = re.compile(r"\s+".join(re.escape(word) for word in chunk.split()))
    for pattern, how in ((exact, "exact"), (loose, "loose")):
        first = pattern.search(text)
        if first is None:
            continue
        if pattern.search(text, first.start() + 1) is None:
            return first.span(), how
        after = pattern.search(text, cursor)
        return (after.span(), "by_order") if after is not None else (None, _AMBIGUOUS)
    return None, _ABSENT


def _refuse(unplaced: list[tuple[_Chunk, str]], name: str, total: int) -> None:
    """InputError naming the first chunks that could not be placed, and their count."""
    absent = sum(why.startswith("absent") for _, why in unplaced)
    named = "; ".join(f"'{capped(c.id, 80)}' (line {c.line}) of '{capped(c.doc, 80)}' is {why}"
                      for c, why in unplaced[:SHOWN])
    raise InputError(name, f"{len(unplaced)} of {total} chunks cannot be placed ({absent} "
                     f"absent, {len(unplaced) - absent} ambiguous): {named}", "give each "
                     "chunk's text as the splitter cut it from the corpus's documents, in the "
                     "order it cut them, or its offsets (start, end) from the splitter itself",
                     unplaced[0][0].line)
