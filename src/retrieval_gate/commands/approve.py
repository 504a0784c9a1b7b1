"""``gate baseline approve``: make a candidate run the approved baseline.

Approval checks the candidate against the snapshot (its manifest names the snapshot's
fingerprint, its run file has the pinned hash, it scores under the snapshot's policy), records
an ``approved`` object in the manifest (``at``, ``by``, ``commit``, ``scores``: the mean of each
snapshot measure; ``gated``: the measures the configuration gates), and refuses to replace a
baseline made on another snapshot without ``force``.

It writes the baseline folder as :mod:`retrieval_gate.inputs.baseline_folder` describes: the run and
its manifest go whole into a hidden staging folder (each file and the folder flushed to the
disk), which is renamed to the next version ``v<N>``; one atomic rename of ``CURRENT`` then
switches the baseline, and a line is added to the folder's history; the previous version and
any leftovers of interrupted approvals are deleted last. Whenever the process stops — an error,
Ctrl-C, SIGKILL, a power cut after the flushes — the folder's baseline is the old one or the
new one, whole. Ctrl-C is held while ``CURRENT`` and the history line are written, so an
interrupted approval leaves the old baseline with the old history, or the new one with its line
(only a kill or an error between the two leaves the new baseline without it). Approvals of one
folder take turns (an exclusive ``flock`` on the folder, where the system has one).
"""

from __future__ import annotations

import errno
import getpass
import hashlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.commands.power_said import approval_power
from retrieval_gate.commands.validate import CheckedRun, check_run
from retrieval_gate.core.errors import EnvironmentFault, InputError, NotComparableError
from retrieval_gate.core.interrupts import interrupts_held
from retrieval_gate.core.untrusted import capped
from retrieval_gate.decide.policy import SCORE_PREFIX, GatedMeasure, GatePolicy
from retrieval_gate.decide.power import Certifiable
from retrieval_gate.formats import schema
from retrieval_gate.formats.atomic import sync_folder, write_text_atomic
from retrieval_gate.inputs.answer_scores import QueryScores
from retrieval_gate.inputs.baseline_folder import POINTER, BaselineFolder, read_folder
from retrieval_gate.inputs.run_manifest import (
    RunManifest,
    manifest_path,
    read_run_manifest,
    resolve_commit,
    utc_now,
)
from retrieval_gate.inputs.snapshot import Snapshot, load_snapshot, load_test_set


@dataclass(frozen=True)
class Approval:
    """An approval done: the run and manifest written, the baseline run it replaced (if any),
    the means recorded, and leftovers it could not delete (the next approval retries);
    ``unchanged`` when the candidate already was the approved baseline (nothing written), the
    snapshot change it records when the test set moved on, and ``described``: for the approved
    run's own bytes again, what its manifest says otherwise (:func:`described_otherwise`)."""

    run: Path
    manifest: Path
    replaced: tuple[Path, ...]
    scores: dict[str, float | None]
    kept: tuple[str, ...] = ()
    unchanged: bool = False
    snapshot_change: dict[str, str] | None = None
    described: tuple[str, ...] = ()  # the approved run again, described otherwise: how
    power: tuple[Certifiable, ...] = ()  # what the test set can certify on the gated measures


def approver() -> str:
    """Who approves: ``GITHUB_ACTOR`` in GitHub Actions, else the login name."""
    try:
        return os.environ.get("GITHUB_ACTOR") or getpass.getuser()
    except (KeyError, OSError):  # no login name (some containers)
        return "unknown"


