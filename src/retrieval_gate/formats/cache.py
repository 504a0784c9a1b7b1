"""A cache of arrays derived from a large input file, keyed by the SHA-256 of the file's bytes,
so that reading the same file again costs a memory map instead of a parse.

An entry is a folder ``KIND-v1-SHA256`` of ``.npy`` files in the cache folder:
``$RETRIEVAL_GATE_CACHE``, else ``$XDG_CACHE_HOME/retrieval-gate``, else
``~/.cache/retrieval-gate``. ``RETRIEVAL_GATE_CACHE=off`` turns the cache off. Files of
:data:`MIN_BYTES` or more are cached, or any file when ``RETRIEVAL_GATE_CACHE`` names a folder.
An entry is written whole (staged, then renamed) and only after the file was read without an
error; it can be deleted at any time. A cache that cannot be read or written is no cache: the
file is parsed, and nothing fails because of it. The entry holds derived data only, named by
the hash of the bytes it was derived from, and the gate trusts it as it trusts its own code: a
user who can write the cache folder can change what the gate runs."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from retrieval_gate.formats.source import Blob

MIN_BYTES = 1 << 24
_VERSION = "v1"


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


def load(kind: str, blob: Blob, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The arrays ``names`` of ``blob``'s entry, memory-mapped; None when there is none (or it
    cannot be read)."""
    entry = _entry(kind, blob)
    if entry is None or not entry.is_dir():
        return None
    try:
        return {name: np.load(entry / f"{name}.npy", mmap_mode="r", allow_pickle=False)
                for name in names}
    except (OSError, ValueError):
        return None


def store(kind: str, blob: Blob, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``blob``'s entry of ``kind`` (staged in a temporary folder, then renamed); any
    failure leaves no entry and is otherwise ignored."""
    entry = _entry(kind, blob)
    if entry is None or entry.exists():
        return
    staging = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        staging = tempfile.mkdtemp(".tmp", f".{entry.name}.", entry.parent)
        for name, array in arrays.items():
            np.save(os.path.join(staging, f"{name}.npy"), array, allow_pickle=False)
        os.rename(staging, entry)
        staging = None
    except OSError:
        pass
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
