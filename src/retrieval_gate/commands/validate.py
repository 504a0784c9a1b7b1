"""``gate validate`` as one library call: a snapshot and, optionally, runs checked against it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.model import ChunkTable
from retrieval_gate.core.stages import StageContract
from retrieval_gate.core.untrusted import visible
from retrieval_gate.formats import Source
from retrieval_gate.formats.corpus import read_chunk_table
from retrieval_gate.formats.source import Blob, read_blob
from retrieval_gate.gating.pipeline import match_stages, score_stages, stage_sources, unranked
from retrieval_gate.inputs.answer_scores import QueryScores, load_run_scores
from retrieval_gate.inputs.run_manifest import (
    RunManifest,
    chunking_record,
    failed_queries,
    load_run_chunks,
    make_run_manifest,
    manifest_path,
    read_run_file,
    read_run_manifest,
    require_made_on,
    resolve_run,
    stage_record,
    verify_run_hash,
    write_run_manifest,
)
from retrieval_gate.inputs.snapshot import Snapshot, TestSet, load_snapshot, load_test_set
from retrieval_gate.scoring.scores import Scores


@dataclass(frozen=True, eq=False)
class CheckedRun:
    """A run whose manifest names the snapshot and whose rankings score under its policy,
    with its per-query scores when its manifest pins a score file."""

    path: str
    manifest: RunManifest
    scores: Scores
    answer_scores: QueryScores | None = None


@dataclass(frozen=True, eq=False)
class Validation:
    snapshot: Snapshot
    test_set: TestSet
    runs: tuple[CheckedRun, ...]


def check_run(snapshot: Snapshot, test_set: TestSet, run: str | os.PathLike[str],
              role: str = "run", manifest: str | os.PathLike[str] | None = None) -> CheckedRun:
    """Load ``run`` and its manifest (each ranking's hash — every stage of a pipeline run —
    checked on the bytes read), require that the manifest names ``snapshot`` (exit 3 with the
    differences), and score those bytes under the snapshot's policy (which checks the run's
    format, duplicates, query coverage — missing and extra queries — and the snapshot's
    pipeline contract), and its score file when it pins one (hash, every query scored)."""
    run = resolve_run(run)
    loaded = read_run_manifest(run, manifest)
    require_made_on(snapshot, (loaded, role))
    failed_queries(snapshot, loaded, role)  # refused under missing: error
    rows = (*test_set.answerable, *test_set.unanswerable)
    if not loaded.ranked:
        return CheckedRun(loaded.run, loaded, unranked(snapshot, test_set).scores,
                          load_run_scores(loaded, test_set, rows))
    rankings = []
    for contract, file, pinned in stage_sources(snapshot, loaded, run):
        blob = read_run_file(file)
        verify_run_hash(loaded, blob.sha256, pinned, None if contract is None else contract.name)
        rankings.append((contract, blob))
    if loaded.stages and not snapshot.stages:  # the other stages are not read: check them
        for name, file, pinned in loaded.stage_files()[:-1]:
            verify_run_hash(loaded, read_run_file(file).sha256, pinned, name)
    scored = score_stages(snapshot, test_set, rankings, chunks=load_run_chunks(loaded))
    answers = load_run_scores(loaded, test_set, rows)
    return CheckedRun(loaded.run, loaded, scored.scores, answers)


MAX_JUDGE = 500  # characters of a judge value (the run-manifest schema's limit)


def record_run(snapshot: str | os.PathLike[str], run: str | os.PathLike[str] | None,
               system: Mapping[str, Any] | None = None, commit: str | None = None,
               created: str | None = None, output: str | os.PathLike[str] | None = None,
               chunks: str | os.PathLike[str] | None = None, chunking_version: str | None = None,
               chunking_params: Mapping[str, Any] | None = None,
               stages: Sequence[tuple[str, str | os.PathLike[str]]] = (),
               timed_on: str | None = None, scores: str | os.PathLike[str] | None = None,
               scores_format: str | None = None, judge: Mapping[str, str] | None = None
               ) -> tuple[Path, Snapshot]:
    """Check ``run`` against ``snapshot`` (hashes, test set, scoring) and write its manifest to
    ``output`` (default: beside the run), pinning the bytes that were scored — the run's, and
    those of its chunk table ``chunks`` (with the chunking's optional version and parameters);
    returns where it went and the snapshot. A pipeline run gives ``stages`` instead, (name,
    file) in pipeline order: the last one is the run; with a contract in the snapshot, each of
    its stages must be among them. ``timed_on`` says where the run's latencies were measured.
    ``scores`` is the run's per-query score file (in ``scores_format``; None: native JSON Lines
    or CSV), checked against the snapshot's queries and pinned with ``judge``, who scored."""
    _require_scores_options(scores, scores_format, judge)
    if chunks is None and chunking_version is None and chunking_params:
        raise InputError("--chunking-param", "describes a chunking, and none is named",
                         "name it with --chunking-version V, or give its chunk table with "
                         "--chunks FILE")
    if stages:
        run = _pipeline_run(run, stages)
    if run is None and scores is not None:
        return _record_scores_only(snapshot, scores, scores_format, judge, system, commit,
                                   created, output, chunks or chunking_version or timed_on)
    if run is None:
        raise InputError("--run", "no run is given", "give the run with --run FILE, or a "
                         "pipeline's stages with --stage NAME=FILE (or, for per-query scores "
                         "only, --scores FILE)")
    loaded = load_snapshot(snapshot)
    test_set = load_test_set(loaded)
    document, target = run_manifest_document(
        loaded, test_set, run, system, commit, created, output, chunks, chunking_version,
        chunking_params, stages, timed_on)
    if scores is not None:
        document["scores"] = _scores(scores, scores_format, judge, test_set, target)
    write_run_manifest(document, target)
    return target, loaded


