"""The ``gate`` command. Click commands only: parse options, call the library, render, and map
errors to exit codes. Heavy modules are imported inside the commands, so that
``gate --help`` stays instant."""

from __future__ import annotations

import sys

import click

from retrieval_gate import __version__
from retrieval_gate.core.errors import (
    EXIT_ENVIRONMENT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EnvironmentFault,
    GateError,
    OutOfMemory,
)
from retrieval_gate.report.registry import FILES, STDOUT

_INTERRUPTED = "interrupted — nothing was left half-written; run the command again"


class _Gate(click.Group):
    """Turns GateError into ``error: message`` and its exit code; an OSError that no reader
    turned into a clear error (a full disk, standard output closed), and a MemoryError, into an
    environment fault (exit 74); Ctrl-C into ``error: interrupted`` (exit 130); and any other
    exception into an internal-error message with exit 70, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GateError as exc:
            _report(str(exc))
            ctx.exit(exc.exit_code)
        except (OSError, MemoryError) as exc:
            fault = environment_fault(exc)
            _report(str(fault))
            ctx.exit(fault.exit_code)
        except (KeyboardInterrupt, click.Abort):
            _report(_INTERRUPTED)
            ctx.exit(EXIT_INTERRUPTED)
        except (click.exceptions.Exit, click.ClickException):
            raise
        except Exception as exc:  # noqa: BLE001 — a bug: say so, and ask for a report
            from retrieval_gate.core.untrusted import command_safe, visible

            message = command_safe(visible(f"{type(exc).__name__}: {exc}"))
            click.echo(f"internal error: {message} — this is a bug in "
                       f"retrieval-gate {__version__}; please report it with the command you "
                       "ran and its input files", err=True)
            ctx.exit(EXIT_INTERNAL)


def _report(message: str, kind: str = "error") -> None:
    """``error: LINE`` (or ``KIND: LINE``) on standard error for each line of ``message``. Messages quote input
    (ids, paths): any other line break or control character in a line is shown as an escape,
    and no line can be a GitHub workflow command (the runner reads standard error too)."""
    from retrieval_gate.core.untrusted import command_safe, visible

    for line in message.rstrip("\n").split("\n"):
        click.echo(command_safe(f"{kind}: {visible(line)}"), err=True)


def _shown(value: object) -> str:
    """A name or path from the input, as one visible run of text (its line breaks escaped)."""
    from retrieval_gate.core.untrusted import visible

    return visible(str(value))


def _print(text: str, nl: bool = True, json: bool = False) -> None:
    """Write ``text`` to standard output, line by line: any control or separator character
    within a line is shown as an escape (not in ``json``, whose strings escape what breaks a
    line already), and under GitHub Actions no line can be taken for a workflow command (the
    text quotes input: names, ids, paths)."""
    import os

    from retrieval_gate.core.untrusted import command_safe, visible

    safe = command_safe if os.environ.get("GITHUB_ACTIONS") == "true" else str
    shown = str if json else visible
    _write_out("\n".join(safe(shown(line)) for line in text.split("\n")), nl=nl)


def _write_out(text: str, nl: bool = True) -> None:
    """``text`` on standard output. A reader that closed its end (``gate init ... | head -1``)
    is not a fault of the machine: the rest of the output goes to the null device, and the
    command goes on to its own exit code (its files written, its verdict decided)."""
    try:
        click.echo(text, nl=nl)
    except BrokenPipeError:
        _discard_stdout()


def environment_fault(exc: OSError | MemoryError) -> GateError:
    """The one-line error for an operating-system refusal that reached the command line: an
    environment fault (exit 74), except a file name too long for the system, which is a bad
    path in the input (exit 2). A MemoryError is :class:`~retrieval_gate.core.errors.OutOfMemory`:
    the one a reader raised, naming its input and what it needs
    (:func:`~retrieval_gate.core.errors.memory_for`), else one saying that the machine refused an
    allocation."""
    import errno

    if isinstance(exc, MemoryError):
        return exc if isinstance(exc, OutOfMemory) else OutOfMemory.of()

    from retrieval_gate.core.errors import InputError
    from retrieval_gate.core.untrusted import capped

    what = capped(str(exc.filename), 200) if exc.filename is not None else "standard output"
    reason = exc.strerror or type(exc).__name__
    if exc.errno == errno.ENAMETOOLONG:
        return InputError(what, f"cannot be used ({reason})", "give a shorter path")
    return EnvironmentFault(f"{what}: {reason} — the machine refused the write or read; free "
                            "space or fix the permissions, then run the command again")


@click.group(cls=_Gate, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="retrieval-gate")
def cli() -> None:
    """retrieval-gate: guard retrieval quality in CI.

    Exit codes: 0 pass, 1 regression, 2 invalid input or usage, 3 not comparable,
    4 inconclusive (with --fail-on inconclusive), 70 internal error, 74 the machine refused
    (disk full, no permission), 130 interrupted.
    """
    _keep_freed_memory()
    _no_huge_page_advice()
    _one_blas_thread()


def _no_huge_page_advice() -> None:
    """A process-wide choice, made here and not in the library: unless the user set it, tell
    numpy (before it is imported) not to advise the kernel to back large arrays with huge
    pages. Where transparent huge pages are granted on advice with synchronous compaction (a
    common default, ``defrag = madvise``), every first write to a fresh large array stalls on
    compaction: reading a 7M-line run touches about 250 MB of new arrays, and ``gate check`` of
    two such runs measured 20 % faster without the advice. Set ``NUMPY_MADVISE_HUGEPAGE=1`` to
    keep numpy's default."""
    import os

    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")


