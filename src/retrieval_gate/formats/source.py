"""Reading input files once: a :class:`Blob` is a file's bytes read from one open file
descriptor, so that the bytes whose SHA-256 is checked against a manifest are the bytes parsed.
Also strict UTF-8, and clear errors for unreadable or empty files."""

from __future__ import annotations

import mmap
import os
import re
import stat
from functools import cached_property

from retrieval_gate.core.errors import InputError, memory_for

BOM = b"\xef\xbb\xbf"
_PART_BYTES = 1 << 24  # bytes of a memory-mapped file read before its pages are released


def display_name(path: str | os.PathLike[str]) -> str:
    """``path`` as text that can always be printed and written as UTF-8: bytes of the file name
    that are not UTF-8 (which Python holds as lone surrogates) are shown as ``\\xNN``."""
    name = os.fspath(path)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if name.isascii():
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class Blob:
    """A file read once: ``name`` (printable, for messages), ``data`` (the bytes, or a read-only
    memory map of the file for large runs) and :attr:`sha256` of exactly those bytes.

    A file replaced (renamed over) after it was read changes neither what is hashed nor what
    is parsed. A memory map sees writes made into the same file in place while it is open;
    only runs of 16 MiB or more are mapped."""

    def __init__(self, name: str, data: bytes | mmap.mmap):
        self.name = name
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    @cached_property
    def sha256(self) -> str:
        """Lower-case hex SHA-256 of :attr:`data` (computed once; hashlib releases the GIL, so
        another thread may hash while this one parses). A memory map is hashed a part at a
        time, each part's pages released from resident memory once hashed."""
        import hashlib  # on first use: gate score hashes nothing

        if not isinstance(self.data, mmap.mmap):
            return hashlib.sha256(self.data).hexdigest()
        digest = hashlib.sha256()
        view = memoryview(self.data)
        try:
            for start in range(0, len(view), _PART_BYTES):
                digest.update(view[start:start + _PART_BYTES])
                release_pages(self.data, start, min(start + _PART_BYTES, len(view)))
        finally:
            view.release()
        return digest.hexdigest()

    def require_content(self) -> None:
        """InputError if the file holds nothing but white space."""
        if not self.data or not _has_content(self.data):
            raise InputError(self.name, "the file is empty", "give a file with content")

    def text(self) -> str:
        """The content decoded as strict UTF-8 (a leading BOM is dropped); InputError naming
        the line of the first byte that is not UTF-8, or for an empty file."""
        self.require_content()
        check_utf8(self.data, self.name)
        return str(self.data, "utf-8").removeprefix("\ufeff")


def _has_content(data: bytes | mmap.mmap) -> bool:
    """True when ``data`` holds a byte other than ASCII white space."""
    return re.search(rb"[^ \t\n\r\x0b\x0c]", data) is not None


def read_blob(path: str | os.PathLike[str], map_from: int | None = None) -> Blob:
    """The file at ``path``, read from one open descriptor; files of ``map_from`` bytes or more
    are memory-mapped rather than copied. InputError if it cannot be read (an empty file is
    read: see :meth:`Blob.require_content`); OutOfMemory if the machine refuses the memory."""
    name = display_name(path)
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            with memory_for(f"reading {name}", size):
                if map_from is not None and size >= max(map_from, 1):
                    data: bytes | mmap.mmap = mmap.mmap(handle.fileno(), 0,
                                                        access=mmap.ACCESS_READ)
                else:
                    data = handle.read()
    except FileNotFoundError:
        raise InputError(name, "file not found", "check the path") from None
    except IsADirectoryError:
        raise InputError(name, "is a directory, not a file", "give the path of a file") from None
    except PermissionError:
        raise InputError(name, "permission denied", "make the file readable") from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(name, f"cannot be read ({reason})", "check the file") from None
    return Blob(name, data)


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """True for an existing regular file (links followed), False when nothing is there;
    InputError when the system cannot even tell (a name too long, no permission to look)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(display_name(path), f"cannot be read ({reason})",
                         "check the path") from None


def release_pages(data: bytes | mmap.mmap, start: int, end: int) -> None:
    """Drop the pages of a memory map's ``[start, end)`` from resident memory once read (they
    stay in the page cache, and are mapped again if read again); nothing for bytes, or where
    ``madvise`` is missing."""
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        first = start - start % mmap.PAGESIZE
        data.madvise(mmap.MADV_DONTNEED, first, end - first)


def search_released(data: bytes | mmap.mmap, pattern: re.Pattern[bytes], overlap: int = 256
                    ) -> bool:
    """Whether ``pattern`` (whose matches are shorter than ``overlap`` bytes) occurs in
    ``data``; a memory map is searched a part at a time, each part's pages released from
    resident memory once searched."""
    if not isinstance(data, mmap.mmap):
        return pattern.search(data) is not None
    for start in range(0, len(data), _PART_BYTES):
        end = min(start + _PART_BYTES + overlap, len(data))
        if pattern.search(data, start, end) is not None:
            return True
        release_pages(data, start, min(start + _PART_BYTES, len(data)))
    return False


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The file's content; InputError if it cannot be read or holds nothing but white space."""
    blob = read_blob(path)
    blob.require_content()
    return bytes(blob.data)


def check_utf8(data: bytes | mmap.mmap, name: str, first_line: int = 1) -> None:
    """Raise InputError naming the line of the first byte that is not valid UTF-8
    (``first_line``: the number of the data's first line in its file)."""
    if isinstance(data, bytes):
        if data.isascii():
            return
    else:
        import numpy as np

        if int(np.frombuffer(data, dtype=np.uint8).max(initial=0)) < 128:
            return
    try:
        str(data, "utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + first_line
        raise InputError(name, f"invalid UTF-8 (byte 0x{data[exc.start]:02x})",
                         "save the file as UTF-8", line) from None


def read_text(path: str | os.PathLike[str]) -> str:
    """The file's content decoded as strict UTF-8 (a leading BOM is dropped)."""
    return read_blob(path).text()
