"""Run manifests and comparability.

A run manifest lies beside its run as ``<run file>.manifest.json``. It pins the run file by its
SHA-256 and records the snapshot the run was made against — its fingerprint and its identity
(every component's version and hash, the chunking parameters, the scoring policy) — so that when
the snapshot moves on, the gate can say *which* component changed. It also records the system
that produced the run (free-form) and provenance (commit, creation time); an approved baseline
carries an ``approved`` record.

A run is read once: its SHA-256 is checked on the bytes read, and those bytes are scored
(:func:`load_checked_run` returns them), so a run replaced between the two cannot pass for the
pinned one.

Two runs are comparable only if both manifests name the snapshot's current fingerprint. A label
correction changes the qrels' hash and version, hence the fingerprint: it can never pass for a
retrieval change.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from retrieval_gate.core.errors import InputError, NotComparableError
from retrieval_gate.core.model import ChunkTable
from retrieval_gate.formats import schema
from retrieval_gate.formats.atomic import write_text_atomic
from retrieval_gate.formats.jsonfmt import loads
from retrieval_gate.formats.jsonfmt import path as json_path
from retrieval_gate.formats.source import Blob, display_name, is_regular_file, read_blob
from retrieval_gate.inputs import baseline_folder
from retrieval_gate.inputs.baseline_folder import MANIFEST_SUFFIX
from retrieval_gate.inputs.snapshot import COMPONENTS, Snapshot, fingerprint


def manifest_path(run: str | os.PathLike[str]) -> Path:
    """Where a run's manifest lives: ``<run file>.manifest.json``."""
    return Path(f"{run}{MANIFEST_SUFFIX}")


def run_of(manifest: Path) -> Path:
    """The run a ``<run file>.manifest.json`` beside it describes."""
    return manifest.with_name(manifest.name.removesuffix(MANIFEST_SUFFIX))


def resolve_run(path: str | os.PathLike[str]) -> Path:
    """A run file, or a baseline folder (see :mod:`retrieval_gate.inputs.baseline_folder`) → its
    approved run file. InputError (exit 2) for a folder that cannot be read or holds no
    baseline."""
    given = Path(path)
    return baseline_folder.resolve(given) if given.is_dir() else given


@dataclass(frozen=True, eq=False)
class RunManifest:
    """A loaded, schema-valid run manifest, checked against its run file."""

    source: str
    run: str
    document: dict[str, Any]

    @property
    def ranked(self) -> bool:
        """Whether the run has a ranking (else it is per-query scores only)."""
        return "run" in self.document

    @property
    def sha256(self) -> str:
        """The SHA-256 of the file the manifest lies beside: the run, or for a run of scores
        only its score file."""
        return (self.document["run"] if self.ranked else self.document["scores"])["sha256"]

    @property
    def fingerprint(self) -> str:
        return self.document["snapshot"]["fingerprint"]

    @property
    def components(self) -> dict[str, Any]:
        return self.document["snapshot"]["components"]

    @property
    def system(self) -> dict[str, Any]:
        return self.document["system"]

    @property
    def chunking(self) -> dict[str, Any] | None:
        """The run's chunking (chunk table file, hash, version, parameters), or None."""
        return self.document.get("chunking")

    @property
    def stages(self) -> tuple[str, ...]:
        """The stage names of a pipeline run, in order; empty for a one-ranking run."""
        return tuple(s["name"] for s in self.document.get("stages", ()))

    def stage_files(self) -> tuple[tuple[str, Path, str], ...]:
        """(name, file, pinned SHA-256) of each stage, files resolved against the manifest's
        folder; empty for a one-ranking run."""
        folder = Path(self.source).parent
        return tuple((s["name"], folder / s["file"], s["sha256"])
                     for s in self.document.get("stages", ()))

    @property
    def timed_on(self) -> str | None:
        """Where the run's latencies were measured, when the manifest says."""
        return self.document["provenance"].get("timed_on")

    @property
    def latency(self) -> str | None:
        """What the run's ``latency_ms`` measure, when ``gate run`` made it (``call``,
        ``batch``, ``stage`` or ``reported``: see the run-manifest schema); None otherwise."""
        return self.document["provenance"].get("runner", {}).get("latency")

    @property
    def failed(self) -> tuple[tuple[str, str], ...]:
        """The queries whose call failed when ``gate run`` made the run (they are absent from
        it), each with its error, in query-set order; empty for any other run."""
        runner = self.document["provenance"].get("runner", {})
        return tuple((f["query_id"], f["error"]) for f in runner.get("failed", ()))

    @property
    def scores(self) -> dict[str, Any] | None:
        """The run's score file record (file, hash, format, tool, judge), or None."""
        return self.document.get("scores")

    @property
    def judge(self) -> dict[str, str]:
        """Who scored the run's score file (empty when not recorded)."""
        return dict((self.scores or {}).get("judge", {}))

    def scores_file(self) -> Path | None:
        """The run's score file, resolved against the manifest's folder (None without)."""
        return None if self.scores is None else Path(
            os.path.normpath(Path(self.source).parent / self.scores["file"]))

    def chunks_file(self) -> Path | None:
        """The run's chunk table, resolved against the manifest's folder (None without)."""
        chunking = self.chunking
        return (None if chunking is None or "file" not in chunking
                else Path(self.source).parent / chunking["file"])