def _one_blas_thread() -> None:
    """A process-wide choice, made here and not in the library: unless the user set it, start
    OpenBLAS (which numpy loads) with one thread. The gate multiplies no matrices, and the
    thread pool OpenBLAS starts on import — one thread per further core, which poll for work
    for a while — cost a short check 50–100 ms of wall clock on a two-core machine (its own
    threads and its second core were kept waiting). Set ``OPENBLAS_NUM_THREADS`` to choose
    otherwise."""
    import os

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _keep_freed_memory() -> None:
    """A process-wide choice, made here and not in the library: ask glibc's malloc to serve
    blocks under 32 MiB from its heap and to keep up to 64 MiB of freed memory there, instead of
    returning it to the system at once. The run reader's per-batch numpy temporaries then reuse
    their pages rather than fault in new ones (on a 7M-line run, about 5 thousand page faults
    instead of 150 thousand). Other C libraries (no ``mallopt``) are left alone."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return
    trim_threshold, mmap_threshold = -1, -3  # glibc's malloc.h
    mallopt(trim_threshold, 64 << 20)
    mallopt(mmap_threshold, 32 << 20)


def _policy_options(command):
    """The ``--threshold`` option and one option per scoring policy (model.POLICY_HELP)."""
    from retrieval_gate.scoring.rules import POLICY_HELP, POLICY_NAMES, policy_choices

    for name in reversed(POLICY_NAMES):
        choices = policy_choices(name)
        command = click.option(f"--{name}", type=click.Choice(choices), default=choices[0],
                               show_default=True, help=POLICY_HELP[name])(command)
    return click.option("--threshold", type=int, default=1, show_default=True,
                        help="Relevant = grade ≥ N, for binary measures (never nDCG gains).")(
        command)


@cli.command()
@click.argument("files", nargs=-1, required=True, metavar="QRELS RUN | FIXTURE.json")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="A measure such as nDCG@10, RR(rel=2)@10, AP (repeatable).")
@click.option("-k", "--k", "k", type=int, default=None,
              help="Cutoff of the default set Recall, P, Hit, RR, nDCG, AP.  [default: 10]")
@_policy_options
@click.option("--queries", type=click.Path(dir_okay=False), help="Query set (JSON Lines).")
@click.option("--doc-map", type=click.Path(dir_okay=False),
              help="Chunk id → doc id map; items collapse to their document's first rank.")
@click.option("--corpus", type=click.Path(dir_okay=False),
              help="The corpus (JSON Lines documents, or a list of ids): every document the "
                   "run names must be in it; span judgments need it.")
@click.option("--chunks", type=click.Path(dir_okay=False),
              help="The run's chunk table (JSON Lines: id, doc_id, start, end, tokens).")
@click.option("--min-coverage", type=click.FloatRange(0, 1, min_open=True), default=1.0,
              show_default=True, help="Share of a judged span the items must cover.")
@click.option("--qrels-format", type=click.Choice(["trec", "json", "jsonl"]),
              help="Force the qrels format (default: detected).")
@click.option("--run-format", type=click.Choice(["trec", "json", "jsonl"]),
              help="Force the run format (default: detected).")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the report to this file (atomically) instead of standard output.")
def score(files, measures, k, threshold, unjudged, duplicates, missing, extra, unlabeled,
          queries, doc_map, corpus, chunks, min_coverage, qrels_format, run_format,
          output_format, output):
    """Score a run per query, as trec_eval does.

    Score a run per query: gate score QRELS RUN, or gate score FIXTURE.json."""
    from retrieval_gate.commands.score import choose_measures, score_files
    from retrieval_gate.formats.atomic import write_text_atomic
    from retrieval_gate.report.score_table import scores_document, scores_text, to_json
    from retrieval_gate.scoring.rules import ScoringPolicy

    policy = ScoringPolicy(threshold, unjudged, duplicates, missing, extra, unlabeled)
    chosen = choose_measures(measures, k)
    results = score_files(files, chosen, policy, queries, doc_map, qrels_format, run_format,
                          corpus, chunks, min_coverage)
    named = results[0].name is not None
    if output_format == "json":
        documents = {r.name: scores_document(r.scores, r.inputs) for r in results}
        text = to_json({"runs": documents}, 4) if named else to_json(documents[None])
    else:
        text = "\n".join(scores_text(r.scores, r.inputs, r.name) for r in results)
    if output:
        write_text_atomic(output, text)
    else:
        _print(text, nl=False, json=output_format == "json")


def _utf8(option: str, text: str, what: str = "it") -> str:
    """``text`` if it is UTF-8 text; InputError otherwise (bytes that are not UTF-8 reach
    Python as lone surrogates: shown as \\xNN; a surrogate no byte stands for as \\udXXX)."""
    from retrieval_gate.core.errors import InputError

    try:
        shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        shown = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if shown != text:
        raise InputError(option, f"'{shown}' is not UTF-8 text", f"give {what} as UTF-8 text")
    return text


def _key_values(option: str, pairs: tuple[str, ...], typed: bool = True) -> dict[str, object]:
    """``KEY=VALUE`` pairs → a dict; VALUE is a JSON number, true, false or null when it reads as
    one (and ``typed``), else the string as given."""
    import json

    from retrieval_gate.core.errors import InputError

    result: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = _utf8(option, pair, "keys and values").partition("=")
        if not sep or not key:
            raise InputError(option, f"'{pair}' is not KEY=VALUE", f"write {option} size=512")
        if not typed:
            if key in result:
                raise InputError(option, f"{key} is given twice", f"give {option} {key}=... "
                                 "once")
            result[key] = value
            continue
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        result[key] = parsed if isinstance(parsed, (int, float, bool)) or parsed is None \
            else value
    return result


@cli.command("schema")
@click.argument("name", type=click.Choice(["snapshot", "run-manifest", "config", "report"]))
def schema_command(name):
    """Print one of the shipped JSON Schemas.

    Print one of the JSON Schemas (2020-12) shipped with retrieval-gate."""
    from retrieval_gate.formats.schema import schema_text

    _write_out(schema_text(name), nl=False)


@cli.group()
def snapshot() -> None:
    """Freeze a versioned test set; compare two.

    Freeze a versioned test set into a snapshot manifest."""


@snapshot.command()
@click.option("--queries", required=True, type=click.Path(dir_okay=False),
              help="Query set (JSON Lines).")
@click.option("--queries-version", help="Default: sha256: + the first 12 hex digits of the file.")
@click.option("--qrels", required=True, type=click.Path(dir_okay=False),
              help="Relevance judgments (TREC, JSON Lines or JSON).")
@click.option("--qrels-version", help="Default: sha256: + the first 12 hex digits of the file.")
@click.option("--corpus-version",
              help="Version of the document collection.  [default: with --corpus-file, "
                   "sha256: and the first 12 hex digits of its hash; else unversioned]")
@click.option("--corpus-file", type=click.Path(dir_okay=False),
              help="Pin the corpus by this file's hash (JSON Lines documents with their text, or "
                   "a list of ids): runs are checked against it; span judgments need it.")
@click.option("--unit", type=click.Choice(["document", "span", "chunk"]),
              help="What a judgment is about.  [default: span for judgments with start and "
                   "end; else chunk with --chunking-version, document without]")
@click.option("--chunking-version",
              help="Chunk judgments: the chunking whose chunk ids they name.")
@click.option("--chunking-param", "chunking_params", multiple=True, metavar="KEY=VALUE",
              help="Chunk judgments: a chunking parameter (repeatable); numbers and true/false "
                   "are typed.")
@click.option("--chunks", "chunks_file", type=click.Path(dir_okay=False),
              help="Chunk judgments: pin the chunking's chunk table by its hash.")
@click.option("--min-coverage", type=click.FloatRange(0, 1, min_open=True),
              help="Span judgments: the share of a span the items must cover.  [default: 1]")
@click.option("--permissions-version",
              help="Version of the access rules.  [default: with --permissions-file, sha256: "
                   "and the first 12 hex digits of its hash; else public]")
@click.option("--permissions-file", type=click.Path(dir_okay=False),
              help="Pin the permissions by this file's hash.")
@click.option("--name", help="Snapshot name.  [default: the output's folder name]")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="A measure to score (repeatable).  [default: Recall, P, Hit, RR, nDCG, AP @10]")
@click.option("--gain", type=click.Choice(["exponential", "linear"]), default="exponential",
              show_default=True, help="Gain of nDCG measures named without one.")
@click.option("--stage", "stages", multiple=True, metavar="NAME[:CUTOFF[:BUDGET]]",
              help="A stage of the pipeline runs must give, in order (repeatable): how many "
                   "items it passes on and its token budget, e.g. candidates:50, reranked:20, "
                   "context:20:1000. A measure reads the stage it names (Recall@50 "
                   "[candidates]), else the last.")
@_policy_options
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The manifest to write; every file must lie in its folder or below.")
def freeze(queries, queries_version, qrels, qrels_version, corpus_version, corpus_file, unit,
           chunking_version, chunking_params, chunks_file, min_coverage, permissions_version,
           permissions_file, name, measures, gain, stages, threshold, unjudged, duplicates,
           missing, extra, unlabeled, output):
    """Pin a test set's files and scoring policy.

    Pin queries, qrels, corpus, chunking, permissions and the scoring policy."""
    from retrieval_gate.core.stages import parse_contract
    from retrieval_gate.inputs.snapshot import freeze as freeze_snapshot
    from retrieval_gate.scoring.rules import ScoringPolicy

    contracts = [parse_contract(_utf8("--stage", text)) for text in stages]
    frozen = freeze_snapshot(
        output, queries=queries, queries_version=queries_version, qrels=qrels,
        qrels_version=qrels_version, corpus_version=corpus_version, corpus_file=corpus_file,
        unit=unit, chunking_version=chunking_version,
        chunking_params=_key_values("--chunking-param", chunking_params),
        chunks_file=chunks_file, min_coverage=min_coverage,
        permissions_version=permissions_version, permissions_file=permissions_file, name=name,
        measures=measures, gain=gain, stages=contracts,
        policy=ScoringPolicy(threshold, unjudged, duplicates, missing, extra, unlabeled))
    _print(f"{_shown(output)}: snapshot '{_shown(frozen.name)}', fingerprint "
           f"{frozen.fingerprint}")
    if frozen.unit_choice is not None:
        _print(frozen.unit_choice.describe())
    for warning in frozen.warnings:
        _print(f"warning: {_shown(warning)}")


@snapshot.command()
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
def diff(old, new):
    """Say what changed between two snapshots.

    What changed in the test set from snapshot OLD to snapshot NEW: queries added, removed
    or reworded, judgments added, removed or regraded (each snapshot's files must be there)."""
    from retrieval_gate.commands.snapshot_diff import test_set_change

    _print(f"{_shown(old)} → {_shown(new)}: {test_set_change(old, new).summary()}")


@cli.command()
@click.argument("snapshot_file", metavar="SNAPSHOT", type=click.Path(dir_okay=False))
@click.argument("runs", nargs=-1, metavar="[RUN|DIR]...", type=click.Path(readable=False))
@click.option("--run-manifest", type=click.Path(dir_okay=False),
              help="Manifest of the single RUN, when not beside it as RUN.manifest.json.")
def validate(snapshot_file, runs, run_manifest):
    """Check a snapshot and the runs made on it.

    Check a snapshot (schema, paths, hashes, queries against qrels) and runs made on it (a
    run file, or a baseline folder: its approved run).

    Exit 0 valid, 2 invalid, 3 not what the manifest claims (a file's hash differs, a run made
    on another snapshot)."""
    from retrieval_gate.commands.validate import validate as validate_all
    from retrieval_gate.commands.validate import validation_text

    _print(validation_text(validate_all(snapshot_file, runs, run_manifest)), nl=False)


def _manifest_options(command):
    """The run-manifest options ``gate run`` and ``gate run merge`` pass on."""
    for option in reversed([
            click.option("--system", "system", multiple=True, metavar="KEY=VALUE",
                         help="What produced the run: retriever, model, index, parameters "
                              "(repeatable)."),
            click.option("--timed-on", metavar="TEXT",
                         help="Where the latencies were measured.  [default: this machine: "
                              "system, cores, Python, concurrency]"),
            click.option("--commit", help="Source commit; 'none' to record none on purpose.  "
                         "[default: $GITHUB_SHA, else git rev-parse HEAD]"),
            click.option("--created", help="Creation time, YYYY-MM-DDTHH:MM:SSZ.  [default: "
                         "now, UTC]"),
            click.option("--chunks", type=click.Path(dir_okay=False),
                         help="The run's chunk table, pinned in its manifest (as gate "
                              "run-manifest --chunks)."),
            click.option("--chunking-version",
                         help="The run's chunking (needed on a snapshot of chunk judgments, "
                              "unless --chunks is compared with its pinned table).")]):
        command = option(command)
    return command


@cli.group("run", invoke_without_command=True, subcommand_metavar="[merge]")
@click.option("--snapshot", "snapshot_file", type=click.Path(dir_okay=False),
              help="The snapshot whose queries are run.  [default: from the config]")
@click.option("--retriever", metavar="MODULE:FUNCTION|URL",
              help="The function to call: one query (.id, .text and its other fields as "
                   "attributes) → ranked hits: (id, score) pairs, ids, or dicts with id, "
                   "score, doc_id, start, end, tokens; or a dict of named stages. async def "
                   "is awaited. Imported with the current folder first on sys.path. Or "
                   "MODULE:OBJECT, a LangChain retriever (invoke, batch), a LlamaIndex "
                   "retriever (retrieve) or a Haystack component or pipeline (run), given the "
                   "query's text. Or an HTTP endpoint, http(s)://host:port/path: one POST per "
                   "query, its fields as a JSON object; the hits are the response's list, or "
                   "its first list at hits, results or documents.")
@click.option("--stage", "stages", multiple=True, metavar="NAME=MODULE:FUNCTION",
              help="Instead of --retriever, chained stages, one per stage of the snapshot's "
                   "pipeline, in its order (repeatable): the first takes the query (or is an "
                   "HTTP endpoint), each later one (query, hits): the previous stage's hits "
                   "as dicts (id, score, doc_id, start, end, tokens, text). Each stage is "
                   "timed on its own and its file carries its latency_ms.")
@click.option("--tokenizer", metavar="MODULE:FUNCTION",
              help="The pipeline's tokenizer (text -> tokens or their count): each hit's "
                   "text is counted with it into the item's tokens; a count the retriever "
                   "reports must agree. Without it, tokens are the retriever's own, or none.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="The run to write: JSON Lines with each query's latency_ms, or TREC when "
                   "the name ends in .trec (no costs). Its manifest goes beside it.")
@_manifest_options
@click.option("--batch-size", type=click.IntRange(min=1),
              help="Call the function with lists of up to N queries; it returns a list of "
                   "rankings. Each query's latency_ms is then its batch call's, unless the "
                   "function reports it: {\"hits\": [...], \"latency_ms\": N} per query.")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True,
              help="Calls at once: threads for a function, tasks for an async def. The run "
                   "is the same for every value.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="A call with no answer by then has failed.")
@click.option("--retries", type=click.IntRange(min=0), default=0, show_default=True,
              help="Calls again after a failure (waiting 0.1 s, 0.2 s, 0.4 s, ... up to 5 s).")
@click.option("--hits-path", metavar="KEY.KEY...",
              help="For an HTTP endpoint: the dotted keys that lead to the hits in its "
                   "response (e.g. data.hits).")
@click.option("--header", "headers", metavar="'NAME: VALUE'", multiple=True,
              help="For an HTTP endpoint: a header sent with every request, e.g. "
                   "'Authorization: Bearer TOKEN' (repeatable; the manifest records its name, "
                   "never its value).")
@click.option("--id-key", metavar="KEY",
              help="For a LangChain, LlamaIndex or Haystack retriever: the metadata key that "
                   "holds each document's id.  [default: the document's own id]")
@click.option("--on-error", type=click.Choice(["fail", "record"]), default="fail",
              show_default=True,
              help="A query that still fails: stop (fail, exit 2), or leave it out of the run "
                   "and list it in the manifest (record; gate check then applies the "
                   "snapshot's missing policy).")
@click.option("--resume", is_flag=True,
              help="Keep the answers of an interrupted run (its journal, OUTPUT.journal) and "
                   "call only the other queries.")
@click.option("--shard", metavar="I/N",
              help="Run only the queries at positions I, I+N, I+2N, ... of the query set "
                   "(from 1), into a shard file for gate run merge.")
@click.option("--progress", "show_progress", is_flag=True,
              help="Show a progress line on standard error even when it is not a terminal.")
@click.pass_context
def run_command(ctx, snapshot_file, retriever, stages, tokenizer, output, system, timed_on,
                commit, created, chunks, chunking_version, batch_size, concurrency, timeout,
                retries, hits_path, headers, id_key, on_error, resume, shard, show_progress):
    """Run your retriever over the frozen queries.

    Run your retriever over the snapshot's frozen queries, and write the run and its
    manifest (ready for gate check), or with --shard one shard of it.

    Every query is called, answerable and unanswerable alike; each call's wall time is its
    latency_ms. A bad result (not a ranking, an id twice or outside the snapshot's corpus, a
    score that is not finite) stops the run with exit 2, naming the query; nothing is
    written but the journal, which --resume continues."""
    if ctx.invoked_subcommand is not None:
        if any(v not in (None, (), False) for v in (snapshot_file, retriever, stages,
                                                    tokenizer, output, system, timed_on,
                                                    commit, created, chunks, chunking_version,
                                                    batch_size, timeout, hits_path, headers,
                                                    id_key, shard)) \
                or resume \
                or show_progress:
            from retrieval_gate.core.errors import InputError

            raise InputError("gate run merge", "takes its options after merge",
                             "write gate run merge SHARD... --snapshot S -o RUN")
        return
    from retrieval_gate.core.errors import InputError
    from retrieval_gate.inputs.config import snapshot_path
    from retrieval_gate.runner.run import run_retriever

    if output is None:
        raise InputError("--output", "is required", "write gate run --snapshot S --retriever "
                         "MODULE:FUNCTION -o RUN")
    done = run_retriever(
        None if retriever is None else _utf8("--retriever", retriever),
        snapshot_path(snapshot_file), output,
        stages=[_stage_file(text, "MODULE:FUNCTION") for text in stages],
        tokenizer=None if tokenizer is None else _utf8("--tokenizer", tokenizer),
        system=_key_values("--system", system), batch_size=batch_size,
        concurrency=concurrency, timeout=timeout, retries=retries, on_error=on_error,
        resume=resume, shard=shard, progress=_progress_line(show_progress),
        commit=commit, created=created,
        timed_on=None if timed_on is None else _utf8("--timed-on", timed_on), chunks=chunks,
        chunking_version=chunking_version,
        hits_path=None if hits_path is None else _utf8("--hits-path", hits_path),
        headers=list(headers),
        id_key=None if id_key is None else _utf8("--id-key", id_key))
    _run_summary(done)


def _progress_line(asked: bool):
    """A progress printer for standard error — on a terminal (one line, rewritten at most ten
    times a second) or when ``asked`` (a line every 5 seconds) — else None."""
    import time

    terminal = sys.stderr.isatty()
    if not (terminal or asked):
        return None
    every = 0.1 if terminal else 5.0
    shown = [0.0]

    def show(done: int, total: int, failed: int, seconds: float) -> None:
        now = time.monotonic()
        if done < total and now - shown[0] < every:
            return
        shown[0] = now
        rate = done / seconds if seconds > 0 else 0.0
        left = f", ETA {(total - done) / rate:.0f} s" if rate > 0 and done < total else ""
        line = (f"gate run: {done:,}/{total:,} queries, {rate:,.1f}/s{left}, "
                f"{failed:,} failed")
        end = "\n" if not terminal or done == total else ""
        click.echo(("\r\x1b[2K" if terminal else "") + line, err=True, nl=False)
        click.echo(end, err=True, nl=False)

    return show


def _run_summary(done) -> None:
    """The one summary line of gate run (and merge), and the notes it owes the reader."""
    from retrieval_gate.runner.output import is_trec

    failed = (f"; {_count(len(done.failed), 'query')} failed, left out of the run (first: "
              f"{_shown(done.failed[0][0])}: {_shown(done.failed[0][1])})" if done.failed
              else "")
    if done.manifest is None:
        _print(f"{_shown(done.output)}: shard of {_count(done.queries, 'query')} on snapshot "
               f"'{_shown(done.snapshot.name)}' ({_count(done.called, 'call')} made in "
               f"{done.seconds:.1f} s){failed} — merge the shards with gate run merge")
        return
    if is_trec(done.output):
        _report("the run is TREC, which holds no costs: latency_ms is not recorded (write "
                "JSON Lines to keep it)", "note")
    if done.idle_tokenizer is not None:
        _report(f"--tokenizer {_shown(done.idle_tokenizer)} counted no hit: none carried text, "
                "so the manifest names no tokenizer (return each hit's text to have it "
                "counted)", "note")
    _print(f"{_shown(done.output)}: run of {_count(done.queries, 'query')} on snapshot "
           f"'{_shown(done.snapshot.name)}', manifest {_shown(done.manifest)}"
           + (f" ({_count(done.called, 'query')} called in {done.seconds:.1f} s)"
              if done.called or done.seconds else "") + failed)


@run_command.command("merge")
@click.argument("shards", nargs=-1, required=True, metavar="SHARD...",
                type=click.Path(dir_okay=False))
@click.option("--snapshot", "snapshot_file", type=click.Path(dir_okay=False),
              help="The snapshot the shards were run on.  [default: from the config]")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The run to write (JSON Lines, or TREC when the name ends in .trec).")
@_manifest_options
def run_merge(shards, snapshot_file, output, system, timed_on, commit, created, chunks,
              chunking_version):
    """Merge the shard files of one sharded run.

    Merge the shard files of one sharded gate run (every shard of one target and one
    snapshot, each query once) into the run and its manifest."""
    from retrieval_gate.inputs.config import snapshot_path
    from retrieval_gate.runner.run import merge_shards

    done = merge_shards(shards, snapshot_path(snapshot_file), output,
                        system=_key_values("--system", system), commit=commit, created=created,
                        timed_on=None if timed_on is None else _utf8("--timed-on", timed_on),
                        chunks=chunks, chunking_version=chunking_version)
    _run_summary(done)


@cli.command("run-manifest")
@click.option("--snapshot", "snapshot_file", required=True, type=click.Path(dir_okay=False),
              help="The snapshot the run was made on.")
@click.option("--run", type=click.Path(dir_okay=False),
              help="The run file (a pipeline run: its last --stage).")
@click.option("--stage", "stages", multiple=True, metavar="NAME=FILE",
              help="A pipeline run: one run file per stage, in pipeline order (repeatable), "
                   "e.g. --stage candidates=c.jsonl --stage reranked=r.jsonl --stage "
                   "context=x.jsonl. The manifest lies beside the last one.")
@click.option("--timed-on", metavar="TEXT",
              help="Where the run's latency_ms were measured (machine, runner type): "
                   "latencies from different places are not comparable.")
@click.option("--system", "system", multiple=True, metavar="KEY=VALUE",
              help="What produced the run: retriever, model, index, parameters (repeatable).")
@click.option("--commit", help="Source commit; 'none' to record none on purpose.  [default: "
              "$GITHUB_SHA, else git rev-parse HEAD; none found is an error]")
@click.option("--created", help="Creation time, YYYY-MM-DDTHH:MM:SSZ.  [default: now, UTC]")
@click.option("--chunks", type=click.Path(dir_okay=False),
              help="The run's chunk table (JSON Lines: id, doc_id, start, end, tokens), pinned "
                   "by its hash: its items are chunks of it.")
@click.option("--chunking-version", help="A name for the run's chunking (with --chunks).")
@click.option("--chunking-param", "chunking_params", multiple=True, metavar="KEY=VALUE",
              help="A parameter of the run's chunking (with --chunks; repeatable).")
@click.option("--scores", type=click.Path(dir_okay=False),
              help="The run's per-query scores (answer-level judges, any per-query value), "
                   "pinned by hash and gated as score:NAME: JSON Lines {\"query_id\", "
                   "\"scores\": {NAME: VALUE}, \"sample\"}, CSV with a query_id column, or a "
                   "tool's output (--scores-format).")
@click.option("--scores-format", metavar="FORMAT",
              help="jsonl, csv, ragas, deepeval, promptfoo or inspect.  [default: jsonl or csv, "
                   "from the content]")
@click.option("--judge", "judge", multiple=True, metavar="KEY=VALUE",
              help="Who scored (repeatable): e.g. --judge model=gpt-4o-2024-08-06 --judge "
                   "prompt=sha256:... Runs judged differently are not comparable (exit 3).")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Where to write it.  [default: RUN.manifest.json]")
def run_manifest(snapshot_file, run, stages, timed_on, system, commit, created, chunks,
                 chunking_version, chunking_params, scores, scores_format, judge, output):
    """Write a run's manifest, after checking the run.

    Write the manifest of a run made on a snapshot (after checking the run against it)."""
    from retrieval_gate.commands.validate import record_run

    pairs = [_stage_file(text) for text in stages]
    target, loaded = record_run(snapshot_file, run, _key_values("--system", system), commit,
                                created, output, chunks, chunking_version,
                                _key_values("--chunking-param", chunking_params), pairs,
                                None if timed_on is None else _utf8("--timed-on", timed_on),
                                scores, scores_format,
                                {k: str(v) for k, v in _key_values("--judge", judge, typed=False).items()})
    made = (f"pipeline run ({', '.join(_shown(n) for n, _ in pairs)})" if pairs
            else f"run {_shown(run)}" if run is not None else f"scores only {_shown(scores)}")
    _print(f"{_shown(target)}: {made} on snapshot '{_shown(loaded.name)}' "
           f"({loaded.fingerprint})")


def _stage_file(text: str, what: str = "FILE") -> tuple[str, str]:
    """``NAME=FILE`` (or ``NAME=`` another ``what``) → (name, file)."""
    from retrieval_gate.core.errors import InputError
    from retrieval_gate.core.stages import STAGE_NAME

    name, sep, file = _utf8("--stage", text).partition("=")
    if not sep or not file or not STAGE_NAME.fullmatch(name):
        example = "runs/candidates.jsonl" if what == "FILE" else "my_search:candidates"
        raise InputError("--stage", f"'{text[:60]}' is not NAME={what} with a stage name "
                         "(letters, digits, _ . -; at most 64)",
                         f"write --stage candidates={example}")
    return name, file


def _report_files(command):
    """``--NAME FILE`` for every report format written to a file, in the registry's order."""
    for format_ in reversed(FILES):
        command = click.option(f"--{format_.name}", f"{format_.name}_out",
                               type=click.Path(dir_okay=False), help=format_.file_help)(command)
    return command


@cli.command()
@click.option("--snapshot", "snapshot_file", type=click.Path(dir_okay=False),
              help="The snapshot manifest.  [default: from the config]")
@click.option("--baseline", type=click.Path(readable=False),
              help="The approved baseline: a run (manifest beside it) or a baseline folder.  "
                   "[default: from the config]")
@click.option("--candidate", type=click.Path(readable=False),
              help="The candidate run (manifest beside it).  [default: from the config]")
@click.option("--config", type=click.Path(dir_okay=False),
              help="gate.toml or pyproject.toml.  [default: ./gate.toml, else "
                   "[tool.retrieval-gate] in ./pyproject.toml, else the defaults]")
@click.option("--fail-on", type=click.Choice(["regression", "inconclusive", "never"]),
              help="Which verdicts exit nonzero.  [default: from the config, else regression]")
@click.option("--gate", "gates", multiple=True, metavar="MEASURE[:SLICE]=MARGIN",
              help="Gate this measure (on this slice) with this margin; repeatable; replaces "
                   "the config's gates, e.g. --gate Recall@10=0.02 --gate "
                   "nDCG@10:paraphrase=0.05.")
@click.option("--lower-is-better", "harms", multiple=True, metavar="score:NAME",
              help="A score gated with --gate whose rise is the regression (a harm, e.g. "
                   "score:hallucination); repeatable. A score the config marks "
                   "lower-is-better stays so under --gate.")
@click.option("--no-config", is_flag=True,
              help="Read no config file: the defaults, and the options given.")
@_report_files
@click.option("--github/--no-github", default=None,
              help="Job summary, annotations and step outputs for GitHub Actions.  "
                   "[default: on when GITHUB_ACTIONS=true]")
@click.option("--output-format", type=click.Choice(STDOUT), default="text", show_default=True,
              help="What to print on standard output.")
@click.pass_context
def check(ctx, snapshot_file, baseline, candidate, config, fail_on, gates, harms, no_config,
          github, output_format, **report_files):
    """Compare a candidate with the baseline, and decide.

    Compare a candidate run with the approved baseline, query by query, and decide.

    Exit 0 pass, 1 material regression, 2 invalid input, 3 not comparable, 4 inconclusive
    (only with --fail-on inconclusive); 70 a bug, 74 the machine refused, 130 interrupted."""
    import os

    from retrieval_gate.gating.gate import run_gate
    from retrieval_gate.inputs.config import gate_inputs, harmful, parse_gate_option
    from retrieval_gate.report.files import write_reports

    if github is None:
        github = os.environ.get("GITHUB_ACTIONS") == "true"
    files = {r.name: report_files[f"{r.name}_out"] for r in FILES}
    try:
        inputs = gate_inputs(snapshot_file, baseline, candidate, config, fail_on,
                             gates=harmful(tuple(parse_gate_option(_utf8("--gate", g))
                                                 for g in gates), harms),
                             no_config=no_config)
        report = run_gate(inputs.snapshot, inputs.baseline, inputs.candidate, inputs.policy,
                           inputs.config)
        out = write_reports(report, output_format, files, github)
    except Exception as caught:
        # an operating system's refusal that names the input (a path too long) is input too
        exc = (environment_fault(caught) if isinstance(caught, (OSError, MemoryError))
               else caught)
        code = exc.exit_code if isinstance(exc, GateError) else EXIT_INTERNAL
        if github:
            from retrieval_gate.report.github import publish_failure

            try:  # a refused $GITHUB_OUTPUT must not hide the error it was to publish
                for line in publish_failure(str(exc), code):
                    _write_out(line)
            except GateError as fault:
                if str(fault) != str(exc):  # not the very fault being reported
                    click.echo(f"warning: {fault}", err=True)
        if isinstance(exc, GateError) and not isinstance(exc, EnvironmentFault):
            from retrieval_gate.report.files import write_failure_reports

            try:  # the error itself is what must reach the user; its reports are a courtesy
                write_failure_reports(str(exc), code, files)
            except GateError:
                pass
        if exc is caught:
            raise
        raise exc from None
    if github:  # made workflow-safe by write_reports, followed by the gate's own annotations
        _write_out(out, nl=False)
    else:
        _print(out, nl=False, json=output_format == "json")
    ctx.exit(report.exit_code)


@cli.group()
def baseline() -> None:
    """Manage approved baselines."""


@baseline.command()
@click.option("--candidate", required=True, type=click.Path(dir_okay=False),
              help="The run to approve (its manifest beside it).")
@click.option("--to", "to", required=True, type=click.Path(file_okay=False),
              help="The baseline folder, e.g. baselines/NAME (created if needed).")
@click.option("--snapshot", "snapshot_file", type=click.Path(dir_okay=False),
              help="The snapshot.  [default: from the config]")
@click.option("--force", is_flag=True,
              help="Replace a baseline made on a snapshot of another name (another test set), "
                   "or approve the baseline's own run again under a manifest that drops its "
                   "chunk table, scores or stages.")
@click.option("--commit", help="Source commit to record; 'none' to record none on purpose.  "
              "[default: $GITHUB_SHA, else git rev-parse HEAD; none found is an error]")
def approve(candidate, to, snapshot_file, force, commit):
    """Make a candidate run the approved baseline.

    Make a candidate run the approved baseline: its run and manifest become the next version
    in the baseline folder, switched in with one atomic rename."""
    from retrieval_gate.commands.approve import approve_baseline
    from retrieval_gate.commands.power_said import measured
    from retrieval_gate.inputs.config import find_config, snapshot_path

    config = find_config()  # its gates are recorded as the measures the approval gates
    done = approve_baseline(candidate, to, snapshot_path(snapshot_file), force, commit,
                            None if config is None else config.policy)
    if done.unchanged:
        _print(f"unchanged: {_shown(candidate)} is already the approved baseline "
               f"({_shown(done.run)}) — nothing written")
        if done.described:
            _report("its manifest describes the run otherwise — " + "; ".join(
                _shown(line) for line in done.described) + ": the approved manifest is kept",
                "note")
        return
    if done.described:
        _report("the candidate's run is the approved baseline's (the same bytes), described "
                "otherwise — " + "; ".join(_shown(line) for line in done.described)
                + ": approved as a new version", "note")
    _print(f"approved {_shown(done.run)} ({_shown(done.manifest)})"
           + "".join(f"; replaced {_shown(old)}" for old in done.replaced)
           + (f"; the snapshot moved on: {done.snapshot_change['from'][:19]}… → "
              f"{done.snapshot_change['to'][:19]}…" if done.snapshot_change else ""))
    if done.power:
        _print("what the test set can certify (the gates of the configuration):")
        assert config is not None  # the power is measured under a configuration only
        for line in measured(done.power, config.policy.fail_on):
            _print(f"  {_shown(line)}")
    for leftover in done.kept:
        _report(f"could not delete the leftover {leftover} — the next approval tries again",
                "warning")


@cli.command()
@click.option("--queries", required=True, type=click.Path(dir_okay=False),
              help="The query set (JSON Lines).")
@click.option("--qrels", required=True, type=click.Path(dir_okay=False),
              help="The judgments (TREC, JSON Lines or JSON).")
@click.option("--corpus-file", type=click.Path(dir_okay=False),
              help="The corpus (JSON Lines with text, or a list of ids), pinned by hash.")
@click.option("--unit", type=click.Choice(["document", "span", "chunk"]),
              help="What a judgment is about.  [default: span for judgments with start and "
                   "end; chunk with --chunking-version; document when every judged id is a "
                   "document of the corpus; refused when the judged ids look like chunk ids]")
@click.option("--chunking-version",
              help="Chunk judgments: the chunking whose chunk ids they name.")
@click.option("--chunks", "chunks_file", type=click.Path(dir_okay=False),
              help="Chunk judgments: pin the chunking's chunk table by its hash.")
@click.option("--snapshot", "snapshot_file", type=click.Path(dir_okay=False),
              help="Where to freeze the snapshot.  [default: snapshot.json beside the queries]")
@click.option("--baseline", default="baselines/main", show_default=True,
              help="The baseline folder gate.toml and the workflow name.")
@click.option("--candidate", default="runs/candidate.trec", show_default=True,
              help="Where the workflow writes the candidate run.")
def init(queries, qrels, corpus_file, unit, chunking_version, chunks_file, snapshot_file,
         baseline, candidate):
    """Start gating this repository.

    Start gating this repository: freeze a snapshot from the files, write gate.toml and
    .github/workflows/retrieval-gate.yml — never over an existing file."""
    from retrieval_gate.commands.init import initialise

    done = initialise(queries, qrels, snapshot=snapshot_file, corpus_file=corpus_file,
                      unit=unit or None, chunking_version=chunking_version,
                      chunks_file=chunks_file, baseline=baseline, candidate=candidate)
    for path in done.written:
        _print(f"wrote {_shown(path)}")
    _print(done.unit.describe())
    _print("what the test set can certify (gate.toml says it too):")
    for line in done.power:
        _print(f"  {line}")
    _print("next:")
    for i, step in enumerate(done.next_steps, 1):
        _print(f"  {i}. {step}")


@cli.command()
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False))
def history(folder):
    """Print a baseline folder's approvals.

    Print a baseline folder's approvals, oldest first: when, commit, snapshot, system and the
    means of the measures."""
    from retrieval_gate.commands.history import history_table

    _print(history_table(folder), nl=False)


