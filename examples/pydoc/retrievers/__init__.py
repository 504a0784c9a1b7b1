"""BM25 retrievers of three libraries over the pydoc example's 300-token chunks, for ``gate
run --retriever examples.pydoc.retrievers.MODULE:retriever`` (see ``../README.md``)."""
