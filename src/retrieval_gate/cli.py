"""The ``gate`` command. Click commands only: parse options, call the library, render, and map
errors to exit codes (DESIGN §6). Heavy modules are imported inside the commands, so that
``gate --help`` stays instant."""

from __future__ import annotations

import sys

import click

from retrieval_gate import __version__
from retrieval_gate.errors import EXIT_INTERNAL, GateError

_POLICY_HELP = {
    "unjudged": "An unjudged item is non-relevant (default) or an error.",
    "duplicates": "An item repeated in one ranking is an error (default) or keeps its first rank.",
    "missing": "A query absent from the run is an error (default) or scores 0 (trec_eval -c).",
    "extra": "A run query outside the qrels / query set is an error (default) or ignored.",
    "unlabeled": "An answerable query without a relevant judgment is an error (default) or "
                 "scores 0 with a warning.",
}


class _Gate(click.Group):
    """Turns GateError into ``error: message`` and its exit code, and any other exception
    into an internal-error message with exit 70, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GateError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 — a bug: say so, and ask for a report
            click.echo(f"internal error: {type(exc).__name__}: {exc} — this is a bug in "
                       f"retrieval-gate {__version__}; please report it with the command you "
                       "ran and its input files", err=True)
            ctx.exit(EXIT_INTERNAL)


@click.group(cls=_Gate, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="retrieval-gate")
def cli() -> None:
    """retrieval-gate: guard retrieval quality in CI.

    Exit codes: 0 pass, 1 regression, 2 invalid input or usage, 3 not comparable,
    4 inconclusive (with --fail-on inconclusive), 70 internal error.
    """


def _policy_options(command):
    for name in reversed(list(_POLICY_HELP)):
        choices = {"unjudged": ("nonrelevant", "error"), "duplicates": ("error", "first"),
                   "missing": ("error", "zero"), "extra": ("error", "ignore"),
                   "unlabeled": ("error", "zero")}[name]
        command = click.option(f"--{name}", type=click.Choice(choices), default=choices[0],
                               show_default=True, help=_POLICY_HELP[name])(command)
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
@click.option("--qrels-format", type=click.Choice(["trec", "json", "jsonl"]),
              help="Force the qrels format (default: detected).")
@click.option("--run-format", type=click.Choice(["trec", "json", "jsonl"]),
              help="Force the run format (default: detected).")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the report to this file (atomically) instead of standard output.")
def score(files, measures, k, threshold, unjudged, duplicates, missing, extra, unlabeled,
          queries, doc_map, qrels_format, run_format, output_format, output):
    """Score a run per query: gate score QRELS RUN, or gate score FIXTURE.json."""
    from retrieval_gate.evaluate import choose_measures, score_files
    from retrieval_gate.formats.atomic import write_text_atomic
    from retrieval_gate.model import ScoringPolicy
    from retrieval_gate.report.scores import scores_document, scores_text, to_json

    policy = ScoringPolicy(threshold, unjudged, duplicates, missing, extra, unlabeled)
    chosen = choose_measures(measures, k)
    results = score_files(files, chosen, policy, queries, doc_map, qrels_format, run_format)
    named = results[0].name is not None
    if output_format == "json":
        documents = {r.name: scores_document(r.scores, r.inputs) for r in results}
        text = to_json({"runs": documents} if named else documents[None])
    else:
        text = "\n".join(scores_text(r.scores, r.inputs, r.name) for r in results)
    if output:
        write_text_atomic(output, text)
    else:
        click.echo(text, nl=False)


def main() -> None:
    """Console-script entry point."""
    sys.exit(cli(prog_name="gate"))