@cli.group()
def pool() -> None:
    """Judge what the runs found that nobody judged.

    Judge what the runs found: export their unjudged items, merge the grades back."""


@pool.command("export")
@click.option("--snapshot", "snapshot_file", type=click.Path(dir_okay=False),
              help="The snapshot manifest.  [default: from the config]")
@click.option("--candidate", required=True, type=click.Path(readable=False),
              help="The candidate run (manifest beside it).")
@click.option("--baseline", type=click.Path(readable=False),
              help="Also pool this run: a run (manifest beside it) or a baseline folder.")
@click.option("-k", "k", type=int, default=10, show_default=True,
              help="Pool the top k of each ranking (documents, or items for chunk and span "
                   "judgments).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The pool file to write (JSON Lines, one unjudged item per line).")
def pool_export(snapshot_file, candidate, baseline, k, output):
    """Write the unjudged items for assessors.

    Write the unjudged items of the candidate's top k (and the baseline's) for assessors:
    each line's "grade" is null until an assessor fills it in."""
    from retrieval_gate.commands.pool import export_pool
    from retrieval_gate.inputs.config import snapshot_path

    done = export_pool(snapshot_path(snapshot_file), candidate, output, baseline, k)
    runs = " and the ".join(done.roles)
    _print(f"{_count(len(done.items), 'unjudged item')} for {_count(done.queries, 'query')} "
           f"written to {_shown(output)} (top {k} of the {runs})"
           + (f"; {_count(done.left_out, 'item')} left out: not visible to the query's asker "
              "or not in force on its day" if done.left_out else ""))


