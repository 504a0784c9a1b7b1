"""Writing output files atomically: a temporary file beside the target, then a rename, so an
error or an interruption never leaves a half-written file (the old one stays intact).

Plain ``os`` calls, not ``tempfile`` and ``pathlib``, which would add their imports (shutil,
random, urllib, ...) to the start-up of every ``gate score -o``."""

from __future__ import annotations

import errno
import os

from retrieval_gate.errors import InputError

_ATTEMPTS = 100  # temporary names tried before giving up
# as tempfile.mkstemp: read-write, new, not through a symbolic link
_FLAGS = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
          | getattr(os, "O_BINARY", 0))


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` via a temporary file and ``os.replace``. The file gets
    the permissions a plain ``open(path, "w")`` would give it (0666 less the umask)."""
    target = os.fspath(path)
    try:
        fd, temporary = _create_temporary(target)
    except OSError as exc:
        raise InputError(str(path), f"cannot write here ({exc.strerror})",
                         "choose a writable folder for the output") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def _create_temporary(target: str) -> tuple[int, str]:
    """A new, empty file ``.NAME.PID.N.tmp`` beside ``target`` (mode 0600, as
    ``tempfile.mkstemp`` makes it), opened; the first free ``N`` below ``_ATTEMPTS``."""
    folder, name = os.path.split(target)
    for attempt in range(_ATTEMPTS):
        temporary = os.path.join(folder, f".{name}.{os.getpid()}.{attempt}.tmp")
        try:
            return os.open(temporary, _FLAGS, 0o600), temporary
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST))
