"""Snapshot manifests: the frozen test set every run is scored against.

A snapshot pins the query set and the judgments (path, SHA-256, version), the corpus and the
permissions (version, optionally a file and its SHA-256), the chunking (version, parameters) and
the scoring policy (measures, threshold, nDCG gain and the policies of
:class:`~retrieval_gate.scoring.rules.ScoringPolicy`). Paths are relative to the manifest's folder and
may not leave it.

The **identity** of a snapshot is everything that decides what a score means: for each file
component its version and SHA-256 (never its path), the corpus and permissions versions and
hashes, the chunking version and parameters, and the scoring policy with every default filled in
and the measures as a sorted list of canonical names (``MRR@10`` and ``RR@10`` are one measure).
The **fingerprint** is ``sha256:`` + the SHA-256 of the identity's canonical JSON (keys sorted, no
white space, UTF-8). Renaming the snapshot, rewording its description, moving its files or
reordering its keys or measures leave the fingerprint unchanged; any change of content does not.

The files the gate parses (the query set, the judgments, the corpus and a pinned chunk table)
are read once: their pinned SHA-256 is checked on the bytes read, and those same bytes are
parsed, so a file replaced between the check and the parse cannot pass for the pinned one.

The **evidence unit** (``chunking.unit``) says what a judgment is about: a ``document``, a
``span`` of a document's text, or a ``chunk`` of one chunking (the default, and what a snapshot
without ``unit`` means). With document or span judgments the chunking belongs to each run, so
the snapshot's identity holds no chunking but the unit; with chunk judgments it holds the
chunking's version, parameters and (when pinned) the chunk table's hash.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from retrieval_gate.core.errors import InputError, ManyErrors, NotComparableError
from retrieval_gate.core.exported import exported
from retrieval_gate.core.model import AccessTable, ChunkTable, Corpus, Qrels, Query
from retrieval_gate.core.ranking import IdIndex
from retrieval_gate.core.stages import StageContract, contracts_of
from retrieval_gate.formats import read_qrels, read_queries, schema
from retrieval_gate.formats.atomic import leftovers, write_text_atomic
from retrieval_gate.formats.jsonfmt import loads
from retrieval_gate.formats.jsonfmt import path as json_path
from retrieval_gate.formats.source import Blob, display_name, is_regular_file, read_blob
from retrieval_gate.scoring.evidence import spans_in_corpus
from retrieval_gate.scoring.measures import (
    EXPONENTIAL,
    Measure,
    default_measures,
    parse_measure,
    parse_measures,
)
from retrieval_gate.scoring.rules import POLICY_NAMES, ScoringPolicy
from retrieval_gate.scoring.scores import query_set
from retrieval_gate.scoring.units import UnitChoice, choose_unit, judged_ids, judged_outside

COMPONENTS = ("queries", "qrels", "corpus", "chunking", "permissions")
FILE_COMPONENTS = ("queries", "qrels", "corpus", "chunking", "permissions")
PARSED_COMPONENTS = ("queries", "qrels", "corpus", "chunking", "permissions")  # read once
UNITS = ("document", "span", "chunk")
DEFAULT_CUTOFF = 10
_DEFAULT_POLICY = ScoringPolicy()
_POLICY_FIELDS = ("threshold", *POLICY_NAMES)


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Lower-case hex SHA-256 of the file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError:
        raise InputError(display_name(path), "file not found", "check the path") from None
    except OSError as exc:
        raise InputError(display_name(path), f"cannot be read ({exc.strerror})",
                         "check the file") from None
    return digest.hexdigest()


def canonical_json(value: Any) -> bytes:
    """Keys sorted, no white space, UTF-8: the bytes a fingerprint is computed over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def fingerprint(identity: Mapping[str, Any]) -> str:
    """``sha256:`` + the SHA-256 of the identity's canonical JSON."""
    return "sha256:" + hashlib.sha256(canonical_json(identity)).hexdigest()


