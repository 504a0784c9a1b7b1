"""``gate check``: a candidate compared with the approved baseline, and the verdict."""

from __future__ import annotations

import click

from retrieval_gate.cli.errors import as_gate_error
from retrieval_gate.cli.options import utf8
from retrieval_gate.cli.output import print_text, write_out
from retrieval_gate.core.errors import EnvironmentFault, GateError
from retrieval_gate.report.registry import FILES, STDOUT


def _report_files(command):
    """``--NAME FILE`` for every report format written to a file, in the registry's order."""
    for format_ in reversed(FILES):
        command = click.option(f"--{format_.name}", f"{format_.name}_out",
                               type=click.Path(dir_okay=False), help=format_.file_help)(command)
    return command


@click.command()
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
                             gates=harmful(tuple(parse_gate_option(utf8("--gate", g))
                                                 for g in gates), harms),
                             no_config=no_config)
        report = run_gate(inputs.snapshot, inputs.baseline, inputs.candidate, inputs.policy,
                           inputs.config)
        out = write_reports(report, output_format, files, github)
    except Exception as caught:
        exc, code = as_gate_error(caught)
        if github:
            from retrieval_gate.report.github import publish_failure

            try:  # a refused $GITHUB_OUTPUT must not hide the error it was to publish
                for line in publish_failure(str(exc), code):
                    write_out(line)
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
        write_out(out, nl=False)
    else:
        print_text(out, nl=False, json=output_format == "json")
    ctx.exit(report.exit_code)
