"""The pytest plugin of retrieval-gate: the gate as a test.

Installing the package registers it (entry point ``pytest11``, name ``retrieval_gate``; turn it
off with ``-p no:retrieval_gate``). It adds the ``retrieval_gate`` fixture, a callable with the
arguments of :func:`retrieval_gate.check`::

    def test_retrieval_does_not_regress(retrieval_gate):
        retrieval_gate(candidate="runs/candidate.trec")

or, to run the retriever itself first (``gate run`` then ``gate check``; the run is written in
the test's temporary folder, ``candidate.jsonl``)::

    def test_my_search_does_not_regress(retrieval_gate):
        retrieval_gate(retriever=my_search)

A call runs the gate as ``gate check`` would in pytest's rootdir: with the configuration found
there (``gate.toml``, else ``[tool.retrieval-gate]`` of ``pyproject.toml``; ``config=`` names
another, ``config=False`` reads none), arguments winning over it, relative paths taken from the
rootdir whatever the current folder. A verdict that passes (exit code 0) returns the
:class:`~retrieval_gate.gating.outcome.Report`; any other fails the test with the plain-text
report as the message (``pytest.fail``, no traceback). Input the gate refuses — invalid (exit
2) or not comparable (exit 3) — fails the test with the error's text, also without a traceback.

``--gate-report-dir DIR`` (or the ini option ``gate_report_dir``, relative to the ini file)
writes every call's JSON and HTML reports into DIR, on every outcome (a refusal writes the
error forms of both), named after the test's node id (``tests_test_x.py_test_y.json``; a
second call in the same test adds ``-2``). Their paths are recorded in the test's
``user_properties`` as ``gate_report_json`` and ``gate_report_html``, which ``--junitxml``
writes as ``<property>`` elements for CI to collect.

The plugin imports nothing heavy until the fixture is called, so it costs a pytest session
that never uses it nothing measurable.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import pytest

if TYPE_CHECKING:
    from retrieval_gate.api import PathLike
    from retrieval_gate.core.errors import GateError
    from retrieval_gate.decide.policy import FailOn, GatedMeasure
    from retrieval_gate.gating.outcome import Report

__all__ = ["GateFixture", "retrieval_gate"]

_OPTION = "--gate-report-dir"
_INI = "gate_report_dir"
_STEM = 120  # longest file name stem kept from a node id
_TAKEN = pytest.StashKey[set[str]]()  # report file stems used in this session
_FORMATS = ("json", "html")  # the report files written, named in the registry


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--gate-report-dir DIR`` and its ini twin ``gate_report_dir``."""
    help_text = ("Write the JSON and HTML reports of every retrieval_gate fixture call into "
                 "this folder, named after the test (created if needed).")
    parser.getgroup("retrieval-gate").addoption(_OPTION, metavar="DIR", help=help_text)
    parser.addini(_INI, help_text + " Relative to the ini file.", default="")


@pytest.fixture
def retrieval_gate(request: pytest.FixtureRequest, tmp_path: Path) -> GateFixture:
    """Run the retrieval gate in this test: ``retrieval_gate(candidate=..., **options)`` or
    ``retrieval_gate(retriever=..., **options)`` returns the report of a passing verdict and
    fails the test otherwise (see :mod:`retrieval_gate.pytest_plugin`)."""
    return GateFixture(request.node, request.config, tmp_path)