@dataclass(frozen=True, eq=False)
class Snapshot:
    """A loaded, schema-valid snapshot manifest with its scoring policy resolved; ``blobs``
    holds the query set and judgments as read when their hashes were checked."""

    source: str
    folder: Path
    name: str
    document: dict[str, Any]
    measures: tuple[Measure, ...]
    policy: ScoringPolicy
    gain: str
    stages: tuple[StageContract, ...]
    identity: dict[str, Any]
    fingerprint: str
    blobs: dict[str, Blob] = field(default_factory=dict)
    unit_choice: UnitChoice | None = None  # how :func:`freeze` chose the unit (else None)
    warnings: tuple[str, ...] = ()  # what :func:`freeze`'s check of the test set warned of

    def file(self, component: str) -> Path | None:
        """The component's file, resolved against the manifest's folder (None if it has none)."""
        relative = self.document[component].get("path")
        return None if relative is None else self.folder / relative

    def _source(self, component: str) -> Blob | Path:
        """The bytes whose hash was checked, else (files not verified) the file."""
        blob = self.blobs.get(component)
        if blob is not None:
            return blob
        file = self.file(component)
        assert file is not None  # the schema requires a path for queries and qrels
        return file

    @property
    def unit(self) -> str:
        """The evidence unit: ``document``, ``span`` or ``chunk`` (the default)."""
        return str(self.document["chunking"].get("unit", "chunk"))

    def gated(self, name: str) -> Measure:
        """The retrieval measure a gate's ``name`` means on this snapshot: parsed with its
        default gain, on the last stage of a pipeline when it names none (InputError when it
        does not parse; whether it is one of :attr:`measures` is the caller's to ask)."""
        measure = parse_measure(name, self.gain)
        return measure.at_stage(self.stages[-1].name) if self.stages and measure.stage is None \
            else measure

    @property
    def min_coverage(self) -> float:
        """The share of a judged span the items must cover (span judgments; default 1)."""
        return float(self.document.get("scoring", {}).get("min_coverage", 1.0))

    def read_queries(self) -> tuple[Query, ...]:
        return read_queries(self._source("queries"))

    def read_qrels(self) -> Qrels:
        return read_qrels(self._source("qrels"))

    def read_corpus(self) -> Corpus | None:
        """The pinned corpus, or None when the snapshot pins only its version — or states no
        unit: such a snapshot (from before units) pins its corpus file by hash only, in any
        format, and its runs are not checked against it."""
        if self.file("corpus") is None or "unit" not in self.document["chunking"]:
            return None
        from retrieval_gate.formats.corpus import read_corpus

        return read_corpus(self._source("corpus"))

    def read_access(self) -> AccessTable | None:
        """The access data: the pinned permissions file merged over the fields of a JSON Lines
        corpus that has some (per document and per field, the permissions file's line winning
        where it has the field), else either alone; None when neither (every document public
        and in force). A snapshot without a unit (from before access data) only hashes its
        permissions file."""
        if "unit" not in self.document["chunking"] or (self.file("corpus") is None
                                                       and self.file("permissions") is None):
            return None
        from retrieval_gate.formats.permissions import read_access, read_corpus_access

        corpus = None if self.file("corpus") is None else self._source("corpus")
        if self.file("permissions") is not None:
            return read_access(self._source("permissions"), corpus)
        return None if corpus is None else read_corpus_access(corpus)

    def read_chunks(self) -> ChunkTable | None:
        """The pinned chunk table of chunk judgments, or None."""
        if self.file("chunking") is None:
            return None
        from retrieval_gate.formats.corpus import read_chunk_table

        return read_chunk_table(self._source("chunking"))


@exported
def load_snapshot(path: str | os.PathLike[str], verify_files: bool = True) -> Snapshot:
    """Read, schema-validate and resolve a snapshot manifest; with ``verify_files``, also check
    that every pinned file exists and has its pinned SHA-256.

    Raises InputError / ManyErrors (exit 2) for a malformed manifest (all schema errors at once),
    an absolute path or one leaving the manifest's folder, an unknown measure, a missing file;
    NotComparableError / ManyErrors (exit 3) when a file's hash differs from the manifest's.
    """
    manifest = read_blob(path)
    snapshot = _resolve(loads(manifest.text(), manifest.name), manifest.name)
    if verify_files:
        return _verified(snapshot)
    return snapshot


