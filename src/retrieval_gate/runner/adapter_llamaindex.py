"""LlamaIndex: a retriever (any ``BaseRetriever`` of ``llama_index``: ``index.as_retriever()``,
``BM25Retriever``, a fusion retriever, ...).

Each query's text is passed to ``retrieve``, one query per call (LlamaIndex has no batch
call: ``--batch-size`` is refused; ``--concurrency`` makes calls at once). Each
``NodeWithScore`` is read by :func:`~retrieval_gate.runner.library.document_hit`: its id is
``node.node_id`` (or ``node.metadata[--id-key]``), its score ``score`` (None: no score), its
text ``node.get_content()``; its document ``node.ref_doc_id`` and its place
``node.start_char_idx`` … ``node.end_char_idx`` when the metadata holds no ``doc_id``,
``start``, ``end``. What is not a list is passed on as it is, and an item that is no
``NodeWithScore`` too, for :mod:`retrieval_gate.runner.hits` to read or refuse. The manifest
records ``llama-index-core``'s version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from retrieval_gate.runner.library import AdapterArgs, Native, adapted, derives_from, document_hit
from retrieval_gate.runner.target import RunnerQuery, Target


def llamaindex_target(obj: object, args: AdapterArgs) -> Target | None:
    """The target of a LlamaIndex retriever (see the module docstring); None for anything
    else."""
    if not derives_from(obj, "llama_index.", ("BaseRetriever",)):
        return None
    retriever: Any = obj

    def search(queries: Sequence[RunnerQuery]) -> list[Any]:
        query = queries[0]
        result = retriever.retrieve(query.text)
        if not isinstance(result, (list, tuple)):
            return [result]
        return [[_hit(item, args, query, rank) for rank, item in enumerate(result, 1)]]

    return adapted(args, search, "llama-index-core", "a LlamaIndex retriever (retrieve)")


def _hit(item: Any, args: AdapterArgs, query: RunnerQuery, rank: int) -> Any:
    """A ``NodeWithScore`` as a hit dict; anything else as it is."""
    node = getattr(item, "node", None)
    if node is None or not hasattr(node, "node_id"):
        return item
    return document_hit(Native(node.node_id, getattr(item, "score", None), node.get_content(),
                               getattr(node, "metadata", None), getattr(node, "ref_doc_id", None),
                               getattr(node, "start_char_idx", None),
                               getattr(node, "end_char_idx", None)),
                        args, query, rank, "node.node_id")
