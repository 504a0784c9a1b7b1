"""Ctrl-C deferred across steps that must not be cut apart: a fork and the parent's record of
its child, a rename and the record that it happened, an undo of several renames.

Python raises KeyboardInterrupt between any two bytecodes of the main thread, so a step done by
the system (a rename) and the Python statement recording it can always be separated by one.
Within :func:`interrupts_held` SIGINT is only noted; it is delivered when the block ends —
raised again, to the handler it would have reached — so the block runs to its end whole.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["SigintHandler", "interrupts_held"]

SigintHandler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


@contextmanager
def interrupts_held() -> Iterator[SigintHandler]:
    """Ctrl-C deferred for the body, and delivered after it (whether the body ended or
    raised) to the handler it would have reached; several arrivals are delivered once. Yields
    that handler.

    Nothing is deferred where nothing could interrupt the body: outside the main thread
    (Python runs signal handlers in the main thread only), and where SIGINT's handler was not
    set by Python (``signal.getsignal`` gives None: it could not be put back)."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is None or threading.current_thread() is not threading.main_thread():
        yield previous
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _: caught.append(signum))
    try:
        yield previous
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            signal.raise_signal(signal.SIGINT)