def _resolve(document: Any, source: str, blobs: dict[str, Blob] | None = None) -> Snapshot:
    """The snapshot a manifest ``document`` stored at ``source`` describes: schema-valid, paths
    inside its folder, measures parsed, every scoring default filled in (files not read;
    ``blobs``, the files already read, are kept)."""
    found = schema.problems(document, "snapshot", source) + _path_problems(document, source)
    if found:
        raise ManyErrors(found)
    scoring = document.get("scoring", {})
    gain = scoring.get("gain", EXPONENTIAL)
    stages = contracts_of(document.get("stages", ()), source)
    if "measures" in scoring:
        measures = _parse_listed(scoring["measures"], gain, source)
    else:
        measures = default_measures(DEFAULT_CUTOFF)
    measures = _staged(measures, stages, source)
    policy = ScoringPolicy(**{f: scoring[f] for f in _POLICY_FIELDS if f in scoring},
                           origin="snapshot")
    identity = _identity(document, measures, policy, gain, stages)
    return Snapshot(source, Path(source).parent, document["name"], document, measures, policy,
                    gain, stages, identity, fingerprint(identity), dict(blobs or {}))


def _staged(measures: Sequence[Measure], stages: Sequence[StageContract], source: str
            ) -> tuple[Measure, ...]:
    """With a pipeline, each measure reads a stage of it: the one it names, else the last;
    its cutoff may not pass the stage's. Without one, no measure may name a stage."""
    by_name = {s.name: s for s in stages}
    out = []
    for i, measure in enumerate(measures):
        where = json_path("scoring", "measures", i)
        if not stages:
            if measure.stage is not None:
                raise InputError(source, f"measure {measure} names a stage, and the snapshot "
                                 "has no pipeline stages", "list the stages in \"stages\" "
                                 "(gate snapshot freeze --stage), or drop the [stage]", where)
            out.append(measure)
            continue
        stage = by_name.get(measure.stage or stages[-1].name)
        if stage is None:
            raise InputError(source, f"measure {measure} reads stage '{measure.stage}', which "
                             f"is not a stage of the snapshot ({', '.join(by_name)})",
                             "name one of the snapshot's stages", where)
        if stage.cutoff is not None and measure.k is not None and measure.k > stage.cutoff:
            raise InputError(source, f"measure {measure} reads {measure.k} items of stage "
                             f"'{stage.name}', which passes on {stage.cutoff}", "lower the "
                             "measure's cutoff, or raise the stage's", where)
        out.append(measure.at_stage(stage.name))
    if len(set(out)) != len(out):
        twice = sorted({str(m) for m in out if out.count(m) > 1})
        raise InputError(source, f"measure {twice[0]} is listed twice (a measure without a "
                         "stage reads the last one)", "list each measure once",
                         json_path("scoring", "measures"))
    return tuple(out)


def _parse_listed(names: Sequence[str], gain: str, source: str) -> tuple[Measure, ...]:
    measures: list[Measure] = []
    for i, name in enumerate(names):
        try:
            measures.extend(parse_measures([name], gain))
        except InputError as exc:
            raise InputError(source, f"measure '{name}': {exc.problem}", exc.fix,
                             json_path("scoring", "measures", i)) from None
    duplicates = {str(m) for m in measures if measures.count(m) > 1}
    if duplicates:
        raise InputError(source, f"measure {', '.join(sorted(duplicates))} is listed twice "
                         "(aliases count as the same measure)", "list each measure once",
                         json_path("scoring", "measures"))
    return tuple(measures)


