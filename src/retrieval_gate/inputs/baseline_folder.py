"""The layout of a baseline folder: what ``gate baseline approve`` writes, and what ``gate
check``, ``gate validate`` and approval read.

::

    baselines/NAME/
        CURRENT                  one line naming the approved version: v3
        v3/
            RUN                  the approved run, under its own file name
            RUN.manifest.json    its manifest, with the approval record

``CURRENT`` is all a reader follows. An approval writes the next version whole into a hidden
staging folder, renames it to ``v<N+1>`` and then replaces ``CURRENT`` with one atomic rename;
only after that does it delete the old version. A process that dies at any instant therefore
leaves ``CURRENT`` naming a complete version, the old one or the new one. What else it may
leave — *leftovers* — readers ignore and the next approval deletes:

- hidden entries whose name ends in ``.tmp`` (a staging folder, a temporary ``CURRENT``);
- ``v<K>`` folders other than the one ``CURRENT`` names;
- beside ``CURRENT``, manifests at the top of the folder and their runs: the baseline of the
  first layout, which an approval replaced.

The first layout — one run and its manifest directly in the folder, no ``CURRENT`` — is read as
it is, and the next approval converts it. A run of the first layout may itself be named
``CURRENT``: ``CURRENT`` is a pointer only when no ``CURRENT.manifest.json`` lies beside it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from retrieval_gate.core.errors import InputError

POINTER = "CURRENT"
MANIFEST_SUFFIX = ".manifest.json"  # a run's manifest lies beside it: RUN.manifest.json
_VERSION = re.compile(r"v([1-9][0-9]*)")


@dataclass(frozen=True)
class BaselineFolder:
    """What a baseline folder holds. ``version`` is the folder ``CURRENT`` names (None in the
    first layout); ``run`` the approved run file (None when the folder holds no baseline yet);
    ``names`` the entries at its top."""

    path: Path
    names: frozenset[str]
    version: str | None
    run: Path | None

    def next_version(self) -> str:
        """``v<N+1>`` for the largest ``v<N>`` entry present (leftovers included), else v1."""
        numbers = [int(m.group(1)) for m in map(_VERSION.fullmatch, self.names) if m]
        return f"v{max(numbers, default=0) + 1}"

    def leftovers(self) -> list[Path]:
        """What an interrupted or a finished approval left behind (see the module docstring),
        files of a run before its manifest."""
        found = [n for n in sorted(self.names) if n.startswith(".") and n.endswith(".tmp")
                 or _VERSION.fullmatch(n) and n != self.version]
        if self.version is not None:
            for name in sorted(self.names):
                if name.endswith(MANIFEST_SUFFIX):
                    run = name.removesuffix(MANIFEST_SUFFIX)
                    found += [run, name] if run in self.names else [name]
        return [self.path / name for name in dict.fromkeys(found)]


def read_folder(path: str | os.PathLike[str]) -> BaselineFolder:
    """Read the layout of the baseline folder ``path`` (which must be a folder). InputError
    (exit 2) when it cannot be read, when ``CURRENT`` does not name a version folder holding one
    run with its manifest, or when it holds several runs with manifests at its top."""
    folder = Path(path)
    names = frozenset(_list(folder))
    top = _runs(names)
    if len(top) > 1:
        raise InputError(str(folder), f"holds {len(top)} runs with manifests, so it is not a "
                         "baseline folder (one run and its manifest)",
                         "give the run file, or approve into a folder of its own, such as "
                         "baselines/NAME")
    if POINTER not in names or POINTER + MANIFEST_SUFFIX in names:
        return BaselineFolder(folder, names, None, folder / top[0] if top else None)
    pointer = folder / POINTER
    version = _read_pointer(pointer)
    if not _VERSION.fullmatch(version):
        raise InputError(str(pointer), f"{_quoted(version)} is not a version folder such as v1",
                         "restore the file from version control, or approve a baseline again",
                         1)
    inside = folder / version
    if not inside.is_dir():
        raise InputError(str(pointer), f"names {version}, which is not a folder in {folder}",
                         "restore the folder from version control, or approve a baseline again",
                         1)
    runs = _runs(frozenset(_list(inside)))
    if len(runs) != 1:
        raise InputError(str(inside), f"holds {len(runs)} runs with manifests, not one",
                         "restore the folder from version control, or approve a baseline again")
    return BaselineFolder(folder, names, version, inside / runs[0])


def resolve(path: str | os.PathLike[str]) -> Path:
    """The approved run of the baseline folder ``path``; InputError when it holds none."""
    found = read_folder(path)
    if found.run is None:
        raise InputError(str(path), "holds no run with its manifest",
                         f"approve one with gate baseline approve --candidate RUN --to {path}")
    return found.run


def _read_pointer(pointer: Path) -> str:
    """The first bytes of ``CURRENT`` (a version name is short), white space stripped."""
    try:
        with open(pointer, "rb") as handle:
            return handle.read(256).decode("utf-8", "replace").strip()
    except OSError as exc:
        raise InputError(str(pointer), f"cannot be read ({exc.strerror})",
                         "restore the file from version control, or approve a baseline again"
                         ) from None


def _list(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except PermissionError:
        raise InputError(str(folder), "cannot be read (permission denied)",
                         "make the folder readable and searchable (chmod u+rx)") from None
    except OSError as exc:
        raise InputError(str(folder), f"cannot be read ({exc.strerror})",
                         "check the folder") from None


def _runs(names: frozenset[str]) -> list[str]:
    """The run files among ``names`` whose manifest is among them too, sorted."""
    return sorted(n.removesuffix(MANIFEST_SUFFIX) for n in names
                  if n.endswith(MANIFEST_SUFFIX) and n.removesuffix(MANIFEST_SUFFIX) in names)


def _quoted(text: str) -> str:
    return repr(text[:40] + ("…" if len(text) > 40 else ""))
