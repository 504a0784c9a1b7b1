"""``gate run`` (your retriever over the frozen queries), ``gate run merge`` (its shards) and
``gate run-manifest`` (the manifest of a run made elsewhere)."""

from __future__ import annotations

import sys

import click

from retrieval_gate.cli.options import key_values, utf8
from retrieval_gate.cli.output import count, print_text, say, shown


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


@click.group("run", invoke_without_command=True, subcommand_metavar="[merge]")
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
        utf8("--retriever", retriever),
        snapshot_path(snapshot_file), output,
        stages=[_stage_file(text, "MODULE:FUNCTION") for text in stages],
        tokenizer=utf8("--tokenizer", tokenizer),
        system=key_values("--system", system), batch_size=batch_size,
        concurrency=concurrency, timeout=timeout, retries=retries, on_error=on_error,
        resume=resume, shard=shard, progress=_progress_line(show_progress),
        commit=commit, created=created,
        timed_on=utf8("--timed-on", timed_on), chunks=chunks,
        chunking_version=chunking_version,
        hits_path=utf8("--hits-path", hits_path),
        headers=list(headers),
        id_key=utf8("--id-key", id_key))
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

    failed = (f"; {count(len(done.failed), 'query')} failed, left out of the run (first: "
              f"{shown(done.failed[0][0])}: {shown(done.failed[0][1])})" if done.failed
              else "")
    if done.manifest is None:
        print_text(f"{shown(done.output)}: shard of {count(done.queries, 'query')} on snapshot "
               f"'{shown(done.snapshot.name)}' ({count(done.called, 'call')} made in "
               f"{done.seconds:.1f} s){failed} — merge the shards with gate run merge")
        return
    if is_trec(done.output):
        say("the run is TREC, which holds no costs: latency_ms is not recorded (write "
                "JSON Lines to keep it)", "note")
    if done.idle_tokenizer is not None:
        say(f"--tokenizer {shown(done.idle_tokenizer)} counted no hit: none carried text, "
                "so the manifest names no tokenizer (return each hit's text to have it "
                "counted)", "note")
    print_text(f"{shown(done.output)}: run of {count(done.queries, 'query')} on snapshot "
           f"'{shown(done.snapshot.name)}', manifest {shown(done.manifest)}"
           + (f" ({count(done.called, 'query')} called in {done.seconds:.1f} s)"
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
                        system=key_values("--system", system), commit=commit, created=created,
                        timed_on=utf8("--timed-on", timed_on),
                        chunks=chunks, chunking_version=chunking_version)
    _run_summary(done)


@click.command("run-manifest")
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
    target, loaded = record_run(snapshot_file, run, key_values("--system", system), commit,
                                created, output, chunks, chunking_version,
                                key_values("--chunking-param", chunking_params), pairs,
                                utf8("--timed-on", timed_on),
                                scores, scores_format,
                                {k: str(v) for k, v in key_values("--judge", judge, typed=False).items()})
    made = (f"pipeline run ({', '.join(shown(n) for n, _ in pairs)})" if pairs
            else f"run {shown(run)}" if run is not None else f"scores only {shown(scores)}")
    print_text(f"{shown(target)}: {made} on snapshot '{shown(loaded.name)}' "
           f"({loaded.fingerprint})")


def _stage_file(text: str, what: str = "FILE") -> tuple[str, str]:
    """``NAME=FILE`` (or ``NAME=`` another ``what``) → (name, file)."""
    from retrieval_gate.core.errors import InputError
    from retrieval_gate.core.stages import STAGE_NAME

    name, sep, file = utf8("--stage", text).partition("=")
    if not sep or not file or not STAGE_NAME.fullmatch(name):
        example = "runs/candidates.jsonl" if what == "FILE" else "my_search:candidates"
        raise InputError("--stage", f"'{text[:60]}' is not NAME={what} with a stage name "
                         "(letters, digits, _ . -; at most 64)",
                         f"write --stage candidates={example}")
    return name, file