def _identity(document: Mapping[str, Any], measures: Sequence[Measure], policy: ScoringPolicy,
              gain: str, stages: Sequence[StageContract]) -> dict[str, Any]:
    """What the fingerprint covers (see the module docstring)."""
    identity: dict[str, Any] = {}
    for component in FILE_COMPONENTS:
        entry = document[component]
        identity[component] = {k: entry[k] for k in ("version", "sha256") if k in entry}
    chunking = document["chunking"]
    identity["chunking"] = {key: chunking[key] for key in ("unit", "version", "sha256")
                            if key in chunking}
    if "version" in chunking:  # chunk judgments: the one chunking they name
        identity["chunking"]["params"] = chunking.get("params", {})
    identity["scoring"] = {**policy.as_dict(), "gain": gain,
                           "measures": sorted(str(m) for m in measures)}
    if chunking.get("unit") == "span":
        identity["scoring"]["min_coverage"] = document.get("scoring", {}).get("min_coverage", 1)
    if stages:  # keyed by name, so that a changed contract is named by its stage
        identity["stages"] = {s.name: {"position": i, **s.as_dict()}
                              for i, s in enumerate(stages)}
    return identity


def _path_problems(document: Any, source: str) -> list[InputError]:
    """Absolute paths, and paths that leave the manifest's folder (both exit 2)."""
    folder = Path(source).parent.resolve()
    errors = []
    for component in FILE_COMPONENTS:
        entry = document.get(component) if isinstance(document, dict) else None
        relative = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(relative, str) or not relative:
            continue
        where = json_path(component, "path")
        if PurePosixPath(relative).is_absolute() or "\\" in relative or ":" in relative:
            errors.append(InputError(source, f"{component} path '{relative}' is absolute or not "
                                     "a relative path with forward slashes",
                                     "write it relative to the manifest's folder, e.g. "
                                     "qrels.tsv or data/qrels.tsv", where))
        elif not (folder / relative).resolve().is_relative_to(folder):
            errors.append(InputError(source, f"{component} path '{relative}' leaves the "
                                     "manifest's folder", "move the file into the manifest's "
                                     "folder (or below it) so the snapshot is self-contained",
                                     where))
    return errors


