"""LangChain: a retriever (any ``BaseRetriever``, or any ``Runnable`` that maps a string to a
list of ``Document``\\ s — a retriever with a config bound, a chain ending in one).

Each query's text is passed to ``invoke``; with ``--batch-size N``, the texts of up to N
queries to ``batch`` (one list of Documents per query, in order). A ``Document`` is read by
:func:`~retrieval_gate.runner.library.document_hit`: its id is ``Document.id`` (or
``metadata[--id-key]``), its text ``page_content``; it carries no score, so the hits keep the
order returned and are written with the score 1/rank. What is not a list is passed on as it
is, and an item that is no Document too (an id, an ``(id, score)`` pair), for
:mod:`retrieval_gate.runner.hits` to read or refuse. The manifest records
``langchain-core``'s version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from retrieval_gate.runner.library import AdapterArgs, Native, adapted, derives_from, document_hit
from retrieval_gate.runner.target import RunnerQuery, Target


def langchain_target(obj: object, args: AdapterArgs) -> Target | None:
    """The target of a LangChain ``Runnable`` (see the module docstring); None for anything
    else."""
    if not derives_from(obj, "langchain_core.", ("Runnable",)):
        return None
    runnable: Any = obj

    def search(queries: Sequence[RunnerQuery]) -> list[Any]:
        if args.batch_size is None:
            results = [runnable.invoke(queries[0].text)]
        else:
            results = runnable.batch([query.text for query in queries])
        if not isinstance(results, list) or len(results) != len(queries):
            return results  # refused by the runner: not one ranking per query
        return [_ranking(result, args, query) for result, query in zip(results, queries)]

    return adapted(args, search, "langchain-core")


def _ranking(result: Any, args: AdapterArgs, query: RunnerQuery) -> Any:
    """One query's hits: each Document as a hit dict, anything else as it is."""
    if not isinstance(result, (list, tuple)):
        return result
    return [document_hit(Native(getattr(item, "id", None), None, item.page_content,
                                item.metadata), args, query, rank, "Document.id")
            if _is_document(item) else item for rank, item in enumerate(result, 1)]


def _is_document(item: Any) -> bool:
    """Whether ``item`` is a LangChain Document (it has ``page_content`` and ``metadata``)."""
    return hasattr(item, "page_content") and hasattr(item, "metadata")
