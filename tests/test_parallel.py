"""retrieval_gate.core.parallel.both: the first computation in a forked child, with the result and
the error a serial run would give — and gate check, scoring the baseline that way, writes the
same report byte for byte."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import BASELINE, CRANFIELD, ROOT, gate

import retrieval_gate.gating.scored
from retrieval_gate.core.errors import InputError
from retrieval_gate.core.parallel import both

forks = pytest.mark.skipif(not sys.platform.startswith("linux")
                           or len(os.sched_getaffinity(0)) < 2,
                           reason="forks on Linux with two usable CPUs")


def failing(message: str):
    def call():
        raise InputError("run.trec", message, "fix it", 3)
    return call


@forks
def test_the_first_runs_in_a_child_and_its_result_comes_back():
    parent = os.getpid()
    (child, table), mine = both(lambda: (os.getpid(), {"q": [1.5, None]}), os.getpid)
    assert child != parent and mine == parent
    assert table == {"q": [1.5, None]}


def test_without_fork_both_run_here_in_order():
    order: list[str] = []
    first, second = both(lambda: order.append("first") or os.getpid(),
                         lambda: order.append("second") or os.getpid(), fork=False)
    assert first == second == os.getpid() and order == ["first", "second"]


@forks
def test_no_fork_beside_another_thread():
    """A child forked beside a running thread may deadlock on a lock that thread held."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        first, _ = both(os.getpid, os.getpid)
    finally:
        stop.set()
        thread.join()
    assert first == os.getpid()


@forks
@pytest.mark.parametrize(("first_fails", "second_fails", "expected"), [
    (True, False, "first"), (False, True, "second"), (True, True, "first")])
def test_errors_are_the_serial_ones(first_fails, second_fails, expected):
    """The first's error wins when both fail: a serial run stops before the second begins."""
    first = failing("first") if first_fails else os.getpid
    second = failing("second") if second_fails else os.getpid
    with pytest.raises(InputError) as raised:
        both(first, second)
    assert raised.value.problem == expected
    assert raised.value.__context__ is None  # as raised serially: not "during handling of"


@forks
def test_a_child_reaped_by_the_system_still_delivers():
    """With SIGCHLD ignored (inherited from a parent that does not wait for its children),
    the system reaps the child at once: its result is whole all the same."""
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        child, mine = both(os.getpid, os.getpid)
    finally:
        signal.signal(signal.SIGCHLD, previous)
    assert child != mine == os.getpid()


@forks
def test_the_child_dies_with_its_parent(tmp_path):
    """A killed gate check leaves no child scoring on (and holding its output open)."""
    pid_file = tmp_path / "child"
    script = f"""
import os, pathlib, signal, time
from retrieval_gate.core.parallel import both

def slow():
    pid_file = pathlib.Path({str(pid_file)!r})
    partial = pid_file.with_name(pid_file.name + ".partial")
    partial.write_text(f"{{os.getpid()}}\\n")
    os.replace(partial, pid_file)
    time.sleep(60)

def killed():
    while not os.path.exists({str(pid_file)!r}):
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGKILL)

both(slow, killed)
"""
    done = subprocess.run([sys.executable, "-c", script], timeout=60, check=False)
    assert done.returncode == -signal.SIGKILL
    child = written_pid(pid_file)
    deadline = time.monotonic() + 10
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not running(child)


