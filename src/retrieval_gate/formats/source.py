"""Reading input files: bytes, strict UTF-8, and clear errors for unreadable or empty files."""

from __future__ import annotations

import os

from retrieval_gate.errors import InputError


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The file's content; InputError if it cannot be read or holds nothing but white space."""
    name = str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise InputError(name, "file not found", "check the path") from None
    except IsADirectoryError:
        raise InputError(name, "is a directory, not a file", "give the path of a file") from None
    except PermissionError:
        raise InputError(name, "permission denied", "make the file readable") from None
    except OSError as exc:
        raise InputError(name, f"cannot be read ({exc.strerror})", "check the file") from None
    if not data or data.isspace():
        raise InputError(name, "the file is empty", "give a file with content")
    return data


def check_utf8(data: bytes, name: str) -> None:
    """Raise InputError naming the line of the first byte that is not valid UTF-8."""
    if data.isascii():
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(name, f"invalid UTF-8 (byte 0x{data[exc.start]:02x})",
                         "save the file as UTF-8", line) from None


def read_text(path: str | os.PathLike[str]) -> str:
    """The file's content decoded as strict UTF-8 (a leading BOM is dropped)."""
    data = read_bytes(path)
    check_utf8(data, str(path))
    return data.decode("utf-8").removeprefix("\ufeff")
