"""Chained stages: ``gate run --stage NAME=TARGET`` (repeatable, in pipeline order), each stage
called and timed on its own.

**The stages.** Their names are the snapshot's pipeline contract, in its order (anything else
is refused, naming the stage and the contract). The first stage is a target as
``--retriever`` names one — ``module:function``, ``async def``, an HTTP endpoint — given the
query and returning one ranking. Each later stage is a function ``(query, hits) -> ranking``:
``hits`` is the previous stage's ranking as the runner checked it — a new list of new dicts,
best first, each the item its run file holds (``id``; ``score``, 1/rank when the stage gave
none; ``doc_id``, ``start`` and ``end``, ``tokens`` when known: the count the runner kept, see
:mod:`retrieval_gate.runner.tokens`) with the hit's ``text`` when it carried one. Every hit
of the previous stage is passed on: a cutoff of the contract is what the gate scores, not what
the pipeline must pass. Each stage gets its own copy of the query, made before the first
stage runs.

**Timing.** Each stage's call is timed on its own (``time.perf_counter`` around it) and is
that stage's ``latency_ms``; the runner's checks between stages (and the tokenizer) are
outside every stage's time, so the stages' sum is the pipeline's time without the gate's.

**Failures.** A query's chain is one call for ``--timeout``, ``--retries`` and
``--on-error``: a stage that raises (or the chain overrunning the timeout) fails the query's
whole chain, which a retry calls again from the first stage; the failure's line names the
stage (``stage 'reranked': RuntimeError: ...``). A stage's result that is not a
ranking stops the run, as for ``--retriever`` (exit 2, naming the query and the stage); the
stages after it are not called.

**Kinds.** Every stage a plain function, or every stage ``async def`` (awaited; ``--concurrency``
tasks at once); a mix is refused, as is ``--batch-size`` (a stage takes one query).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.stages import StageContract
from retrieval_gate.core.untrusted import capped
from retrieval_gate.runner.endpoint import MAX_IDENTITY, EndpointTarget
from retrieval_gate.runner.hits import (
    HitRules,
    Item,
    Rankings,
    rankings_of,
    require_table_tokens,
    shown,
)
from retrieval_gate.runner.output import written_item
from retrieval_gate.runner.target import (
    CallableTarget,
    RunnerQuery,
    Target,
    TargetFailure,
    first_line,
    fresh,
    load_target,
)
from retrieval_gate.runner.tokens import Tokenizer, count_tokens, text_of

StageTargets = Sequence[tuple[str, "str | Callable[..., Any]"]]
"""What the user names: (stage name, target) per stage, in pipeline order."""


@dataclass(frozen=True)
class Stage:
    """One stage: its ``name``, its ``rules`` (their ``source`` the stage's target, for
    messages) and ``call``: the first stage's ``query -> hits``, a later one's ``(query, hits)
    -> hits`` (an awaitable of them for an async stage)."""

    name: str
    rules: HitRules
    call: Callable[..., Any]


@dataclass(frozen=True)
class Staged:
    """One query's answer from the chain: each stage's checked ranking, in order, with its
    ``latencies`` (ms); with ``error``, the stage result that stopped the chain (the run
    stops with it: a bad ranking is never retried)."""

    rankings: Rankings
    latencies: tuple[float, ...]
    error: InputError | None = None
    counted: int = 0  # hits whose text the tokenizer counted


@dataclass(frozen=True)
class ChainTarget:
    """A :class:`~retrieval_gate.runner.target.Target` that calls the stages of one query in
    turn (see the module docstring); ``call`` returns one :class:`Staged` per query."""

    identity: str
    stages: tuple[Stage, ...]
    tokenizer: Tokenizer | None
    is_async: bool
    package: tuple[str, str] | None
    library: tuple[str, str] | None
    batch_size: None = None

    def call(self, queries: Sequence[RunnerQuery]) -> Any:
        if self.is_async:
            return self._await(queries[0])
        answer = _Answer(self, queries[0])
        for index, stage in enumerate(self.stages):
            started = time.perf_counter()
            try:
                hits = stage.call(*answer.arguments(index))
            except Exception as exc:  # the chain's failure, named by its stage
                raise _failure(stage, exc) from exc
            if answer.took(index, hits, started):
                break
        return [answer.staged()]

    async def _await(self, query: RunnerQuery) -> list[Staged]:
        answer = _Answer(self, query)
        for index, stage in enumerate(self.stages):
            started = time.perf_counter()
            try:
                hits = await stage.call(*answer.arguments(index))
            except Exception as exc:  # the chain's failure, named by its stage
                raise _failure(stage, exc) from exc
            if answer.took(index, hits, started):
                break
        return [answer.staged()]


def _failure(stage: Stage, exc: Exception) -> TargetFailure:
    """A stage's exception as the chain's failure: ``stage 'NAME': Type: message``."""
    return TargetFailure(f"stage '{stage.name}': {first_line(exc)}")


class _Answer:
    """One query's chain in progress: the stages' arguments, their checked rankings and
    times, and how many hits the tokenizer counted."""

    def __init__(self, chain: ChainTarget, query: RunnerQuery):
        self.chain = chain
        self.qid: str = query.fields["id"]
        self.queries = [query, *(fresh(query.fields) for _ in chain.stages[1:])]
        self.rankings: Rankings = []
        self.latencies: list[float] = []
        self.passed: list[dict[str, Any]] = []
        self.error: InputError | None = None
        self.counted = 0  # hits whose text the tokenizer counted

    def arguments(self, index: int) -> tuple[Any, ...]:
        """The stage's arguments: its query, and after the first stage the hits passed on."""
        return (self.queries[0],) if index == 0 else (self.queries[index], self.passed)

    def took(self, index: int, hits: Any, started: float) -> bool:
        """Record stage ``index``'s ``hits``, called at ``started``: its time, then its checked
        ranking and the hits it passes on. True when the chain stops (a bad ranking)."""
        self.latencies.append((time.perf_counter() - started) * 1000)
        stage = self.chain.stages[index]
        try:
            items, counted = _checked(stage, hits, self.qid, self.chain.tokenizer)
        except InputError as exc:
            self.error = exc
            return True
        self.counted += counted
        self.rankings.append([stage.name, items])
        self.passed = [_passed(item, rank, text_of(hit))
                       for rank, (item, hit) in enumerate(zip(items, hits), 1)]
        return False

    def staged(self) -> Staged:
        return Staged(self.rankings, tuple(self.latencies), self.error, self.counted)


