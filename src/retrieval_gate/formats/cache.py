"""A cache of arrays derived from a large input file, keyed by the SHA-256 of the file's bytes,
so that reading the same file again costs a memory map instead of a parse.

An entry is a folder ``KIND-v1-SHA256`` of ``.npy`` files in the cache folder:
``$RETRIEVAL_GATE_CACHE``, else ``$XDG_CACHE_HOME/retrieval-gate``, else
``~/.cache/retrieval-gate``. ``RETRIEVAL_GATE_CACHE=off`` turns the cache off. Files of
:data:`MIN_BYTES` or more are cached, or any file when ``RETRIEVAL_GATE_CACHE`` names a folder.

An entry is written whole and only after the file was read without an error: each array file
and a manifest (:data:`MANIFEST`: per array its dtype and shape, and the size and CRC-32 of
its file) are written to a staging folder and flushed to the disk (``fsync``), then the
folder; it is renamed into place, and the cache folder flushed, so that not even a power cut
leaves an entry with empty files. Loading checks the files against the manifest, and the
arrays against what the caller expects (dtype, dimensions, a rule across arrays): an entry
that fails any check — a file missing, empty, cut short, of another dtype or shape, a folder
where a file was, a byte changed — or that cannot be read at all is no entry. It is removed
(renamed away, then deleted, so that a process doing the same at the same time finds it
gone), the file is parsed, and a new entry stored: the result is the one without a cache.
Two processes repairing one entry at once both parse; the one that renames last finds the
other's entry in place and drops its own (or, having found the damage first, removes the
other's sound entry and stores its own): at worst an entry is written twice.

A cache that cannot be read or written is no cache: the file is parsed, and nothing fails
because of it. An entry can be deleted at any time. It holds derived data only, named by the
hash of the bytes it was derived from; the checks catch damage, not forgery: the gate trusts
the cache as it trusts its own code, and a user who can write the cache folder can change what
the gate runs.

The checksum is zlib's CRC-32 over a memory map of each file, about 5.5 GB/s here from the
page cache: checking the 133 MB entry of an 8.8M-id corpus costs 24 ms (a ``gate check``
with it takes 3-4 s), a 752 MB entry 130 ms. SHA-256 would cost 85 ms for the first,
BLAKE2b 125 ms.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import stat
import tempfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np

from retrieval_gate.formats.atomic import sync_folder
from retrieval_gate.formats.source import Blob

MIN_BYTES = 1 << 24
MANIFEST = "manifest.json"
_VERSION = "v1"

Expect = Mapping[str, tuple[str, int]]
"""Per array name, its dtype — a numpy dtype string (``"u8"``), or a kind alone, one letter
(``"S"``: byte strings of any width) — and its number of dimensions."""


def _folder() -> Path | None:
    setting = os.environ.get("RETRIEVAL_GATE_CACHE")
    if setting is not None:
        return None if setting.strip().lower() in ("", "off", "0", "no") else Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "retrieval-gate"


def _entry(kind: str, blob: Blob) -> Path | None:
    """Where ``blob``'s entry of ``kind`` lives, or None when it is not to be cached."""
    folder = _folder()
    explicit = os.environ.get("RETRIEVAL_GATE_CACHE") is not None
    if folder is None or (not explicit and len(blob) < MIN_BYTES):
        return None
    return folder / f"{kind}-{_VERSION}-{blob.sha256}"


def load(kind: str, blob: Blob, names: tuple[str, ...], *, expect: Expect | None = None,
         valid: Callable[[Mapping[str, np.ndarray]], bool] | None = None
         ) -> dict[str, np.ndarray] | None:
    """The arrays ``names`` of ``blob``'s entry, memory-mapped, or None when there is none.

    The entry's manifest must list exactly ``names``; each file must match its line there
    (size and CRC-32, then the array's dtype and shape) and ``expect`` (when given); and
    ``valid`` (when given) must hold of the arrays. Otherwise, or when reading fails in any
    way, the entry is removed and None returned. A MemoryError also returns None, and keeps
    the entry."""
    entry = _entry(kind, blob)
    if entry is None or not os.path.lexists(entry):
        return None
    try:
        arrays = _checked(entry, names, expect or {})
        sound = arrays is not None and (valid is None or valid(arrays))
    except MemoryError:
        return None
    except Exception:  # noqa: BLE001 — whatever a damaged entry raises, it is no entry
        arrays, sound = None, False
    if sound:
        return arrays
    _discard(entry)
    return None


