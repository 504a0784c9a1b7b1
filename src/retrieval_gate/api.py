"""The one-call library API: :func:`check` runs the gate as ``gate check`` does, :func:`score`
scores one run as ``gate score`` does, :func:`run` runs a retriever over a snapshot's queries as
``gate run`` does.

All are exported at the top level (``retrieval_gate.check``, ``retrieval_gate.score``) and
raise :class:`~retrieval_gate.core.errors.GateError` for input the gate refuses: an
:class:`~retrieval_gate.core.errors.InputError` (exit code 2) or a
:class:`~retrieval_gate.core.errors.NotComparableError` (exit code 3), with the same one-line
messages as the command line. A regression is not an exception: it is the returned
report's ``verdict`` and ``exit_code``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union, get_args

from retrieval_gate.core.exported import exported

if TYPE_CHECKING:
    from retrieval_gate.core.model import Qrels, RunRows
    from retrieval_gate.decide.policy import FailOn, GatedMeasure
    from retrieval_gate.formats import Source
    from retrieval_gate.gating.outcome import Report
    from retrieval_gate.inputs.config import GateInputs
    from retrieval_gate.scoring.measures import Measure
    from retrieval_gate.scoring.scores import Scores

__all__ = ["check", "run", "score"]

PathLike = Union[str, "os.PathLike[str]"]
"""A path given to the API: a string or a :class:`pathlib.Path`."""


@exported
def check(candidate: PathLike | None = None, *, baseline: PathLike | None = None,
          snapshot: PathLike | None = None, config: PathLike | Literal[False] | None = None,
          gates: str | GatedMeasure | Iterable[str | GatedMeasure] = (),
          fail_on: FailOn | None = None, root: PathLike | None = None,
          retriever: str | Callable[..., Any] | object | None = None,
          stages: Mapping[str, str | Callable[..., Any]] | None = None,
          run_options: Mapping[str, Any] | None = None) -> Report:
    """Run the gate as ``gate check`` does and return its :class:`Report`.

    With ``retriever`` — or ``stages``, one function per stage of the snapshot's pipeline —
    the candidate is made first: :func:`run` calls it over every query of the snapshot, with
    ``run_options`` (its other options: ``tokenizer``, ``concurrency``, ``id_key``, ...), and
    writes the run to ``candidate`` (required then: where the run goes), which is then
    checked — ``gate run`` then ``gate check``.

    The configuration is ``config`` (a ``gate.toml`` or ``pyproject.toml``), else the
    ``gate.toml`` or ``[tool.retrieval-gate]`` table of ``pyproject.toml`` found in ``root``
    (default: the current folder); ``config=False`` reads none (the defaults). Arguments given
    win over the file: ``candidate``, ``baseline`` (a run file or a baseline folder) and
    ``snapshot`` replace its paths, ``gates`` (:class:`GatedMeasure` objects or
    ``"MEASURE[:SLICE]=MARGIN"`` strings) replace its gates, ``fail_on`` its ``fail-on``.
    Relative paths given here are relative to ``root``; those in the file, to the file.

    The verdict is ``report.verdict`` (``pass``, ``regression``, ``inconclusive``) and
    ``report.exit_code`` what ``gate check`` would exit with (0 passes). Input the gate
    refuses raises InputError (exit 2) or NotComparableError (exit 3)."""
    from retrieval_gate.gating.gate import run_gate

    folder = Path(root) if root is not None else Path(".")
    making = retriever is not None or bool(stages)
    if making and candidate is None:
        from retrieval_gate.core.errors import InputError

        raise InputError("candidate", "is where the retriever's run is written, and none is "
                         "given", "pass candidate=PATH for the run (e.g. in a temporary "
                         "folder)")
    inputs = _inputs(folder, (snapshot, baseline, candidate), config, _gates(gates),
                     _fail_on(fail_on))
    if making:
        run(retriever, snapshot=inputs.snapshot, output=inputs.candidate, stages=stages,
            **dict(run_options or {}))
    return run_gate(inputs.snapshot, inputs.baseline, inputs.candidate, inputs.policy,
                     inputs.config)


@exported
def score(qrels: Qrels | Source, run: RunRows | Source,
          measures: str | Measure | Iterable[str | Measure] = ("nDCG@10",),
          **policy: Any) -> Scores:
    """Score ``run`` against ``qrels`` per query, as ``gate score QRELS RUN`` does.

    ``qrels`` and ``run`` are paths (TREC, JSON or JSON Lines, detected from the content) or
    objects already read (:func:`retrieval_gate.formats.read_qrels`, ``read_run``);
    ``measures`` are names such as ``"nDCG@10"`` or ``"RR(rel=2)@10"``, or
    :class:`Measure` objects; ``policy`` holds :class:`ScoringPolicy` fields (``threshold=2``,
    ``missing="zero"``, ...). Use :func:`retrieval_gate.score_run` for query sets, doc maps,
    corpora and chunk tables."""
    from retrieval_gate.core.model import Qrels, RunRows
    from retrieval_gate.formats import read_qrels, read_run
    from retrieval_gate.scoring.rules import ScoringPolicy
    from retrieval_gate.scoring.scores import score_run

    judged = qrels if isinstance(qrels, Qrels) else read_qrels(qrels)
    ranked = run if isinstance(run, RunRows) else read_run(run)
    return score_run(judged, ranked, _measures(measures), ScoringPolicy(**policy))


@exported
def run(retriever: str | Callable[..., Any] | object | None = None, *, snapshot: PathLike,
        output: PathLike, **options: Any) -> Path:
    """Run ``retriever`` over every query of ``snapshot`` and write the run ``output`` and its
    manifest, as ``gate run`` does; returns the run's path, ready for :func:`check`.

    ``retriever`` is the function itself (or ``"module:function"``): it takes one query — an
    object with ``.id``, ``.text`` and the query's other fields as attributes — and returns its
    ranked hits (``(id, score)`` pairs, ids, or dicts with ``id``, ``score``, ``doc_id``,
    ``start``, ``end``, ``tokens``; or a dict of named stages); ``async def`` functions are
    awaited. It may be a library's retriever object — a LangChain retriever, a LlamaIndex
    retriever, a Haystack component or pipeline —, given each query's text, whose documents
    are read as hits (:mod:`retrieval_gate.runner.adapters`). It may also be an HTTP
    endpoint's URL (``"http://host:port/path"``: one POST per query). Instead of
    ``retriever``, ``stages`` chains one target per stage of the snapshot's pipeline, each
    timed on its own: a dict (or a list of pairs) of stage name → function (or
    ``"module:function"``), in pipeline order; the first takes the query, each later one
    ``(query, hits)`` — the previous stage's checked hits as dicts (``id``, ``score``,
    ``doc_id``, ``start``, ``end``, ``tokens``, ``text``). ``options`` are ``gate run``'s other
    options by their Python names: ``tokenizer`` (the pipeline's: text → tokens or their
    count), ``system`` (a dict), ``batch_size``, ``concurrency``, ``timeout``, ``retries``,
    ``hits_path`` (an endpoint's dotted keys to its hits), ``headers`` (an endpoint's extra
    request headers, ``"Name: value"`` strings), ``id_key`` (a library retriever's: the
    metadata key of its documents' ids), ``on_error`` (``"fail"`` or ``"record"``),
    ``resume``, ``shard`` (``"I/N"``: then ``output`` is a shard file), ``commit``,
    ``created``, ``timed_on``, ``chunks``, ``chunking_version``, and ``progress`` (called with
    queries done, queries in all, failures, seconds). Bad input raises InputError (exit code 2), as
    the command line reports it."""
    from retrieval_gate.runner.run import run_retriever

    return run_retriever(retriever, snapshot, output, **options).output


def _inputs(folder: Path, paths: tuple[PathLike | None, PathLike | None, PathLike | None],
            config: PathLike | Literal[False] | None, gates: tuple[GatedMeasure, ...],
            fail_on: FailOn | None) -> GateInputs:
    """:func:`~retrieval_gate.inputs.config.gate_inputs` for (snapshot, baseline, candidate) given
    here; a path given neither here nor in the file is an error naming the argument."""
    from retrieval_gate.core.errors import InputError
    from retrieval_gate.inputs.config import gate_inputs

    snapshot, baseline, candidate = (_within(folder, path) for path in paths)
    try:
        return gate_inputs(snapshot, baseline, candidate, _config_path(folder, config), fail_on,
                           folder, gates, no_config=config is False)
    except InputError as exc:
        if exc.source not in ("--snapshot", "--baseline", "--candidate"):
            raise
        key = exc.source[2:]
        raise InputError(key, exc.problem, exc.fix.replace(f"--{key} PATH", f"{key}=PATH")
                         ) from None


def _within(folder: Path, path: PathLike | None) -> str | None:
    """``path`` as a string, relative to ``folder`` when it is relative; None if not given
    (an empty path is not given either, as on the command line)."""
    return str(folder / os.fspath(path)) if path is not None and os.fspath(path) else None


def _config_path(folder: Path, config: PathLike | Literal[False] | None) -> str | None:
    """The configuration file named, within ``folder``; None for a search (or for none)."""
    if config is True:
        raise TypeError("config must be a path, None (look for one) or False (read none)")
    return None if config is False else _within(folder, config)


def _fail_on(fail_on: FailOn | None) -> FailOn | None:
    """``fail_on`` if it is one of the choices (None keeps the configuration's)."""
    from retrieval_gate.core.errors import InputError
    from retrieval_gate.decide.policy import FailOn

    choices = get_args(FailOn)
    if fail_on is None or fail_on in choices:
        return fail_on
    raise InputError("fail_on", f"{fail_on!r} is not one of {', '.join(choices)}",
                     "pass one of them, or None for the configuration's")


def _gates(gates: str | GatedMeasure | Iterable[str | GatedMeasure]
           ) -> tuple[GatedMeasure, ...]:
    """Gates as :class:`GatedMeasure` objects: strings are ``MEASURE[:SLICE]=MARGIN``."""
    from retrieval_gate.decide.policy import GatedMeasure

    many = (gates,) if isinstance(gates, (str, GatedMeasure)) else tuple(gates)
    return tuple(g if isinstance(g, GatedMeasure) else _gate(g) for g in many)


def _gate(text: str) -> GatedMeasure:
    """One ``MEASURE[:SLICE]=MARGIN`` string; its error speaks of ``gates``, not ``--gate``."""
    from retrieval_gate.core.errors import InputError
    from retrieval_gate.inputs.config import parse_gate_option

    try:
        return parse_gate_option(text)
    except InputError as exc:
        raise InputError("gates", exc.problem, "write each gate as MEASURE[:SLICE]=MARGIN, "
                         'e.g. "Recall@10=0.02" or "nDCG@10:paraphrase=0.05", or pass a '
                         "GatedMeasure") from None


def _measures(measures: str | Measure | Iterable[str | Measure]) -> tuple[Measure, ...]:
    """Measures parsed from their names (Measure objects kept), in order, without repeats."""
    from retrieval_gate.scoring.measures import Measure, parse_measure

    many = (measures,) if isinstance(measures, (str, Measure)) else tuple(measures)
    return tuple(dict.fromkeys(m if isinstance(m, Measure) else parse_measure(m) for m in many))