@pool.command("merge")
@click.option("--snapshot", "snapshot_file", type=click.Path(dir_okay=False),
              help="The snapshot the pool was exported from.  [default: from the config]")
@click.option("--judged", required=True, type=click.Path(dir_okay=False),
              help="The pool file with every grade filled in.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The qrels to write: the snapshot's judgments and the new ones (JSON Lines).")
@click.option("--qrels-version",
              help="The new judgments' version in the new snapshot.  [default: the old "
                   "version + \"+pool\"]")
@click.option("--freeze", "freeze_to", type=click.Path(dir_okay=False),
              help="Also freeze a new snapshot here: the old one's settings and files, these "
                   "judgments. Every file must lie in its folder or below.")
def pool_merge(snapshot_file, judged, output, qrels_version, freeze_to):
    """Merge an assessor's grades into the judgments.

    Merge an assessor's grades into the snapshot's judgments (and freeze a new snapshot)."""
    from retrieval_gate.commands.pool import merge_pool
    from retrieval_gate.inputs.config import snapshot_path

    done = merge_pool(snapshot_path(snapshot_file), judged, output,
                      None if qrels_version is None else _utf8("--qrels-version",
                                                               qrels_version), freeze_to)
    _print(f"{_count(done.added, 'new judgment')} for {_count(done.queries, 'query')} "
           f"({done.repeated} already recorded) written to {_shown(output)}")
    if done.snapshot is not None:
        _print(f"{_shown(freeze_to)}: snapshot '{_shown(done.snapshot.name)}', fingerprint "
               f"{done.snapshot.fingerprint}, qrels version "
               f"{_shown(done.snapshot.document['qrels']['version'])} — re-run the baseline on "
               "it and approve it, then the candidate")
    for warning in done.warnings:
        _print(f"warning: {_shown(warning)}")