def require_chunking_named(snapshot: Snapshot, chunks: object, chunking_version: str | None
                           ) -> None:
    """InputError (exit 2) when the snapshot judges chunks and the run's manifest could not say
    which chunking the run was made with: neither ``chunking_version`` nor a chunk table
    ``chunks`` whose hash can be compared with a pinned one."""
    judged = snapshot.document["chunking"]
    if judged.get("unit") == "chunk" and chunking_version is None and (
            chunks is None or "sha256" not in judged):
        said = ("a run's manifest must say which chunking the run was made with" if chunks is None
                else "it pins no chunk table to compare the run's with")
        raise InputError("--chunking-version", "is needed: the snapshot judges chunks of "
                         f"chunking '{judged.get('version')}', and {said}", "pass "
                         "--chunking-version (the run's chunking)" + (
                             " or --chunks FILE (its chunk table)" if chunks is None else ""))


def _require_scores_options(scores: str | os.PathLike[str] | None, scores_format: str | None,
                            judge: Mapping[str, str] | None) -> None:
    """InputError for ``--judge`` or ``--scores-format`` without a score file, or a judge's
    value longer than :data:`MAX_JUDGE` characters."""
    if judge and scores is None:
        raise InputError("--judge", "says who scored, and no score file is given",
                         "give the scores with --scores FILE, or leave out --judge")
    for key, value in (judge or {}).items():
        if not isinstance(value, str) or len(value) > MAX_JUDGE:
            raise InputError("--judge", f"{key}'s value is {len(str(value))} characters long, "
                             f"more than {MAX_JUDGE}", f"record a shorter name, or its hash "
                             f"(--judge {key}=sha256:...)")
    if scores_format is not None and scores is None:
        raise InputError("--scores-format", "names the format of a score file, and none is "
                         "given", "give the scores with --scores FILE")


def _pipeline_run(run: str | os.PathLike[str] | None,
                  stages: Sequence[tuple[str, str | os.PathLike[str]]]) -> str | os.PathLike[str]:
    """A pipeline run's run file: its last stage's (``run``, when given, must be it);
    InputError for a stage given twice."""
    names = [name for name, _ in stages]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError("--stage", f"stage '{twice[0]}' is given twice",
                         "give each stage once, in pipeline order")
    if run is not None and Path(run).resolve() != Path(stages[-1][1]).resolve():
        raise InputError("--run", "a pipeline run is its last stage", "leave out --run, "
                         "or give the run as the last --stage")
    return stages[-1][1]


