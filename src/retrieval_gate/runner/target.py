"""What ``gate run`` calls: the frozen queries as the target sees them, and targets.

A target is named ``module:function`` (``my_search:search``, ``pkg.search:Retriever.run``: the
part after the colon is an attribute path). The module is imported as ``python -c "import
module"`` would find it, with the current folder first on ``sys.path`` (as pytest and uvicorn
do), so a ``my_search.py`` beside the snapshot works without installing anything. A name
starting ``http://`` or ``https://`` is an HTTP endpoint
(:mod:`retrieval_gate.runner.endpoint`).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.untrusted import capped
from retrieval_gate.inputs.snapshot import Snapshot

_QUERY_DEFAULTS = {"text": "", "tags": [], "answerable": True, "facts": None, "scope": None,
                   "as_of": None}


class RunnerQuery:
    """One frozen query as a target receives it: ``id``, ``text`` and every other field of its
    line in the query set as attributes, with the values the line gives (JSON values: ``tags``
    a list, ``as_of`` the ``YYYY-MM-DD`` string). The fields of the query-set format a line
    leaves out have their defaults — ``text`` "", ``tags`` [], ``answerable`` True, ``facts``,
    ``scope`` and ``as_of`` None — and :meth:`fields` gives them all as a dict (for a target
    that sends the query on, as JSON). Each call gets its own copies: a target that changes
    them changes nothing else."""

    id: str
    text: str

    def __init__(self, fields: dict[str, Any]):
        self.__dict__.update(fields)

    @property
    def fields(self) -> dict[str, Any]:
        """The query's fields, ``id`` first, as a new dict."""
        return dict(self.__dict__)

    def __repr__(self) -> str:
        return f"RunnerQuery(id={self.__dict__['id']!r})"