def approve_baseline(candidate: str | os.PathLike[str], to: str | os.PathLike[str],
                     snapshot: str | os.PathLike[str], force: bool = False,
                     commit: str | None = None, policy: GatePolicy | None = None) -> Approval:
    """Check ``candidate`` against ``snapshot`` and make it, with its manifest, the baseline of
    the folder ``to`` (created if needed); see the module docstring. ``policy``, the
    configuration the approval runs under: its gates are recorded as the measures it gates
    (``approved.gated`` and the history line's ``gated``: :func:`gated_measures`), and what
    the test set can certify on them is measured (``power``:
    :func:`~retrieval_gate.commands.power_said.approval_power`).

    A candidate whose files and snapshot are those of the approved baseline is a no-op
    (``unchanged``: nothing written, no history line). A baseline made on an earlier snapshot
    of the same name is replaced — the test set evolved — and the change is recorded in the
    approval (``approved.snapshot_change``) and the folder's history. ``commit`` is the source
    commit to record (default: :func:`~retrieval_gate.inputs.run_manifest.resolve_commit`).

    Errors: InputError (exit 2) for a candidate or a folder that is not what it should be, or
    no commit to record; NotComparableError (exit 3) for a baseline there made on a snapshot
    of another name (unless ``force``) or a candidate that changed while it was copied;
    EnvironmentFault (exit 74) when the folder cannot be created or written."""
    snap = load_snapshot(snapshot)
    test_set = load_test_set(snap)
    checked = check_run(snap, test_set, candidate, "candidate")
    source = Path(checked.path)
    means = {**checked.scores.means(), **_score_means(checked.answer_scores,
                                                      len(checked.scores.query_ids))}
    document = dict(checked.manifest.document)
    document["approved"] = {"at": utc_now(), "by": approver(),
                            "commit": resolve_commit(commit, "--commit"), "scores": means}
    if policy is not None:
        document["approved"]["gated"] = gated_measures(policy.gates, snap)
    copies = _travelling(checked, document)
    folder = Path(to)
    schema.validate(document, "run-manifest", str(manifest_path(folder / source.name)))
    if folder.exists() and not folder.is_dir():
        raise InputError(str(folder), "is a file, not a baseline folder",
                         "give a folder such as baselines/NAME")
    _create(folder)
    with _writing(folder), _turn(folder):
        before = read_folder(folder)
        previous = _require_replaceable(before, snap, force)
        if previous is not None and before.version is not None and _same_files(
                previous, checked.manifest):  # nothing to write; an earlier one's leftovers go
            run = before.run or source
            return Approval(run, manifest_path(run), (), means, _delete(before.leftovers()),
                            unchanged=True,
                            described=tuple(described_otherwise(previous, checked.manifest)))
        described = () if previous is None else _require_described_alike(
            previous, checked.manifest, force)
        power = () if policy is None else tuple(approval_power(  # the replaced run read now
            policy, snap, checked, None if previous is None or before.run is None
            or previous.fingerprint != snap.fingerprint
            else check_run(snap, test_set, before.run, "baseline")))
        change = None
        if previous is not None and previous.fingerprint != snap.fingerprint:
            change = {"from": previous.fingerprint, "to": snap.fingerprint}
            document["approved"]["snapshot_change"] = change
        version = _stage(before, copies, manifest_path(source).name,
                         json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        with interrupts_held():  # Ctrl-C never parts the switch from its history line
            write_text_atomic(folder / POINTER, f"{version}\n", durable=True)
            append_history(folder, history_line(version, document, snap))
        kept = _delete(read_folder(folder).leftovers())
    run = folder / version / source.name
    return Approval(run, manifest_path(run), (before.run,) if before.run else (), means, kept,
                    snapshot_change=change, described=described, power=power)


def _travelling(checked: CheckedRun, document: dict[str, Any]) -> list[tuple[Path, str]]:
    """The files the approved version holds beside its manifest, each with the SHA-256 it
    must have: the run (a run of scores only is its score file), its chunk table, its scores
    and its other stages; ``document`` (the manifest to write) is made to name each by its
    file name in the version's folder. InputError when two of them share a name."""
    source = Path(checked.path)
    copies = [(source, checked.manifest.sha256)] if checked.manifest.ranked else []
    chunks = checked.manifest.chunks_file()
    if chunks is not None:  # the run's chunk table travels with it, beside it
        document["chunking"] = {**document["chunking"], "file": chunks.name}
        copies.append((chunks, document["chunking"]["sha256"]))
    scores = checked.manifest.scores_file()
    if scores is not None:  # so do its per-query scores
        document["scores"] = {**document["scores"], "file": scores.name}
        copies.append((scores, document["scores"]["sha256"]))
    if checked.manifest.stages:  # a pipeline run's stages travel with it, side by side
        files = checked.manifest.stage_files()
        document["stages"] = [{"name": name, "file": file.name, "sha256": sha}
                              for name, file, sha in files]
        copies.extend((file, sha) for _, file, sha in files[:-1])
    names = [file.name for file, _ in copies] + [manifest_path(source).name]
    if len(set(names)) < len(names):
        twice = min(n for n in names if names.count(n) > 1)
        raise InputError(checked.manifest.source, f"two of the run's files are named {twice}, "
                         "and the approved version keeps them side by side in one folder",
                         "rename one (stage files, chunk table, scores, run) and rewrite the "
                         "run's manifest")
    return copies


def described_otherwise(previous: RunManifest, candidate: RunManifest) -> list[str]:
    """When the candidate's run is the approved baseline's — the same bytes on the same
    snapshot —, what its manifest says otherwise, one line per part: the system, the chunk
    table, the scores and their judge, the stages, where its latencies were measured (the
    commit and time of making are not compared). Empty for another run."""
    if (previous.sha256, previous.fingerprint) != (candidate.sha256, candidate.fingerprint):
        return []
    def said(m: RunManifest) -> dict[str, tuple[object, str]]:
        """Each part: what is compared (files by their hash: the approved copies lie in the
        baseline folder, under other paths), and what is shown."""
        document, chunking, scores = m.document, m.chunking or {}, m.scores or {}
        system = ", ".join(f"{k}={v}" for k, v in document.get("system", {}).items())
        table = " ".join(str(chunking[k]) for k in ("file", "version") if chunking.get(k))
        judge = ", ".join(f"{k}={v}" for k, v in m.judge.items())
        stages = [(name, sha) for name, _, sha in m.stage_files()]
        timed = str(document.get("provenance", {}).get("timed_on") or "")
        return {"system": (system, system),
                "chunk table": ((chunking.get("sha256"), chunking.get("version")), table),
                "scores": (scores.get("sha256"), str(scores.get("file") or "")),
                "judge": (judge, judge),
                "stages": (stages, ", ".join(name for name, _ in stages)),
                "timed on": (timed, timed)}
    before, now = said(previous), said(candidate)
    return [f"{part}: {capped(now[part][1], 120) or 'none'} (the approved baseline's: "
            f"{capped(before[part][1], 120) or 'none'})" for part in before
            if before[part][0] != now[part][0]]


def _require_described_alike(previous: RunManifest, candidate: RunManifest, force: bool
                             ) -> tuple[str, ...]:
    """What :func:`described_otherwise` finds; InputError (exit 2) when the candidate's
    manifest drops a file the approved baseline's pins for the same run — its chunk table, its
    scores, its stages — unless ``force``: approving it would leave the baseline without
    them (a re-run manifest that forgot ``--chunks``)."""
    differ = described_otherwise(previous, candidate)
    pins = {"chunk table": lambda m: (m.chunking or {}).get("sha256"),
            "scores": lambda m: m.scores, "stages": lambda m: m.stage_files()}
    dropped = [part for part, pinned in pins.items()
               if differ and pinned(previous) and not pinned(candidate)]
    if dropped and not force:
        raise InputError(candidate.source, "is the approved baseline's run again (the same "
                         f"bytes), and its manifest drops the baseline's {' and '.join(dropped)}"
                         f": {'; '.join(differ)}", "write the run's manifest as the baseline's "
                         "was written (the same --chunks, --scores, --stage), or pass --force "
                         "to approve it without them")
    return tuple(differ)


def _require_replaceable(before: BaselineFolder, snap: Snapshot, force: bool
                         ) -> RunManifest | None:
    """The manifest of the baseline in the folder (None for none). InputError for a
    first-layout run named like the pointer file; NotComparableError when it was made on a
    snapshot of another name — another test set, not a later version of this one — unless
    ``force``."""
    if before.run is None:
        return None
    if before.version is None and before.run.name == POINTER:
        raise InputError(str(before.run), f"is named {POINTER}, the name an approval gives "
                         "the file that points at the approved version",
                         "rename the run and its manifest, then approve again")
    previous = read_run_manifest(before.run)
    made_on = previous.document["snapshot"].get("name")
    if made_on != snap.name and previous.fingerprint != snap.fingerprint and not force:
        raise NotComparableError(
            f"{manifest_path(before.run)}: the baseline there was made on snapshot "
            f"'{made_on}' ({previous.fingerprint}), the candidate on '{snap.name}' "
            f"({snap.fingerprint}) — another test set: approve into another folder, or pass "
            "--force to replace it")
    return previous


def _same_files(previous: RunManifest, candidate: RunManifest) -> bool:
    """Whether the candidate is the approved baseline again: the same run, stage, chunk
    table and score bytes (and judge), made on the same snapshot."""
    def pinned(m: RunManifest) -> tuple[object, ...]:
        return (m.fingerprint, m.sha256,
                tuple(sha for _, _, sha in m.stage_files()),
                (m.chunking or {}).get("sha256"), (m.chunking or {}).get("version"),
                (m.scores or {}).get("sha256"), m.judge)
    return pinned(previous) == pinned(candidate)


def gated_measures(gates: Sequence[GatedMeasure], snap: Snapshot) -> list[str]:
    """The snapshot measures ``gates`` decide on, by their names in the snapshot (parsed with
    its gain; without ``[stage]``, on the last stage of a pipeline), in the gates' order, once
    each, and the per-query scores they gate (``score:NAME``). Report-only gates, decisions
    (Abstain, FalseAbstain) and names that are not one of the snapshot's measures are left out:
    they are not scores the approval records."""
    names: dict[str, None] = {}
    for gate in gates:
        if gate.report_only:
            continue
        if gate.measure.startswith(SCORE_PREFIX):
            names[gate.measure] = None
            continue
        try:
            measure = snap.gated(gate.measure)
        except InputError:
            continue
        if measure in snap.measures:
            names[str(measure)] = None
    return list(names)


def _score_means(answers: QueryScores | None, answerable: int) -> dict[str, float | None]:
    """Each per-query score's mean over the answerable queries (the ``all`` slice), as
    ``score:NAME``; failed scores left out (None when every one failed)."""
    if answers is None:
        return {}
    means: dict[str, float | None] = {}
    for name in answers.names:
        values = answers.column(name)[:answerable]
        kept = values[~np.isnan(values)].tolist()
        means[SCORE_PREFIX + name] = math.fsum(kept) / len(kept) if kept else None
    return means


HISTORY = "history.jsonl"


def history_line(version: str, document: dict[str, Any], snap: Snapshot) -> dict[str, Any]:
    """One approval in the folder's history: when, by whom, from which commit, the version,
    the snapshot (and the one it replaced), the system, the run's hash and its means — and
    the measures gated, when the approval ran under a configuration."""
    approved = document["approved"]
    line = {"at": approved["at"], "by": approved["by"], "commit": approved["commit"],
            "version": version, "snapshot": {"name": snap.name, "fingerprint": snap.fingerprint},
            "system": document["system"], "run_sha256": (document.get("run") or document["scores"])["sha256"],
            "means": approved["scores"]}
    for key in ("gated", "snapshot_change"):
        if key in approved:
            line[key] = approved[key]
    return line


def append_history(folder: Path, line: dict[str, Any]) -> None:
    """Add ``line`` to the folder's ``history.jsonl`` (rewritten whole, atomically)."""
    path = folder / HISTORY
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    write_text_atomic(path, before + json.dumps(line, sort_keys=True, ensure_ascii=False)
                      + "\n", durable=True)


def _stage(before: BaselineFolder, copies: list[tuple[Path, str]], manifest_name: str,
           manifest: str) -> str:
    """Write the files ``copies`` (each with the hash it was checked with: the run, and its
    chunk table if any) and ``manifest`` whole into a hidden staging folder, flushed to the
    disk, and rename it to the next version; returns that version's name. On failure the
    staging folder is deleted."""
    folder = before.path
    staging = Path(tempfile.mkdtemp(".tmp", ".approve-", folder))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)
        for source, sha256 in copies:
            _copy(source, staging / source.name, sha256)
        _create_file(staging / manifest_name, manifest.encode("utf-8"))
        sync_folder(staging)
        version = before.next_version()
        os.rename(staging, folder / version)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    sync_folder(folder)
    return version