def _checked(entry: Path, names: tuple[str, ...], expect: Expect
             ) -> dict[str, np.ndarray] | None:
    """The entry's arrays when they match its manifest and ``expect``, else None."""
    listed = json.loads((entry / MANIFEST).read_bytes())["arrays"]
    if sorted(listed) != sorted(names):
        return None
    arrays = {}
    for name in names:
        path, line = os.path.join(entry, f"{name}.npy"), listed[name]
        if _size_and_crc(path) != (line["bytes"], line["crc32"]):
            return None  # checked first: numpy reads no header but the one written
        array = np.load(path, mmap_mode="r", allow_pickle=False)
        if (array.dtype.str, list(array.shape)) != (line["dtype"], line["shape"]) or (
                name in expect and not _fits(array, *expect[name])):
            return None
        arrays[name] = array
    return arrays


def _fits(array: np.ndarray, dtype: str, ndim: int) -> bool:
    """Whether ``array`` has ``dtype`` (a kind, when one letter) and ``ndim`` dimensions."""
    kind = array.dtype.kind == dtype if len(dtype) == 1 else array.dtype == np.dtype(dtype)
    return kind and array.ndim == ndim


def _size_and_crc(path: str) -> tuple[int, int]:
    """The size of the file at ``path`` and the CRC-32 of all its bytes (read through a memory
    map; ValueError for an empty file, which cannot be mapped, or for anything but a regular
    file — opened without waiting, so that a pipe in its place cannot block)."""
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise ValueError(f"{path} is not a regular file")
        size = status.st_size
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return size, zlib.crc32(data)


def _discard(entry: Path) -> None:
    """Remove a damaged entry: renamed to a fresh name first, so that it leaves its place at
    once and whole, even while another process removes or replaces it too."""
    trash = None
    try:
        if entry.is_symlink() or not entry.is_dir():
            entry.unlink()
            return
        trash = tempfile.mkdtemp(".old", f".{entry.name}.", entry.parent)
        os.rename(entry, trash)  # over the empty folder just made
    except OSError:
        pass
    finally:
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)


def store(kind: str, blob: Blob, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``blob``'s entry of ``kind``, unless one is in place: staged in a temporary
    folder, flushed to the disk, then renamed (see the module docstring). Any failure leaves
    no entry and is otherwise ignored."""
    entry = _entry(kind, blob)
    if entry is None or os.path.lexists(entry):
        return
    staging = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        staging = tempfile.mkdtemp(".tmp", f".{entry.name}.", entry.parent)
        listed = {name: _save(os.path.join(staging, f"{name}.npy"), array)
                  for name, array in arrays.items()}
        with open(os.path.join(staging, MANIFEST), "xb") as handle:
            handle.write(json.dumps({"arrays": listed}).encode())
            _flush(handle)
        sync_folder(staging)
        os.rename(staging, entry)
        staging = None
        sync_folder(entry.parent)
    except (OSError, ValueError, MemoryError):
        pass
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def _save(path: str, array: np.ndarray) -> dict[str, object]:
    """Write ``array`` to ``path`` and flush it to the disk; its manifest line (dtype and
    shape as :func:`load` will read them, the file's size and CRC-32)."""
    with open(path, "xb") as handle:
        np.save(handle, array, allow_pickle=False)
        _flush(handle)
    size, crc = _size_and_crc(path)
    written = np.load(path, mmap_mode="r", allow_pickle=False)
    return {"dtype": written.dtype.str, "shape": list(written.shape), "bytes": size,
            "crc32": crc}


def _flush(handle: BinaryIO) -> None:
    handle.flush()
    os.fsync(handle.fileno())
