"""Adapters: a library's retriever object, turned into a
:class:`~retrieval_gate.runner.target.Target`.

An adapter is a function ``(obj, args) -> Target | None``
(:class:`~retrieval_gate.runner.library.AdapterArgs`: the target's identity and module, the
batch size, ``--id-key`` and the snapshot's evidence unit): it recognises ``obj`` by the
library classes it derives from (read by name: this package imports none of the libraries) and
returns a Target whose ``call(queries)`` gives one result per query in a form
:func:`retrieval_gate.runner.hits.rankings_of` reads — dicts with ``id``, ``score`` when the
library gives one, ``doc_id``, ``start`` and ``end`` when the evidence unit needs them, and
``text`` (see :func:`~retrieval_gate.runner.library.document_hit`) — or None when ``obj`` is not
its kind. :func:`retrieval_gate.runner.target.load_target` asks each adapter of
:data:`ADAPTERS` in order, for a ``module:attribute`` target and for an object given to the
library call alike, before it takes ``obj`` for a plain callable.

Registered, in the order asked:

- :mod:`~retrieval_gate.runner.adapter_langchain` — a LangChain ``BaseRetriever`` (any
  ``Runnable``): ``invoke``, or ``batch`` with ``--batch-size``; Documents keep their order;
- :mod:`~retrieval_gate.runner.adapter_llamaindex` — a LlamaIndex retriever: ``retrieve``,
  ``NodeWithScore`` with its score, ``ref_doc_id`` and character offsets;
- :mod:`~retrieval_gate.runner.adapter_haystack` — a Haystack 2 component or pipeline:
  ``run(query=...)``, its ``documents``.

Each records the version of its library (``langchain-core``, ``llama-index-core``,
``haystack-ai``) as the target's ``library``, which the run manifest and the journal carry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from retrieval_gate.runner.adapter_haystack import haystack_target
from retrieval_gate.runner.adapter_langchain import langchain_target
from retrieval_gate.runner.adapter_llamaindex import llamaindex_target

if TYPE_CHECKING:
    from retrieval_gate.runner.library import AdapterArgs
    from retrieval_gate.runner.target import Target

Adapter = Callable[[object, "AdapterArgs"], "Target | None"]

ADAPTERS: tuple[Adapter, ...] = (langchain_target, llamaindex_target, haystack_target)
