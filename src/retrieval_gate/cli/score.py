"""``gate score``: a run scored per query, as trec_eval does."""

from __future__ import annotations

import click

from retrieval_gate.cli.options import policy_options
from retrieval_gate.cli.output import print_text


@click.command()
@click.argument("files", nargs=-1, required=True, metavar="QRELS RUN | FIXTURE.json")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="A measure such as nDCG@10, RR(rel=2)@10, AP (repeatable).")
@click.option("-k", "--k", "k", type=int, default=None,
              help="Cutoff of the default set Recall, P, Hit, RR, nDCG, AP.  [default: 10]")
@policy_options
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
        print_text(text, nl=False, json=output_format == "json")
