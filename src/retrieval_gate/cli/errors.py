"""Every error of the ``gate`` command mapped to one line and its exit code, in one place: a
:class:`~retrieval_gate.core.errors.GateError` is ``error: message`` and its own code; an
OSError no reader turned into a clear error (a full disk, standard output closed) or a
MemoryError is an environment fault (exit 74), except a path too long for the system (exit 2);
Ctrl-C is ``error: interrupted`` (exit 130); a wrong command line is one usage line (exit 2);
anything else is a bug, said as such (exit 70), never a traceback."""

from __future__ import annotations

import sys

import click

from retrieval_gate import __version__
from retrieval_gate.cli.output import discard_stdout, say
from retrieval_gate.cli.process import no_collection_at_exit
from retrieval_gate.core.errors import (
    EXIT_ENVIRONMENT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EnvironmentFault,
    GateError,
    OutOfMemory,
)

INTERRUPTED = "interrupted — nothing was left half-written; run the command again"


class GateGroup(click.Group):
    """The ``gate`` group: a command's errors become their one line and exit code (the module's
    mapping), never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GateError as exc:
            say(str(exc))
            ctx.exit(exc.exit_code)
        except (OSError, MemoryError) as exc:
            fault = environment_fault(exc)
            say(str(fault))
            ctx.exit(fault.exit_code)
        except (KeyboardInterrupt, click.Abort):
            say(INTERRUPTED)
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


def as_gate_error(caught: Exception) -> tuple[Exception, int]:
    """What a command's failure is, with its exit code: an operating system's refusal becomes
    its :func:`environment_fault` (one that names the input, a path too long, is input too);
    another exception that is no GateError is a bug (exit 70)."""
    exc = environment_fault(caught) if isinstance(caught, (OSError, MemoryError)) else caught
    return exc, exc.exit_code if isinstance(exc, GateError) else EXIT_INTERNAL


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


def run_and_exit(group: click.Group) -> None:
    """Run ``group`` as the ``gate`` program and exit with its code. Standard output is flushed
    before exit, so that a write it refuses (``gate score ... > /dev/full``) is reported as an
    environment fault (exit 74) rather than lost at interpreter shutdown; a reader that closed
    the pipe (``| head -1``) is not one: the command keeps its own exit code, quietly."""
    try:
        code = group.main(prog_name="gate", standalone_mode=False)
        try:
            sys.stdout.flush()
        except BrokenPipeError:  # the reader took what it wanted: the work is done
            discard_stdout()
    except click.UsageError as exc:
        say(usage_line(exc))
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except click.Abort:
        say(INTERRUPTED)
        code = EXIT_INTERRUPTED
    except (OSError, MemoryError) as exc:
        fault = environment_fault(exc)
        say(str(fault))
        code = fault.exit_code
    if code == EXIT_ENVIRONMENT:
        discard_stdout()
    no_collection_at_exit()
    sys.exit(code if isinstance(code, int) else 0)


def usage_line(exc: click.UsageError) -> str:
    """A wrong command line (a missing option, an unknown one, a value of the wrong kind) in
    the gate's own words: ``COMMAND: what is wrong — see COMMAND --help``, one line, exit 2."""
    command = exc.ctx.command_path if exc.ctx is not None else "gate"
    message = " ".join(exc.format_message().split()).rstrip(".")
    return f"{command}: {message[:1].lower()}{message[1:]} — see {command} --help"
