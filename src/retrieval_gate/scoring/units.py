"""Which evidence unit a snapshot's judgments are about — chosen out loud, or refused.

The unit decides what a re-chunked run means, so it is never guessed in silence. For
judgments by id (documents or chunks) without ``--unit``:

- ``--chunking-version`` given → ``chunk``: the version names the chunking of the judged ids.
- A chunk table given (``--chunks``) whose ids include judged ids → refused: those are chunk
  ids, and the unit must be said.
- A corpus given: every judged id a document of it → ``document``. Judged ids outside it that
  look like chunk ids — the part before a separator (``#``, ``::``, ``|``, ``/``, ``:``,
  ``_``, ``-``, ``.``) is a corpus document, as ``assert#3`` is of ``assert`` → refused.
  Other judged ids outside it → refused: they name no document of the corpus (see
  :func:`judged_outside`).
- No corpus: ids holding ``#`` (the usual chunk-id separator) in at least half of the judged
  ids → refused; else ``document``, with the reason that nothing could be checked. Such ids
  under ``--unit document`` are taken as given, and the reason says what that means.

Span judgments (``start``, ``end``) are always ``span``. Every choice comes with its reason,
in words, for ``gate snapshot freeze`` and ``gate init`` to print.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.model import ChunkTable, Corpus, Qrels
from retrieval_gate.core.ranking import IdIndex
from retrieval_gate.core.untrusted import visible
from retrieval_gate.formats import Source, judgment_place, source_blob

SEPARATORS = ("#", "::", "|", "/", ":", "_", "-", ".")
_SHOWN = 3
_NOT_DOCUMENTS = ("is not a document", "are not documents")

RECHUNKING = ("under --unit chunk (with --chunking-version V, and --chunks FILE to pin the "
              "table) only runs of this chunking are comparable: a re-chunked run is refused "
              "as not comparable; under --unit document every run item is taken for a "
              "document id, so a re-chunked run's new chunk ids would score as unjudged — to "
              "compare chunkings, turn the judgments into spans (gate qrels to-spans) and "
              "freeze those")


@dataclass(frozen=True)
class UnitChoice:
    """The evidence unit and why, in words (``unit: document — …``)."""

    unit: str
    reason: str

    def describe(self) -> str:
        return f"unit: {self.unit} — {self.reason}"


def judged_ids(qrels: Qrels) -> np.ndarray:
    """The distinct ids judged (any grade), in first-seen order, as an ``S`` array."""
    ids = dict.fromkeys(i for labels in qrels.judgments.values() for i in labels)
    return np.array([i.encode() for i in ids], dtype="S") if ids else np.array([], dtype="S1")


def choose_unit(qrels: Qrels, source: Source, *, given: str | None,
                chunking_version: str | None, corpus: Corpus | None, chunks: ChunkTable | None
                ) -> UnitChoice:
    """The unit of ``qrels`` (read from ``source``; see the module docstring); InputError
    (exit 2) when the
    judgments look like chunk ids and no unit is given, name documents the corpus lacks, or
    contradict the unit given (spans for ``span``, ids for the others)."""
    if given is not None:
        spans = qrels.spans is not None
        if (given == "span") != spans:
            raise InputError("--unit", f"is {given}, and the judgments {qrels.source} judge "
                             f"{'spans' if spans else 'ids'}", "give --unit span for judgments "
                             "with start and end, --unit document or chunk for judgments by id")
        hashed = _hashed(judged_ids(qrels))
        if given == "document" and corpus is None and hashed is not None:
            return UnitChoice(given, f"given with --unit, although {hashed} — under document "
                              "judgments a re-chunked run's new chunk ids are unjudged, and a "
                              "regression resting on them is inconclusive; to compare "
                              "chunkings, turn the judgments into spans (gate qrels to-spans)")
        return UnitChoice(given, "given with --unit")
    if qrels.spans is not None:
        return UnitChoice("span", "the judgments give start and end: spans of the corpus text")
    if chunking_version is not None:
        return UnitChoice("chunk", f"--chunking-version names the chunking "
                          f"'{chunking_version}' whose chunk ids are judged")
    ids = judged_ids(qrels)
    if chunks is not None:
        found = IdIndex(chunks.ids).find(ids) >= 0
        if found.any():
            chunk_ids = _of(int(found.sum()), len(ids), "is a chunk id", "are chunk ids")
            _refuse(qrels, f"{chunk_ids} of the chunk table {chunks.source} (e.g. "
                    f"{_named(ids[found])})")
    if corpus is not None:
        outside = ids[IdIndex(corpus.ids, keys=corpus.keys).find(ids) < 0]
        if not len(outside):
            return UnitChoice("document", f"every judged id ({len(ids)}) is a document of "
                              f"the corpus {corpus.source}")
        chunk_like = _chunk_like(outside, corpus)
        if chunk_like:
            many, example = chunk_like
            who = ("it looks" if len(outside) == 1 else "they look" if many == len(outside)
                   else f"{many} of them look")
            _refuse(qrels, f"{_of(len(outside), len(ids), *_NOT_DOCUMENTS)} of the corpus "
                    f"{corpus.source}, and {who} like chunk ids: {example}")
        raise judged_outside(qrels, source, outside, len(ids), corpus.source)
    hashed = _hashed(ids)
    if hashed is not None:
        _refuse(qrels, f"{hashed}, and no corpus file says what the documents are")
    return UnitChoice("document", "no corpus file to check the judged ids against: they are "
                      "taken for document ids (give --corpus-file to have them checked)")


def chunk_like(ids: np.ndarray) -> bool:
    """Whether at least half the judged ``ids`` (an ``S`` array, not empty) hold ``#``, the
    usual chunk-id separator."""
    return len(ids) > 0 and 2 * int((np.char.find(ids, b"#") >= 0).sum()) >= len(ids)


def _hashed(ids: np.ndarray) -> str | None:
    """When the judged ``ids`` look :func:`chunk_like`, how many hold ``#`` (``132 of the 132
    judged ids hold '#', as chunk ids do (e.g. …)``); else None."""
    if not chunk_like(ids):
        return None
    hashed = np.char.find(ids, b"#") >= 0
    return (f"{_of(int(hashed.sum()), len(ids), 'holds', 'hold')} '#', as chunk ids do (e.g. "
            f"{_named(ids[hashed])})")


def judged_outside(qrels: Qrels, source: Source, outside: np.ndarray, judged: int,
                   corpus: str) -> InputError:
    """The error for judged ids that name no document (or chunk) of the pinned ``corpus``,
    located at the first one's judgment in the qrels file ``source``."""
    first = outside[0].decode(errors="replace")
    query = next(q for q, labels in qrels.judgments.items() if first in labels)
    return InputError(qrels.source, f"{_of(len(outside), judged, 'is not', 'are not')} in "
                      f"{corpus}: {_named(outside)}", "judge documents of the pinned corpus "
                      "(or chunks of the pinned chunk table), or pin the corpus the judgments "
                      "were made on", judgment_place(source_blob(source), query, first))


