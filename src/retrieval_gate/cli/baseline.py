"""Adopting and keeping the gate: ``gate init``, ``gate baseline approve`` and ``gate history``."""

from __future__ import annotations

import click

from retrieval_gate.cli.output import print_text, say, shown


@click.group()
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
        print_text(f"unchanged: {shown(candidate)} is already the approved baseline "
               f"({shown(done.run)}) — nothing written")
        if done.described:
            say("its manifest describes the run otherwise — " + "; ".join(
                shown(line) for line in done.described) + ": the approved manifest is kept",
                "note")
        return
    if done.described:
        say("the candidate's run is the approved baseline's (the same bytes), described "
                "otherwise — " + "; ".join(shown(line) for line in done.described)
                + ": approved as a new version", "note")
    print_text(f"approved {shown(done.run)} ({shown(done.manifest)})"
           + "".join(f"; replaced {shown(old)}" for old in done.replaced)
           + (f"; the snapshot moved on: {done.snapshot_change['from'][:19]}… → "
              f"{done.snapshot_change['to'][:19]}…" if done.snapshot_change else ""))
    if done.power:
        print_text("what the test set can certify (the gates of the configuration):")
        assert config is not None  # the power is measured under a configuration only
        for line in measured(done.power, config.policy.fail_on):
            print_text(f"  {shown(line)}")
    for leftover in done.kept:
        say(f"could not delete the leftover {leftover} — the next approval tries again",
                "warning")


@click.command()
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
        print_text(f"wrote {shown(path)}")
    print_text(done.unit.describe())
    print_text("what the test set can certify (gate.toml says it too):")
    for line in done.power:
        print_text(f"  {line}")
    print_text("next:")
    for i, step in enumerate(done.next_steps, 1):
        print_text(f"  {i}. {step}")


@click.command()
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False))
def history(folder):
    """Print a baseline folder's approvals.

    Print a baseline folder's approvals, oldest first: when, commit, snapshot, system and the
    means of the measures."""
    from retrieval_gate.commands.history import history_table

    print_text(history_table(folder), nl=False)