@cli.group()
def chunks() -> None:
    """Convert chunk tables."""


@chunks.command("locate")
@click.option("--chunks", "table", required=True, type=click.Path(dir_okay=False),
              help="The chunks as a splitter wrote them (JSON Lines: id, doc_id, text, "
                   "tokens?), in the order it cut them.")
@click.option("--corpus", required=True, type=click.Path(dir_okay=False),
              help="The corpus (JSON Lines documents with their text).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The chunk table to write (JSON Lines: id, doc_id, start, end, tokens).")
def chunks_locate(table, corpus, output):
    """Find each chunk's place in its document.

    Find each chunk's place (start, end) in its document's text, and write the chunk table
    the gate reads."""
    from retrieval_gate.commands.locate_chunks import write_located

    done = write_located(output, table, corpus)
    _print(f"{_count(len(done.lines), 'chunk')} of {_count(done.documents, 'document')} "
           f"located → {_shown(output)}: {done.exact:,} exactly, {done.loose:,} with white "
           "space read loosely")


@cli.group()
def qrels() -> None:
    """Convert judgments."""


@qrels.command("to-spans")
@click.option("--qrels", "qrels_file", required=True, type=click.Path(dir_okay=False),
              help="The chunk judgments: qrels of chunk ids (TREC, JSON Lines or JSON).")