def _chunk_like(outside: np.ndarray, corpus: Corpus) -> tuple[int, str] | None:
    """How many ids outside the corpus have a corpus document as their part before a
    separator (the first separator that gives any), and an example (``'assert#3'`` is
    document ``'assert'`` + ``'#3'``); None when none does."""
    index = IdIndex(corpus.ids, keys=corpus.keys)
    for separator in SEPARATORS:
        sep = separator.encode()
        cut = np.char.rpartition(outside, sep)
        held = np.char.str_len(cut[:, 1]) > 0
        if not held.any():
            continue
        heads = cut[held, 0].astype("S")
        known = index.find(heads) >= 0
        if known.any():
            i = int(np.flatnonzero(known)[0])
            name, head = outside[held][i].decode(errors="replace"), heads[i].decode(
                errors="replace")
            return int(known.sum()), (f"'{visible(name)}' is document '{visible(head)}' + "
                                      f"'{visible(name[len(head):])}'")
    return None


def _refuse(qrels: Qrels, why: str) -> None:
    raise InputError(qrels.source, f"{why} — the evidence unit is not guessed", "say which "
                     f"with --unit: {RECHUNKING}")


def _of(count: int, total: int, singular: str, plural: str) -> str:
    """``3 of the 225 judged ids are …``, the verb agreeing with ``count``."""
    if total == 1:
        return f"the judged id {singular}"
    return f"{count} of the {total} judged ids {singular if count == 1 else plural}"


def _named(ids: np.ndarray) -> str:
    shown = ", ".join(f"'{visible(i.decode(errors='replace'))}'" for i in ids[:_SHOWN].tolist())
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")