def load_run_chunks(manifest: RunManifest) -> ChunkTable | None:
    """The chunk table the manifest pins, read once: its bytes must have the pinned SHA-256
    (NotComparableError, exit 3, otherwise); None when the run has none."""
    file = manifest.chunks_file()
    if file is None or manifest.chunking is None:
        return None
    blob = read_blob(file)
    pinned = manifest.chunking["sha256"]
    if blob.sha256 != pinned:
        raise NotComparableError(
            f"{manifest.source}:{json_path('chunking', 'sha256')}: chunk table {blob.name} has "
            f"sha256 {blob.sha256}, the manifest pins {pinned} — the chunking changed after the "
            "manifest was written: rewrite the manifest with gate run-manifest --chunks")
    from retrieval_gate.formats.corpus import read_chunk_table

    return read_chunk_table(blob)


def read_run_file(run: str | os.PathLike[str]) -> Blob:
    """The run file read once (memory-mapped when large): hash and parse these bytes."""
    from retrieval_gate.formats import arrow

    return read_blob(run, arrow.MAP_FROM)


def load_checked_run(run: str | os.PathLike[str],
                     manifest: str | os.PathLike[str] | None = None
                     ) -> tuple[RunManifest, Blob]:
    """Read the manifest of ``run`` (beside it unless ``manifest`` is given) and check it (see
    :func:`read_run_manifest`), then read the run once: its bytes must have the recorded
    SHA-256 (exit 3). Returns the manifest and those bytes, to be parsed."""
    loaded = read_run_manifest(run, manifest)
    blob = read_run_file(run)
    verify_run_hash(loaded, blob.sha256)
    return loaded, blob


def load_run_manifest(run: str | os.PathLike[str],
                      manifest: str | os.PathLike[str] | None = None) -> RunManifest:
    """:func:`load_checked_run` without the run's bytes."""
    return load_checked_run(run, manifest)[0]


def read_run_manifest(run: str | os.PathLike[str],
                      manifest: str | os.PathLike[str] | None = None) -> RunManifest:
    """Read and check a run's manifest without hashing the run: schema (every error at once,
    exit 2), and its recorded fingerprint matches its recorded components (exit 2: edited by
    hand). Pair it with :func:`verify_run_hash`."""
    where = manifest or manifest_path(run)
    source, shown = display_name(where), display_name(run)
    if not is_regular_file(run):
        raise InputError(shown, "run file not found", "check the path")
    if not is_regular_file(where):
        raise InputError(shown, f"has no run manifest ({source} not found)",
                         "write one beside the run with: gate run-manifest --snapshot SNAPSHOT "
                         f"--run {shown} (for a file of per-query scores only: --scores "
                         f"{shown})")
    document = loads(read_blob(where).text(), source)
    schema.validate(document, "run-manifest", source)
    recorded = document["snapshot"]
    if fingerprint(recorded["components"]) != recorded["fingerprint"]:
        raise InputError(source, "the recorded fingerprint does not match the recorded "
                         "snapshot components (the manifest was edited)",
                         "rewrite it with gate run-manifest", json_path("snapshot"))
    if "run" not in document:
        _require_beside_scores(document, source, where, run)
    stages = document.get("stages", ())
    names = [s["name"] for s in stages]
    if stages and ("run" not in document or stages[-1]["sha256"] != document["run"]["sha256"]
                   or len(set(names)) < len(names)):
        raise InputError(source, "its stages repeat a name, or the last stage is not the run "
                         "the manifest lies beside (the manifest was edited)",
                         "rewrite it with gate run-manifest --stage", json_path("stages"))
    return RunManifest(source, shown, document)