def run_manifest_document(
        loaded: Snapshot, test_set: TestSet, run: str | os.PathLike[str],
        system: Mapping[str, Any] | None = None, commit: str | None = None,
        created: str | None = None, output: str | os.PathLike[str] | None = None,
        chunks: str | os.PathLike[str] | None = None, chunking_version: str | None = None,
        chunking_params: Mapping[str, Any] | None = None,
        stages: Sequence[tuple[str, str | os.PathLike[str]]] = (),
        timed_on: str | None = None,
        read: Callable[[str | os.PathLike[str]], Blob] = read_run_file,
        chunk_table: tuple[Blob, ChunkTable] | None = None) -> tuple[dict[str, Any], Path]:
    """The manifest document of ``run`` (a pipeline run: ``stages``, the last one being
    ``run``) made on the snapshot ``loaded`` (its ``test_set``), checked as :func:`record_run`
    checks it, and where it goes (``output``, default beside the run); not written. ``read`` gives
    each run file's bytes (default: read from the disk): ``gate run`` passes the bytes it is
    about to write, so that the run files and the manifest are written together — and
    ``chunk_table``, the bytes of ``chunks`` it checked the hits against, read, so that the
    manifest pins those."""
    require_chunking_named(loaded, chunks, chunking_version)
    blobs = {name: read(file) for name, file in stages}
    blob = blobs[stages[-1][0]] if stages else read(run)
    if chunk_table is None and chunks is not None:
        read_table = read_blob(chunks)
        chunk_table = read_table, read_chunk_table(read_table)
    table_blob = None if chunk_table is None else chunk_table[0]
    table = None if chunk_table is None else chunk_table[1]
    if loaded.stages:
        matched = match_stages(loaded, list(blobs), "--stage")
        rankings: list[tuple[StageContract | None, Source]] = [
            (contract, blobs[name]) for contract, name in matched]
    else:
        rankings = [(None, blob)]
    recorded = dict(score_stages(loaded, test_set, rankings, chunks=table).recorded)
    target = Path(output) if output else manifest_path(run)
    chunking = (None if chunks is None and chunking_version is None else chunking_record(
        table_blob, chunks, target, chunking_version, chunking_params))
    records = [stage_record(name, blobs[name], file, target, recorded.get(name))
               for name, file in stages]
    last = recorded.get(None, recorded.get(stages[-1][0]) if stages else None)
    document = make_run_manifest(loaded, blob, system, commit, created, chunking, records,
                                 timed_on, last)
    return document, target


def _record_scores_only(snapshot: str | os.PathLike[str], scores: str | os.PathLike[str],
                        format: str | None, judge: Mapping[str, str] | None,
                        system: Mapping[str, Any] | None, commit: str | None,
                        created: str | None, output: str | os.PathLike[str] | None,
                        ranking_option: object) -> tuple[Path, Snapshot]:
    """The manifest of a run of per-query scores only (no ranking), beside its score file:
    for teams that gate answers without rankings. Chunking and latency describe a ranking:
    refused here."""
    if ranking_option:
        raise InputError("--scores", "without --run is a run of scores only, and --chunks, "
                         "--chunking-version and --timed-on describe a ranking",
                         "give the ranking with --run FILE, or leave those options out")
    loaded = load_snapshot(snapshot)
    test_set = load_test_set(loaded)
    target = Path(output) if output else manifest_path(scores)
    if target.resolve() != manifest_path(Path(scores).resolve()):
        raise InputError("--output", "a manifest of scores only lies beside its score file, "
                         "named after it (where gate check finds it)",
                         f"leave out --output (it goes to {manifest_path(scores)})")
    record = _scores(scores, format, judge, test_set, target)  # the file's faults first
    document = make_run_manifest(loaded, None, system, commit, created)
    document["scores"] = record
    write_run_manifest(document, target)
    return target, loaded


def _scores(scores: str | os.PathLike[str], format: str | None, judge: Mapping[str, str] | None,
            test_set: TestSet, target: Path) -> dict[str, Any]:
    """The ``scores`` record of a run manifest: the score file read once, checked against
    the snapshot's queries (every query scored, every row a query of it), and pinned."""
    from retrieval_gate.formats.scores import FORMATS, detect_format
    from retrieval_gate.inputs.answer_scores import load_query_scores
    from retrieval_gate.inputs.run_manifest import scores_record

    blob = read_blob(scores)
    fmt = format if format is not None else detect_format(blob)
    if fmt not in FORMATS:
        raise InputError("--scores-format", f"unknown score format '{fmt}'",
                         f"use one of {', '.join(FORMATS)}")
    ids = (*test_set.answerable, *test_set.unanswerable)
    loaded = load_query_scores(blob, fmt, test_set.queries, ids, dict(judge or {}),
                               len(test_set.unanswerable))
    return scores_record(blob, scores, target, fmt, loaded.tool, loaded.names, judge)


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