@click.option("--chunks", required=True, type=click.Path(dir_okay=False),
              help="The judged chunking's chunk table (JSON Lines: id, doc_id, start, end).")
@click.option("--corpus", required=True, type=click.Path(dir_okay=False),
              help="The corpus (JSON Lines documents with their text).")
@click.option("--evidence", type=click.Path(dir_okay=False),
              help="Quotes of the evidence (JSON Lines: query_id, chunk_id?, evidence, "
                   "fact?): each judgment is narrowed to the quotes found in its chunk.")
@click.option("--snap", type=click.Choice(["sentence", "paragraph"]),
              help="Grow each quote found to whole sentences or paragraphs.")
@click.option("--qrels-format", type=click.Choice(["trec", "json", "jsonl"]),
              help="Force the qrels format (default: detected).")
@click.option("-o", "--output", required=True, type=click.Path(),
              help="The span judgments to write (JSON Lines qrels).")
def to_spans(qrels_file, chunks, corpus, evidence, snap, qrels_format, output):
    """Turn chunk judgments into span judgments.

    Turn chunk judgments into span judgments that any chunking can be compared on: each
    judgment narrowed to its evidence, overlapping chunks split or merged."""
    from retrieval_gate.commands.to_spans import conversion_lines, write_spans

    done = write_spans(output, qrels_file, chunks, corpus, evidence, snap, qrels_format)
    _print("\n".join(conversion_lines(done, output, chunks, evidence)))


