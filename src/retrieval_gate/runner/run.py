"""``gate run`` and ``gate run merge`` as library calls.

:func:`run_retriever` calls the target once for every query of the snapshot's query set
(answerable and unanswerable alike; with a shard, its share), checks each result as it comes
(:mod:`retrieval_gate.runner.hits`), journals it (:mod:`retrieval_gate.runner.journal`), and
at the end writes the run files (:mod:`retrieval_gate.runner.output`) and the run manifest in
one transaction: every file, or none, even on Ctrl-C. The manifest is the one ``gate
run-manifest`` would write for those files — checked and scored on the snapshot the same
way — with ``provenance.runner``: the target, the package that provides it, the library whose
adapter read it (:mod:`retrieval_gate.runner.adapters`), the settings, what ``latency_ms``
measures (``call``, ``batch``, ``stage`` or ``reported``: :mod:`retrieval_gate.runner.records`),
the tokenizer that counted the hits' text when one was named
(:mod:`retrieval_gate.runner.tokens`), and the queries that failed.

**Failures.** A call that still fails after its retries stops the run under ``on_error
"fail"`` (exit 2, naming the query and the error's first line). Under ``"record"`` the query is
left out of the run and listed in the manifest's ``provenance.runner.failed``; ``gate check``
then treats it by the snapshot's ``missing`` policy — refused under ``error`` (so ``gate run``
refuses to write such a run at all, naming the failed queries), scored 0 under ``zero``, with a
warning naming the failed queries. A failure is never written as an empty ranking.

**Shards.** ``shard (I, N)`` (1 ≤ I ≤ N) runs the queries at positions I, I + N, I + 2N, ...
of the query set (counting from 1) and writes a shard file instead of a run;
:func:`merge_shards` checks that N shard files of one target and one snapshot cover every query
once, and writes the run and its manifest.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from retrieval_gate.commands.validate import require_chunking_named, run_manifest_document
from retrieval_gate.core.errors import InputError, Interrupted
from retrieval_gate.core.model import ChunkTable
from retrieval_gate.core.untrusted import capped
from retrieval_gate.formats.atomic import Spool, make_folder, write_texts
from retrieval_gate.formats.corpus import read_chunk_table
from retrieval_gate.formats.source import Blob, display_name, read_blob
from retrieval_gate.inputs.run_manifest import (
    read_run_file,
    require_created,
    resolve_commit,
    run_manifest_text,
)
from retrieval_gate.inputs.snapshot import (
    FILE_COMPONENTS,
    Snapshot,
    TestSet,
    load_snapshot,
    load_test_set,
)
from retrieval_gate.runner.calls import Outcome, Settings, call_all
from retrieval_gate.runner.chain import ChainTarget, StageTargets, load_chain
from retrieval_gate.runner.endpoint import EndpointTarget, parse_headers
from retrieval_gate.runner.hits import HitRules, shown
from retrieval_gate.runner.journal import (
    VERSION,
    Answers,
    Held,
    Journal,
    Merged,
    journal_path,
    require_bound,
    scan,
    write_shard,
)
from retrieval_gate.runner.output import RunFiles, is_trec
from retrieval_gate.runner.records import latency_kind, record_of
from retrieval_gate.runner.target import Target, batches, code_of, load_target, query_lines
from retrieval_gate.runner.tokens import Tokenizer, load_tokenizer
from retrieval_gate.scoring.evidence import require_in_corpus

ON_ERROR = ("fail", "record")
Progress = Callable[[int, int, int, float], None]
"""Called after each call ends: (queries done, queries in all, queries failed, seconds)."""


@dataclass(frozen=True)
class RunResult:
    """What :func:`run_retriever` or :func:`merge_shards` wrote: the run (or shard file)
    ``output``, its ``manifest`` (None for a shard file), the ``snapshot``, how many queries
    the run holds and how many were ``called`` now (the rest came from the journal), the
    queries that ``failed`` with their errors, and the seconds the calls took."""

    output: Path
    manifest: Path | None
    snapshot: Snapshot
    queries: int
    called: int
    failed: tuple[tuple[str, str], ...]
    seconds: float
    idle_tokenizer: str | None = None  # the tokenizer given, when it counted no hit


def parse_shard(text: str | tuple[int, int]) -> tuple[int, int]:
    """``"I/N"`` (or ``(I, N)``) with 1 ≤ I ≤ N; InputError naming ``--shard`` otherwise."""
    found = re.fullmatch(r"(\d{1,9})/(\d{1,9})", text) if isinstance(text, str) else None
    given = (int(found[1]), int(found[2])) if found else text
    if (isinstance(given, tuple) and len(given) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in given)
            and 1 <= given[0] <= given[1]):
        return given[0], given[1]
    raise InputError("--shard", f"'{capped(str(text), 40)}' is not I/N with 1 ≤ I ≤ N",
                     "write --shard 2/4 for the second of four shards")


def run_retriever(retriever: str | Callable[..., Any] | object | None,
                  snapshot: str | os.PathLike[str],
                  output: str | os.PathLike[str], *, system: Mapping[str, Any] | None = None,
                  batch_size: int | None = None, concurrency: int = 1,
                  timeout: float | None = None, retries: int = 0, on_error: str = "fail",
                  resume: bool = False, shard: str | tuple[int, int] | None = None,
                  progress: Progress | None = None, commit: str | None = None,
                  created: str | None = None, timed_on: str | None = None,
                  chunks: str | os.PathLike[str] | None = None,
                  chunking_version: str | None = None, hits_path: str | None = None,
                  headers: Sequence[str] = (),
                  stages: StageTargets | Mapping[str, str | Callable[..., Any]] | None = None,
                  tokenizer: str | Callable[[str], Any] | None = None,
                  id_key: str | None = None) -> RunResult:
    """Run ``retriever`` — or the chained ``stages``, (name, target) pairs in pipeline order
    (:mod:`retrieval_gate.runner.chain`) — over the snapshot's queries and write ``output``
    (see the module docstring); ``system``, ``commit``, ``created``, ``timed_on`` (default:
    this machine, see :func:`machine`), ``chunks`` and ``chunking_version`` go to the run
    manifest as with ``gate run-manifest``; ``hits_path`` and ``headers`` (``"Name: value"``
    strings) are an HTTP endpoint's only: the path is recorded in the settings, the headers by
    name alone; ``id_key`` (a library retriever's only: the metadata key of its hits' ids) is
    recorded in the settings; ``tokenizer`` counts the hits' text
    (:mod:`retrieval_gate.runner.tokens`).
    Raises InputError (exit 2) for bad options, a target that cannot be loaded, a result that
    is not a ranking, or a failed call under ``on_error="fail"``."""
    settings = _checked(batch_size, concurrency, timeout, retries, on_error, id_key)
    part = None if shard is None else parse_shard(shard)
    if part is not None and is_trec(output):
        raise InputError("--output", "a shard is written as a shard file (JSON Lines), not "
                         "TREC", "name the shard file e.g. shard-1.jsonl; gate run merge writes "
                         "the run as TREC when its name ends in .trec")
    with _working_folder_kept():  # a module that changes it when imported changes nothing
        counter = None if tokenizer is None else load_tokenizer(tokenizer)
    _require_counts_kept(counter is not None, output)
    loaded = load_snapshot(snapshot)
    test_set = load_test_set(loaded)
    if part is None:
        commit = _manifest_needs(loaded, chunking_version, created, commit, chunks)
    table = None if chunks is None else _chunk_table(chunks, test_set)  # (its bytes, read)
    _require_own_file(output, loaded, snapshot, () if chunks is None else (("--chunks", chunks),))
    make_folder(output)  # the journal is written beside the output while the run goes on
    extra = parse_headers(headers)
    rules = HitRules.of(loaded, test_set, "--stage", None if table is None else table[1])
    with _working_folder_kept():
        target = _target(retriever, stages, loaded, rules, counter, batch_size, hits_path,
                         settings.timeout, extra, id_key)
    lines = query_lines(loaded)
    mine = lines if part is None else lines[part[0] - 1::part[1]]
    header = _header(loaded, target, part, len(mine), settings, on_error,
                     _given(hits_path, id_key, extra), counter,
                     None if table is None else "sha256:" + table[0].sha256)
    started = time.perf_counter()
    held, called = _call(target, counter, loaded, replace(rules, source=target.identity), mine,
                         output, header, settings, on_error, resume, progress)
    seconds = time.perf_counter() - started
    failed = tuple(held.failures())
    runner = None
    try:
        if part is not None:
            write_shard(output, header, held)
            manifest = None
        else:
            runner = _runner(header, 1)
            manifest = write_run(loaded, test_set, held, output, runner,
                                 system=system, commit=commit, created=created,
                                 timed_on=timed_on, chunks=chunks, chunk_table=table,
                                 chunking_version=chunking_version,
                                 machine_note=machine(settings, batch_size))
    finally:
        held.close()
    _remove(journal_path(output))
    return RunResult(Path(output), manifest, loaded, len(mine), called, failed, seconds,
                     _idle(header, runner))


def _checked(batch_size: int | None, concurrency: int, timeout: float | None, retries: int,
             on_error: str, id_key: str | None) -> Settings:
    """The call settings, each checked, and ``id_key`` (InputError naming its option)."""
    for option, value, low in (("--batch-size", batch_size, 1), ("--concurrency", concurrency,
                                                                 1), ("--retries", retries, 0)):
        if value is None and option == "--batch-size":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InputError(option, f"{capped(str(value), 40)} is not a whole number ≥ {low}",
                             f"give {option} {max(low, 1)} or more")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(
            timeout, (int, float)) or not 0 < timeout < float("inf")):
        raise InputError("--timeout", f"{capped(str(timeout), 40)} is not a number of seconds "
                         "above 0", "give --timeout 30 for 30 seconds, or leave it out")
    if on_error not in ON_ERROR:
        raise InputError("--on-error", f"'{capped(str(on_error), 40)}' is not fail or record",
                         "give --on-error fail (stop at the first failed query) or record")
    if id_key is not None and (not isinstance(id_key, str) or not 0 < len(id_key) <= 200):
        raise InputError("--id-key", f"{capped(repr(id_key), 40)} is not a key of 1 to 200 "
                         "characters", "name the metadata key that holds each document's id, "
                         "e.g. --id-key chunk_id")
    return Settings(concurrency, None if timeout is None else float(timeout), retries)


def _target(retriever: str | Callable[..., Any] | object | None,
            stages: StageTargets | Mapping[str, str | Callable[..., Any]] | None,
            loaded: Snapshot, rules: HitRules, tokenizer: Tokenizer | None,
            batch_size: int | None, hits_path: str | None, timeout: float | None,
            headers: Sequence[tuple[str, str]], id_key: str | None) -> Target:
    """The target ``retriever`` names, or the chain of ``stages``: exactly one is given
    (InputError naming the options otherwise); ``hits_path`` and ``headers`` are an HTTP
    endpoint's (the first stage's)."""
    if (retriever is None) == (stages is None or not stages):
        raise InputError("--retriever", "and --stage are both given" if retriever is not None
                         else "is required", "give --retriever MODULE:FUNCTION for one "
                         "target, or one --stage NAME=MODULE:FUNCTION per stage of the "
                         "snapshot's pipeline, in its order")
    if retriever is not None:
        return load_target(retriever, batch_size, hits_path, timeout, headers, id_key=id_key,
                           unit=loaded.unit, placed=rules.table is not None)
    assert stages is not None
    if id_key is not None:
        raise InputError("--id-key", "applies to --retriever only: a stage's hits come from a "
                         "function", "leave out --id-key (a stage returns its hits' ids)")
    return load_chain(stages, loaded.stages, rules, tokenizer, hits_path, timeout, batch_size,
                      headers)


def _code(target: Target, tokenizer: Tokenizer | None) -> str | None:
    """What binds a journal to the code that answers (:func:`code_of`): the target's source
    file's hash; for chained stages, or with a tokenizer, the hash of every stage's (and the
    tokenizer's) entry point and its file's hash, one per line (None when none has a file)."""
    each = ([(stage.rules.source, code_of(stage.rules.source)) for stage in target.stages]
            if isinstance(target, ChainTarget) else [(target.identity, code_of(target.identity))])
    if tokenizer is not None:
        each.append((tokenizer.identity, code_of(tokenizer.identity)))
    if len(each) == 1:
        return each[0][1]
    if all(code is None for _, code in each):
        return None
    joined = "".join(f"{source}\t{code or '-'}\n" for source, code in each)
    return "sha256:" + hashlib.sha256(joined.encode("utf-8")).hexdigest()


def _request(target: Target) -> str | None:
    """For an HTTP endpoint, the sha256 of what its requests carry beyond its identity — the
    URL with its query string, every header with its value — so that a journal is not resumed
    against another index or tenant; kept in the journal's header only (a hash, never the
    values), not in the manifest. None for other targets."""
    if not isinstance(target, EndpointTarget):
        return None
    said = "\n".join([target.url, *(f"{name}: {value}" for name, value in target.headers)])
    return "sha256:" + hashlib.sha256(said.encode("utf-8")).hexdigest()


def _require_counts_kept(counted: bool, output: str | os.PathLike[str]) -> None:
    """InputError when a tokenizer counts tokens that a TREC run cannot hold."""
    if counted and is_trec(output):
        raise InputError("--tokenizer", "counts tokens, and a TREC run cannot hold them",
                         "write the run as JSON Lines (an output name not ending in .trec), "
                         "or leave out --tokenizer")


def _header(loaded: Snapshot, target: Target, part: tuple[int, int] | None, count: int,
            settings: Settings, on_error: str, given: dict[str, Any],
            tokenizer: Tokenizer | None, chunks: str | None) -> dict[str, Any]:
    """The journal's (and shard file's) header: what its records belong to, and how they were
    made (the ``given`` settings — ``hits_path``, ``id_key``, the extra request headers'
    names — among the settings; ``tokenizer`` and ``chunks``, the sha256 of the run's chunk
    table the hits were checked against, only when given)."""
    package, library = ({"name": known[0], "version": known[1]} if known is not None else None
                        for known in (target.package, target.library))
    counted = {} if tokenizer is None else {"tokenizer": tokenizer.identity}
    if chunks is not None:
        counted["chunks"] = chunks
    latency = ("stage" if isinstance(target, ChainTarget) else
               "call" if target.batch_size is None else "batch")
    return {"gate_run": VERSION, "snapshot": loaded.fingerprint, "target": target.identity,
            "shard": None if part is None else f"{part[0]}/{part[1]}", "queries": count,
            "package": package, "library": library, "code": _code(target, tokenizer),
            "request": _request(target),
            "latency": latency, **counted,
            "settings": {"batch_size": target.batch_size, "concurrency": settings.concurrency,
                         "timeout": settings.timeout, "retries": settings.retries,
                         "on_error": on_error, **given}}


def _runner(header: Mapping[str, Any], shards: int) -> dict[str, Any]:
    """The manifest's ``provenance.runner`` from a header, ``shards`` merged (its failures are
    filled in by :func:`write_run`)."""
    runner: dict[str, Any] = {"target": header["target"]}
    for key in ("package", "library"):
        if header.get(key) is not None:
            runner[key] = dict(header[key])
    if header.get("code") is not None:
        runner["code"] = header["code"]
    runner["settings"] = {**header["settings"], "shards": shards}
    runner["latency"] = header["latency"]
    if header.get("tokenizer") is not None:
        runner["tokenizer"] = header["tokenizer"]
    runner["failed"] = []
    return runner


def _call(target: Target, tokenizer: Tokenizer | None, loaded: Snapshot, rules: HitRules,
          mine: list[dict[str, Any]], output: str | os.PathLike[str], header: dict[str, Any],
          settings: Settings, on_error: str, resume: bool, progress: Progress | None
          ) -> tuple[Held, int]:
    """Call the target for every query of ``mine`` the journal does not answer, its hits
    checked by ``rules``: where each query's record lies in the journal (closed), and how
    many queries were called."""
    where = journal_path(output)
    ids = [q["id"] for q in mine]
    kept = _kept(where, header, ids) if resume else None
    todo = [q for i, q in enumerate(mine) if kept is None or not kept.has_answer(i)]
    contract = [c.name for c in loaded.stages]
    journal = Journal(where, header, ids, kept)
    held = journal.held
    started = time.perf_counter()

    def done(outcome: Outcome) -> None:
        if outcome.error is not None:
            for qid in outcome.query_ids:
                journal.add({"query_id": qid, "failed": outcome.error})
            if on_error == "fail":
                raise InputError(target.identity, f"query {shown(outcome.query_ids[0])} "
                                 f"failed{_tries(settings)}: {outcome.error}", "fix the "
                                 "retriever, give it more time (--timeout, --retries), or "
                                 "record failed queries with --on-error record")
        else:
            for qid, result in zip(outcome.query_ids, _results(outcome, target, rules)):
                record = record_of(qid, result, outcome.latency_ms, rules, tokenizer,
                                   target.batch_size is not None)
                _require_returned_stages(record, contract, target.identity)
                journal.add(record)
        if progress is not None:
            progress(held.count, len(mine), len(held.failed), time.perf_counter() - started)

    try:
        with _working_folder_kept():
            call_all(target, list(batches(todo, target.batch_size)), settings, done)
    except KeyboardInterrupt:
        answered = held.answered
        journal.close()  # its last block written: every answer so far is kept
        if not answered:
            _remove(where)
        raise Interrupted("interrupted — " + (
            f"{answered} answered {'query is' if answered == 1 else 'queries are'} kept in "
            f"{display_name(where)}: the same command with --resume calls only the others"
            if answered else "no query was answered, nothing was written")) from None
    except InputError as exc:
        answered = held.answered
        journal.close()
        if not answered:  # nothing to resume from: no journal is left behind
            _remove(where)
        raise InputError(exc.source, exc.problem, exc.fix + (
            f" ({answered} answered {'query is' if answered == 1 else 'queries are'} kept in "
            f"{display_name(where)}: gate run --resume calls only the others)"
            if answered else ""), exc.where) from None
    finally:
        journal.close()
    return held, len(todo)


@contextmanager
def _working_folder_kept() -> Iterator[None]:
    """The working folder as it was before, back after — the target's import, the tokenizer's,
    the calls —, whatever they did (``os.chdir`` in a retriever's module or function): the
    run's files, its journal and the chunk table are named relative to it."""
    here = os.getcwd()
    try:
        yield
    finally:
        if os.getcwd() != here:
            os.chdir(here)


def _manifest_needs(loaded: Snapshot, chunking_version: str | None, created: str | None,
                    commit: str | None, chunks: str | os.PathLike[str] | None) -> str:
    """What the run's manifest needs, checked before the first call rather than after the
    last: the chunking named (chunk judgments), ``--created``'s form, and a source commit —
    returned as found (``none`` when none is recorded on purpose)."""
    require_chunking_named(loaded, chunks, chunking_version)
    require_created(created)
    found = resolve_commit(commit, "--commit")
    return "none" if found is None else found


def _chunk_table(chunks: str | os.PathLike[str], test_set: TestSet
                 ) -> tuple[Blob, ChunkTable]:
    """The run's chunk table (``--chunks``): its bytes — whose sha256 binds the journal and
    the shards to it, and which the manifest pins — and the table, read and checked against
    the pinned corpus before the first call (the hits are checked against it, and it places
    them: see :mod:`retrieval_gate.runner.hits`)."""
    if not os.path.isfile(chunks):
        raise InputError(display_name(chunks), "file not found", "check the path given with "
                         "--chunks")
    blob = read_blob(chunks)
    table = read_chunk_table(blob)
    if test_set.corpus is not None:
        require_in_corpus(table.source, test_set.corpus, table.doc, table.start, table.end,
                          "chunk")
    return blob, table


def _given(hits_path: str | None, id_key: str | None, extra: Sequence[tuple[str, str]]
           ) -> dict[str, Any]:
    """The settings recorded only when given: the hits path, the id key, the names of the
    extra request headers."""
    given: dict[str, Any] = {key: value for key, value in (("hits_path", hits_path),
                                                          ("id_key", id_key))
                             if value is not None}
    if extra:
        given["headers"] = [name for name, _ in extra]
    return given


def _require_own_file(output: str | os.PathLike[str], loaded: Snapshot,
                      snapshot: str | os.PathLike[str],
                      inputs: Sequence[tuple[str, str | os.PathLike[str]]] = ()) -> None:
    """InputError (naming ``--output``) unless ``output`` names a file of the run's own: not
    ``-`` (a run and its manifest are files side by side, not a stream), not something that
    exists and is not a regular file (a folder), nothing under ``/dev`` or ``/proc``
    (``/dev/stdout``: its manifest and journal would land beside it), and neither the snapshot's
    manifest nor a file it pins (``-o queries.jsonl`` would overwrite the frozen query set), nor
    one of the other ``inputs`` (option, file: the chunk table, the shard files merged)."""
    given = os.fspath(output)
    if given == "-":
        raise InputError("--output", "'-' is not a file: the run and its manifest are written "
                         "as files side by side", "name the run's file, e.g. -o run.jsonl")
    path = Path(given)
    if given.startswith(("/dev/", "/proc/")) or (path.exists() and not path.is_file()):
        raise InputError("--output", f"{display_name(given)} is not a regular file",
                         "name a file for the run, e.g. -o runs/candidate.jsonl")
    frozen = [Path(snapshot), *(f for c in FILE_COMPONENTS if (f := loaded.file(c)) is not None)]
    written = {os.path.realpath(p) for p in (given, f"{given}.manifest.json",
                                             journal_path(given))}
    for option, file in inputs:
        if os.path.realpath(file) in written:
            raise InputError("--output", f"{display_name(given)} would overwrite "
                             f"{display_name(file)}, which {option} gives",
                             "write the run to a file of its own, e.g. -o runs/candidate.jsonl")
    for file in frozen:
        if os.path.realpath(file) in written:
            raise InputError("--output", f"{display_name(given)} would overwrite "
                             f"{display_name(file)}, which the snapshot pins",
                             "write the run to a file of its own, e.g. -o runs/candidate.jsonl")


def _require_returned_stages(record: dict[str, Any], contract: list[str], source: str
                             ) -> None:
    """InputError at the query whose stages are not the snapshot's pipeline — every stage, in
    its order, and no other — before it is journaled (none of a pipeline snapshot's checks
    waits for the end of the run)."""
    names = [name for name, _ in record["rankings"]]
    if not contract or names == contract:
        return
    said = ("one ranking" if names == [None] else
            "the stages " + ", ".join(shown(n) for n in names))
    raise InputError(source, f"query {shown(record['query_id'])} returned {said}, and the "
                     f"snapshot's pipeline has stages {', '.join(contract)}", "return a dict of "
                     "the stages' rankings, in pipeline order: {"
                     + ", ".join(f'"{name}": [...]' for name in contract) + "}")


def _tries(settings: Settings) -> str:
    return "" if not settings.retries else f" {settings.retries + 1} times"


def _kept(where: str, header: dict[str, Any], ids: list[str]) -> Held | None:
    """The journal at ``where`` read back for ``--resume`` over the queries ``ids``, its
    failures forgotten (they are called again); None when there is none, or when a kill cut
    even its header short; InputError when it belongs to another run."""
    try:
        with open(where, "rb") as handle:
            if b"\n" not in handle.read(1 << 20):
                return None
    except FileNotFoundError:
        return None
    kept = scan(where, "journal", ids, torn_tail=True)
    require_bound(kept.header, header, display_name(where))
    kept.forget_failures()
    return kept


def _results(outcome: Outcome, target: Target, rules: HitRules) -> list[Any]:
    """One raw result per query of the call: a batch's list must have one per query."""
    result = outcome.result
    first = outcome.query_ids[0]
    if hasattr(result, "__await__") or (isinstance(result, list) and result
                                        and hasattr(result[0], "__await__")):
        for value in (result if isinstance(result, list) else [result]):
            getattr(value, "close", lambda: None)()
        raise InputError(rules.source, f"query {shown(first)} returned an awaitable (a "
                         "coroutine)", "declare the function async def, so that gate run "
                         "awaits it")
    if target.batch_size is None:
        return list(result)
    if not isinstance(result, (list, tuple)) or len(result) != len(outcome.query_ids):
        count = len(result) if isinstance(result, (list, tuple)) else None
        raise InputError(rules.source, f"the batch of {len(outcome.query_ids)} queries from "
                         f"query {shown(first)} returned "
                         + (f"{count} rankings" if count is not None else shown(result)),
                         "return a list of rankings, one per query of the batch, in order")
    return list(result)


def write_run(loaded: Snapshot, test_set: TestSet, answers: Answers,
              output: str | os.PathLike[str], runner: dict[str, Any], *,
              system: Mapping[str, Any] | None, commit: str | None, created: str | None,
              timed_on: str | None, chunks: str | os.PathLike[str] | None,
              chunking_version: str | None, machine_note: str,
              chunk_table: tuple[Blob, ChunkTable] | None = None) -> Path:
    """Write the run files of ``answers`` (every query's record; failed ones are left out and
    listed in ``runner``, and its ``tokenizer`` is left out when it counted no hit) and their
    manifest in one transaction; returns the manifest's path.
    The run files are streamed from the records, read back in query-set order, to spools, and
    scored for the manifest from those files. Refused when a query failed and the snapshot's
    missing policy is ``error``."""
    failed = answers.failures()
    source = runner["target"]
    if failed and loaded.policy.missing == "error":
        qid, error = failed[0]
        raise InputError(source, f"query {shown(qid)} failed ({error}); {len(failed)} of "
                         f"{len(answers.ids)} queries failed, and the snapshot's missing "
                         "policy is error: a run without them cannot be checked", "make the "
                         "retriever answer them (gate run --resume calls only the queries the "
                         "journal does not answer), or let gate check score a failed query 0: "
                         + loaded.policy.fix("missing", "zero"))
    runner["failed"] = [{"query_id": q, "error": e} for q, e in failed]
    if failed and len(failed) == len(answers.ids):
        qid, error = failed[0]
        raise InputError(source, f"every query failed ({len(failed)}; the first, {shown(qid)}: "
                         f"{error}): there is no run to write", "make the retriever answer "
                         "(gate run --resume calls the failed queries again)")
    _require_counts_kept("tokenizer" in runner, output)
    files = RunFiles(output, loaded.unit, source)

    counted = [False]  # whether the tokenizer counted a hit of any query

    def written() -> Iterator[dict[str, Any]]:  # one pass over the journal: files and kind
        for record in answers.answers():
            files.add(record)
            counted[0] = counted[0] or bool(record.get("counted"))
            yield record

    try:
        runner["latency"] = latency_kind(written(), runner["latency"], source)
        if not counted[0]:
            runner.pop("tokenizer", None)  # it counted nothing: no count in the run is its
        names = files.stages
        if loaded.stages and not names and files.first is not None:
            contract = ", ".join(c.name for c in loaded.stages)
            raise InputError(source, f"query {shown(files.first)} returned one ranking, and "
                             f"the snapshot's pipeline has stages {contract}", "return a dict "
                             "of the stages' rankings, in pipeline order: {"
                             + ", ".join(f'"{c.name}": [...]' for c in loaded.stages) + "}")
        spools = files.finish(answers.answers)
        spooled = {str(Path(file)): spool for file, spool in spools}
        document, manifest = run_manifest_document(
            loaded, test_set, output, system, commit, created, None, chunks, chunking_version,
            None, list(zip(names, [file for file, _ in spools])) if names else (),
            None if is_trec(output) else (timed_on or machine_note),
            read=lambda file: _spooled(file, spooled[str(Path(file))]), chunk_table=chunk_table)
        document["provenance"]["runner"] = runner
        write_texts([*spools, (manifest, run_manifest_text(document, manifest))])
    finally:
        files.discard()
    return manifest


def _spooled(file: str | os.PathLike[str], spool: Spool) -> Blob:
    """The bytes of a run file written to ``spool``, as read for its manifest (memory-mapped
    when large), named as the file they become."""
    assert spool.temporary is not None  # written, not yet in place
    return Blob(display_name(file), read_run_file(spool.temporary).data)


def machine(settings: Settings, batch_size: int | None) -> str:
    """The default ``timed_on``: this machine and how it was loaded — system, processor,
    cores, Python, and the runner's concurrency and batch size."""
    cores = os.cpu_count() or 0
    batch = "" if batch_size is None else f", batch size {batch_size}"
    return capped(f"{platform.system()} {platform.release()} {platform.machine()}, {cores} "
                  f"cores, Python {platform.python_version()}; gate run, concurrency "
                  f"{settings.concurrency}{batch}", 200)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def merge_shards(shards: Sequence[str | os.PathLike[str]], snapshot: str | os.PathLike[str],
                 output: str | os.PathLike[str], *, system: Mapping[str, Any] | None = None,
                 commit: str | None = None, created: str | None = None,
                 timed_on: str | None = None, chunks: str | os.PathLike[str] | None = None,
                 chunking_version: str | None = None) -> RunResult:
    """Merge the shard files of one run (see the module docstring) into ``output`` and its
    manifest. InputError (exit 2) unless they are N shard files 1/N … N/N of one target with
    one set of settings on this snapshot, each holding exactly its share of the queries."""
    loaded = load_snapshot(snapshot)
    test_set = load_test_set(loaded)
    require_chunking_named(loaded, chunks, chunking_version)
    given_table = None if chunks is None else _chunk_table(chunks, test_set)
    table = None if given_table is None else "sha256:" + given_table[0].sha256
    _require_own_file(output, loaded, snapshot, (
        *((("--chunks", chunks),) if chunks is not None else ()), *(("SHARD", s) for s in shards)))
    make_folder(output)
    ids = [q["id"] for q in query_lines(loaded)]
    read = [(display_name(s), scan(s, "shard file", ids)) for s in shards]
    if not read:
        raise InputError("SHARD", "no shard file is given", "give every shard file")
    first_name, first = read[0]
    count = _shard_of(first.header, first_name)[1]
    seen: dict[int, str] = {}
    by_index: dict[int, Held] = {}
    for name, shard in read:
        index, of = _shard_of(shard.header, name)
        _require_same_run(shard.header, name, (first.header, first_name, count), loaded,
                          snapshot, (chunks, table))
        if index in seen:
            raise InputError(name, f"is shard {index}/{of}, as {seen[index]} is",
                             "give each shard once")
        seen[index], by_index[index] = name, shard
        _require_share(shard, name, index, of)
    missing = [i for i in range(1, count + 1) if i not in seen]
    if missing:
        raise InputError("SHARD", f"shard {missing[0]}/{count} is missing ({len(missing)} of "
                         f"{count} missing)", "give every shard file of the run")
    merged = Merged([by_index[i] for i in range(1, count + 1)])
    settings = Settings(first.header["settings"]["concurrency"])
    runner = _runner(first.header, count)
    try:
        manifest = write_run(loaded, test_set, merged, output, runner,
                             system=system, commit=commit, created=created,
                             timed_on=timed_on, chunks=chunks, chunk_table=given_table,
                             chunking_version=chunking_version, machine_note=machine(
                                 settings, first.header["settings"]["batch_size"]))
    finally:
        merged.close()
    return RunResult(Path(output), manifest, loaded, len(ids), 0, tuple(merged.failures()),
                     0.0, _idle(first.header, runner))


def _idle(header: Mapping[str, Any], runner: Mapping[str, Any] | None) -> str | None:
    """The tokenizer the header names when the manifest's ``runner`` does not: it counted no
    hit (None for a shard file, whose records are counted when merged)."""
    named = header.get("tokenizer")
    return named if runner is not None and named and "tokenizer" not in runner else None


def _require_same_run(header: dict[str, Any], name: str,
                      first: tuple[dict[str, Any], str, int], loaded: Snapshot,
                      snapshot: str | os.PathLike[str],
                      chunks: tuple[str | os.PathLike[str] | None, str | None]) -> None:
    """InputError unless the shard file ``name`` (its ``header``) belongs to the run of the
    ``first`` shard (its header, name and shard count): the snapshot, the chunk table its hits
    were checked against (``chunks``: the ``--chunks`` given and its sha256), the target, the
    settings and the number of shards."""
    first_header, first_name, count = first
    if header.get("snapshot") != loaded.fingerprint:
        raise InputError(name, f"was run on snapshot {capped(str(header.get('snapshot')), 80)}, "
                         f"not on {display_name(snapshot)} ({loaded.fingerprint})",
                         "merge shards run on this snapshot")
    given, table = chunks
    if header.get("chunks") != table:
        was = header.get("chunks")
        raise InputError(name, "was checked against " + (
            "no chunk table" if was is None else f"the chunk table {capped(str(was), 80)}")
            + (f", and --chunks gives {display_name(given)} ({table})"
               if given is not None else ", and no --chunks is given"),
            "give gate run merge the --chunks of the shards' gate run (each shard's hits "
            "were checked against it)")
    of = _shard_of(header, name)[1]
    for key in ("target", "settings", "package", "library", "code", "latency", "tokenizer",
                "request"):
        if header.get(key) != first_header.get(key) or of != count:
            what = "shard count" if of != count else key
            raise InputError(name, f"differs from {first_name} in its {what}", "merge the "
                             "shards of one gate run: one target, one snapshot, the same "
                             "settings and --shard I/N of the same N")


def _shard_of(header: dict[str, Any], name: str) -> tuple[int, int]:
    """(I, N) of a shard file's header; InputError for a journal or a full run's file."""
    text = header.get("shard")
    if not isinstance(text, str):
        raise InputError(name, "is not a shard file (gate run --shard I/N writes those)",
                         "give the shard files of one sharded run")
    return parse_shard(text)


def _require_share(shard: Held, name: str, index: int, of: int) -> None:
    """InputError unless the shard holds exactly the queries of its share: positions
    ``index - 1``, ``index - 1 + of``, ... of the query set."""
    held = shard.offsets
    absent = [shard.ids[p] for p in range(index - 1, len(held), of) if held[p] < 0]
    extra = sorted([shard.ids[p] for p in range(len(held))
                    if held[p] >= 0 and p % of != index - 1] + list(shard.others))
    if absent or extra:
        problem = (f"lacks query {shown(absent[0])} of shard {index}/{of}" if absent else
                   f"holds query {shown(extra[0])}, which is not in shard {index}/{of}")
        raise InputError(name, f"{problem} ({len(absent)} missing, {len(extra)} not its own)",
                         "run the shard again with gate run --shard "
                         f"{index}/{of} on this snapshot")
