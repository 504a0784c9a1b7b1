"""``gate baseline approve``: make a candidate run the approved baseline.

A baseline folder (``baselines/NAME``) holds one run and its manifest; ``gate check`` accepts
the folder as ``--baseline``, so an approval under a new file name needs no configuration
change. Approval checks the candidate against the snapshot (its manifest names the snapshot's
fingerprint, its run file has the pinned hash, it scores under the snapshot's policy), records
an ``approved`` object in the manifest (``at``, ``by``, ``commit``, ``scores``: the mean of each
snapshot measure), and refuses to replace a baseline made on another snapshot without
``force``.

Writing is all-or-nothing for errors and interruptions while writing: both files are staged as
temporary files beside their targets (normal permissions), the old files are kept as hard-link
backups, the two renames happen last, and any failure puts the backups back — the old baseline
stays byte-identical.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from retrieval_gate import schema
from retrieval_gate.errors import InputError, NotComparableError
from retrieval_gate.runmanifest import (
    MANIFEST_SUFFIX,
    current_commit,
    manifest_path,
    read_run_manifest,
    run_of,
    utc_now,
)
from retrieval_gate.snapshot import load_snapshot, load_test_set
from retrieval_gate.validate import check_run


@dataclass(frozen=True)
class Approval:
    run: Path
    manifest: Path
    replaced: tuple[Path, ...]
    scores: dict[str, float | None]


def approver() -> str:
    """Who approves: ``GITHUB_ACTOR`` in GitHub Actions, else the login name."""
    try:
        return os.environ.get("GITHUB_ACTOR") or getpass.getuser()
    except (KeyError, OSError):  # no login name (some containers)
        return "unknown"


def approve_baseline(candidate: str | os.PathLike[str], to: str | os.PathLike[str],
                     snapshot: str | os.PathLike[str], force: bool = False) -> Approval:
    """Check ``candidate`` against ``snapshot`` and write it with its manifest into the
    baseline folder ``to`` (created if needed), replacing the baseline there."""
    snap = load_snapshot(snapshot)
    test_set = load_test_set(snap)
    candidate = Path(candidate)
    checked = check_run(snap, test_set, candidate, "candidate")
    means = checked.scores.means()
    folder = Path(to)
    if folder.exists() and not folder.is_dir():
        raise InputError(str(folder), "is a file, not a baseline folder",
                         "give a folder such as baselines/NAME")
    old = sorted(folder.glob(f"*{MANIFEST_SUFFIX}")) if folder.is_dir() else []
    if len(old) > 1:
        raise InputError(str(folder), f"holds {len(old)} runs with manifests, so it is not a "
                         "baseline folder (one run and its manifest)",
                         "approve into a folder of its own, such as baselines/NAME")
    for previous in old:
        made_on = read_run_manifest(run_of(previous), previous).fingerprint
        if made_on != snap.fingerprint and not force:
            raise NotComparableError(
                f"{previous}: the baseline there was made on snapshot {made_on}, the candidate "
                f"on {snap.fingerprint} — pass --force to replace a baseline of another "
                "snapshot")
    document = dict(checked.manifest.document)
    document["approved"] = {"at": utc_now(), "by": approver(), "commit": current_commit(),
                            "scores": means}
    schema.validate(document, "run-manifest", str(manifest_path(folder / candidate.name)))
    folder.mkdir(parents=True, exist_ok=True)
    run_target = folder / candidate.name
    targets = {run_target: None, manifest_path(run_target):
               json.dumps(document, indent=2, ensure_ascii=False) + "\n"}
    _swap_in(targets, candidate)
    stale = [p for m in old for p in (m, run_of(m)) if p not in targets]
    for path in stale:
        path.unlink(missing_ok=True)
    return Approval(run_target, manifest_path(run_target),
                    tuple(p for p in stale if not p.name.endswith(MANIFEST_SUFFIX)), means)


def _swap_in(targets: dict[Path, str | None], run: Path) -> None:
    """Stage every target (``None`` = a copy of ``run``, else the text), then rename them into
    place; on any failure restore what was there and remove the staged files."""
    staged: dict[Path, Path] = {}
    backups: dict[Path, Path] = {}
    placed: list[Path] = []
    umask = os.umask(0)
    os.umask(umask)
    try:
        for target, text in targets.items():
            fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                        suffix=".tmp")
            staged[target] = Path(name)
            with os.fdopen(fd, "wb") as handle:
                if text is None:
                    with run.open("rb") as source:
                        shutil.copyfileobj(source, handle, 1 << 20)
                else:
                    handle.write(text.encode("utf-8"))
            os.chmod(name, 0o666 & ~umask)
        for target in targets:
            if target.exists():
                backups[target] = target.with_name(f".{target.name}.{os.getpid()}.backup")
                backups[target].unlink(missing_ok=True)
                os.link(target, backups[target])
        for target, temporary in staged.items():
            os.replace(temporary, target)
            placed.append(target)
    except BaseException:
        for target, backup in backups.items():
            os.replace(backup, target)
            backup.unlink(missing_ok=True)  # rename between two links of one file is a no-op
        for target in placed:
            if target not in backups:
                target.unlink(missing_ok=True)
        for temporary in staged.values():
            temporary.unlink(missing_ok=True)
        raise
    for backup in backups.values():
        backup.unlink(missing_ok=True)
