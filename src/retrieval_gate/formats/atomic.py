"""Writing output files so that an error or an interruption never leaves a half-written one.

Where a file lands depends on what the path names:

- a regular file, or nothing yet: the text goes to a temporary file beside it,
  ``.NAME.PID.N.tmp``, which is then renamed over it, so a reader sees the old file or the new
  one, whole. A new file gets the permissions ``open(path, "w")`` would give it (0666 less the
  umask); a replaced file keeps its permission bits.
- a symbolic link: the file it points to is replaced that way (or created, for a dangling
  link); the link stays.
- a device, a FIFO or a socket (``/dev/null``, ``/dev/stdout``, a named pipe): written in
  place, as the shell's ``>`` would. There is nothing to rename there, so no atomicity.

:func:`write_texts` writes several files all or nothing: every regular file is staged before
anything lands; devices are written next; then the renames, keeping a hard link to each file
replaced (``.NAME.PID.N.tmp`` too) until the end, so that a failure — or a failure in the
caller's block, see :func:`staged_texts` — puts every replaced file back and deletes every new
one. The renames follow the order of the files given. With ``folders=True`` it first creates
the files' missing folders, and removes them again (when still empty) on a failure.

Ctrl-C (SIGINT: KeyboardInterrupt) is such a failure too, wherever it arrives. It is held
over each rename together with the record that it happened, over the end of the write (the
hard links deleted) and over an undo, so that it leaves every file as it was or — arriving at
the end of the write — every file new, and no temporary file. When neither a flush nor a block
follows the renames, the last rename is the end of the write (its file needs no hard link).
Only a process killed during the renames (SIGKILL; SIGTERM, which ends a process without
Python's cleanup) can leave some files new and others old (each whole) and temporary files
behind.

``durable=True`` also flushes each file and then its folder to the disk (``fsync``) before
returning, for files that must survive a power cut, not just a crash of this process.

**Spools.** A file too large to hold as one text is written a piece at a time to a
:class:`Spool` — its own temporary file, ``.NAME.PID.N.tmp`` beside it (in the system's
temporary folder for a device) — and the spool is given to :func:`write_texts` in place of a
text: it is staged as it is (renamed into place with the others; copied to a device), so the
transaction is the same. A spool that is not written (an error first, or the caller's
:meth:`Spool.discard`) leaves no file.

Plain ``os`` calls, not ``tempfile`` and ``pathlib``, which would add their imports (shutil,
random, urllib, ...) to the start-up of every ``gate score -o``.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

from retrieval_gate.core.errors import EnvironmentFault, GateError, InputError
from retrieval_gate.core.interrupts import interrupts_held

__all__ = ["Spool", "leftovers", "staged_texts", "sync_folder", "write_text_atomic",
           "write_texts"]

_ATTEMPTS = 100  # temporary names tried before giving up
_SPOOL_BUFFER = 1 << 20  # bytes a spool gathers before each write to its file
# as tempfile.mkstemp: read-write, new, not through a symbolic link
_FLAGS = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
          | getattr(os, "O_BINARY", 0))


class Spool:
    """The new content of the file at ``path``, written a piece at a time (:meth:`write`) to
    a temporary file of its own, then given to :func:`write_texts` in place of a text (see the
    module docstring). Refused at once, as :func:`write_texts` would refuse it: a folder, a
    missing folder, no permission (InputError or EnvironmentFault naming ``path``)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.given = os.fspath(path)
        target = _output(self.given, "")
        try:
            if target.through:
                import tempfile

                fd, temporary = tempfile.mkstemp(prefix=".gate-spool.", suffix=".tmp")
            else:
                fd, temporary = _create_temporary(target.place)
        except OSError as exc:
            raise _refused(self.given, exc, "cannot write here") from None
        self.temporary: str | None = temporary
        self._handle = os.fdopen(fd, "wb", buffering=_SPOOL_BUFFER)

    def write(self, data: bytes) -> None:
        """Append ``data``; EnvironmentFault when the machine refuses it (a full disk)."""
        try:
            self._handle.write(data)
        except OSError as exc:
            raise _refused(self.given, exc, "cannot write") from None

    def close(self) -> None:
        """Flush what was written to the file (nothing once closed)."""
        try:
            self._handle.close()
        except OSError as exc:
            raise _refused(self.given, exc, "cannot write") from None

    def discard(self) -> None:
        """Close and delete the temporary file, unless :func:`write_texts` has taken it."""
        try:
            self._handle.close()
        except OSError:
            pass
        _remove(self.temporary)
        self.temporary = None

    def _take(self, folder: str) -> str | None:
        """The temporary file, closed, for a file staged in ``folder``: handed over (the
        spool no longer deletes it) when it lies there; None when it lies elsewhere."""
        self.close()
        if self.temporary is None or os.path.dirname(self.temporary) != folder:
            return None
        taken, self.temporary = self.temporary, None
        return taken