def query_lines(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Every query of the snapshot's query set as its line's fields, in file order, with the
    format's defaults filled in (the file was checked when the test set was loaded)."""
    from retrieval_gate.formats.jsonfmt import json_lines

    blob = snapshot.blobs.get("queries")
    if blob is None:
        from retrieval_gate.formats.source import read_blob

        file = snapshot.file("queries")
        assert file is not None  # the schema requires the query set's path
        blob = read_blob(file)
    return [{"id": obj["id"], **{k: v for k, v in _QUERY_DEFAULTS.items()}, **obj}
            for _, obj in json_lines(blob.text(), blob.name)]


def fresh(fields: dict[str, Any]) -> RunnerQuery:
    """A query object for one call, with its own copies of the line's values."""
    return RunnerQuery({key: _copied(value) for key, value in fields.items()})


def _copied(value: Any) -> Any:
    """A JSON value's own copy: lists and dicts copied all the way down (strings, numbers,
    booleans and None are immutable)."""
    if isinstance(value, list):
        return [_copied(v) for v in value]
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    return value


class Target(Protocol):
    """What the loop calls (see the package docstring): ``call(queries)`` returns one raw
    result per query, in order — a list, or for an async target an awaitable of one."""

    @property
    def identity(self) -> str:
        """What the journal and the manifest record: ``module:function``, a URL, ..."""

    @property
    def batch_size(self) -> int | None:
        """None: ``call`` is given one query; N: lists of up to N."""

    @property
    def is_async(self) -> bool:
        """Whether ``call`` returns an awaitable."""

    @property
    def package(self) -> tuple[str, str] | None:
        """(distribution, version) of what defines the target, when known."""

    @property
    def library(self) -> tuple[str, str] | None:
        """(distribution, version) of the library whose adapter reads the target's results
        (``langchain-core``, ...); None for a plain callable or an endpoint."""

    def call(self, queries: Sequence[RunnerQuery]) -> Any:
        """One raw result per query of ``queries``, in order (an awaitable of that list for
        an async target)."""


@dataclass(frozen=True)
class CallableTarget:
    """A plain callable: ``function(query) -> hits`` (``batch_size`` None), or
    ``function([queries]) -> [hits, ...]`` (a batch of up to ``batch_size``); ``async def``
    functions (and objects whose ``__call__`` is one) are awaited."""

    identity: str
    function: Callable[..., Any]
    batch_size: int | None
    is_async: bool
    package: tuple[str, str] | None
    library: None = None

    def call(self, queries: Sequence[RunnerQuery]) -> Any:
        if self.is_async:
            return self._await(queries)
        if self.batch_size is None:
            return [self.function(queries[0])]
        return self.function(list(queries))

    async def _await(self, queries: Sequence[RunnerQuery]) -> Any:
        if self.batch_size is None:
            return [await self.function(queries[0])]
        return await self.function(list(queries))


def load_target(retriever: str | Callable[..., Any] | object, batch_size: int | None = None,
                hits_path: str | None = None, timeout: float | None = None,
                headers: Sequence[tuple[str, str]] = (), option: str = "--retriever",
                id_key: str | None = None, unit: str = "document", placed: bool = False
                ) -> Target:
    """The target named by ``retriever``: an HTTP endpoint's URL (with ``hits_path``, the
    dotted keys to its hits, ``headers``, its extra request headers, and ``timeout``, its
    socket's; see :mod:`retrieval_gate.runner.endpoint`), ``module:function`` (see the module
    docstring), or the object itself (library callers). Whichever of the last two, each adapter
    of :data:`~retrieval_gate.runner.adapters.ADAPTERS` is asked first (with ``id_key``, the
    metadata key of the hits' ids, ``unit``, the snapshot's evidence unit, and ``placed``,
    whether a chunk table places the hits); otherwise it
    must be callable. InputError (exit 2, naming ``option``: ``--retriever``, or ``--stage
    NAME`` for a stage) for a name that is not ``module:function``, a module that cannot be
    imported (with the first line of why), an attribute it lacks, or an object that is neither
    callable nor adapted; naming ``--hits-path`` or ``--header`` when one is given for a target
    that is not an endpoint, and ``--id-key`` when one is given for a target no adapter
    reads."""
    from retrieval_gate.runner.adapters import ADAPTERS
    from retrieval_gate.runner.endpoint import endpoint_target, is_endpoint
    from retrieval_gate.runner.library import AdapterArgs

    if is_endpoint(retriever) and id_key is not None:
        raise InputError("--id-key", "applies to a library's retriever object only",
                         "leave it out: an HTTP endpoint returns its hits' ids")
    if is_endpoint(retriever):
        assert isinstance(retriever, str)
        return endpoint_target(retriever, hits_path, timeout, batch_size, headers, option)
    if hits_path is not None:
        raise InputError("--hits-path", "applies to an HTTP endpoint only", "leave it out: a "
                         "Python function returns its hits")
    if headers:
        raise InputError("--header", "applies to an HTTP endpoint only", "leave it out: a "
                         "Python function is called, not requested")
    if isinstance(retriever, str):
        obj, identity = imported(retriever, option), retriever
        module = retriever.partition(":")[0]
    else:
        obj, identity = retriever, name_of(retriever)
        module = getattr(retriever, "__module__", None) or ""
    args = AdapterArgs(identity, module, batch_size, id_key, unit, placed)
    for adapt in ADAPTERS:
        adapted = adapt(obj, args)
        if adapted is not None:
            return adapted
    if not callable(obj):
        raise InputError(option, f"{capped(identity, 200)} is a "
                         f"{type(obj).__name__}, not a function", "name a function that takes "
                         "one query and returns its ranked hits (module:function), or a "
                         "LangChain, LlamaIndex or Haystack retriever")
    if id_key is not None:
        raise InputError("--id-key", "applies to a library's retriever object only (LangChain, "
                         "LlamaIndex, Haystack)", "leave it out: a function returns its hits' "
                         "ids")
    return CallableTarget(identity, obj, batch_size, returns_coroutine(obj), package_of(module))


def imported(spec: str, option: str) -> Any:
    """The object ``module:attribute.path`` names, the current folder first on ``sys.path``
    (InputError naming ``option`` when there is none)."""
    shown = capped(spec, 200)
    module, sep, attributes = spec.partition(":")
    if not sep or not module or not attributes:
        raise InputError(option, f"'{shown}' is not module:function",
                         "name the function's module and the function, e.g. my_search:search "
                         "(the function search of my_search.py)")
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    try:
        obj: Any = importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 — any failure of the user's module is its error
        raise InputError(option, f"cannot import module '{capped(module, 200)}' "
                         f"({first_line(exc)})", "check that `python -c 'import "
                         f"{capped(module, 100)}'` works in this folder") from None
    for name in attributes.split("."):
        try:
            obj = getattr(obj, name)
        except AttributeError:
            raise InputError(option, f"module '{capped(module, 200)}' has no "
                             f"'{capped(attributes, 200)}'", "name a function the module "
                             "defines (module:function)") from None
    return obj


def name_of(obj: Any) -> str:
    """``module:qualified.name`` of a function or class instance given to the library."""
    named = obj if hasattr(obj, "__qualname__") else type(obj)
    return f"{getattr(named, '__module__', '?')}:{getattr(named, '__qualname__', '?')}"


def returns_coroutine(obj: Any) -> bool:
    """Whether calling ``obj`` gives a coroutine: an ``async def`` function or method, or an
    object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(
        type(obj).__call__)


def package_of(module: str) -> tuple[str, str] | None:
    """(distribution, version) of the installed distribution that provides ``module``, when one
    does (None for a module that is only a file here).

    Looked up by the top-level name first (``numpy`` → numpy; ``langchain_community`` →
    langchain-community: names are normalised); only a module loaded from site-packages under
    another name is looked up in the map of every installed distribution's packages, which
    reads them all (about 0.3–0.8 s), so a retriever in the user's own files costs nothing. A
    top-level name that several distributions share (a namespace package: ``llama_index`` of
    llama-index-core, llama-index-retrievers-bm25, ...) is the one whose files hold
    ``module``'s."""
    from importlib import metadata

    top = module.split(".")[0]
    if not top:
        return None
    try:
        found = metadata.distribution(top)
        return found.metadata["Name"], found.version
    except metadata.PackageNotFoundError:
        pass
    path = (getattr(sys.modules.get(top), "__file__", None)
            or getattr(sys.modules.get(module), "__file__", None))
    if not _in_site_packages(path):
        return None
    assert path is not None
    names = metadata.packages_distributions().get(top, [])
    for name in names:
        try:
            if len(names) == 1 or _holds(metadata.distribution(name), path):
                return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def code_of(identity: str) -> str | None:
    """``sha256:HEX`` of the source file of the module a Python target's identity names
    (``module:function``; the module is imported by then), or None: for an HTTP endpoint, a
    module without a file, or a file that cannot be read. It binds a journal to the code that
    answered it — an edit of that file between an interrupted run and its ``--resume`` would
    mix two retrievers' answers in one run. Only that one file: a module it imports is not
    hashed (an installed one is covered by the package's version)."""
    import hashlib

    from retrieval_gate.runner.endpoint import is_endpoint

    if is_endpoint(identity):
        return None  # its code is not here
    module, sep, _ = identity.partition(":")
    path = getattr(sys.modules.get(module), "__file__", None) if sep else None
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            return "sha256:" + hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _holds(distribution: Any, path: str) -> bool:
    """Whether the installed ``distribution``'s files include ``path``."""
    wanted = os.path.realpath(path)
    return any(os.path.realpath(str(distribution.locate_file(file))) == wanted
               for file in distribution.files or ())


def _in_site_packages(path: str | None) -> bool:
    """Whether a module file lies under one of this interpreter's package directories."""
    import site
    import sysconfig

    if path is None:
        return False
    roots = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    roots.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    resolved = os.path.realpath(path)
    return any(resolved.startswith(os.path.realpath(root) + os.sep) for root in roots)


class TargetFailure(Exception):
    """A failed call that a target describes itself (``HTTP 503: ...``): its message is the
    failure's line as it is, without the exception's type."""


class HitsRefused(InputError):
    """A result the target's adapter cannot read as hits (a document without the id it was
    told to read, ...): not a failed call — it is not retried or recorded — but a refusal that
    stops the run, as :mod:`retrieval_gate.runner.hits` refuses a bad ranking."""


def first_line(exc: BaseException) -> str:
    """``Type: the first line of its message`` (just ``Type`` without one; the line alone for a
    :class:`TargetFailure`), at most 200 characters; a message that cannot be made says so."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 — the user's exception may fail to print
        text = "(its message could not be read)"
    line = text.strip().splitlines()[0] if text.strip() else ""
    if isinstance(exc, TargetFailure) and line:
        return capped(line, 200)
    return capped(f"{type(exc).__name__}: {line}" if line else type(exc).__name__, 200)


def batches(queries: Sequence[dict[str, Any]], size: int | None
            ) -> Iterator[list[dict[str, Any]]]:
    """The queries in calls: one each without a batch size, else up to ``size`` each, in
    order."""
    step = size or 1
    for start in range(0, len(queries), step):
        yield list(queries[start:start + step])