def _require_beside_scores(document: dict[str, Any], source: str, where: str | os.PathLike[str],
                           run: str | os.PathLike[str]) -> None:
    """A manifest of scores only lies beside its score file: InputError otherwise."""
    pinned = Path(os.path.normpath(Path(where).parent / document["scores"]["file"]))
    if pinned != Path(os.path.normpath(run)):
        raise InputError(source, f"pins scores only ({document['scores']['file']}), and is "
                         f"given for {display_name(run)}", "give the score file itself as the "
                         "run (its manifest lies beside it), or rewrite the manifest with gate "
                         "run-manifest --run", json_path("scores", "file"))


def failed_queries(snapshot: Snapshot, manifest: RunManifest, role: str) -> str | None:
    """What the snapshot's ``missing`` policy makes of the queries that failed when ``gate
    run`` made the run (:attr:`RunManifest.failed`): InputError (exit 2) under ``error``;
    under ``zero`` the warning to show — an answerable one scores 0, an unanswerable one is
    shown as returning nothing, as for any query a run lacks; None when none failed. A failed
    query is never taken for a ranking the system returned."""
    failed = manifest.failed
    if not failed:
        return None
    qid, error = failed[0]
    listed = ", ".join(f"'{q}'" for q, _ in failed[:5]) + (
        f" and {len(failed) - 5} more" if len(failed) > 5 else "")
    if snapshot.policy.missing == "error":
        raise InputError(manifest.source, f"query '{qid}' failed when the {role} was run "
                         f"({error}): {len(failed)} failed ({listed}), and the snapshot's "
                         "missing policy is error", "run it again (gate run --resume calls "
                         "only the queries not answered), or score failed queries 0: "
                         + snapshot.policy.fix("missing", "zero"),
                         json_path("provenance", "runner", "failed"))
    return (f"{role}: {len(failed)} {'query' if len(failed) == 1 else 'queries'} failed when "
            f"the run was made ({listed}; first: {error}) and {'is' if len(failed) == 1 else 'are'}"
            " scored as missing (missing: zero): 0 when answerable; an unanswerable one "
            "counts as returning nothing")


def verify_run_hash(manifest: RunManifest, actual: str, pinned: str | None = None,
                    stage: str | None = None) -> None:
    """NotComparableError (exit 3) unless the SHA-256 ``actual`` of the run file (or of a
    pipeline run's ``stage`` file, whose hash is ``pinned``) is the one the manifest pins."""
    pinned = pinned or manifest.sha256
    if actual == pinned:
        return
    if stage is None:
        raise NotComparableError(
            f"{manifest.source}:{json_path('run', 'sha256')}: run file {manifest.run} has sha256 "
            f"{actual}, its manifest pins {pinned} — the run changed after its manifest was "
            "written: rewrite the manifest with gate run-manifest (and re-approve it if it is "
            "the baseline)")
    file = {name: file for name, file, _ in manifest.stage_files()}[stage]
    raise NotComparableError(
        f"{manifest.source}:{json_path('stages')}: stage {stage}'s run file "
        f"{display_name(file)} has sha256 {actual}, the manifest pins {pinned} — the stage "
        "changed after the manifest was written: rewrite the manifest with gate run-manifest "
        "--stage (and re-approve it if it is the baseline)")


