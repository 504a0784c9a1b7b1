"""``gate validate`` as one library call: a snapshot and, optionally, runs checked against it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_gate.errors import InputError
from retrieval_gate.evidence import attach_chunks
from retrieval_gate.formats import Source, read_run
from retrieval_gate.formats.corpus import read_chunk_table
from retrieval_gate.formats.source import read_blob
from retrieval_gate.measures import Measure
from retrieval_gate.model import ChunkTable
from retrieval_gate.runmanifest import (
    RunManifest,
    chunking_record,
    load_checked_run,
    load_run_chunks,
    make_run_manifest,
    manifest_path,
    read_run_file,
    require_made_on,
    resolve_run,
    write_run_manifest,
)
from retrieval_gate.scoring import Scores, score_run
from retrieval_gate.snapshot import Snapshot, TestSet, load_snapshot, load_test_set
from retrieval_gate.untrusted import visible


@dataclass(frozen=True, eq=False)
class CheckedRun:
    """A run whose manifest names the snapshot and whose rankings score under its policy."""

    path: str
    manifest: RunManifest
    scores: Scores


@dataclass(frozen=True, eq=False)
class Validation:
    snapshot: Snapshot
    test_set: TestSet
    runs: tuple[CheckedRun, ...]


def check_run(snapshot: Snapshot, test_set: TestSet, run: str | os.PathLike[str],
              role: str = "run", manifest: str | os.PathLike[str] | None = None) -> CheckedRun:
    """Load ``run`` and its manifest (the run's hash checked on the bytes read), require that
    the manifest names ``snapshot`` (exit 3 with the differences), and score those bytes under
    the snapshot's policy (which checks the run's format, duplicates, and query coverage:
    missing and extra queries)."""
    run = resolve_run(run)
    loaded, blob = load_checked_run(run, manifest)
    require_made_on(snapshot, (loaded, role))
    return CheckedRun(loaded.run, loaded, score_on(snapshot, test_set, blob,
                                                   chunks=load_run_chunks(loaded)))


def score_on(snapshot: Snapshot, test_set: TestSet, run: Source,
             measures: Sequence[Measure] | None = None, chunks: ChunkTable | None = None
             ) -> Scores:
    """Score ``run`` (a path, or a run file already read) under the snapshot's policy, on its
    measures unless ``measures`` are given; its items are placed by ``chunks`` (the run's chunk
    table), else by the snapshot's pinned chunk table, if any. Reading and scoring it checks
    its format, duplicates, query coverage (missing and extra queries) and, with a pinned
    corpus, that every document it names is in it."""
    rows = read_run(run)
    table = chunks or test_set.chunks
    if table is not None:
        rows = attach_chunks(rows, table)
    return score_run(test_set.qrels, rows, measures or snapshot.measures, snapshot.policy,
                     test_set.queries, corpus=test_set.corpus,
                     min_coverage=snapshot.min_coverage)


def record_run(snapshot: str | os.PathLike[str], run: str | os.PathLike[str],
               system: Mapping[str, Any] | None = None, commit: str | None = None,
               created: str | None = None, output: str | os.PathLike[str] | None = None,
               chunks: str | os.PathLike[str] | None = None, chunking_version: str | None = None,
               chunking_params: Mapping[str, Any] | None = None) -> tuple[Path, Snapshot]:
    """Check ``run`` against ``snapshot`` (hashes, test set, scoring) and write its manifest to
    ``output`` (default: beside the run), pinning the bytes that were scored — the run's, and
    those of its chunk table ``chunks`` (with the chunking's optional version and parameters);
    returns where it went and the snapshot."""
    if chunks is None and (chunking_version is not None or chunking_params):
        raise InputError("--chunking-version", "describes a chunk table, and none is given",
                         "pass the run's chunk table with --chunks FILE")
    loaded = load_snapshot(snapshot)
    test_set = load_test_set(loaded)
    blob = read_run_file(run)
    table_blob = None if chunks is None else read_blob(chunks)
    table = None if table_blob is None else read_chunk_table(table_blob)
    score_on(loaded, test_set, blob, chunks=table)
    target = Path(output) if output else manifest_path(run)
    chunking = None if table_blob is None or chunks is None else chunking_record(
        table_blob, chunks, target, chunking_version, chunking_params)
    document = make_run_manifest(loaded, blob, system, commit, created, chunking)
    write_run_manifest(document, target)
    return target, loaded


def validate(snapshot: str | os.PathLike[str], runs: Sequence[str | os.PathLike[str]] = (),
             run_manifest: str | os.PathLike[str] | None = None) -> Validation:
    """Check a snapshot (schema, paths, file hashes, queries against qrels) and each run
    against it. ``run_manifest`` names the manifest of the single run given, when it does not
    lie beside it. Raises the first problem found (exit 2 invalid, 3 not what it claims)."""
    if run_manifest is not None and len(runs) != 1:
        raise InputError("--run-manifest", "applies to exactly one RUN",
                         "give one run with its manifest, or put each manifest beside its run")
    loaded = load_snapshot(snapshot)
    test_set = load_test_set(loaded)
    checked = tuple(check_run(loaded, test_set, run, "run", run_manifest) for run in runs)
    return Validation(loaded, test_set, checked)


def validation_text(result: Validation) -> str:
    """One line for the snapshot, then one per run."""
    snap, tests = result.snapshot, result.test_set
    judgments = sum(len(j) for j in tests.qrels.judgments.values())
    head = (f"{visible(snap.source)}: valid — snapshot '{visible(snap.name)}', fingerprint "
            f"{snap.fingerprint}; "
            f"{len(tests.queries)} queries ({len(tests.answerable)} answerable, "
            f"{len(tests.unanswerable)} unanswerable), {judgments} judgments (unit {snap.unit}); "
            "every pinned "
            "file matches its hash")
    lines = [head, *(f"warning: {visible(w)}" for w in tests.warnings)]
    for run in result.runs:
        system = ", ".join(f"{visible(k)}={visible(str(v))}"
                           for k, v in run.manifest.system.items()) or "no system"
        lines.append(f"{visible(run.path)}: valid — made on this snapshot ({system}); "
                     f"{len(run.scores.query_ids)} queries scored")
        lines += [f"warning: {visible(w)}" for w in run.scores.warnings]
    return "\n".join(lines) + "\n"
