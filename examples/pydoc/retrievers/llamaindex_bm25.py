"""LlamaIndex's ``BM25Retriever`` (``llama-index-retrievers-bm25``: bm25s, an English stemmer
and stopwords) over the chunks: ``gate run --retriever
examples.pydoc.retrievers.llamaindex_bm25:retriever``. Each node's id is its chunk id; its
span is where LlamaIndex keeps it — its source document (``ref_doc_id``) and
``start_char_idx`` … ``end_char_idx`` — so its metadata is empty (and nothing of it is
indexed)."""

from __future__ import annotations

from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.retrievers.bm25 import BM25Retriever

from .chunks import DEPTH, chunks

retriever = BM25Retriever.from_defaults(nodes=[
    TextNode(id_=chunk.id, text=chunk.text, start_char_idx=chunk.start, end_char_idx=chunk.end,
             relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=chunk.doc_id)})
    for chunk in chunks()], similarity_top_k=DEPTH)
