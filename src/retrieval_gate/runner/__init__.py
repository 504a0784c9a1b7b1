"""``gate run``: the gate calls the retriever once per frozen query and writes the run it judges.

The layer above ``commands/``: it reads a snapshot (``inputs/``), calls a target, and writes the
run with its manifest through :func:`retrieval_gate.commands.validate.run_manifest_document`,
all files in one transaction (:func:`retrieval_gate.formats.atomic.write_texts`).

**The seam.** Everything the loop knows of a retriever is a
:class:`~retrieval_gate.runner.target.Target`: its ``identity`` (what the journal and the
manifest record), its ``batch_size`` (None: one query per call), whether it ``is_async``, the
``package`` that provides it, and ``call(queries)``, which returns one raw result per query —
a list (or, for an async target, an awaitable of one). Each raw result is read by
:func:`retrieval_gate.runner.hits.rankings_of`: a list of hits — ``(id, score)`` pairs, ids,
or dicts with ``id``, ``score`` and optional ``doc_id``, ``start``, ``end``, ``tokens`` — or a
dict of named stages, each such a list.

:func:`retrieval_gate.runner.target.load_target` turns what the user named (``module:function``,
an ``http(s)://`` URL, or the object itself from the library) into a Target. A URL becomes an
:class:`~retrieval_gate.runner.endpoint.EndpointTarget`, a sync target that posts each query
and returns the hits of the response. An object goes first through each adapter of
:data:`retrieval_gate.runner.adapters.ADAPTERS` (a library's retriever object — LangChain
``invoke``/``batch``, LlamaIndex ``retrieve``, Haystack ``run`` — becomes a Target whose
``call`` returns hits in the forms above; recognised by the names of its classes, no import of
those libraries), then is taken as a plain callable. A new adapter is one function appended
there; the loop (:mod:`retrieval_gate.runner.calls`), the checks of what comes back, the
journal and the writers do not change.

**Chained stages** (``--stage NAME=TARGET``, one per stage of the snapshot's pipeline) are one
more Target, :class:`~retrieval_gate.runner.chain.ChainTarget`: its ``call`` runs a query's
stages in turn, checking each stage's ranking and timing each stage's call on its own.

Modules: ``target`` (queries as the target sees them, targets), ``endpoint`` (HTTP endpoints),
``adapters`` (the registry), ``library`` (what the adapters share: a document as a hit),
``adapter_langchain``, ``adapter_llamaindex``, ``adapter_haystack`` (one library each),
``chain`` (chained stages), ``hits`` (a target's result → checked rankings), ``tokens``
(token counts: the target's, or the pipeline's tokenizer's), ``records`` (a query's result →
its journal record; reported latencies), ``calls`` (concurrency, timeouts, retries),
``journal`` (the records on disk: resuming, shards), ``output`` (the run files, streamed from
the records), ``run`` (``gate run`` and ``gate run merge`` as library calls).

**Memory.** No ranking is held longer than its check and its journal line: the records stay
in the journal, and the run files are written from it one query at a time, so the runner's
memory does not grow with the run (the manifest's scoring, which reads the run back as ``gate
run-manifest`` does, does).
"""
