"""Two independent computations on two cores: the first in a forked child process, the second
here, with exactly the result and the error that running them one after the other would give.

``gate check`` scores the baseline and the candidate, which share nothing but the test set it
has already loaded; most of that work holds Python's GIL (parsing, per-query bookkeeping), so
threads would take turns on one core. A forked child starts with the loaded test set in its
memory (copy on write) and sends its result back pickled through a pipe, behind its length.

The child is used only where that is safe and pays: on Linux (macOS's system libraries are not
safe to use after a fork, and Windows has none), when this process runs no other Python
thread (a child forked beside threads may deadlock on a lock one of them held), when at least
two CPUs are usable (affinity and a cgroup's CPU quota both count), and when the caller judged
the work large enough. Otherwise, and whenever the child delivers no whole result — it raised,
was killed, or its result would not pickle — the first computation runs here, ordered so that
the error is a serial run's: the first's error wins when both fail, as it would have stopped a
serial run before the second began.

The child dies with this process (``PR_SET_PDEATHSIG``): a killed ``gate check`` leaves no
orphan scoring on, holding its output open. Ctrl-C is deferred while the child is forked, so
that an interrupt always finds it recorded, to be stopped and reaped.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import struct
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from retrieval_gate.core.interrupts import SigintHandler, interrupts_held

__all__ = ["both"]

A = TypeVar("A")
B = TypeVar("B")
_NOTHING = object()  # the child delivered no result
_LENGTH = struct.Struct("<Q")  # the pickled result's length, before it
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def both(first: Callable[[], A], second: Callable[[], B], fork: bool = True) -> tuple[A, B]:
    """``(first(), second())``, the first computed in a forked child while this process
    computes the second when ``fork`` and the conditions above allow; the same result, and
    the same exception, as calling them in that order."""
    if not (fork and _can_fork()):
        return first(), second()
    child: _Child | None = None
    try:
        with interrupts_held() as interrupt:
            child = _Child.start(first, interrupt)
        if child is None:  # the system refused a child
            return first(), second()
        error: Exception | None = None
        try:
            b = second()
        except Exception as exc:
            if child.result() is not _NOTHING:
                raise
            error = exc
        if error is not None:  # both failed, as a serial run would have found the first
            first()
            raise error  # the first succeeded here after all: the second's error stands
        a = child.result()
    finally:
        if child is not None:
            child.close()
    return (first() if a is _NOTHING else a), b  # type: ignore[return-value]


def _can_fork() -> bool:
    return (sys.platform.startswith("linux") and threading.active_count() == 1
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is not None and _usable_cpus() >= 2)


def _usable_cpus() -> float:
    """The CPUs this process may run on, capped by its cgroup's CPU quota (cgroup v2)."""
    cpus: float = len(os.sched_getaffinity(0))
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return cpus
    return cpus if quota == "max" else min(cpus, int(quota) / int(period))


class _Child:
    """A forked child computing one call; :meth:`result` waits for it."""

    def __init__(self, pid: int, pipe: int):
        self.pid, self.pipe = pid, pipe
        self.done: object | None = None

    @classmethod
    def start(cls, call: Callable[[], object], interrupt: SigintHandler) -> _Child | None:
        """Fork a child computing ``call``, whose Ctrl-C goes to ``interrupt`` (Python's own
        handler becomes the default action: the child just ends); None when the system
        refuses one."""
        read, write = os.pipe()
        parent = os.getpid()
        try:
            with warnings.catch_warnings():
                # Python ≥ 3.12 warns of a fork beside any thread; the only ones here belong to
                # native libraries (numpy's BLAS, Arrow), which prepare their pools for a fork
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError:  # no memory or process slot for a child
            os.close(read)
            os.close(write)
            return None
        if pid == 0:
            _run_child(call, parent, read, write, interrupt)
        os.close(write)
        return cls(pid, read)

    def result(self) -> object:
        """The child's result, or ``_NOTHING`` when it delivered no whole one."""
        if self.done is None:
            pipe, self.pipe = self.pipe, -1  # the reader owns it now, even if interrupted
            with os.fdopen(pipe, "rb") as reader:
                data = reader.read()
            self._reap()
            self.done = _NOTHING
            if (len(data) >= _LENGTH.size
                    and _LENGTH.unpack_from(data)[0] == len(data) - _LENGTH.size):
                try:
                    self.done = pickle.loads(memoryview(data)[_LENGTH.size:])
                except Exception:  # noqa: BLE001 — any failure: compute it here instead
                    self.done = _NOTHING
        return self.done

    def close(self) -> None:
        """Stop and reap a child still running (after an interrupt or an error here)."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()
        if self.pipe >= 0:
            os.close(self.pipe)
            self.pipe = -1

    def _reap(self) -> None:
        """Wait for the child's exit; one the system reaped itself (SIGCHLD ignored) is gone."""
        pid, self.pid = self.pid, 0
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _run_child(call: Callable[[], object], parent: int, read: int, write: int,
               interrupt: SigintHandler) -> None:
    """In the child: die with the parent, compute, send the length and the pickled result,
    and leave without running any of the parent's cleanup."""
    code = 1
    try:
        os.close(read)
        signal.signal(signal.SIGINT, signal.SIG_DFL if interrupt is signal.default_int_handler
                      else interrupt)
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            return
        data = pickle.dumps(call(), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write, "wb") as out:
            out.write(_LENGTH.pack(len(data)))
            out.write(data)
        code = 0
    finally:
        os._exit(code)
