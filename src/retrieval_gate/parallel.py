"""Two independent computations on two cores: the first in a forked child process, the second
here, with exactly the result and the error that running them one after the other would give.

``gate check`` scores the baseline and the candidate, which share nothing but the test set it
has already loaded; most of that work holds Python's GIL (parsing, per-query bookkeeping), so
threads would take turns on one core. A forked child starts with the loaded test set in its
memory (copy on write) and sends its result back pickled through a pipe.

The child is used only where that is safe and pays: on Linux (macOS's system libraries are not
safe to use after a fork, and Windows has none), when this process runs no other Python
thread (a child forked beside threads may deadlock on a lock one of them held), when at least
two CPUs are usable, and when the caller judged the work large enough. Otherwise, and whenever
the child delivers no result — it raised, was killed, or its result would not pickle — the
first computation runs here, ordered so that the error is a serial run's: the first's error
wins when both fail, as it would have stopped a serial run before the second began.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["both"]

A = TypeVar("A")
B = TypeVar("B")
_NOTHING = object()  # the child delivered no result


def both(first: Callable[[], A], second: Callable[[], B], fork: bool = True) -> tuple[A, B]:
    """``(first(), second())``, the first computed in a forked child while this process
    computes the second when ``fork`` and the conditions above allow; the same result, and
    the same exception, as calling them in that order."""
    child = _Child.start(first) if fork and _can_fork() else None
    if child is None:
        return first(), second()
    try:
        try:
            b = second()
        except Exception:
            if child.result() is _NOTHING:
                first()  # its error is the one a serial run would have raised
            raise
        a = child.result()
    finally:
        child.close()
    return (first() if a is _NOTHING else a), b  # type: ignore[return-value]


def _can_fork() -> bool:
    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    return len(os.sched_getaffinity(0)) >= 2


class _Child:
    """A forked child computing one call; :meth:`result` waits for it."""

    def __init__(self, pid: int, pipe: int):
        self.pid, self.pipe = pid, pipe
        self.done: object | None = None

    @classmethod
    def start(cls, call: Callable[[], object]) -> _Child | None:
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no memory or process slot for a child: compute serially
            os.close(read)
            os.close(write)
            return None
        if pid == 0:  # the child: compute, send, and leave without running any cleanup
            code = 1
            try:
                os.close(read)
                if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it at once
                data = pickle.dumps(call(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write, "wb") as out:
                    out.write(data)
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        return cls(pid, read)

    def result(self) -> object:
        """The child's result, or ``_NOTHING`` when it delivered none."""
        if self.done is None:
            pipe, self.pipe = self.pipe, -1  # the reader owns it now, even if interrupted
            with os.fdopen(pipe, "rb") as reader:
                data = reader.read()
            _, status = os.waitpid(self.pid, 0)
            self.pid = 0
            self.done = _NOTHING
            if os.waitstatus_to_exitcode(status) == 0:  # it wrote all of its result
                self.done = pickle.loads(data)
        return self.done

    def close(self) -> None:
        """Stop and reap a child still running (after an interrupt or an error here)."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = 0
        if self.pipe >= 0:
            os.close(self.pipe)
            self.pipe = -1
