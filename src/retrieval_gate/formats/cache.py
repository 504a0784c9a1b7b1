"""A cache of arrays derived from a large input file, keyed by the SHA-256 of the file's bytes,
so that reading the same file again costs a read of its arrays instead of a parse.

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

The entry checked is the entry used, whatever another process writes to its files meanwhile:
each array file is opened once and read whole into the process's own memory, its CRC-32
computed over those bytes as they arrive, and the array is a read-only view of them. A file
rewritten in place before or while it is read fails the check (the bytes read are not the ones
its manifest describes, as far as a CRC-32 tells); one rewritten after it changes nothing the
check uses. Neither a memory map nor a guard would do: a map shows the file's bytes as they
are whenever they are read — a private (copy-on-write) map too, for every page the process
has not written itself (measured on Linux) — so a file checked through a map and used through
it later can give other arrays than the ones checked; and a file's size, times and inode,
compared before and after use, stay the same when it is rewritten in place within the times'
granularity, or when its times are set back.

The cost is the copy and its memory: the whole entry is held in the process's memory (the
arrays a parse would have returned, without the parse), where a map held only the pages used.
The checksum is zlib's CRC-32, each 1 MiB part computed while it is in the CPU's cache:
reading and checking the 133 MB entry of an 8.8M-id corpus takes 68 ms here (36 ms through a
map, which leaves its pages to be read when used; a ``gate check`` with it takes 3-4 s), and
the process peaks at 158 MiB after it (99 MiB through a map); reading a 1 GB corpus from its
359 MB entry takes a whole process 1.30 s and 374 MiB (1.13 s and 125 MiB through a map; see
docs/performance.md).
SHA-256 would cost 85 ms for the first, BLAKE2b 125 ms, where the CRC-32 itself is about
5.5 GB/s.
"""

from __future__ import annotations

import io
import json
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
_PART = 1 << 20  # bytes of an array file read and checksummed at a time
# the magic string, version and header length of a .npy file, and numpy's longest header
_HEADER_BYTES = 12 + 10_000
_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0,
            (2, 0): np.lib.format.read_array_header_2_0}

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
    """The arrays ``names`` of ``blob``'s entry, read into memory (read-only, the bytes that
    were checked), or None when there is none.

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
        line = listed[name]
        data, crc = _read(os.path.join(entry, f"{name}.npy"), line["bytes"])
        if crc != line["crc32"]:
            return None  # checked first: numpy reads no header but the one written
        array = _array(data)
        if (array.dtype.str, list(array.shape)) != (line["dtype"], line["shape"]) or (
                name in expect and not _fits(array, *expect[name])):
            return None
        arrays[name] = array
    return arrays


def _fits(array: np.ndarray, dtype: str, ndim: int) -> bool:
    """Whether ``array`` has ``dtype`` (a kind, when one letter) and ``ndim`` dimensions."""
    kind = array.dtype.kind == dtype if len(dtype) == 1 else array.dtype == np.dtype(dtype)
    return kind and array.ndim == ndim


def _read(path: str, size: int) -> tuple[np.ndarray, int]:
    """The bytes of the file at ``path`` (``uint8``), read once into the process's own memory,
    and their CRC-32, computed over those bytes as each part arrives (while it is in the CPU's
    cache): whatever is written to the file afterwards, these are the bytes checked. ValueError
    when it is not a regular file of ``size`` bytes (opened without waiting, so that a pipe in
    its place cannot block), or when it ends sooner while read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size != size:
            raise ValueError(f"{path} is not a regular file of {size} bytes")
        data = np.empty(size, np.uint8)
        view, done, crc = data.data, 0, 0
        while done < size:
            part = view[done:done + _PART]
            got = os.readv(fd, [part])
            if got == 0:
                raise ValueError(f"{path} ended at byte {done} of {size}")
            crc = zlib.crc32(part[:got], crc)
            done += got
        return data, crc
    finally:
        os.close(fd)


def _array(data: np.ndarray) -> np.ndarray:
    """The array the bytes ``data`` of a ``.npy`` file hold: a read-only view of them, never a
    copy. ValueError for a header that numpy would not load without pickles (of another
    version than 1.0 or 2.0 — ``np.save`` writes 3.0 only for field names beyond Latin-1 —,
    longer than numpy's limit, or of objects); TypeError for too few bytes after it."""
    head = io.BytesIO(data[:_HEADER_BYTES].tobytes())
    version = np.lib.format.read_magic(head)
    if version not in _HEADERS:
        raise ValueError(f"a .npy file of version {version}")
    shape, fortran, dtype = _HEADERS[version](head)
    if dtype.hasobject:
        raise ValueError("a .npy file of objects")
    array: np.ndarray = np.ndarray(shape, dtype, buffer=data, offset=head.tell(),
                                   order="F" if fortran else "C")
    array.flags.writeable = False
    return array


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
        size = handle.tell()
    data, crc = _read(path, size)
    written = _array(data)
    return {"dtype": written.dtype.str, "shape": list(written.shape), "bytes": size,
            "crc32": crc}


def _flush(handle: BinaryIO) -> None:
    handle.flush()
    os.fsync(handle.fileno())
