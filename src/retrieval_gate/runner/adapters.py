"""Adapters: a retriever object of a library, turned into a
:class:`~retrieval_gate.runner.target.Target`.

An adapter is a function ``(obj, identity, batch_size) -> Target | None``: it recognises ``obj``
by its interface (duck typing — this package imports none of the libraries) and returns a
Target whose ``call(queries)`` gives one result per query in a form
:func:`retrieval_gate.runner.hits.rankings_of` reads (dicts with ``id``, ``score`` and the
optional ``doc_id``, ``start``, ``end``, ``tokens``; a hit without a score keeps its rank), or
None when ``obj`` is not its kind. :func:`retrieval_gate.runner.target.load_target` asks each
adapter of :data:`ADAPTERS` in order before it takes ``obj`` for a plain callable.

None is registered yet: a plain callable (``def search(query) -> hits``, ``async def``, or a
batch function with ``--batch-size``) is the one kind of Python target (an HTTP endpoint is
named by its URL: :mod:`retrieval_gate.runner.endpoint`). A library retriever is used today
by wrapping it in such a function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval_gate.runner.target import Target

Adapter = Callable[[object, str, "int | None"], "Target | None"]

ADAPTERS: tuple[Adapter, ...] = ()