def _count(n: int, noun: str) -> str:
    """``1 query``, ``2 queries``, ``1,024 items``."""
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n:,} {noun if n == 1 else plural}"


def main() -> None:
    """Console-script entry point. Standard output is flushed before exit, so that a write it
    refuses (``gate score ... > /dev/full``) is reported as an environment fault (exit 74)
    rather than lost at interpreter shutdown; a reader that closed the pipe (``| head -1``)
    is not one: the command keeps its own exit code, quietly."""
    try:
        code = cli.main(prog_name="gate", standalone_mode=False)
        try:
            sys.stdout.flush()
        except BrokenPipeError:  # the reader took what it wanted: the work is done
            _discard_stdout()
    except click.UsageError as exc:
        _report(_usage_line(exc))
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except click.Abort:
        _report(_INTERRUPTED)
        code = EXIT_INTERRUPTED
    except (OSError, MemoryError) as exc:
        fault = environment_fault(exc)
        _report(str(fault))
        code = fault.exit_code
    if code == EXIT_ENVIRONMENT:
        _discard_stdout()
    _no_collection_at_exit()
    sys.exit(code if isinstance(code, int) else 0)


def _usage_line(exc: click.UsageError) -> str:
    """A wrong command line (a missing option, an unknown one, a value of the wrong kind) in
    the gate's own words: ``COMMAND: what is wrong — see COMMAND --help``, one line, exit 2."""
    command = exc.ctx.command_path if exc.ctx is not None else "gate"
    message = " ".join(exc.format_message().split()).rstrip(".")
    return f"{command}: {message[:1].lower()}{message[1:]} — see {command} --help"


def _no_collection_at_exit() -> None:
    """A process-wide choice, made here and not in the library: the process is about to end,
    so its objects are moved out of the garbage collector's reach (``gc.freeze``) and the
    interpreter's shutdown does not trace them all once more (with numpy and the package
    loaded, 20–40 ms of a short command). Objects are still freed, files closed and ``atexit``
    functions run as before; only unreachable cycles are left to the end of the process."""
    import gc

    gc.freeze()


def _discard_stdout() -> None:
    """Point standard output at the null device, so that the interpreter's final flush of text
    it could not write does not fail a second time (Python's advice for broken pipes)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
