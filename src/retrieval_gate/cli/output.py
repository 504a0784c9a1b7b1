"""What the ``gate`` command writes to its terminal: standard output line by line and messages on
standard error, both made safe, since they quote input (ids, names, paths) that may hold
anything."""

from __future__ import annotations

import sys

import click


def say(message: str, kind: str = "error") -> None:
    """``error: LINE`` (or ``KIND: LINE``) on standard error for each line of ``message``. Messages quote input
    (ids, paths): any other line break or control character in a line is shown as an escape,
    and no line can be a GitHub workflow command (the runner reads standard error too)."""
    from retrieval_gate.core.untrusted import command_safe, visible

    for line in message.rstrip("\n").split("\n"):
        click.echo(command_safe(f"{kind}: {visible(line)}"), err=True)


def shown(value: object) -> str:
    """A name or path from the input, as one visible run of text (its line breaks escaped)."""
    from retrieval_gate.core.untrusted import visible

    return visible(str(value))


def count(n: int, noun: str) -> str:
    """``1 query``, ``2 queries``, ``1,024 items``."""
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n:,} {noun if n == 1 else plural}"


def print_text(text: str, nl: bool = True, json: bool = False) -> None:
    """Write ``text`` to standard output, line by line: any control or separator character
    within a line is shown as an escape (not in ``json``, whose strings escape what breaks a
    line already), and under GitHub Actions no line can be taken for a workflow command (the
    text quotes input: names, ids, paths)."""
    import os

    from retrieval_gate.core.untrusted import command_safe, visible

    safe = command_safe if os.environ.get("GITHUB_ACTIONS") == "true" else str
    visible_lines = str if json else visible
    write_out("\n".join(safe(visible_lines(line)) for line in text.split("\n")), nl=nl)


def write_out(text: str, nl: bool = True) -> None:
    """``text`` on standard output. A reader that closed its end (``gate init ... | head -1``)
    is not a fault of the machine: the rest of the output goes to the null device, and the
    command goes on to its own exit code (its files written, its verdict decided)."""
    try:
        click.echo(text, nl=nl)
    except BrokenPipeError:
        discard_stdout()


def discard_stdout() -> None:
    """Point standard output at the null device, so that the interpreter's final flush of text
    it could not write does not fail a second time (Python's advice for broken pipes)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
