"""Writing output files atomically: a temporary file beside the target, then a rename, so an
error or an interruption never leaves a half-written file (the old one stays intact)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from retrieval_gate.errors import InputError


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` via a temporary file and ``os.replace``. The file gets
    the permissions a plain ``open(path, "w")`` would give it (0666 less the umask)."""
    target = Path(path)
    try:
        fd, temporary = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.",
                                         suffix=".tmp")
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
        Path(temporary).unlink(missing_ok=True)
        raise