def _checked(stage: Stage, hits: Any, qid: str, tokenizer: Tokenizer | None
             ) -> tuple[list[Item], int]:
    """A stage's result as its checked items (counted by ``tokenizer`` when there is one),
    and how many the tokenizer counted."""
    if hasattr(hits, "__await__"):
        getattr(hits, "close", lambda: None)()
        raise InputError(stage.rules.source, f"query {shown(qid)} got an awaitable (a "
                         f"coroutine) from stage '{stage.name}'", "declare every stage async "
                         "def, so that gate run awaits it, or none")
    items = rankings_of({stage.name: hits}, qid, stage.rules)[0][1]
    counted = 0 if tokenizer is None else count_tokens(hits, items, tokenizer, qid,
                                                       stage.name, stage.rules.source)
    require_table_tokens([[stage.name, items]], qid, stage.rules)
    return items, counted


def _passed(item: Item, rank: int, text: str | None) -> dict[str, Any]:
    """A checked item as the next stage gets it: as its run file writes it, with its hit's
    text (see the module docstring)."""
    hit = written_item(item, rank)
    if text is not None:
        hit["text"] = text
    return hit


def load_chain(stages: StageTargets | Mapping[str, str | Callable[..., Any]],
               contract: Sequence[StageContract], rules: HitRules,
               tokenizer: Tokenizer | None, hits_path: str | None, timeout: float | None,
               batch_size: int | None, headers: Sequence[tuple[str, str]] = ()
               ) -> ChainTarget:
    """The chain of ``stages`` (see the module docstring) on a snapshot whose pipeline is
    ``contract``; ``rules`` are the snapshot's hit rules, ``hits_path``, ``headers`` and
    ``timeout`` the first stage's when it is an HTTP endpoint. InputError (exit 2) naming the option at
    fault for names that are not the contract's, a later stage that is not a function, a mix
    of async and plain stages, or a batch size."""
    named = list(stages.items()) if isinstance(stages, Mapping) else list(stages)
    if batch_size is not None:
        raise InputError("--batch-size", "applies to --retriever only: each stage is called "
                         "with one query", "leave out --batch-size (use --concurrency for "
                         "queries at once)")
    _require_contract([name for name, _ in named], [c.name for c in contract])
    loaded = _load_stages(named, rules, hits_path, timeout, headers)
    kinds = {target.is_async for _, target in loaded}
    if len(kinds) > 1:
        plain = [name for name, target in loaded if not target.is_async]
        raise InputError(f"--stage {plain[0]}", "is not async def, and other stages are",
                         "make every stage async def, or none (a plain function may await "
                         "nothing: wrap it with asyncio.to_thread in an async def)")
    identity = ", ".join(f"{name}={target.identity}" for name, target in loaded)
    if len(identity) > MAX_IDENTITY:
        raise InputError("--stage", f"the stages' names and targets are {len(identity):,} "
                         f"characters, more than the {MAX_IDENTITY} the manifest holds",
                         "give the stages' functions shorter names")
    packages = {target.package for _, target in loaded}
    libraries = {target.library for _, target in loaded} - {None}
    return ChainTarget(identity, tuple(_stage(name, target, index, rules)
                                       for index, (name, target) in enumerate(loaded)),
                       tokenizer, kinds == {True},
                       packages.pop() if len(packages) == 1 else None,
                       libraries.pop() if len(libraries) == 1 else None)


