"""What the library adapters share: how an adapter is asked, the target it returns, and how one
of a library's documents becomes a hit.

**Recognising an object** (:func:`derives_from`): by the names of the classes it derives from
(``langchain_core``'s ``Runnable``, ``llama_index``'s ``BaseRetriever``, ...), read from its
type's method resolution order — no library is imported, so an object of the user's own class
that merely has a ``run`` or ``retrieve`` method is not taken for a library's.

**A document as a hit** (:func:`document_hit`), a dict that
:func:`retrieval_gate.runner.hits.rankings_of` reads:

- ``id``: the document's own id (LangChain ``Document.id``, LlamaIndex ``node_id``, Haystack
  ``Document.id``), or with ``--id-key KEY`` the value of that key of its metadata;
- ``score`` when the document carries one (a LangChain ``Document`` carries none: the hits
  then keep the order returned, each written with the score 1/rank);
- on a ``span`` snapshot, ``doc_id``, ``start`` and ``end`` — the metadata keys of those names,
  else the library's own fields where it has them (LlamaIndex: ``ref_doc_id``,
  ``start_char_idx``, ``end_char_idx``); on a ``document`` snapshot, ``doc_id`` when one is
  found and differs from the id (a chunk, collapsed to its document); on a ``chunk`` snapshot,
  the id alone; on a ``document`` or ``span`` snapshot when a chunk table places the hits
  (``gate run --chunks``), the id, with its ``doc_id`` and place where they are found
  (checked against the table's);
- ``text``, the document's text, when it has one (ignored by the checks).

What is missing is refused here, naming the query, the hit and where it was looked for: no id
(no own id, or no ``--id-key`` key), no place on a span snapshot. What is wrong with what was
found — an id that is not a non-empty string, twice in a ranking, or outside the snapshot — is
refused by :mod:`retrieval_gate.runner.hits`, as for every target.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.runner.hits import shown
from retrieval_gate.runner.target import HitsRefused, RunnerQuery, package_of

PLACE_KEYS = ("doc_id", "start", "end")  # the metadata keys of a hit's document and place


@dataclass(frozen=True)
class AdapterArgs:
    """What an adapter is told besides the object: the target's ``identity`` (what the journal
    and manifest record), the ``module`` that defines it (its distribution is recorded), the
    ``batch_size`` asked (None: one query per call), ``id_key`` (the metadata key of the hits'
    ids; None: the documents' own ids), the snapshot's evidence ``unit``, and ``placed``:
    whether a chunk table places the hits (``gate run --chunks``)."""

    identity: str
    module: str
    batch_size: int | None
    id_key: str | None
    unit: str
    placed: bool = False


@dataclass(frozen=True)
class LibraryTarget:
    """A :class:`~retrieval_gate.runner.target.Target` made by an adapter: ``search(queries)``
    gives one result per query (lists of hit dicts, or what the library returned when that is
    no list of documents, for :mod:`~retrieval_gate.runner.hits` to refuse), ``library`` the
    adapted library's distribution and version."""

    identity: str
    search: Callable[[Sequence[RunnerQuery]], list[Any]]
    batch_size: int | None
    package: tuple[str, str] | None
    library: tuple[str, str] | None
    is_async: bool = False

    def call(self, queries: Sequence[RunnerQuery]) -> list[Any]:
        return self.search(queries)


def adapted(args: AdapterArgs, search: Callable[[Sequence[RunnerQuery]], list[Any]],
            distribution: str, one_by_one: str | None = None) -> LibraryTarget:
    """The target of an adapted object: ``search`` with what ``args`` says, and the installed
    version of ``distribution``, the library (None when it is not installed as one). A library
    without a batch call gives ``one_by_one``, what it answers with one query per call (``"a
    LlamaIndex retriever (retrieve)"``): ``--batch-size`` is then refused, naming it."""
    from importlib import metadata

    if one_by_one is not None and args.batch_size is not None:
        raise InputError("--batch-size", f"{one_by_one} answers one query per call",
                         "leave out --batch-size (use --concurrency for calls at once)")
    try:
        library: tuple[str, str] | None = (distribution, metadata.version(distribution))
    except metadata.PackageNotFoundError:
        library = None
    return LibraryTarget(args.identity, search, args.batch_size, package_of(args.module),
                         library)


def derives_from(obj: object, module: str, names: tuple[str, ...]) -> bool:
    """Whether a class that ``obj``'s type derives from (itself included) is named one of
    ``names`` and defined in a module under ``module`` (``"langchain_core."``)."""
    return any(getattr(cls, "__name__", None) in names
               and str(getattr(cls, "__module__", "")).startswith(module)
               for cls in type(obj).__mro__)


@dataclass(frozen=True)
class Native:
    """What a library's document carries of itself: its ``id``, ``score``, ``text`` and
    metadata (``meta``), and the document and place the library records, when it does
    (``doc_id``, ``start``, ``end``)."""

    id: Any
    score: Any
    text: Any
    meta: Any
    doc_id: Any = None
    start: Any = None
    end: Any = None


def document_hit(native: Native, args: AdapterArgs, query: RunnerQuery, rank: int,
                 own_id: str) -> dict[str, Any]:
    """The hit of one document at ``rank`` (see the module docstring); ``own_id`` names where
    the document's own id is read (``Document.id``), for messages. HitsRefused for what is
    missing."""
    meta = native.meta if isinstance(native.meta, Mapping) else {}
    hit: dict[str, Any] = {}
    if args.id_key is not None:
        if args.id_key not in meta:
            _missing(args, query, native, rank, f"has no metadata key {shown(args.id_key)} "
                     "(--id-key)", "put each document's id under that key of its metadata, "
                     f"or leave out --id-key to read {own_id}")
        hit["id"] = meta[args.id_key]
    elif native.id is not None:
        hit["id"] = native.id
    if native.score is not None:
        hit["score"] = native.score
    hit.update(_whereabouts(native, meta, hit, args, query, rank, own_id))
    if isinstance(native.text, str):
        hit["text"] = native.text
    return hit


def _whereabouts(native: Native, meta: Mapping[str, Any], hit: Mapping[str, Any],
                 args: AdapterArgs, query: RunnerQuery, rank: int, own_id: str
                 ) -> dict[str, Any]:
    """What ``hit`` (its id, when it has one, as read) carries beside its id, by the
    snapshot's unit (see the module docstring): its ``doc_id`` and place; HitsRefused for a
    span without its place, or a hit without the id its unit needs."""
    doc_id = meta.get("doc_id", native.doc_id)
    place = [doc_id, meta.get("start", native.start), meta.get("end", native.end)]
    named = "id" in hit
    if named and args.unit == "chunk":
        return {}  # the id alone: a chunk of the judged chunking
    if named and args.placed:  # what it gives is checked against the table's
        if all(value is not None for value in place):
            return dict(zip(PLACE_KEYS, place))
        return {} if doc_id is None else {"doc_id": doc_id}
    if args.unit == "span" and not args.placed:
        if any(value is None for value in place):
            _missing(args, query, native, rank, "has no doc_id, start and end: the snapshot "
                     "judges spans", "put them in each document's metadata (doc_id, and "
                     "start and end: code points into its text, end exclusive), or give the "
                     "chunk table that places the ids (--chunks)")
        return dict(zip(PLACE_KEYS, place))
    if not named:
        _missing(args, query, native, rank, f"has no id ({own_id} is None)", "give every "
                 "document an id, or name the metadata key that holds it with --id-key KEY")
    if args.unit == "document" and doc_id is not None and doc_id != hit["id"]:
        return {"doc_id": doc_id}
    return {}


def _missing(args: AdapterArgs, query: RunnerQuery, native: Native, rank: int, problem: str,
             fix: str) -> None:
    """Raise the HitsRefused of a document that lacks what its hit needs."""
    seen = {"id": native.id, "metadata": native.meta, "text": native.text}
    raise HitsRefused(args.identity, f"query {shown(query.id)} returned {shown(seen)} at hit "
                      f"{rank}, which {problem}", fix)