@dataclass(eq=False)
class _Output:
    """One file to write. ``given`` is the path as the caller named it (for messages);
    ``place`` where a regular file is written (``given``, or what a symbolic link points to);
    ``through`` is true for a device, FIFO or socket, written in place; ``text`` its content,
    or the spool holding it."""

    given: str
    place: str
    text: str | Spool
    through: bool
    mode: int
    temporary: str | None = None
    backup: str | None = None
    placed: bool = False


def write_text_atomic(path: str | os.PathLike[str], text: str, durable: bool = False) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path``; see the module docstring."""
    write_texts([(path, text)], durable)


def write_texts(files: Iterable[tuple[str | os.PathLike[str], str | Spool]],
                durable: bool = False, folders: bool = False) -> None:
    """Write every file of ``files`` (path, text or :class:`Spool`), or none, renamed into
    place in the order given; with ``folders``, creating the missing folders they go in (see
    the module docstring). A folder the system refuses to create (a file in its place, no
    permission) is EnvironmentFault (exit 74). Every spool given is used up: taken into
    place, or deleted."""
    with _writing(files, durable, False, folders):
        pass


@contextmanager
def staged_texts(files: Iterable[tuple[str | os.PathLike[str], str]], durable: bool = False
                 ) -> Iterator[None]:
    """Write ``files`` all or nothing, then run the caller's block; if the block raises, put
    back every file replaced and delete every file created (devices written stay written).

    Errors: a missing folder, a path that is a folder or a symbolic-link loop, and two paths
    naming one file are InputError (exit 2); a refusal of the machine (no permission, a full
    disk, a read-only file system) is EnvironmentFault (exit 74)."""
    with _writing(files, durable, True):
        yield


@contextmanager
def _writing(files: Iterable[tuple[str | os.PathLike[str], str | Spool]], durable: bool,
             undoable: bool, folders: bool = False) -> Iterator[None]:
    """Make the missing folders (with ``folders``), stage, write through, rename, flush (when
    ``durable``), run the block; until the write is done, undo all on any exception, Ctrl-C
    included (in the block too when ``undoable``); once it is done, nothing is undone. A
    replaced file is kept (as a hard link) until the write is done when its renaming might
    have to be undone: when another file follows it, or the flush or the block follows the
    renames; otherwise the last rename is the end of the write, done in one step with it.
    Ctrl-C is held over each rename and its record, over the write's end and over an undo."""
    given = [(os.fspath(path), text) for path, text in files]
    made: list[str] = []
    outputs: list[_Output] = []
    try:
        for path, _ in given if folders else ():
            _make_folders(os.path.dirname(path), made)
        outputs = [_output(path, text) for path, text in given]
        _refuse_repeats(outputs)
        _put(outputs, made, durable, undoable)
        yield
        with interrupts_held():
            _done(outputs, made)
    except BaseException:
        with interrupts_held():
            _undo(outputs)
            _remove_folders(made)
        raise
    finally:
        for _, text in given:
            if isinstance(text, Spool):
                text.discard()


