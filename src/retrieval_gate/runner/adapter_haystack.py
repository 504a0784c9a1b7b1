"""Haystack: a component (``InMemoryBM25Retriever``, any class made with ``@component`` whose
``run`` takes ``query`` and returns ``documents``) or a pipeline (``Pipeline``,
``AsyncPipeline``).

- **A component** is called ``run(query=TEXT)`` and its output's ``documents`` are the
  ranking. Refused when it has no input ``query``, another input that must be given, or no
  output ``documents``.
- **A pipeline** is called ``run({COMPONENT: {"query": TEXT}, ...})``: the query's text goes to
  every input named ``query`` that no connection feeds (a retriever's and a ranker's, say), and
  the ranking is the ``documents`` of the one component whose ``documents`` output no
  connection takes. Refused when no free input is named ``query``, when another free input
  must be given, and when no component or several leave a ``documents`` output free (which
  one is the ranking would be a guess: join them, or run the part that retrieves as a
  pipeline of its own).

One query per call (``--batch-size`` is refused; ``--concurrency`` makes calls at once). Each
``Document`` is read by :func:`~retrieval_gate.runner.library.document_hit`: its id is
``Document.id`` (or ``meta[--id-key]``), its score ``score`` (None: no score), its text
``content``. An output without a ``documents`` list is refused naming the query; an item that
is no Document is passed on as it is, for :mod:`retrieval_gate.runner.hits` to read or refuse.
The manifest records ``haystack-ai``'s version.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.untrusted import capped
from retrieval_gate.runner.hits import shown
from retrieval_gate.runner.library import AdapterArgs, Native, adapted, derives_from, document_hit
from retrieval_gate.runner.target import HitsRefused, RunnerQuery, Target

DISTRIBUTION = "haystack-ai"


def haystack_target(obj: object, args: AdapterArgs) -> Target | None:
    """The target of a Haystack pipeline or component (see the module docstring); None for
    anything else."""
    if derives_from(obj, "haystack.", ("PipelineBase",)):
        feeds, source = _pipeline_sockets(obj, args)
        pipeline: Any = obj

        def search_pipeline(queries: Sequence[RunnerQuery]) -> list[Any]:
            query = queries[0]
            output = pipeline.run({name: {"query": query.text} for name in feeds})
            found = output.get(source) if isinstance(output, Mapping) else None
            return [_ranking(found, args, query, f"the output of component "
                             f"{shown(source)}", output)]

        return adapted(args, search_pipeline, DISTRIBUTION, "a Haystack pipeline (run)")
    if derives_from(type(obj), "haystack.", ("ComponentMeta",)) and callable(
            getattr(obj, "run", None)):
        _component_sockets(obj, args)
        component: Any = obj

        def search_component(queries: Sequence[RunnerQuery]) -> list[Any]:
            query = queries[0]
            output = component.run(query=query.text)
            return [_ranking(output, args, query, "its output", output)]

        return adapted(args, search_component, DISTRIBUTION, "a Haystack component (run)")
    return None


def _pipeline_sockets(pipeline: Any, args: AdapterArgs) -> tuple[list[str], str]:
    """The components whose free input ``query`` gets the text, and the one whose free
    ``documents`` output is the ranking; InputError naming ``--retriever`` otherwise."""
    inputs = pipeline.inputs()
    feeds = sorted(name for name, sockets in inputs.items() if "query" in sockets)
    given = _sockets(inputs)
    if not feeds:
        _refuse(args, f"is a Haystack pipeline with no free input named query (its free "
                f"inputs: {given or 'none'})", "give it a component whose input query no "
                "connection feeds (gate run sends the query's text there), or name a function "
                "that runs the pipeline and returns its documents")
    others = sorted(f"{name}.{socket}" for name, sockets in inputs.items()
                    for socket, info in sockets.items()
                    if socket != "query" and isinstance(info, Mapping)
                    and info.get("is_mandatory"))
    if others:
        _refuse(args, f"is a Haystack pipeline whose free input {capped(others[0], 100)} must "
                "be given, and gate run gives only query", "give that input a default or a "
                "connection, or name a function that runs the pipeline")
    sources = sorted(name for name, sockets in pipeline.outputs().items()
                     if "documents" in sockets)
    if len(sources) != 1:
        said = ("no component leaves its output documents free" if not sources else
                f"components {', '.join(capped(s, 60) for s in sources[:4])} each leave their "
                "output documents free: which one is the ranking is ambiguous")
        _refuse(args, f"is a Haystack pipeline where {said}", "end the pipeline in one "
                "component that outputs the ranked documents (a DocumentJoiner to merge "
                "several), or run the part that retrieves as a pipeline of its own")
    return feeds, sources[0]


def _component_sockets(component: Any, args: AdapterArgs) -> None:
    """InputError naming ``--retriever`` unless the component takes ``query`` and no other
    input that must be given, and outputs ``documents``."""
    inputs, outputs = component.__haystack_input__, component.__haystack_output__
    if "query" not in inputs or "documents" not in outputs:
        lacks = "an input query" if "query" not in inputs else "an output documents"
        _refuse(args, f"is a Haystack component without {lacks}", "give a retriever "
                "component (run(query=...) returning documents), or a pipeline")
    try:
        parameters = inspect.signature(component.run).parameters.values()
    except (TypeError, ValueError):  # a run whose signature cannot be read: nothing to check
        return
    others = [p.name for p in parameters if p.name != "query" and p.default is p.empty
              and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if others:
        _refuse(args, f"is a Haystack component whose input {capped(others[0], 100)} must be "
                "given, and gate run gives only query", "give a retriever component, or a "
                "pipeline that feeds that input")


def _sockets(inputs: Mapping[str, Any]) -> str:
    """``component.socket, ...`` of a pipeline's free inputs (at most 8 named)."""
    names = [f"{name}.{socket}" for name, sockets in inputs.items() for socket in sockets]
    return capped(", ".join(names[:8]) + (", ..." if len(names) > 8 else ""), 300)


def _refuse(args: AdapterArgs, problem: str, fix: str) -> None:
    raise InputError("--retriever", f"{capped(args.identity, 200)} {problem}", fix)


def _ranking(output: Any, args: AdapterArgs, query: RunnerQuery, where: str,
             returned: Any) -> list[Any]:
    """The hits of a component's ``output``: its ``documents``, each Document as a hit dict;
    HitsRefused when ``output`` holds no such list (``where`` names it, ``returned`` is what
    the call returned)."""
    documents = output.get("documents") if isinstance(output, Mapping) else None
    if not isinstance(documents, (list, tuple)):
        raise HitsRefused(args.identity, f"query {shown(query.id)} returned {shown(returned)}: "
                          f"{where} holds no list of documents", "return {'documents': [...]}, "
                          "best first")
    return [document_hit(Native(item.id, getattr(item, "score", None),
                                getattr(item, "content", None), getattr(item, "meta", None)),
                         args, query, rank, "Document.id")
            if hasattr(item, "id") and hasattr(item, "meta") else item
            for rank, item in enumerate(documents, 1)]