def make_run_manifest(snapshot: Snapshot, run: str | os.PathLike[str] | Blob | None,
                      system: Mapping[str, Any] | None = None, commit: str | None = None,
                      created: str | None = None, chunking: Mapping[str, Any] | None = None,
                      stages: Sequence[Mapping[str, Any]] = (), timed_on: str | None = None,
                      costs: Sequence[str] | None = None) -> dict[str, Any]:
    """The manifest document of ``run`` (a path, or the run as read and scored: its bytes are
    what the manifest pins; None for a run of scores only, pinned by the caller) made on
    ``snapshot``. ``created`` defaults to now (UTC, whole
    seconds); ``commit`` to :func:`current_commit` (see :func:`resolve_commit`: ``none``
    records none; none found is an error); ``chunking`` is the run's chunking
    (:func:`chunking_record`), when it has one; ``stages`` the records of a pipeline run's
    stages (:func:`stage_record`), the last being ``run``; ``timed_on`` where its latencies
    were measured; ``costs`` the costs the run file records (``latency_ms``, ``tokens``), when
    it was read."""
    require_created(created)
    document: dict[str, Any] = {}
    if run is not None:
        blob = run if isinstance(run, Blob) else read_run_file(run)
        document["run"] = {"file": Path(blob.name).name, "sha256": blob.sha256}
        if costs is not None:
            document["run"]["costs"] = list(costs)
    document |= {
        "snapshot": {"name": snapshot.name, "fingerprint": snapshot.fingerprint,
                     "components": snapshot.identity},
        "system": dict(system or {}),
        "provenance": {"commit": resolve_commit(commit, "--commit"),
                       "created": created or utc_now()},
    }
    if chunking is not None:
        document["chunking"] = dict(chunking)
    if stages:
        document["stages"] = [dict(s) for s in stages]
    if timed_on is not None:
        document["provenance"]["timed_on"] = timed_on
    return document


def stage_record(name: str, stage: Blob, stage_path: str | os.PathLike[str],
                 manifest: str | os.PathLike[str], costs: Sequence[str] | None = None
                 ) -> dict[str, Any]:
    """One stage of a pipeline run's manifest written to ``manifest``: its name, its run file
    ``stage_path`` relative to the manifest's folder (forward slashes), the SHA-256 of its
    bytes ``stage`` as read and scored, and the costs its file records (``latency_ms``,
    ``tokens``), when it was read (a stage the snapshot does not score is only hashed)."""
    record: dict[str, Any] = {"name": name, "file": _relative(stage_path, manifest),
                              "sha256": stage.sha256}
    if costs is not None:
        record["costs"] = list(costs)
    return record


def _relative(file: str | os.PathLike[str], manifest: str | os.PathLike[str]) -> str:
    relative = os.path.relpath(Path(file).resolve(), Path(manifest).resolve().parent)
    return PurePosixPath(*Path(relative).parts).as_posix()