def _put(outputs: list[_Output], made: list[str], durable: bool, undoable: bool) -> None:
    """The steps of :func:`_writing` between its checks and its block: stage the files
    placed by renaming, write through the others, rename (each rename and its record with
    Ctrl-C held; the write done with the last one when nothing can fail after it), then flush
    the folders when ``durable``. Whatever fails propagates to :func:`_writing`, which
    undoes."""
    files_placed = [o for o in outputs if not o.through]
    for output in files_placed:
        _stage(output, durable)
    for output in outputs:
        if output.through:
            _write_through(output)
    more = undoable or durable  # something can fail after the last rename
    for output in files_placed:
        last = output is files_placed[-1]
        with interrupts_held():
            _place(output, more or not last)
            if last and not more:
                _done(outputs, made)
    if durable:
        for folder in dict.fromkeys([*(os.path.dirname(f) for f in made),
                                     *(os.path.dirname(o.place) for o in files_placed)]):
            sync_folder(folder or ".")


def leftovers(path: str | os.PathLike[str]) -> list[str]:
    """The temporary files beside ``path`` that a write of it killed before its end left
    (``.NAME.PID.N.tmp``: the new text staged, or the former file kept), sorted; none when
    the folder cannot be listed."""
    folder, name = os.path.split(os.fspath(path))
    pattern = re.compile(rf"\.{re.escape(name)}\.\d+\.\d+\.tmp")
    try:
        found = os.listdir(folder or ".")
    except OSError:
        return []
    return sorted(os.path.join(folder, f) for f in found if pattern.fullmatch(f))


def sync_folder(path: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (new, renamed and deleted names) to the disk. Windows cannot
    open a folder for this; there it does nothing."""
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_folder(path: str | os.PathLike[str]) -> None:
    """Create the folder ``path`` goes in, and its missing parents (``mkdir -p``), for a
    command that writes beside its output while it works; EnvironmentFault (exit 74) for a
    folder the system refuses to create (a file in its place, no permission)."""
    _make_folders(os.path.dirname(os.fspath(path)), [])


def _make_folders(folder: str, made: list[str]) -> None:
    """Create ``folder`` and its missing parents, appending each one created to ``made``;
    EnvironmentFault (exit 74) for a folder the system refuses to create."""
    missing = []
    while folder and not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:
            if os.path.isdir(path):  # made meanwhile by another process
                continue
            raise EnvironmentFault(f"{path}: cannot create this folder (a file is in its "
                                   "place) — move the file away, then run the command "
                                   "again") from None
        except OSError as exc:
            raise EnvironmentFault(f"{path}: cannot create this folder "
                                   f"({exc.strerror or type(exc).__name__}) — fix the "
                                   "permissions or free space, then run the command "
                                   "again") from None
        made.append(path)


def _remove_folders(made: list[str]) -> None:
    """Remove the folders of ``made`` that are still empty, the deepest first."""
    for folder in reversed(made):
        try:
            os.rmdir(folder)
        except OSError:
            pass


def _output(given: str, text: str | Spool) -> _Output:
    """Classify ``given``: a device or the like (written through), else a regular file at
    ``given`` or at the end of its symbolic links."""
    try:
        found = os.stat(given)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise _refused(given, exc, "cannot write here") from None
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise InputError(given, "is a folder", "give the path of a file")
    if found is not None and not stat.S_ISREG(found.st_mode):
        return _Output(given, given, text, True, 0)
    place = os.path.realpath(given) if os.path.islink(given) else given
    umask = os.umask(0)
    os.umask(umask)
    mode = stat.S_IMODE(found.st_mode) if found is not None else 0o666 & ~umask
    return _Output(given, place, text, False, mode)


def _refuse_repeats(outputs: list[_Output]) -> None:
    """InputError when two paths name one file (the second write would undo the first)."""
    seen: dict[str, str] = {}
    for output in outputs:
        key = os.path.realpath(output.place)
        if key in seen:
            also = "" if seen[key] == output.given else f" (as {seen[key]})"
            raise InputError(output.given, f"is asked for twice{also}",
                             "give each output its own file")
        seen[key] = output.given


def _stage(output: _Output, durable: bool) -> None:
    """Write the text to a new temporary file beside ``output.place`` (a spool there is that
    file already)."""
    text = output.text
    taken = text._take(os.path.dirname(output.place)) if isinstance(text, Spool) else None
    try:
        if taken is not None:
            output.temporary = taken
            fd = os.open(taken, os.O_RDONLY)
        else:
            fd, output.temporary = _create_temporary(output.place)
    except OSError as exc:
        raise _refused(output.given, exc, "cannot write here") from None
    try:
        with os.fdopen(fd, "rb" if taken is not None else "wb") as handle:
            if taken is None:
                _fill(handle, text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(output.temporary, output.mode)
    except OSError as exc:
        raise _refused(output.given, exc, "cannot write") from None


def _write_through(output: _Output) -> None:
    """Write to a device, FIFO or socket in place."""
    try:
        with open(output.given, "wb") as handle:
            _fill(handle, output.text)
    except OSError as exc:
        raise _refused(output.given, exc, "cannot write") from None


def _fill(handle: BinaryIO, text: str | Spool) -> None:
    """Write a text (UTF-8, ``\n`` line ends as they are), or copy a spool's file."""
    if isinstance(text, str):
        handle.write(text.encode("utf-8"))
        return
    import shutil  # here: a spool is rarely copied (to a device), and start-up stays lean

    text.close()
    assert text.temporary is not None  # a spool is used once
    with open(text.temporary, "rb") as spooled:
        shutil.copyfileobj(spooled, handle, _SPOOL_BUFFER)


def _place(output: _Output, back_up: bool) -> None:
    """Rename the staged file over its target, first keeping a hard link to the file it
    replaces if ``back_up`` (so that a later failure can restore it)."""
    try:
        if back_up and os.path.lexists(output.place):
            output.backup = _backup(output.place)
        assert output.temporary is not None  # staged before it is placed
        os.replace(output.temporary, output.place)
    except OSError as exc:
        raise _refused(output.given, exc, "cannot write") from None
    output.temporary = None
    output.placed = True


def _backup(path: str) -> str:
    """A second name for the file at ``path`` (a hard link; a copy where the file system has
    no hard links)."""
    for attempt in range(_ATTEMPTS):
        backup = _temporary_name(path, attempt)
        try:
            os.link(path, backup)
            return backup
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            import shutil

            shutil.copy2(path, backup)
            return backup
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path)


