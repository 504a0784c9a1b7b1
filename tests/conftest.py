"""Shared test helpers: the repository's paths and ``gate(...)``, which runs the command line
through click's CliRunner and checks that nothing escaped as a traceback."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from retrieval_gate.cli import cli

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SEEDS = DATA / "seeds"
TREC = DATA / "trec_eval"
CRANFIELD = ROOT / "examples" / "cranfield"
SNAPSHOT = CRANFIELD / "snapshot.json"
RUNS = CRANFIELD / "runs"
BASELINE = ROOT / "baselines" / "cranfield" / "bm25.trec"


def gate(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run ``gate ARGS...``; return (exit code, stdout, stderr). Fails the test if an exception
    escaped the command or a traceback was printed."""
    result = CliRunner().invoke(cli, [str(a) for a in args], env=env)
    assert "Traceback" not in result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def imported_by(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported after running ``code`` (whatever
    ``code`` prints comes first; the answer is the last line)."""
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {modules!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True)
    return ast.literal_eval(result.stdout.strip().splitlines()[-1])


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    """A copy of this repository's example and zero-config table, as the current folder."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("examples", "baselines"):
        shutil.copytree(ROOT / name, root / name)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    monkeypatch.chdir(root)
    return root


@pytest.fixture(autouse=True)
def source_commit(monkeypatch) -> str:
    """Every test starts outside GitHub Actions, wherever the suite runs (on a runner, the
    gate would write workflow commands and job summaries the tests do not expect; the tests
    of the action set what they need). Run manifests and approvals record a source commit,
    and most tests run outside a git repository: give them one, as GitHub Actions does (the
    tests of that rule remove it)."""
    for name in list(os.environ):
        if name.startswith(("GITHUB_", "RUNNER_")):
            monkeypatch.delenv(name)
    sha = "c0ffee" + "0" * 34
    monkeypatch.setenv("GITHUB_SHA", sha)
    return sha


# what the gate says on Ctrl-C (exit 130)
INTERRUPTED = "error: interrupted — nothing was left half-written; run the command again\n"

# `gate`, with Python's own Ctrl-C handler: a test run started in the background of a script
# inherits SIGINT ignored, and so would the gate; in a terminal or a CI job it has this one
INTERRUPTIBLE = [sys.executable, "-c", ("import signal; signal.signal(signal.SIGINT, "
                 "signal.default_int_handler); from retrieval_gate.cli import main; main()")]


def strace() -> str:
    """The strace executable; the test is skipped where there is none, or where it cannot
    trace (no ptrace permitted)."""
    found = shutil.which("strace")
    if found is None:
        pytest.skip("strace is not installed, and this test delivers its signals with it: "
                    "install it with `sudo apt-get install -y strace` (.ci/run and the CI "
                    "workflow do this when it is missing)")
    probe = subprocess.run([found, "-o", os.devnull, "true"], capture_output=True, text=True,
                           check=False, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here: {probe.stderr.strip()}")
    return found


# the system calls of os.rename and os.replace, of os.unlink ("?": none where a system has none)
RENAMES = "?rename,?renameat,?renameat2"
UNLINKS = "?unlink,?unlinkat"


def interrupted_runs(args: list[str | Path], reset: Callable[[], object], calls: str = RENAMES,
                     cwd: Path | None = None, env: dict[str, str] | None = None
                     ) -> Iterator[subprocess.CompletedProcess[str]]:
    """For n = 1, 2, ...: ``reset()``, then ``gate ARGS`` (in ``cwd``, with ``env`` added to the
    environment) with SIGINT delivered as each of its system ``calls`` returns, from the n-th
    on (strace's fault injection: a rename is done, and the signal arrives before Python sees
    it return — the window between the rename and its record; the renames of an undo are
    interrupted too). Yields each run; the first one not interrupted (an exit code other than
    130: it made fewer than n such calls) is the last."""
    tracer = strace()
    for n in range(1, 100):
        reset()
        done = subprocess.run([tracer, "-qq", "-o", os.devnull, "-e", f"trace={calls}",
                               "-e", f"inject={calls}:signal=SIGINT:when={n}+",
                               *INTERRUPTIBLE, *map(str, args)],
                              cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True,
                              text=True, check=False, timeout=120)
        yield done
        if done.returncode != 130:
            return
    raise AssertionError(f"still interrupted after 99 calls of {calls}")