def _copy(source: Path, target: Path, sha256: str) -> None:
    """Copy ``source`` to the new file ``target``, flushed to the disk; NotComparableError if
    the bytes copied do not have the hash that was checked (the file changed meanwhile)."""
    digest = hashlib.sha256()
    with open(source, "rb") as reading, open(target, "xb") as writing:
        for block in iter(lambda: reading.read(1 << 20), b""):
            digest.update(block)
            writing.write(block)
        writing.flush()
        os.fsync(writing.fileno())
    if digest.hexdigest() != sha256:
        raise NotComparableError(f"{source}: the file changed while it was being approved — "
                                 "approve it again once it is complete")


def _create_file(path: Path, data: bytes) -> None:
    """A new file holding ``data``, flushed to the disk."""
    with open(path, "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _delete(paths: list[Path]) -> tuple[str, ...]:
    """Delete ``paths`` (files and folders); what could not be deleted, with the reason."""
    kept = []
    for path in paths:
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        except OSError as exc:
            kept.append(f"{path} ({exc.strerror or type(exc).__name__})")
    return tuple(kept)


def _create(folder: Path) -> None:
    """Create the baseline folder and its parents; EnvironmentFault when the machine refuses
    (no permission, a read-only file system, a parent that is a file)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        blocker = next((p for p in folder.parents if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            reason += f": {blocker} is a file"
        raise EnvironmentFault(f"{folder}: cannot create the baseline folder ({reason}) — "
                               "approve into a folder that can be created here, or fix the "
                               "permissions") from None


@contextmanager
def _writing(folder: Path) -> Iterator[None]:
    """An OSError while the baseline is written becomes an EnvironmentFault naming the folder
    (and the file, when the system names it)."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        where = f": {exc.filename}" if exc.filename else ""
        raise EnvironmentFault(f"{folder}: cannot write the new baseline ({reason}{where}) — "
                               "free space or fix the permissions, then approve again") from None


@contextmanager
def _turn(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` so that concurrent approvals of it take turns. No
    lock where the system or the file system has none (Windows; flock on NFS folders)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            if exc.errno not in (errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                raise
        yield
    finally:
        os.close(fd)