def _done(outputs: list[_Output], made: list[str]) -> None:
    """Declare the write done: ``outputs`` and ``made`` emptied first, so that there is nothing
    left to undo even if what follows fails, then the hard links to the files replaced
    deleted. Nothing for a write already done."""
    kept = [o.backup for o in outputs]
    outputs.clear()
    made.clear()
    for backup in kept:
        _remove(backup)


def _undo(outputs: list[_Output]) -> None:
    """Put back every file replaced, delete every file created and every temporary file."""
    for output in reversed(outputs):
        if output.placed:
            if output.backup is not None:
                os.replace(output.backup, output.place)
                output.backup = None
            else:
                _remove(output.place)
        _remove(output.temporary)
        _remove(output.backup)


def _remove(path: str | None) -> None:
    if path is not None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _refused(path: str, exc: OSError, what: str) -> GateError:
    """The error for an operating-system refusal to write ``path``: a usage error when the path
    itself is wrong (no such folder, a file used as a folder, a link loop), else an
    environment fault."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return InputError(path, f"{what} ({reason})",
                          "create its folder first, or choose another path")
    if exc.errno == errno.ELOOP:
        return InputError(path, f"{what} ({reason})", "fix the symbolic link")
    return EnvironmentFault(f"{path}: {what} ({reason}) — free space or fix the permissions, "
                            "then run the command again")


def _create_temporary(target: str) -> tuple[int, str]:
    """A new, empty file ``.NAME.PID.N.tmp`` beside ``target`` (mode 0600, as
    ``tempfile.mkstemp`` makes it), opened; the first free ``N`` below ``_ATTEMPTS``."""
    for attempt in range(_ATTEMPTS):
        temporary = _temporary_name(target, attempt)
        try:
            return os.open(temporary, _FLAGS, 0o600), temporary
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), target)


def _temporary_name(target: str, attempt: int) -> str:
    folder, name = os.path.split(target)
    return os.path.join(folder, f".{name}.{os.getpid()}.{attempt}.tmp")
