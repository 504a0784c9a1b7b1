"""Judgments and chunk tables: ``gate pool export`` and ``merge`` (judge what the runs found),
``gate qrels to-spans`` and ``gate chunks locate``."""

from __future__ import annotations

import click

from retrieval_gate.cli.options import utf8
from retrieval_gate.cli.output import count, print_text, shown


@click.group()
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
    print_text(f"{count(len(done.items), 'unjudged item')} for {count(done.queries, 'query')} "
           f"written to {shown(output)} (top {k} of the {runs})"
           + (f"; {count(done.left_out, 'item')} left out: not visible to the query's asker "
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
                      utf8("--qrels-version", qrels_version), freeze_to)
    print_text(f"{count(done.added, 'new judgment')} for {count(done.queries, 'query')} "
           f"({done.repeated} already recorded) written to {shown(output)}")
    if done.snapshot is not None:
        print_text(f"{shown(freeze_to)}: snapshot '{shown(done.snapshot.name)}', fingerprint "
               f"{done.snapshot.fingerprint}, qrels version "
               f"{shown(done.snapshot.document['qrels']['version'])} — re-run the baseline on "
               "it and approve it, then the candidate")
    for warning in done.warnings:
        print_text(f"warning: {shown(warning)}")


@click.group()
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
    print_text(f"{count(len(done.lines), 'chunk')} of {count(done.documents, 'document')} "
           f"located → {shown(output)}: {done.exact:,} exactly, {done.loose:,} with white "
           "space read loosely")


@click.group()
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
    print_text("\n".join(conversion_lines(done, output, chunks, evidence)))
