"""The test set's files: ``gate snapshot freeze`` and ``diff``, ``gate validate``, and
``gate schema`` (the JSON Schemas those files follow)."""

from __future__ import annotations

import click

from retrieval_gate.cli.options import key_values, policy_options, utf8
from retrieval_gate.cli.output import print_text, shown, write_out


@click.command("schema")
@click.argument("name", type=click.Choice(["snapshot", "run-manifest", "config", "report"]))
def schema_command(name):
    """Print one of the shipped JSON Schemas.

    Print one of the JSON Schemas (2020-12) shipped with retrieval-gate."""
    from retrieval_gate.formats.schema import schema_text

    write_out(schema_text(name), nl=False)


@click.group()
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
@policy_options
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

    contracts = [parse_contract(utf8("--stage", text)) for text in stages]
    frozen = freeze_snapshot(
        output, queries=queries, queries_version=queries_version, qrels=qrels,
        qrels_version=qrels_version, corpus_version=corpus_version, corpus_file=corpus_file,
        unit=unit, chunking_version=chunking_version,
        chunking_params=key_values("--chunking-param", chunking_params),
        chunks_file=chunks_file, min_coverage=min_coverage,
        permissions_version=permissions_version, permissions_file=permissions_file, name=name,
        measures=measures, gain=gain, stages=contracts,
        policy=ScoringPolicy(threshold, unjudged, duplicates, missing, extra, unlabeled))
    print_text(f"{shown(output)}: snapshot '{shown(frozen.name)}', fingerprint "
           f"{frozen.fingerprint}")
    if frozen.unit_choice is not None:
        print_text(frozen.unit_choice.describe())
    for warning in frozen.warnings:
        print_text(f"warning: {shown(warning)}")


@snapshot.command()
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
def diff(old, new):
    """Say what changed between two snapshots.

    What changed in the test set from snapshot OLD to snapshot NEW: queries added, removed
    or reworded, judgments added, removed or regraded (each snapshot's files must be there)."""
    from retrieval_gate.commands.snapshot_diff import test_set_change

    print_text(f"{shown(old)} → {shown(new)}: {test_set_change(old, new).summary()}")


@click.command()
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

    print_text(validation_text(validate_all(snapshot_file, runs, run_manifest)), nl=False)
