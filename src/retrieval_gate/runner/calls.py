"""Calling a target: concurrency, timeouts, retries, and each call's wall time.

- **Concurrency** ``N``: up to N calls at once — threads for a sync target (with N = 1 and no
  timeout, the calls run in the calling thread), asyncio tasks for an async one. Outcomes are
  handed to the caller's ``done`` in the calling thread, in the order calls end; the caller
  puts them in query-set order, so the output does not depend on N.
- **Latency**: ``time.perf_counter`` around the call that succeeded, in milliseconds; for a
  batch, the batch call's (every query of the batch waited that long for its answer).
- **Timeout** ``S`` seconds: a call still running then has failed. An async call is
  cancelled; a sync call cannot be stopped (Python cannot stop a thread): it is abandoned, its
  thread left to end on its own, its result discarded.
- **Retries** ``R``: a call that raises (any ``Exception``) or times out is made again, up to R
  more times, after waiting 0.1 s × 2^(attempt − 1), at most 5 s, between attempts. A call
  still failing gives an :class:`Outcome` with its error's first line. Ctrl-C is not an error
  of the target: it stops the run; nor is a
  :class:`~retrieval_gate.runner.target.HitsRefused` (an adapter that cannot read the result
  as hits): it is raised at once, as a refusal of the checks is.

Whatever ``done`` raises stops the run: calls not started are not made, and the error
propagates.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from retrieval_gate.runner.target import HitsRefused, RunnerQuery, Target, first_line, fresh

BACKOFF_FIRST = 0.1  # seconds before the first retry
BACKOFF_MAX = 5.0  # seconds, at most, between two attempts


@dataclass(frozen=True)
class Settings:
    """How the target is called (see the module docstring)."""

    concurrency: int = 1
    timeout: float | None = None
    retries: int = 0


@dataclass(frozen=True)
class Outcome:
    """One call's end: the ids of its queries, and its raw result (a list, one per query, as
    the target returned it) with its ``latency_ms``, or its ``error`` after every retry."""

    query_ids: tuple[str, ...]
    result: Any = None
    latency_ms: float = 0.0
    error: str | None = None


def backoff(attempt: int) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1, 2, ...): 0.1 × 2^(attempt − 1),
    at most :data:`BACKOFF_MAX`."""
    return min(BACKOFF_FIRST * 2 ** (attempt - 1), BACKOFF_MAX)


def call_all(target: Target, calls: Sequence[list[dict[str, Any]]], settings: Settings,
             done: Callable[[Outcome], None]) -> None:
    """Make every call of ``calls`` (each a list of query fields) and hand each
    :class:`Outcome` to ``done``, in the calling thread (see the module docstring)."""
    if target.is_async:
        asyncio.run(_call_async(target, calls, settings, done))
    elif settings.concurrency == 1 and settings.timeout is None:
        for queries in calls:
            done(_attempts(target, queries, settings))
    else:
        _call_threads(target, calls, settings, done)


def _call_threads(target: Target, calls: Sequence[list[dict[str, Any]]], settings: Settings,
                  done: Callable[[Outcome], None]) -> None:
    """Sync calls on ``concurrency`` threads; at most ``2 × concurrency`` submitted ahead."""
    pool = ThreadPoolExecutor(max_workers=settings.concurrency,
                              thread_name_prefix="gate-run")
    pending: set[Future[Outcome]] = set()
    try:
        for queries in calls:
            if len(pending) >= 2 * settings.concurrency:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    done(future.result())
            pending.add(pool.submit(_attempts, target, queries, settings))
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                done(future.result())
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _attempts(target: Target, queries: list[dict[str, Any]], settings: Settings) -> Outcome:
    """One call of a sync target, retried; its outcome."""
    ids = tuple(q["id"] for q in queries)
    error = ""
    for attempt in range(settings.retries + 1):
        if attempt:
            time.sleep(backoff(attempt))
        try:
            result, latency = _timed(target, [fresh(q) for q in queries], settings.timeout)
            return Outcome(ids, result, latency)
        except HitsRefused:
            raise
        except _TimedOut as exc:
            error = str(exc)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 — the target's failure, recorded
            error = first_line(exc)  # sys.exit() in a retriever fails its call, not the run
    return Outcome(ids, error=error)


class _TimedOut(Exception):
    """A call that overran its timeout; its message is the failure recorded."""

    def __init__(self, seconds: float):
        super().__init__(f"timed out: no answer within {seconds:g} s (--timeout)")


def _timed(target: Target, queries: list[RunnerQuery], timeout: float | None
           ) -> tuple[Any, float]:
    """The target's result for ``queries`` and the call's wall time (ms); with ``timeout``,
    the call runs on its own daemon thread, abandoned when it overruns."""
    if timeout is None:
        start = time.perf_counter()
        result = target.call(queries)
        return result, (time.perf_counter() - start) * 1000
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            start = time.perf_counter()
            box["result"] = target.call(queries)
            box["latency"] = (time.perf_counter() - start) * 1000
        except BaseException as exc:  # noqa: BLE001 — handed to the waiting thread
            box["error"] = exc

    thread = threading.Thread(target=work, name="gate-run-call", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise _TimedOut(timeout)
    if "error" in box:
        raise box["error"]
    return box["result"], box["latency"]


async def _call_async(target: Target, calls: Sequence[list[dict[str, Any]]],
                      settings: Settings, done: Callable[[Outcome], None]) -> None:
    """Async calls as tasks, at most ``concurrency`` running at once."""
    gate = asyncio.Semaphore(settings.concurrency)

    async def one(queries: list[dict[str, Any]]) -> Outcome:
        async with gate:
            return await _attempts_async(target, queries, settings)

    tasks = [asyncio.ensure_future(one(queries)) for queries in calls]
    try:
        for finished in asyncio.as_completed(tasks):
            done(await finished)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _attempts_async(target: Target, queries: list[dict[str, Any]], settings: Settings
                          ) -> Outcome:
    """One call of an async target, retried; its outcome."""
    ids = tuple(q["id"] for q in queries)
    error = ""
    for attempt in range(settings.retries + 1):
        if attempt:
            await asyncio.sleep(backoff(attempt))
        try:
            start = time.perf_counter()
            result = await asyncio.wait_for(target.call([fresh(q) for q in queries]),
                                            settings.timeout)
            return Outcome(ids, result, (time.perf_counter() - start) * 1000)
        except HitsRefused:
            raise
        except asyncio.TimeoutError:
            error = str(_TimedOut(settings.timeout or 0))
        except (Exception, SystemExit) as exc:  # noqa: BLE001 — the target's failure, recorded
            error = first_line(exc)
    return Outcome(ids, error=error)
