"""The ``gate`` command, assembled from one module per command group. A command only parses its
options, calls the library, and prints what it returns; its errors reach the user through one
mapping (:mod:`retrieval_gate.cli.errors`). Heavy modules are imported inside the commands, so
that ``gate --help`` stays instant."""

from __future__ import annotations

import click

from retrieval_gate import __version__
from retrieval_gate.cli import baseline, check, judgments, run, score, snapshot
from retrieval_gate.cli.errors import GateGroup, run_and_exit
from retrieval_gate.cli.process import prepare_process


@click.group(cls=GateGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="retrieval-gate")
def cli() -> None:
    """retrieval-gate: guard retrieval quality in CI.

    Exit codes: 0 pass, 1 regression, 2 invalid input or usage, 3 not comparable,
    4 inconclusive (with --fail-on inconclusive), 70 internal error, 74 the machine refused
    (disk full, no permission), 130 interrupted.
    """
    prepare_process()


for command in (score.score, snapshot.schema_command, snapshot.snapshot, snapshot.validate,
                run.run_command, run.run_manifest, check.check, baseline.baseline,
                baseline.init, baseline.history, judgments.pool, judgments.chunks,
                judgments.qrels):
    cli.add_command(command)


def main() -> None:
    """Console-script entry point: ``gate``."""
    run_and_exit(cli)