def _verified(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` once every pinned file exists (exit 2) and has the pinned SHA-256 (exit 3),
    with the parsed components' bytes kept (:data:`PARSED_COMPONENTS`): they are what the hash
    was checked on."""
    mismatches = []
    blobs = {}
    for component in FILE_COMPONENTS:
        entry = snapshot.document[component]
        file = snapshot.file(component)
        if file is None:
            continue
        if not is_regular_file(file):
            raise InputError(snapshot.source, f"{component} file '{entry['path']}' does not "
                             "exist", "restore it, or correct the path",
                             json_path(component, "path"))
        if component in PARSED_COMPONENTS:
            blobs[component] = read_blob(file, map_from=1 << 24)  # a large corpus: mapped
            actual = blobs[component].sha256
        else:
            actual = sha256_file(file)
        if actual != entry["sha256"]:
            fix = _interrupted(snapshot, component, file, entry["sha256"], actual) or (
                f"the file changed after the snapshot was frozen: restore it, or freeze a new "
                f"snapshot with a new {component} version and re-approve the baseline")
            mismatches.append(NotComparableError(
                f"{snapshot.source}:{json_path(component, 'sha256')}: {component} file "
                f"'{entry['path']}' has sha256 {actual}, the snapshot pins {entry['sha256']} — "
                f"{fix}"))
    if mismatches:
        raise ManyErrors(mismatches)
    return _resolve(snapshot.document, snapshot.source, blobs)


def _interrupted(snapshot: Snapshot, component: str, file: Path, pinned: str, actual: str
                 ) -> str | None:
    """The fix when a write of the manifest together with this file (``gate pool merge
    --freeze``: the file renamed into place first, the manifest last) was killed between its
    renames: the new manifest, still staged beside this one, pins the file as it is now
    (rename it over the manifest to finish), and the file's former content, kept beside it, is
    what this manifest pins (rename it back to undo). None when neither is there."""
    steps = []
    for staged in leftovers(snapshot.source):
        try:
            document = json.loads(Path(staged).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(document, dict) and isinstance(document.get(component), dict) and \
                document[component].get("sha256") == actual:
            steps.append(f"to finish it, move {display_name(staged)} over {snapshot.source}")
            break
    for kept in leftovers(file):
        try:
            former = sha256_file(kept)
        except InputError:  # a leftover that cannot be read tells nothing
            continue
        if former == pinned:
            steps.append(f"to undo it, move {display_name(kept)} over {display_name(file)}")
            break
    return None if not steps else ("a write of the snapshot with its files was interrupted "
                                   "between its renames: " + "; or ".join(steps))


@dataclass(frozen=True)
class TestSet:
    """The snapshot's queries and judgments, checked against each other, the pinned corpus
    and chunk table, and the access data (None when not pinned); ``documents``, with chunk
    judgments and access data, each judged chunk's document (from the chunk table): access data
    name documents, and a judgment reaches them through its chunk's."""

    queries: tuple[Query, ...]
    qrels: Qrels
    answerable: tuple[str, ...]
    unanswerable: tuple[str, ...]
    warnings: tuple[str, ...]
    corpus: Corpus | None = None
    chunks: ChunkTable | None = None
    access: AccessTable | None = None
    documents: dict[str, str] | None = None


def load_test_set(snapshot: Snapshot) -> TestSet:
    """Read the query set and the judgments and check that they agree: every judged query is in
    the query set, unanswerable queries have no judgment at or above the threshold, answerable
    ones have at least one (or, under ``unlabeled: zero``, a warning names those without).
    The judgments must be of the snapshot's unit; span judgments need a corpus with text, and
    every span must lie inside its document."""
    queries, qrels = snapshot.read_queries(), snapshot.read_qrels()
    answerable, unanswerable, warnings = query_set(qrels, queries, snapshot.policy)
    spans = qrels.spans is not None
    if spans != (snapshot.unit == "span"):
        raise InputError(snapshot.source, f"the unit is {snapshot.unit}, but the judgments "
                         f"{qrels.source} judge {'spans' if spans else 'ids'}",
                         'set "unit": "span" for judgments with start and end, "document" or '
                         '"chunk" for judgments by id', json_path("chunking", "unit"))
    corpus = snapshot.read_corpus()
    chunks = snapshot.read_chunks()
    _judged_in_corpus(snapshot, qrels, corpus, chunks)
    if spans:
        if corpus is None:
            raise InputError(snapshot.source, "span judgments need the corpus their offsets "
                             "point into", "pin the corpus file (gate snapshot freeze "
                             "--corpus-file corpus.jsonl)", json_path("corpus"))
        spans_in_corpus(qrels.spans or {}, corpus, qrels.source)
    access = snapshot.read_access()
    documents = None
    if access is not None:
        from retrieval_gate.scoring.visibility import access_warnings

        documents = _judged_documents(snapshot, qrels, access, chunks)
        warnings.extend(access_warnings(access, queries, qrels, documents))
    return TestSet(queries, qrels, tuple(answerable), tuple(unanswerable), tuple(warnings),
                   corpus, chunks, access, documents)


def _judged_documents(snapshot: Snapshot, qrels: Qrels, access: AccessTable,
                      chunks: ChunkTable | None) -> dict[str, str] | None:
    """With chunk judgments, each judged chunk's document from the pinned chunk table (None
    for other units: their ids, or their spans, name documents). Access data name documents,
    so chunk judgments beside access data need the table: InputError (exit 2) without one —
    every chunk would otherwise count as public and in force, its asker's leaks unseen."""
    if snapshot.unit != "chunk" or not len(access.ids):
        return None
    if chunks is None:
        raise InputError(snapshot.source, "the snapshot holds access or time data, which "
                         "name documents, and its chunk judgments pin no chunk table to say "
                         "which document each chunk is of", "freeze it with the chunking's "
                         "chunk table (gate snapshot freeze --chunks FILE: id, doc_id, start, "
                         "end per chunk)", json_path("chunking"))
    ids = judged_ids(qrels)
    found = IdIndex(chunks.ids).find(ids)  # every judged id is in the table (checked above)
    return {chunk.decode(): document.decode()
            for chunk, document in zip(ids.tolist(), chunks.doc[found].tolist())}


def _judged_in_corpus(snapshot: Snapshot, qrels: Qrels, corpus: Corpus | None,
                      chunks: ChunkTable | None) -> None:
    """InputError (exit 2) unless every id judged is in what the snapshot pins: a document of
    the corpus (unit ``document``), a chunk of the chunk table (unit ``chunk`` with a table).
    Span judgments are checked against the corpus text elsewhere."""
    universe = (corpus if snapshot.unit == "document" else
                chunks if snapshot.unit == "chunk" else None)
    if universe is None or qrels.spans is not None:
        return
    ids = judged_ids(qrels)
    keys = universe.keys if isinstance(universe, Corpus) else None
    outside = ids[IdIndex(universe.ids, keys=keys).find(ids) < 0]
    if len(outside):
        raise judged_outside(qrels, snapshot._source("qrels"), outside, len(ids),
                             universe.source)


UNPINNED = {"corpus": "unversioned", "permissions": "public"}  # versions without a file


def freeze(output: str | os.PathLike[str], *, queries: str | os.PathLike[str],
           qrels: str | os.PathLike[str], corpus_version: str | None = None,
           permissions_version: str | None = None,
           chunking_version: str | None = None, unit: str | None = None,
           queries_version: str | None = None, qrels_version: str | None = None,
           corpus_file: str | os.PathLike[str] | None = None,
           chunking_params: Mapping[str, Any] | None = None,
           chunks_file: str | os.PathLike[str] | None = None,
           permissions_file: str | os.PathLike[str] | None = None, name: str | None = None,
           measures: Sequence[str] = (), gain: str = EXPONENTIAL,
           policy: ScoringPolicy = _DEFAULT_POLICY, min_coverage: float | None = None,
           stages: Sequence[StageContract] = (), given: Mapping[str, Blob] | None = None,
           write: bool = True) -> Snapshot:
    """Write a snapshot manifest to ``output`` (atomically) pinning the given files by their
    SHA-256, and return it loaded back. ``given``: files already read, by component
    (``qrels``), pinned and checked from those bytes — the file may not be written yet; with
    ``write=False`` nothing is written (the manifest's text is :func:`manifest_text`), for a
    caller that writes it together with other files. Every file must lie in ``output``'s
    folder or below it. A version left out defaults to ``sha256:`` + the first 12 hex digits of
    the file's hash; without a file, the corpus's to ``unversioned`` and the permissions' to
    ``public`` (:data:`UNPINNED`: what ``gate init`` and ``gate snapshot freeze`` write alike);
    the
    name defaults to the name of the manifest's folder; measures default to the default set at
    10. Without ``unit``, :func:`~retrieval_gate.scoring.units.choose_unit` chooses it from the
    judgments, the corpus and the chunk table, or refuses to guess (the returned snapshot's
    ``unit_choice`` says which and why); chunk judgments need the chunking's version (and may
    pin its chunk table). ``stages`` is the pipeline's contract, in order; a measure
    without ``[stage]`` then reads the last stage. The manifest is
    validated (schema, measures, queries against qrels, spans against the corpus) before it is
    written."""
    folder = Path(output).resolve().parent
    document: dict[str, Any] = {"name": name or folder.name}
    blobs: dict[str, Blob] = {}
    for component, file, version in (("queries", queries, queries_version),
                                     ("qrels", qrels, qrels_version),
                                     ("corpus", corpus_file, corpus_version),
                                     ("permissions", permissions_file, permissions_version)):
        document[component] = _component(component, file, version, folder, given or {}, blobs)
    if chunks_file is not None:
        _inside(chunks_file, folder, "--chunks")
        blobs["chunking"] = read_blob(chunks_file)
    from retrieval_gate.formats.corpus import read_chunk_table, read_corpus

    choice = choose_unit(
        read_qrels(blobs["qrels"]), blobs["qrels"], given=unit, chunking_version=chunking_version,
        corpus=read_corpus(blobs["corpus"]) if unit is None and "corpus" in blobs else None,
        chunks=read_chunk_table(blobs["chunking"]) if unit is None and chunks_file else None)
    chunking = _chunking_record(choice.unit, chunking_version, chunking_params, None if
                                chunks_file is None else (chunks_file, folder,
                                                          blobs["chunking"].sha256))
    document = {**{k: v for k, v in document.items() if k != "permissions"},
                "chunking": chunking, "permissions": document["permissions"]}
    if stages:
        document["stages"] = [s.as_dict() for s in stages]
    chosen = parse_measures(measures, gain) if measures else default_measures(DEFAULT_CUTOFF)
    chosen = _staged(chosen, stages, "--measure")
    document["scoring"] = {"measures": [str(m) for m in chosen], "gain": gain, **policy.as_dict()}
    if min_coverage is not None:
        document["scoring"]["min_coverage"] = min_coverage
    frozen = replace(_resolve(document, display_name(output), blobs), unit_choice=choice)
    frozen = replace(frozen, warnings=tuple(load_test_set(frozen).warnings))
    if write:
        write_text_atomic(output, manifest_text(frozen))
    return frozen


def _component(component: str, file: str | os.PathLike[str] | None, version: str | None,
               folder: Path, given: Mapping[str, Blob], blobs: dict[str, Blob]
               ) -> dict[str, str]:
    """One component's record: without a file, its version (default :data:`UNPINNED`'s);
    with one, the file pinned (it must lie under ``folder``), its bytes — ``given``, else
    read — kept in ``blobs``."""
    if file is None:
        return {"version": version or UNPINNED[component]}
    _inside(file, folder, f"--{component}" if component in ("queries", "qrels")
            else f"--{component}-file")
    blobs[component] = given.get(component) or read_blob(
        file, map_from=None if component in ("queries", "qrels")
        else 1 << 24)  # a large corpus or permissions file: mapped
    return _pin(file, folder, blobs[component].sha256, version)


def _chunking_record(unit: str, version: str | None, params: Mapping[str, Any] | None,
                     table: tuple[str | os.PathLike[str], Path, str] | None) -> dict[str, Any]:
    """The manifest's ``chunking``: the evidence ``unit`` and, for chunk judgments, the judged
    chunking's ``version`` (required), ``params`` and chunk ``table`` (its file, the
    manifest's folder and its sha256), when given. InputError for a chunking named on other
    judgments, which compare runs of any chunking."""
    chunking: dict[str, Any] = {"unit": unit}
    if unit == "chunk":
        if version is None:
            raise InputError("--chunking-version", "is required for chunk judgments",
                             "name the chunking the judged chunk ids belong to")
        chunking.update(version=version, params=dict(params or {}))
        if table is not None:
            chunking.update(_pin(*table, None))
            chunking["version"] = version
    elif version is not None or params or table is not None:
        raise InputError("--chunking-version", f"{unit} judgments compare runs of any "
                         "chunking, so the snapshot pins none",
                         "record each run's chunking in its run manifest (gate run-manifest "
                         "--chunks), or freeze with --unit chunk")
    return chunking


def manifest_text(snapshot: Snapshot) -> str:
    """The text of ``snapshot``'s manifest file, as :func:`freeze` writes it."""
    return json.dumps(snapshot.document, indent=2, ensure_ascii=False) + "\n"


def _inside(file: str | os.PathLike[str], folder: Path, option: str) -> None:
    """InputError unless ``file`` lies in ``folder`` or below it."""
    if not Path(file).resolve().is_relative_to(folder):
        raise InputError(option, f"'{display_name(file)}' is not inside the snapshot's folder "
                         f"{display_name(folder)}", "put the file beside the manifest (or "
                         "below it), or write the manifest where the files are")


def _pin(file: str | os.PathLike[str], folder: Path, digest: str, version: str | None
         ) -> dict[str, str]:
    """``{"path", "sha256", "version"}`` for a file under ``folder`` whose hash is ``digest``."""
    return {"path": Path(file).resolve().relative_to(folder).as_posix(), "sha256": digest,
            "version": version or f"sha256:{digest[:12]}"}