class GateFixture:
    """What the ``retrieval_gate`` fixture returns: call it to run the gate."""

    def __init__(self, item: pytest.Item, config: pytest.Config, scratch: Path) -> None:
        self._item = item
        self._config = config
        self._scratch = scratch

    def __call__(self, candidate: PathLike | None = None, *, baseline: PathLike | None = None,
                 snapshot: PathLike | None = None,
                 config: PathLike | Literal[False] | None = None,
                 gates: str | GatedMeasure | Iterable[str | GatedMeasure] = (),
                 fail_on: FailOn | None = None,
                 retriever: str | Callable[..., Any] | object | None = None,
                 stages: Mapping[str, str | Callable[..., Any]] | None = None,
                 run_options: Mapping[str, Any] | None = None) -> Report:
        """Run the gate (arguments as :func:`retrieval_gate.check`, paths relative to the
        rootdir); return the report if its exit code is 0, else fail the test. With
        ``retriever`` (a function, ``"module:function"``, or a LangChain, LlamaIndex or
        Haystack retriever object) — or ``stages``, one function per stage of the snapshot's
        pipeline — the candidate is its run over the snapshot's queries (``run_options``: the
        run's other options, as :func:`retrieval_gate.run` takes them), written to the test's
        temporary folder (``candidate.jsonl``; a second call ``candidate-2.jsonl``) — give
        one of ``candidate`` and ``retriever`` (or ``stages``)."""
        from retrieval_gate.api import check
        from retrieval_gate.core.errors import GateError, InputError

        paths = self._report_paths()
        try:
            if retriever is not None or stages:
                if candidate is not None:
                    raise InputError("retriever", "and candidate both given", "give the run "
                                     "to check (candidate=) or the retriever to make it "
                                     "(retriever=), not both")
                candidate = self._run_path()
            report = check(candidate, baseline=baseline, snapshot=snapshot, config=config,
                           gates=gates, fail_on=fail_on, root=_root(self._config),
                           retriever=retriever, stages=stages, run_options=run_options)
            text = _written(report, paths)
        except GateError as exc:
            _refused(exc, paths)
        if report.exit_code != 0:
            _fail(text)
        return report

    def _run_path(self) -> Path:
        """Where this call's retriever run goes: ``candidate.jsonl`` in the test's temporary
        folder, ``candidate-2.jsonl`` … for later calls."""
        path, count = self._scratch / "candidate.jsonl", 1
        while path.exists():
            count += 1
            path = self._scratch / f"candidate-{count}.jsonl"
        return path.absolute()

    def _report_paths(self) -> dict[str, str] | None:
        """The report files of this call, format name → path (JSON, HTML), recorded in the
        test's user properties; None without a report folder."""
        from retrieval_gate.report.registry import renderer

        folder = _report_dir(self._config)
        if folder is None:
            return None
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            _fail(f"{_OPTION} {folder}: cannot be created ({exc.strerror or exc})")
        stem = _unique(self._config.stash.setdefault(_TAKEN, set()), self._item.nodeid)
        paths = {name: str(folder / f"{stem}{renderer(name).suffix}") for name in _FORMATS}
        self._item.user_properties += [(f"gate_report_{name}", path)
                                       for name, path in paths.items()]
        return paths


def _written(report: Report, paths: dict[str, str] | None) -> str:
    """The plain-text report, after writing the report files ``paths`` (all or none, as
    ``gate check`` writes them)."""
    from retrieval_gate.report.files import write_reports

    return write_reports(report, "text", paths)


def _refused(exc: GateError, paths: dict[str, str] | None) -> NoReturn:
    """Fail the test with the gate's error, after writing its reports to ``paths`` (a
    courtesy, as ``gate check`` does: the error is what must reach the user)."""
    from retrieval_gate.core.errors import EnvironmentFault, GateError
    from retrieval_gate.report.files import write_failure_reports

    if paths is not None and not isinstance(exc, EnvironmentFault):
        try:
            write_failure_reports(str(exc), exc.exit_code, paths)
        except GateError:
            pass
    _fail(f"retrieval-gate could not decide (exit {exc.exit_code}):\n{_shown(str(exc))}")


def _shown(message: str) -> str:
    """An error message as ``gate check`` prints it: the input it quotes (ids, paths) cannot
    break or forge a line, nor make one a GitHub workflow command."""
    from retrieval_gate.core.untrusted import command_safe, visible

    return "\n".join(command_safe(visible(line)) for line in message.rstrip("\n").split("\n"))


def _fail(message: str) -> NoReturn:
    """Fail the test with ``message`` alone: no traceback, and not the exception being handled
    (it would repeat the message above it)."""
    raise pytest.fail.Exception(message, pytrace=False) from None


def _report_dir(config: pytest.Config) -> Path | None:
    """The report folder, absolute: ``--gate-report-dir`` (relative to where pytest was
    started), else ``gate_report_dir`` (relative to the ini file, else the rootdir); None
    when neither is set."""
    given = config.getoption(_OPTION)
    if given:
        return Path(config.invocation_params.dir, given).absolute()
    ini = str(config.getini(_INI) or "")
    if not ini:
        return None
    base = config.inipath.parent if config.inipath else config.rootpath
    return Path(base, ini).absolute()


def _root(config: pytest.Config) -> Path:
    """pytest's rootdir, relative to the current folder when within it (the reports then show
    short paths), else absolute."""
    root = config.rootpath
    try:
        return root.relative_to(Path.cwd())
    except ValueError:
        return root


def _unique(taken: set[str], nodeid: str) -> str:
    """A file name stem for ``nodeid`` not yet in ``taken`` (and added to it): the node id with
    every run of characters other than ASCII letters, digits, ``.``, ``_`` and ``-`` made one
    ``_``; shortened with a hash of the node id when long; ``-2``, ``-3``, ... when taken."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("._") or "test"
    if len(stem) > _STEM:
        stem = stem[:_STEM - 13] + "-" + hashlib.sha256(nodeid.encode()).hexdigest()[:12]
    name, count = stem, 1
    while name in taken:
        count += 1
        name = f"{stem}-{count}"
    taken.add(name)
    return name