def running(pid: int) -> bool:
    """Whether process ``pid`` runs: neither gone nor a zombie (an orphan is reaped by
    whatever adopts it, which in a container may never happen)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def test_an_interrupt_is_deferred_while_a_child_is_forked():
    from retrieval_gate.core.interrupts import interrupts_held

    # a test run started in the background of a script inherits SIGINT ignored: Python's own
    # handler for the test, so that the deferred interrupt has somewhere to go
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), interrupts_held():
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            time.sleep(0.05)  # the interrupt has arrived, and waits
            reached = True
    finally:
        signal.signal(signal.SIGINT, previous)
    assert reached


@forks
def test_a_child_that_dies_is_replaced_by_computing_here(tmp_path):
    """Killed (out of memory, a signal): the first is computed here instead."""
    marker = tmp_path / "child"

    def first():
        if not marker.exists():  # the child: leave a trace, then die
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return os.getpid()

    value, _ = both(first, os.getpid)
    assert value == os.getpid() and int(marker.read_text()) != os.getpid()


def write_pid(pid_file: Path) -> None:
    """Record this process's id in ``pid_file`` at once: written whole, with its newline, to
    a file beside it, then renamed over it — so whoever sees the file sees a complete pid."""
    partial = pid_file.with_name(pid_file.name + ".partial")
    partial.write_text(f"{os.getpid()}\n")
    os.replace(partial, pid_file)


def written_pid(pid_file: Path, deadline: float = 30.0) -> int:
    """The pid the child records in ``pid_file``, once it has (a loaded machine may take long
    to start the child: poll until the file holds a complete line, for ``deadline`` seconds
    at most)."""
    until = time.monotonic() + deadline
    while True:
        try:
            text = pid_file.read_text()
        except FileNotFoundError:
            text = ""
        if text.endswith("\n"):
            return int(text)
        assert time.monotonic() < until, f"no pid in {pid_file} after {deadline:g} s"
        time.sleep(0.01)


def sleeper(pid_file: Path):
    """A computation that records its process id in ``pid_file``, then sleeps a minute."""
    def sleep():
        write_pid(pid_file)
        time.sleep(60)
    return sleep


@forks
def test_an_interrupt_here_stops_and_reaps_the_child(tmp_path):
    pid_file = tmp_path / "pid"

    def interrupted():
        written_pid(pid_file)  # the child runs
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        both(sleeper(pid_file), interrupted)
    assert time.monotonic() - started < 45
    with pytest.raises(ChildProcessError):  # killed and reaped: no zombie left
        os.waitpid(written_pid(pid_file), os.WNOHANG)


@forks
def test_an_interrupt_while_waiting_for_the_child_stops_and_reaps_it(tmp_path):
    pid_file = tmp_path / "pid"

    def interrupt(*_):
        raise KeyboardInterrupt

    def here():  # once the child runs, an interrupt that fires while this process reads the pipe
        written_pid(pid_file)
        signal.setitimer(signal.ITIMER_REAL, 0.2)

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            both(sleeper(pid_file), here)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    with pytest.raises(ChildProcessError):
        os.waitpid(written_pid(pid_file), os.WNOHANG)


EXAMPLES = {  # gate check arguments: every kind of scores a check makes
    "cranfield, documents": ("--snapshot", CRANFIELD / "snapshot.json", "--baseline",
                             BASELINE.parent, "--candidate", CRANFIELD / "runs" / "hybrid.trec"),
    "pydoc, spans and chunk tables": ("--config", ROOT / "examples" / "pydoc" / "gate.toml"),
    "pydoc, a pipeline with a budget": ("--config", ROOT / "examples" / "pydoc" / "pipeline.toml"),
    "policies, leaks and abstention": ("--config", ROOT / "examples" / "policies" / "gate.toml"),
}


@forks
@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_check_scores_the_baseline_in_a_child_with_the_same_report(monkeypatch, tmp_path,
                                                                   example):
    """With every size counted as one that pays for a fork, the baseline is scored in a child —
    which delivers its scores (they pickle) — and the JSON report is the same bytes."""
    forked: list[int] = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forked.append(1) or real_fork())
    delivered: list[bool] = []
    real_loads = pickle.loads
    monkeypatch.setattr(pickle, "loads", lambda data: delivered.append(True) or real_loads(data))

    def report(parallel_bytes: range, out: str) -> bytes:
        monkeypatch.setattr(retrieval_gate.gating.scored, "PARALLEL_BYTES", parallel_bytes)
        code, _, err = gate("check", *EXAMPLES[example], "--json", tmp_path / out,
                            "--fail-on", "never")
        assert code == 0, err
        return (tmp_path / out).read_bytes()

    forked_report = report(range(1 << 62), "forked.json")
    assert len(forked) == 1 and delivered == [True]
    assert forked_report == report(range(0), "serial.json") and len(forked) == 1
