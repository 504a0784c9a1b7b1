"""LangChain's ``BM25Retriever`` (``rank_bm25``'s BM25Okapi, its default tokenizer
``str.split``) over the chunks: ``gate run --retriever
examples.pydoc.retrievers.langchain_bm25:retriever``. Each ``Document``'s id is its chunk id;
its metadata holds the span gate run reads (``doc_id``, ``start``, ``end``)."""

from __future__ import annotations

from langchain_community.retrievers import BM25Retriever
from langchain_core.documents import Document

from .chunks import DEPTH, chunks

retriever = BM25Retriever.from_documents(
    [Document(id=chunk.id, page_content=chunk.text, metadata=chunk.place)  # doc_id, start, end
     for chunk in chunks()], k=DEPTH)