def chunking_record(chunks: Blob | None, chunks_path: str | os.PathLike[str] | None,
                    manifest: str | os.PathLike[str], version: str | None = None,
                    params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``chunking`` of a run manifest written to ``manifest``: the chunk table at
    ``chunks_path`` (relative to the manifest's folder, forward slashes) with the SHA-256 of
    its bytes ``chunks`` as read and used, when the run has one, and its version and
    parameters; a version alone names a chunking whose table is not pinned."""
    record: dict[str, Any] = {}
    if chunks is not None and chunks_path is not None:
        record.update(file=_relative(chunks_path, manifest), sha256=chunks.sha256)
    if version is not None:
        record["version"] = version
    if params:
        record["params"] = dict(params)
    return record


def scores_record(scores: Blob, scores_path: str | os.PathLike[str],
                  manifest: str | os.PathLike[str], format: str, tool: str,
                  names: Sequence[str], judge: Mapping[str, str] | None = None
                  ) -> dict[str, Any]:
    """The ``scores`` of a run manifest written to ``manifest``: the score file at
    ``scores_path`` (relative to the manifest's folder, forward slashes) with the SHA-256 of
    its bytes ``scores`` as read and checked, its format, the tool and score names it holds,
    and who scored (``judge``, when recorded)."""
    record: dict[str, Any] = {"file": _relative(scores_path, manifest), "sha256": scores.sha256,
                              "format": format, "tool": tool, "names": list(names)}
    if judge:
        record["judge"] = dict(judge)
    return record


def write_run_manifest(document: Mapping[str, Any], output: str | os.PathLike[str]) -> None:
    """Validate ``document`` against the run-manifest schema and write it atomically."""
    write_text_atomic(output, run_manifest_text(document, output))


def run_manifest_text(document: Mapping[str, Any], output: str | os.PathLike[str]) -> str:
    """The text of a run manifest to be written to ``output``, validated against the
    run-manifest schema."""
    schema.validate(document, "run-manifest", str(output))
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def utc_now() -> str:
    """The current time, UTC, ISO 8601 to the second: ``2026-11-30T12:00:00Z``."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def require_created(created: str | None) -> None:
    """InputError (naming ``--created``) unless ``created`` is None or a UTC time
    ``YYYY-MM-DDTHH:MM:SSZ``."""
    if created is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", created):
        raise InputError("--created", f"'{created}' is not a UTC time such as "
                         "2026-11-30T12:00:00Z", "write YYYY-MM-DDTHH:MM:SSZ, or leave it out "
                         "for now")


def resolve_commit(given: str | None, option: str) -> str | None:
    """The commit to record: ``given`` (``none`` records none, on purpose), else
    :func:`current_commit`; InputError when there is none to find — provenance is never left
    empty silently."""
    if given is not None:
        return None if given == "none" else given
    found = current_commit()
    if found is None:
        raise InputError(option, "no source commit found: not in a git repository, or before "
                         "its first commit, and GITHUB_SHA is unset",
                         f"run it where the run was made, pass {option} SHA, or record none "
                         f"on purpose with {option} none")
    return found


def current_commit() -> str | None:
    """``GITHUB_SHA`` when set, else ``git rev-parse HEAD`` in the current folder, else None."""
    if os.environ.get("GITHUB_SHA"):
        return os.environ["GITHUB_SHA"]
    import subprocess

    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def differences(snapshot: Snapshot, manifest: RunManifest, role: str) -> list[str]:
    """How the snapshot ``manifest``'s run was made on differs from ``snapshot``, one sentence
    per changed component field, worded for a reviewer; empty when the run is comparable. With
    chunk judgments, a run whose own chunking is not the judged one is not comparable either."""
    if manifest.fingerprint == snapshot.fingerprint:
        return [f"{role} {manifest.run}: chunking: {_change(key, judged, own)} — {_ONE_CHUNKING}"
                for key, judged, own in _other_chunking(snapshot, manifest)]
    then, now = manifest.components, snapshot.identity
    subject = "it" if role == "run" else f"the {role}"
    rerun = (f"re-run {subject} on the new snapshot and approve it" if role == "baseline"
             else f"re-run {subject} on the current snapshot")
    rescore = (f"rewrite {'its' if role == 'run' else f'the {role}’s'} manifest with gate "
               "run-manifest" + (" and approve it" if role == "baseline" else ""))
    found = []
    for component, key in _changed_fields(snapshot, manifest):
        before, after = then.get(component, {}), now.get(component, {})
        advice = (rescore if component == "scoring" or (
                      component == "chunking" and _of_judged_chunking(snapshot, manifest))
                  else _ONE_CHUNKING if component == "chunking" and snapshot.unit == "chunk"
                  else rerun)
        found.append(f"{role} {manifest.run}: {component}: {_change(key, before, after)}"
                     f" — {advice}")
    if not found:
        found.append(f"{role} {manifest.run}: made on snapshot {manifest.fingerprint}, the "
                     f"snapshot is {snapshot.fingerprint} — {rerun}")
    return found


_COMPARED = (*COMPONENTS, "stages", "scoring")  # what a run's manifest is compared on


def _changed_fields(snapshot: Snapshot, manifest: RunManifest) -> list[tuple[str, str]]:
    """The (component, field) pairs whose value in ``manifest`` differs from ``snapshot``'s,
    components in :data:`_COMPARED` order, fields sorted."""
    then, now = manifest.components, snapshot.identity
    return [(component, key) for component in _COMPARED
            for before, after in [(then.get(component, {}), now.get(component, {}))]
            for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]


_ONE_CHUNKING = ("chunk judgments compare runs of the judged chunking only: to compare "
                 "chunkings, turn them into spans (gate qrels to-spans) or judge documents")
# how a run's own chunking is told from the judged one, and that row of the table
_OWN_CHUNKING = {"version": "run's chunking version", "sha256": "run's chunk table sha256"}


def _require_declared_chunking(snapshot: Snapshot, manifest: RunManifest, role: str) -> None:
    """InputError (exit 2) when the snapshot judges chunks and the run's manifest does not say
    which chunking the run was made with — a version, or a chunk table whose hash can be
    compared with the pinned one: a re-chunked run would otherwise pass for the judged
    chunking and its new chunk ids score as unjudged. A snapshot without a unit (from before
    units) takes its runs to be of its chunking. A run of per-query scores only ranks no chunk,
    so it has no chunking to declare."""
    if snapshot.document["chunking"].get("unit") != "chunk" or not manifest.ranked:
        return
    judged, own = snapshot.document["chunking"], manifest.chunking or {}
    if _declares_chunking(snapshot, manifest):
        return
    said = ("records no chunking" if not own else "records a chunk table but no chunking "
            "version, and the snapshot pins no chunk table to compare it with")
    raise InputError(manifest.source, f"the {role}'s manifest {said}; the snapshot judges "
                     f"chunks of chunking '{judged.get('version')}', and only runs of that "
                     "chunking are comparable", "rewrite it with gate run-manifest "
                     "--chunking-version V (the chunking the run was made with) or --chunks "
                     "FILE (its chunk table)", json_path("chunking"))


def _declares_chunking(snapshot: Snapshot, manifest: RunManifest) -> bool:
    """Whether the run's manifest says which chunking it was made with in a way that can be
    told from the snapshot's: a version, or a chunk table when the snapshot pins one."""
    judged, own = snapshot.document["chunking"], manifest.chunking or {}
    return "version" in own or ("sha256" in own and "sha256" in judged)


def _of_judged_chunking(snapshot: Snapshot, manifest: RunManifest) -> bool:
    """Whether the run says it was made with the chunking the snapshot judges now."""
    return _declares_chunking(snapshot, manifest) and not _other_chunking(snapshot, manifest)


def _other_chunking(snapshot: Snapshot, manifest: RunManifest
                    ) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """With chunk judgments, how the run's own chunking differs from the judged one: (field,
    judged chunking, run's chunking) for its version and its chunk table's hash, each compared
    when both sides state it; empty when they agree, or the unit is not chunk."""
    if snapshot.unit != "chunk" or manifest.chunking is None:
        return []
    judged, own = snapshot.document["chunking"], manifest.chunking
    return [(key, judged, own) for key in _OWN_CHUNKING
            if key in judged and key in own and judged[key] != own[key]]


def _change(key: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """``version v3 → v4`` (values as :func:`_value` shows them)."""
    return f"{key} {_value(key, before)} → {_value(key, after)}"


def comparability(snapshot: Snapshot, baseline: RunManifest, candidate: RunManifest
                  ) -> list[str]:
    """Every difference between ``snapshot`` and what the baseline and the candidate were made
    on (see :func:`differences`); an empty list means the two runs are comparable."""
    return differences(snapshot, baseline, "baseline") + differences(snapshot, candidate,
                                                                     "candidate")


_CELL = 64  # characters of a value shown in the not-comparable table


def require_made_on(snapshot: Snapshot, *runs: tuple[RunManifest, str]) -> None:
    """NotComparableError (exit 3) unless every ``(manifest, role)`` names ``snapshot``'s
    fingerprint and, with chunk judgments, was made with the judged chunking: one table — a
    row per changed field with each run's value and the snapshot's — and one line of advice
    per run, fitted to what changed. With chunk judgments, a manifest made on this snapshot
    that does not say which chunking its run was made with is InputError (exit 2) first."""
    for manifest, role in runs:
        if manifest.fingerprint == snapshot.fingerprint:
            _require_declared_chunking(snapshot, manifest, role)
    named = [(m, role) for m, role in runs if differences(snapshot, m, role)]
    if not named:
        return
    table = _difference_table(snapshot, named)
    advice = [f"{role}: {_advice(snapshot, manifest, role)}" for manifest, role in named]
    made = ("made with the chunking that" if all(m.fingerprint == snapshot.fingerprint
                                                 for m, _ in named) else "made on")
    raise NotComparableError(
        "not comparable: " + " and ".join(f"the {role} {m.run}" for m, role in named)
        + f" {'was' if len(named) == 1 else 'were'} not {made} snapshot {snapshot.name} "
        + ("judges " if made != "made on" else "")
        + f"({snapshot.fingerprint[:19]}…)", *table, *(f"what to do — {a}" for a in advice))


def _difference_table(snapshot: Snapshot, named: Sequence[tuple[RunManifest, str]]
                      ) -> list[str]:
    """The table of a comparability error: a row per changed field (and per field of the
    judged chunking a run's own chunking differs in), a column per run and the snapshot's,
    each cell on one line, at most :data:`_CELL` characters."""
    fields: dict[tuple[str, str], None] = {}
    own: dict[str, None] = {}
    for manifest, _ in named:
        fields.update(dict.fromkeys(_changed_fields(snapshot, manifest)))
        own.update(dict.fromkeys(key for key, _, _ in _other_chunking(snapshot, manifest)))
    header = ["changed", *(role for _, role in named), "snapshot"]
    rows = [[f"{component} {key}", *(_value(key, m.components.get(component, {}))
                                     for m, _ in named),
             _value(key, snapshot.identity.get(component, {}))]
            for component, key in fields]
    rows += [[_OWN_CHUNKING[key], *(_value(key, m.chunking or {}) for m, _ in named),
              _value(key, snapshot.document["chunking"])] for key in own]
    rows = [[c if len(c) <= _CELL else c[:_CELL - 1] + "…" for c in row]
            for row in ([" ".join(c.split()) or "''" for c in row] for row in rows)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
            for r in [header, *rows]]


def _value(key: str, side: Mapping[str, Any]) -> str:
    """A component field's value for the table: hashes to 12 digits, 'none' when absent."""
    if key not in side:
        return "none"
    value = side[key]
    if key == "sha256":
        return str(value)[:12]
    if isinstance(value, dict) and "position" in value:  # a stage's contract
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items()) if k != "name")
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _advice(snapshot: Snapshot, manifest: RunManifest, role: str) -> str:
    """One line for one run, fitted to what changed: new judgments or queries → run it again
    on the new snapshot (and approve the baseline); only the scoring policy → rewrite the
    manifest; another chunking on chunk judgments → judge spans or documents."""
    if manifest.fingerprint == snapshot.fingerprint:
        return _ONE_CHUNKING
    if snapshot.unit == "chunk" and _only_changed(snapshot, manifest, {"chunking"}):
        return (_ONE_CHUNKING if not _of_judged_chunking(snapshot, manifest) else
                "its chunking is the judged one, and the snapshot's record of it changed: "
                "rewrite its manifest with gate run-manifest"
                + (" and approve it" if role == "baseline" else ""))
    if _only_changed(snapshot, manifest, {"scoring"}):
        return ("only the scoring policy changed: rewrite its manifest with gate run-manifest"
                + (" and approve it" if role == "baseline" else ""))
    what = sorted(_changed(snapshot, manifest))
    again = ("re-run the baseline system on the new snapshot and approve it"
             if role == "baseline" else "re-run it on the current snapshot")
    return f"{again} ({', '.join(what)} changed)"


def _changed(snapshot: Snapshot, manifest: RunManifest) -> list[str]:
    """The components whose identity the run was made on differs from the snapshot's."""
    return [c for c in _COMPARED
            if manifest.components.get(c, {}) != snapshot.identity.get(c, {})]


def _only_changed(snapshot: Snapshot, manifest: RunManifest, components: set[str]) -> bool:
    changed = set(_changed(snapshot, manifest))
    return bool(changed) and changed <= components
