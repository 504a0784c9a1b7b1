"""Haystack's ``InMemoryBM25Retriever`` (its document store's BM25L, words of ``\\w+``
lowercased) over the chunks, as a component and in a pipeline: ``gate run --retriever
examples.pydoc.retrievers.haystack_bm25:retriever`` (or ``:pipeline``). Each ``Document``'s id
is its chunk id; its meta holds the span gate run reads (``doc_id``, ``start``, ``end``)."""

from __future__ import annotations

import os

# Haystack sends usage statistics unless told not to (read when it is imported, below);
# this example calls no service.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

from .chunks import DEPTH, chunks

store = InMemoryDocumentStore()
store.write_documents([Document(id=chunk.id, content=chunk.text, meta=chunk.place)
                       for chunk in chunks()])
retriever = InMemoryBM25Retriever(document_store=store, top_k=DEPTH)
pipeline = Pipeline()
pipeline.add_component("bm25", InMemoryBM25Retriever(document_store=store, top_k=DEPTH))
