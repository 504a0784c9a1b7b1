"""Error types and their exit codes.

Every error a user can cause is a :class:`GateError` whose message names the file, the place in
it (a line number, or a JSON path for JSON documents), what is wrong and how to fix it, in one
line: ``FILE:LINE: problem — fix``. The CLI prints ``error: <message>`` and exits with
``exit_code``; it never shows a traceback for these.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from retrieval_gate.core.exported import exported
from retrieval_gate.core.untrusted import one_line

EXIT_PASS = 0
EXIT_REGRESSION = 1
EXIT_INVALID = 2
EXIT_NOT_COMPARABLE = 3
EXIT_INCONCLUSIVE = 4
EXIT_INTERNAL = 70
EXIT_ENVIRONMENT = 74  # sysexits EX_IOERR: the machine refused (disk full, no permission, ...)
EXIT_INTERRUPTED = 130  # 128 + SIGINT, the shell's code for a Ctrl-C

# Every exit code of the command line with its meaning, in order: the reference documentation's
# table is generated from it (and the README's short table agrees with it, a test checks).
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_PASS, "pass, valid, done (warnings allowed)"),
    (EXIT_REGRESSION, "material regression (`gate check`)"),
    (EXIT_INVALID, ("invalid input or usage: malformed or contradictory file, schema violation, "
                   "bad option, missing manifest")),
    (EXIT_NOT_COMPARABLE, ("not comparable / not what it claims: a pinned file's hash differs, a "
                          "run changed after its manifest, a run made on another snapshot, runs "
                          "whose scores were judged differently")),
    (EXIT_INCONCLUSIVE, "inconclusive, only with `--fail-on inconclusive` (`gate check`)"),
    (EXIT_INTERNAL, "internal error: a bug; the message says so and asks for a report"),
    (EXIT_ENVIRONMENT, ("the machine refused, not the input: a full disk or standard output "
                       "(`> /dev/full`), a folder that cannot be created, a write the operating "
                       "system refused, not enough memory; fix that and run again")),
    (EXIT_INTERRUPTED, ("interrupted (Ctrl-C); nothing was left half-written: files written "
                       "together are all as they were, or all new")),
)


@exported
class GateError(Exception):
    """Base of the errors retrieval-gate reports to its user (never a bug).

    The message is given line by line, one argument each (most errors are one line). A line
    end inside a line — a value quoted from an option or a file, ``--system $'a\\nb'`` — is
    written as its escape (``\\n``, see :func:`~retrieval_gate.core.untrusted.one_line`), so that
    one problem never reads as two lines, in a terminal, a report or a GitHub annotation."""

    exit_code = EXIT_INVALID

    def __init__(self, *lines: str):
        super().__init__("\n".join(map(one_line, lines)))


@exported
class InputError(GateError):
    """Malformed or contradictory input, or a bad option value (exit 2).

    ``source`` is the file (or option) at fault, ``where`` a line number or a JSON path inside it,
    ``problem`` what is wrong and ``fix`` what the user can do about it.
    """

    exit_code = EXIT_INVALID

    def __init__(self, source: str, problem: str, fix: str, where: int | str | None = None):
        self.source = source
        self.where = where
        self.problem = problem
        self.fix = fix
        place = source if where in (None, 0, "") else f"{source}:{where}"
        super().__init__(f"{place}: {problem} — {fix}")

    def __reduce__(self) -> tuple[type[InputError], tuple[str, str, str, int | str | None]]:
        """Pickled by its parts (a worker's refusal reaches the caller whole)."""
        return type(self), (self.source, self.problem, self.fix, self.where)


@exported
class NotComparableError(GateError):
    """Inputs that are not what their manifests claim, or runs of another snapshot (exit 3)."""

    exit_code = EXIT_NOT_COMPARABLE


class Interrupted(GateError):
    """Ctrl-C, with what the command kept (exit 130): for a command that can take up where it
    stopped, its message says how."""

    exit_code = EXIT_INTERRUPTED


class ManyErrors(GateError):
    """Several problems found at once (every schema error of a manifest, every component whose
    hash differs), one per line; the exit code is that of the first."""

    def __init__(self, errors: Sequence[GateError]):
        self.errors = list(errors)
        self.exit_code = self.errors[0].exit_code
        super().__init__(*(line for e in self.errors for line in str(e).split("\n")))


class EnvironmentFault(GateError):
    """The machine refused an operation on valid input: a disk full, an output folder that
    cannot be created or written, standard output closed (exit 74). Nothing is left
    half-written; running again once the fault is fixed gives the result."""

    exit_code = EXIT_ENVIRONMENT


@exported
class OutOfMemory(EnvironmentFault, MemoryError):
    """The machine refused memory (exit 74); see :meth:`of`. Still a MemoryError, for callers
    of the library that catch one."""

    @classmethod
    def of(cls, task: str | None = None, needs: float = 0.0) -> OutOfMemory:
        """``not enough memory for TASK: needs about N GiB`` (``needs`` bytes, in GiB: one
        decimal below 10, at least 0.1), or without a task ``not enough memory (the machine
        refused an allocation)``; then what to do."""
        if task is None:
            what = "not enough memory (the machine refused an allocation)"
        else:
            gib = max(needs / 2**30, 0.1)
            shown = f"{gib:.1f}" if gib < 10 else f"{gib:.0f}"
            what = f"not enough memory for {task}: needs about {shown} GiB"
        return cls(f"{what} — free memory or use a machine with more, then run the command "
                   "again")


@contextmanager
def memory_for(task: str, needs: float) -> Iterator[None]:
    """Turn a MemoryError in the block, or the system's refusal of memory (an OSError
    ``ENOMEM``: a memory map refused), into :class:`OutOfMemory` naming ``task`` (``"reading
    the corpus corpus.jsonl"``) and ``needs``, an estimate of the bytes it takes. The innermost
    task wins: an OutOfMemory passes through."""
    try:
        yield
    except OutOfMemory:
        raise
    except MemoryError:
        raise OutOfMemory.of(task, needs) from None
    except OSError as exc:
        if exc.errno != errno.ENOMEM:
            raise
        raise OutOfMemory.of(task, needs) from None