def _load_stages(named: list[tuple[str, str | Callable[..., Any]]], rules: HitRules,
                 hits_path: str | None, timeout: float | None,
                 headers: Sequence[tuple[str, str]]) -> list[tuple[str, Target]]:
    """Each stage's target, in order: the first may be any target (an HTTP endpoint with
    ``hits_path``, ``headers`` and ``timeout``), a later one must be a function (InputError
    naming its ``--stage`` otherwise)."""
    loaded: list[tuple[str, Target]] = []
    for index, (name, spec) in enumerate(named):
        option = f"--stage {name}"
        target = load_target(spec, None, hits_path if index == 0 else None, timeout,
                             headers if index == 0 else (), option, unit=rules.unit,
                             placed=rules.table is not None)
        if index and not isinstance(target, CallableTarget):
            kind = "an HTTP endpoint" if isinstance(target, EndpointTarget) else "not a function"
            raise InputError(option, f"{capped(target.identity, 200)} is {kind}: a stage after "
                             "the first is given the query and the previous stage's hits",
                             "name a function (query, hits) -> ranking (module:function)")
        loaded.append((name, target))
    return loaded


def _require_contract(names: list[str], contract: list[str]) -> None:
    """InputError naming the first stage that differs from the snapshot's pipeline contract
    (or the one missing)."""
    if names == contract:
        return
    said = ", ".join(contract) if contract else "no stages"
    for index, name in enumerate(names):
        if index >= len(contract) or contract[index] != name:
            problem = (f"is stage {index + 1}, and the snapshot's pipeline has {said}"
                       if name not in contract else f"is stage {index + 1}, and the "
                       f"snapshot's pipeline has it at {contract.index(name) + 1} ({said})")
            raise InputError(f"--stage {capped(name, 64)}", problem, "give one --stage per "
                             "stage of the snapshot's pipeline, in its order"
                             if contract else "give a single target with --retriever")
    raise InputError("--stage", f"stage '{contract[len(names)]}' of the snapshot's pipeline "
                     f"({said}) is not given", "give one --stage per stage of the pipeline, "
                     "in its order")


def _stage(name: str, target: Target, index: int, rules: HitRules) -> Stage:
    """The stage ``name`` called through ``target``: the first stage as a target of one
    query, a later one as its function."""
    staged_rules = replace(rules, source=target.identity)
    if index:
        assert isinstance(target, CallableTarget)
        return Stage(name, staged_rules, target.function)
    if target.is_async:
        async def first_async(query: RunnerQuery) -> Any:
            return (await target.call([query]))[0]
        return Stage(name, staged_rules, first_async)
    return Stage(name, staged_rules, lambda query: target.call([query])[0])
