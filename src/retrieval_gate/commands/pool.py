"""Judging what the candidate found: the unjudged items of the runs' top k, exported for
assessors, and their grades merged back into the judgments under a new qrels version.

**Why.** An unjudged item scores as non-relevant. A candidate that finds relevant documents
the judgments never saw therefore looks worse than it is (pool bias: ``gate check`` warns when
the candidate surfaces clearly more unjudged items than the baseline). Judging them and
freezing a snapshot with the new judgments removes that bias for both runs.

**The pool** (:func:`collect_pool`) of a run: for every query of the query set (answerable
or not), the *units* within the top ``k`` of the ranking the measures read (a pipeline's last
stage, cut to its contract) that the query has no judgment for. A unit is what a judgment
names:

- ``document`` judgments: a document. A chunked run's items collapse to their document,
  which keeps the rank of its best item (the measures' rule);
- ``chunk`` judgments: an item (a chunk id), at its rank;
- ``span`` judgments: a document without a judged span for the query, at the rank of its best
  item (items are not collapsed for spans: the top k are k items).

A unit with any judgment, a negative grade too, is not in the pool. An item the query's asker
may not see, or that is not in force on the query's day, is left out: it is never evidence,
whatever its grade. Runs are read as ``gate check`` reads them: each run manifest must be made
on the snapshot (exit 3), the run's bytes must have the pinned SHA-256 (exit 3), and the run
must score under the snapshot's policy (query set, corpus, repeats: exit 2).

**The pool file** (:func:`pool_text`), JSON Lines, one line per (query, unit) even when both
runs rank it, in the query set's order, then by best rank (then by the candidate's)::

    {"query_id": "q1", "query": "...", "doc_id": "d7", "item": "d7#2", "text": "...",
     "rank": {"candidate": 3, "baseline": null}, "grade": null}

``item`` is the unit's best-ranked item (the candidate's when the candidate ranks the unit);
``text`` its text when the pinned corpus has text — the item's own characters when it has a
place, else its document's from the start — at most :data:`TEXT_LIMIT` characters, else null;
``rank`` the unit's rank in each run, null when it is not in that run's top k (no
``baseline`` key without a baseline). Strings are exact; the characters some readers take for
a line end or that hide or reorder text (U+2028, U+2029, U+0085, bidirectional controls, ...)
are written as JSON escapes, so that each record stays one line whatever the text holds. The
assessor fills in ``grade``.

**Merging** (:func:`merge_pool`) reads a judged pool file. Each line names a query of the
query set, its unit (``doc_id`` for document judgments, ``item`` for chunk judgments) and an
integer ``grade`` from −100 to 100; other keys are not read. Refused, naming the line (exit
2): a grade still null ("not judged yet"), a query outside the query set, a unit outside the
pinned corpus (or chunk table), a grade that differs from the snapshot's judgment of that
(query, unit) or from an earlier line's, and a grade at or above the threshold for a query
marked unanswerable. A repeat with the same grade is accepted. Span judgments are refused as a
whole: a span is judged on the document's text, not by a grade for the document. The output is
JSON Lines qrels: per query, in the query set's order, its recorded judgments (with their
facts), then its new ones. With ``freeze_to``, a new snapshot pins them with the old
snapshot's other files and settings. Nothing is written unless every line is valid.

**Both files or neither.** The new snapshot is frozen (checked) from the merged judgments'
bytes before either file is written; then both are renamed into place, the judgments first
and the snapshot, which pins their hash, last (:func:`~retrieval_gate.formats.atomic.
write_texts`): a failed second rename, or Ctrl-C before it, puts the judgments' former file
back. A process killed between the two renames leaves the old snapshot with the new
judgments; where it pins the file replaced, its hash check refuses it (exit 3) and names the
staged new snapshot and the kept former judgments, to finish or undo the write by hand.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.limits import MAX_CUTOFF, MAX_GRADE, MIN_GRADE
from retrieval_gate.core.model import Query, RankedRun, RunRows
from retrieval_gate.core.ranking import IdIndex, rank_run
from retrieval_gate.core.untrusted import capped
from retrieval_gate.formats import read_run
from retrieval_gate.formats.atomic import write_text_atomic, write_texts
from retrieval_gate.formats.jsonfmt import check_grade, check_id, json_lines
from retrieval_gate.formats.jsonfmt import path as json_path
from retrieval_gate.formats.source import Blob, display_name, read_blob
from retrieval_gate.gating.instead import corpus_texts
from retrieval_gate.gating.pipeline import stage_sources
from retrieval_gate.inputs.run_manifest import (
    RunManifest,
    load_run_chunks,
    read_run_file,
    read_run_manifest,
    require_made_on,
    resolve_run,
    verify_run_hash,
)
from retrieval_gate.inputs.snapshot import (
    FILE_COMPONENTS,
    Snapshot,
    TestSet,
    freeze,
    load_snapshot,
    load_test_set,
    manifest_text,
)
from retrieval_gate.scoring.evidence import attach_chunks, corpus_index
from retrieval_gate.scoring.measures import Measure
from retrieval_gate.scoring.scores import score_run
from retrieval_gate.scoring.visibility import askers, item_access

DEFAULT_K = 10
TEXT_LIMIT = 2000  # characters of text per pool line
ROLES = ("candidate", "baseline")
POOL_SUFFIX = "+pool"  # the default qrels version of a snapshot frozen by a merge: OLD+pool

# Characters JSON leaves as they are that a reader may take for a line end (U+2028, U+2029 and
# U+0085 for Python's str.splitlines and older JavaScript) or that hide or reorder the text shown
# (the set retrieval_gate.core.untrusted.visible escapes, beyond the C0 controls JSON escapes
# already): written as \uXXXX, which reads back as the same string.
_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in (
    *range(0x7F, 0xA0), 0x061C, 0x200B, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F),
    0x2060, *range(0x2066, 0x206A), *range(0xD800, 0xE000), 0xFEFF, 0xFFFE, 0xFFFF)}


@dataclass(frozen=True)
class PoolItem:
    """One line of the pool file (see the module docstring); ``rank`` maps each run given
    (``candidate``, ``baseline``) to the unit's rank in its top k, or None."""

    query_id: str
    query: str
    doc_id: str
    item: str
    text: str | None
    rank: dict[str, int | None]

    @property
    def best(self) -> int:
        """The unit's best rank over the runs that rank it."""
        return min(r for r in self.rank.values() if r is not None)

    def line(self) -> str:
        """The JSON line (without its line end), ``grade`` null."""
        return json_line({"query_id": self.query_id, "query": self.query,
                          "doc_id": self.doc_id, "item": self.item, "text": self.text,
                          "rank": self.rank, "grade": None})


@dataclass(frozen=True)
class Pool:
    """The pool of the runs given (``roles``) on a snapshot whose judgments are of ``unit``:
    its lines in order, the cutoff ``k``, and ``left_out``: the (query, unit) pairs of the
    runs' top k that are unjudged but that the query's asker may not see or that are not in
    force on its day."""

    unit: str
    k: int
    roles: tuple[str, ...]
    items: tuple[PoolItem, ...]
    left_out: int = 0

    @property
    def queries(self) -> int:
        """How many queries have a line."""
        return len({item.query_id for item in self.items})


@dataclass(frozen=True)
class _Unit:
    """A unit in a run's top k: its rank, its key (what a judgment names), the best-ranked
    item holding it, that item's document and place (code points, None without one)."""

    rank: int
    key: str
    item: str
    doc: str
    place: tuple[int, int] | None


def json_line(value: object) -> str:
    """``value`` as one line of JSON: UTF-8 text as it is, except the characters of
    :data:`_JSON_ESCAPES`, written as escapes."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False).translate(_JSON_ESCAPES)


# -- export ----------------------------------------------------------------------------------

def export_pool(snapshot: str | os.PathLike[str], candidate: str | os.PathLike[str],
                output: str | os.PathLike[str], baseline: str | os.PathLike[str] | None = None,
                k: int = DEFAULT_K) -> Pool:
    """:func:`collect_pool`, written to ``output`` (atomically) by :func:`pool_text`."""
    pool = collect_pool(snapshot, candidate, baseline, k)
    write_text_atomic(output, pool_text(pool))
    return pool


def pool_text(pool: Pool) -> str:
    """The pool file: one JSON line per item, each ending with ``\\n`` (empty for no item)."""
    return "".join(item.line() + "\n" for item in pool.items)


def collect_pool(snapshot: str | os.PathLike[str], candidate: str | os.PathLike[str],
                 baseline: str | os.PathLike[str] | None = None, k: int = DEFAULT_K) -> Pool:
    """The unjudged units in the top ``k`` of the candidate (and of the baseline, a run or a
    baseline folder, when given) on ``snapshot``; see the module docstring. InputError (exit
    2) for a cutoff outside 1..1,000,000 and for invalid inputs; NotComparableError (exit 3)
    for a run made on another snapshot or changed since its manifest."""
    if isinstance(k, bool) or not 1 <= k <= MAX_CUTOFF:
        raise InputError("-k", f"{k} is not a cutoff from 1 to {MAX_CUTOFF:,}",
                         "give the depth the gated measures read, e.g. -k 10")
    snap = load_snapshot(snapshot)
    test_set = load_test_set(snap)
    given = [(role, resolve_run(path)) for role, path in zip(ROLES, (candidate, baseline))
             if path is not None]
    manifests = [read_run_manifest(run) for _, run in given]
    require_made_on(snap, *((m, role) for m, (role, _) in zip(manifests, given)))
    tops: dict[str, dict[str, list[_Unit]]] = {}
    hidden: set[tuple[str, str]] = set()
    for (role, run), manifest in zip(given, manifests):
        top = _unjudged(test_set, _top_units(snap, test_set, manifest, run, k))
        tops[role], hidden = _acceptable(test_set, top, hidden)
    texts = corpus_texts(snap, test_set, {u.doc for top in tops.values()
                                          for units in top.values() for u in units})
    items = _pool_items(test_set.queries, tops, texts, k)
    return Pool(snap.unit, k, tuple(tops), items, len(hidden))


def _top_units(snap: Snapshot, test_set: TestSet, manifest: RunManifest, run: Path, k: int
               ) -> dict[str, list[_Unit]]:
    """Per query of the run, its units in the top ``k`` of the ranking the measures read (the
    last stage of a pipeline run). The run is hashed against its manifest first, then checked
    as ``gate check`` checks it (scored under the snapshot's policy, unjudged items counting
    as non-relevant)."""
    contract, file, pinned = stage_sources(snap, manifest, run)[-1]
    blob = read_run_file(file)
    verify_run_hash(manifest, blob.sha256, pinned, None if contract is None else contract.name)
    rows = read_run(blob)
    table = load_run_chunks(manifest) or test_set.chunks
    if table is not None:
        rows = attach_chunks(rows, table)
    policy = replace(snap.policy, unjudged="nonrelevant")
    scored = score_run(test_set.qrels, rows, [Measure("Judged", k)], policy, test_set.queries,
                       corpus=test_set.corpus, min_coverage=snap.min_coverage, limit=contract,
                       access=test_set.access)
    placed = rows.starts is not None
    if rows.doc_ids is None and scored.ranked is not None:
        ranked = scored.ranked  # items are their own documents: the ranking scored
    else:  # k items hold the top k units, except documents of chunks, which collapse
        depth = None if snap.unit == "document" else k
        ranked = rank_run(_with_documents(rows), policy.duplicates, depth=depth,
                          collapse=False, limit=contract)
    return {qid: _units(ranked, i, snap.unit, k, placed)
            for i, qid in enumerate(ranked.query_ids)}


def _with_documents(rows: RunRows) -> RunRows:
    """``rows`` whose items name their document but no place get the empty place 0:0, so that
    ranking keeps each item's document beside it (the place itself is not used)."""
    if rows.doc_ids is None or rows.starts is not None:
        return rows
    empty = np.zeros(len(rows.qcodes), dtype=np.int64)
    return replace(rows, starts=empty, ends=empty)


def _units(ranked: RankedRun, query: int, unit: str, k: int, placed: bool) -> list[_Unit]:
    """The units of the ``query``-th ranking within its top ``k``, best first: for document
    judgments, documents ranked by their first item; otherwise items, each unit listed once
    with its best item (a chunk id for chunk judgments, a document for span judgments)."""
    first, last = int(ranked.offsets[query]), int(ranked.offsets[query + 1])
    places = ranked.places
    out: list[_Unit] = []
    seen: set[str] = set()
    for position, row in enumerate(range(first, last), 1):
        if unit != "document" and position > k:
            break
        item = ranked.docs[row].decode()
        doc = item if places is None else places.doc[row].decode()
        key = item if unit == "chunk" else doc
        if key in seen:
            continue  # listed once, with its best item
        rank = len(seen) + 1 if unit == "document" else position
        if rank > k:
            break
        seen.add(key)
        where = None if not placed or places is None else (int(places.start[row]),
                                                            int(places.end[row]))
        out.append(_Unit(rank, key, item, doc, where))
    return out


def _judged(test_set: TestSet, qid: str) -> set[str]:
    """The units ``qid`` has a judgment for: ids, or the documents of its judged spans."""
    qrels = test_set.qrels
    if qrels.spans is not None:
        return {span.doc for span in qrels.spans.get(qid, ())}
    return set(qrels.judgments.get(qid, {}))


def _unjudged(test_set: TestSet, top: dict[str, list[_Unit]]) -> dict[str, list[_Unit]]:
    """``top`` restricted to the queries of the query set and to the units they have no
    judgment for."""
    out = {}
    for query in test_set.queries:
        judged = _judged(test_set, query.id)
        units = [u for u in top.get(query.id, ()) if u.key not in judged]
        if units:
            out[query.id] = units
    return out


def _acceptable(test_set: TestSet, top: dict[str, list[_Unit]], hidden: set[tuple[str, str]]
                ) -> tuple[dict[str, list[_Unit]], set[tuple[str, str]]]:
    """``top`` without the units whose document the query's asker may not see or that is not
    in force on its day, and ``hidden`` with their (query, unit) pairs added. Everything is
    acceptable without access data."""
    access = test_set.access
    pairs = [(qid, u) for qid, units in top.items() for u in units]
    if access is None or not pairs:
        return top, hidden
    position = {q.id: i for i, q in enumerate(test_set.queries)}
    flags = item_access(access, askers(access, test_set.queries),
                        np.array([position[qid] for qid, _ in pairs], dtype=np.int64),
                        np.array([u.doc.encode() for _, u in pairs], dtype="S"))
    ok = (flags.visible & flags.in_force).tolist()
    kept: dict[str, list[_Unit]] = {}
    for (qid, unit), good in zip(pairs, ok):
        if good:
            kept.setdefault(qid, []).append(unit)
    return kept, hidden | {(qid, u.key) for (qid, u), good in zip(pairs, ok) if not good}


def _pool_items(queries: Sequence[Query], tops: Mapping[str, Mapping[str, list[_Unit]]],
                texts: Mapping[str, str], k: int) -> tuple[PoolItem, ...]:
    """The pool's lines: per query in the query set's order, each unit any run ranks, by best
    rank, then by the runs' ranks in the order given, then by document and item."""
    out: list[PoolItem] = []
    for query in queries:
        found: dict[str, dict[str, _Unit]] = {}
        for role, top in tops.items():
            for unit in top.get(query.id, ()):
                found.setdefault(unit.key, {})[role] = unit
        items = [_pool_item(query, by_role, tuple(tops), texts) for by_role in found.values()]
        out.extend(sorted(items, key=lambda i: (
            i.best, tuple(k + 1 if r is None else r for r in i.rank.values()), i.doc_id,
            i.item)))
    return tuple(out)


def _pool_item(query: Query, by_role: Mapping[str, _Unit], roles: tuple[str, ...],
               texts: Mapping[str, str]) -> PoolItem:
    """The line of one unit: shown by the first run of ``roles`` that ranks it."""
    shown = next(by_role[role] for role in roles if role in by_role)
    text = texts.get(shown.doc)
    if text is not None and shown.place is not None:
        text = text[shown.place[0]:shown.place[1]]
    return PoolItem(query.id, query.text, shown.doc, shown.item,
                    None if text is None else capped(text, TEXT_LIMIT),
                    {role: by_role[role].rank if role in by_role else None for role in roles})


# -- merge -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Merged:
    """What a merge wrote: ``added`` new judgments for ``queries`` queries, ``repeated``
    lines whose judgment was already recorded (in the qrels, or on an earlier line), the
    qrels file ``output``, and the new snapshot with the warnings of its test set (None and
    none without ``freeze_to``)."""

    added: int
    queries: int
    repeated: int
    output: str
    snapshot: Snapshot | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Judgment:
    """A new judgment from the judged pool file, and its line there."""

    query: str
    key: str
    grade: int
    line: int


def merge_pool(snapshot: str | os.PathLike[str], judged: str | os.PathLike[str],
               output: str | os.PathLike[str], qrels_version: str | None = None,
               freeze_to: str | os.PathLike[str] | None = None) -> Merged:
    """Write the snapshot's judgments and the judged pool file's grades to ``output`` as JSON
    Lines qrels and, with ``freeze_to``, freeze a new snapshot there: the old one's queries,
    corpus, chunking, permissions, scoring and stages, its name, and these judgments under
    ``qrels_version`` (default: the old version + :data:`POOL_SUFFIX`). Every file must lie
    in the new snapshot's folder or below it. See the module docstring for what is refused
    (InputError, exit 2); nothing is written then."""
    if qrels_version is not None and freeze_to is None:
        raise InputError("--qrels-version", "names the judgments' version in a new snapshot, "
                         "and no --freeze is given", "add --freeze NEW-SNAPSHOT, or leave "
                         "--qrels-version out")
    snap = load_snapshot(snapshot)
    test_set = load_test_set(snap)
    _require_mergeable(snap, freeze_to)
    if freeze_to is not None:
        _require_inside(snap, output, freeze_to)
    new, repeated = _read_judged(snap, test_set, judged)
    text = _qrels_text(test_set, new)
    counts = (len(new), len({j.query for j in new}), repeated)
    if freeze_to is None:
        write_text_atomic(output, text)
        return Merged(*counts, display_name(output))
    frozen = _refreeze(snap, output, freeze_to, qrels_version,
                       Blob(display_name(output), text.encode("utf-8")))
    write_texts([(output, text), (freeze_to, manifest_text(frozen))])
    return Merged(*counts, display_name(output), frozen, frozen.warnings)


def _require_mergeable(snap: Snapshot, freeze_to: str | os.PathLike[str] | None) -> None:
    """InputError for span judgments (graded on the text, not by document), and, to freeze,
    for a snapshot that states no unit (a new one would state one and change more than its
    judgments)."""
    if snap.unit == "span":
        raise InputError(snap.source, "the snapshot judges spans of the documents' text, and a "
                         "pool file grades whole documents", "judge the spans on the text "
                         "(JSON Lines qrels with start and end) and freeze a new snapshot with "
                         "gate snapshot freeze", json_path("chunking", "unit"))
    if freeze_to is not None and "unit" not in snap.document["chunking"]:
        raise InputError(snap.source, "the snapshot states no evidence unit (it was frozen "
                         "before units), so a new one would change more than its judgments",
                         "merge without --freeze, then freeze the new snapshot with gate "
                         "snapshot freeze --unit", json_path("chunking"))


def _require_inside(snap: Snapshot, output: str | os.PathLike[str],
                    freeze_to: str | os.PathLike[str]) -> None:
    """InputError unless the new qrels and every other file of the snapshot lie in the new
    snapshot's folder or below it (a snapshot's paths may not leave its folder), and unless
    the two files written are two, and neither replaces a file the new snapshot pins besides
    the judgments."""
    folder = Path(freeze_to).resolve().parent
    if Path(output).resolve() == Path(freeze_to).resolve():
        raise InputError("--freeze", f"{display_name(freeze_to)} is also the merged judgments "
                         "(-o)", "give the new snapshot and its judgments two names")
    files = [("the merged judgments (-o)", Path(output))] + [
        (f"the snapshot's {component} file", file) for component in FILE_COMPONENTS
        if component != "qrels" and (file := snap.file(component)) is not None]
    for option, written in (("-o", output), ("--freeze", freeze_to)):
        pinned = next((what for what, file in files[1:]
                       if file.resolve() == Path(written).resolve()), None)
        if pinned is not None:
            raise InputError(option, f"{display_name(written)} is {pinned}, which the new "
                             "snapshot pins too", "write it to a file of its own")
    for what, file in files:
        if not file.resolve().is_relative_to(folder):
            raise InputError("--freeze", f"{what} {display_name(file)} is not inside the new "
                             f"snapshot's folder {display_name(folder)}", "write the new "
                             "snapshot beside the old one, and -o in its folder or below")


def _read_judged(snap: Snapshot, test_set: TestSet, judged: str | os.PathLike[str]
                 ) -> tuple[list[_Judgment], int]:
    """The new judgments of the judged pool file, in its order, and how many of its lines
    repeat a recorded judgment; InputError naming the first bad line."""
    blob = read_blob(judged)
    name = blob.name
    field = "item" if snap.unit == "chunk" else "doc_id"
    queries = {q.id: q for q in test_set.queries}
    recorded = test_set.qrels.judgments
    new: dict[tuple[str, str], _Judgment] = {}
    repeated = 0
    for line, obj in json_lines(blob.text(), name):
        qid = check_id(obj.get("query_id"), name, line, "query_id")
        key = check_id(obj.get(field), name, line, field)
        grade = _grade(obj, qid, key, queries, snap, name, line, field)
        judgment = _Judgment(qid, key, grade, line)
        before = recorded.get(qid, {}).get(key)
        earlier = new.get((qid, key))
        if before is not None or earlier is not None:
            _require_same(judgment, before, earlier, test_set.qrels.source, name, field)
            repeated += 1
            continue
        new[(qid, key)] = judgment
    _require_known(snap, test_set, list(new.values()), name, field)
    return list(new.values()), repeated


def _grade(obj: Mapping[str, object], qid: str, key: str, queries: Mapping[str, Query],
           snap: Snapshot, name: str, line: int, field: str) -> int:
    """The grade of line ``line`` (``obj``) judging unit ``key`` for query ``qid``: the query
    must be in the query set, the grade an integer from −100 to 100, and below the threshold
    for a query marked unanswerable."""
    query = queries.get(qid)
    if query is None:
        raise InputError(name, f"query '{qid}' is not in the snapshot's query set",
                         "grade the pool exported from this snapshot, or delete the line", line)
    if obj.get("grade") is None:
        raise InputError(name, f"query '{qid}', {field} '{key}' is not judged yet (grade "
                         f"{'null' if 'grade' in obj else 'missing'})", f"fill in its grade, "
                         f"an integer from {MIN_GRADE} to {MAX_GRADE}, or delete the line",
                         line)
    grade = check_grade(obj["grade"], name, line)
    threshold = max(snap.policy.threshold, 0)
    if not query.answerable and grade >= threshold:
        raise InputError(name, f"query '{qid}' is marked unanswerable, and {field} '{key}' "
                         f"is graded {grade}, at or above the threshold {threshold}",
                         "grade it below the threshold, or mark the query answerable in a new "
                         "version of the query set", line)
    return grade


def _require_same(judgment: _Judgment, before: int | None, earlier: _Judgment | None,
                  qrels: str, name: str, field: str) -> None:
    """InputError when ``judgment`` grades a (query, unit) otherwise than the snapshot's
    judgments (``before``) or an earlier line of the file (``earlier``)."""
    what = f"query '{judgment.query}', {field} '{judgment.key}'"
    if before is not None and before != judgment.grade:
        raise InputError(name, f"{what} is graded {judgment.grade}, and the snapshot's "
                         f"judgments {qrels} grade it {before}", "keep the recorded grade (a "
                         "correction belongs in a new version of the judgments), or delete "
                         "the line", judgment.line)
    if earlier is not None and earlier.grade != judgment.grade:
        raise InputError(name, f"{what} is graded {judgment.grade}, and {earlier.grade} on "
                         f"line {earlier.line}", "keep one grade per (query, unit)",
                         judgment.line)


def _require_known(snap: Snapshot, test_set: TestSet, new: list[_Judgment], name: str,
                   field: str) -> None:
    """InputError naming the first line whose unit is not in the pinned corpus (document
    judgments) or the pinned chunk table (chunk judgments); nothing to check when the snapshot
    pins neither."""
    chunks, corpus = test_set.chunks, test_set.corpus
    if snap.unit == "chunk" and chunks is not None:
        index, where = IdIndex(chunks.ids), f"the chunk table {chunks.source}"
    elif snap.unit == "document" and corpus is not None:
        index, where = corpus_index(corpus), f"the corpus {corpus.source}"
    else:
        return
    if not new:
        return
    found = index.find(np.array([j.key.encode() for j in new], dtype="S"))
    missing = np.flatnonzero(found < 0)
    if len(missing):
        bad = new[int(missing[0])]
        raise InputError(name, f"{field} '{bad.key}' is not in {where}", "grade the units "
                         "the pool file names (check the id), or delete the line", bad.line)


def _qrels_text(test_set: TestSet, new: list[_Judgment]) -> str:
    """JSON Lines qrels: per query, in the query set's order, its recorded judgments in their
    order (with their facts), then its new ones in the pool file's order."""
    added: dict[str, list[_Judgment]] = {}
    for judgment in new:
        added.setdefault(judgment.query, []).append(judgment)
    qrels = test_set.qrels
    lines = []
    for query in test_set.queries:
        for key, grade in qrels.judgments.get(query.id, {}).items():
            lines.append(_qrels_line(query.id, key, grade, qrels.fact_of(query.id, key)))
        for judgment in added.get(query.id, ()):
            lines.append(_qrels_line(query.id, judgment.key, judgment.grade, None))
    return "".join(line + "\n" for line in lines)


def _qrels_line(qid: str, key: str, grade: int, fact: str | None) -> str:
    line: dict[str, object] = {"query_id": qid, "doc_id": key, "grade": grade}
    if fact is not None:
        line["fact"] = fact
    return json_line(line)


def _refreeze(snap: Snapshot, qrels: str | os.PathLike[str], output: str | os.PathLike[str],
              qrels_version: str | None, judgments: Blob) -> Snapshot:
    """The new snapshot for ``output``, checked and not written: ``snap``'s settings with
    ``judgments``, the bytes ``qrels`` will hold, as its judgments."""
    document = snap.document
    chunking = document["chunking"]
    scoring = document.get("scoring", {})
    return freeze(
        output, queries=_file(snap, "queries"), queries_version=document["queries"]["version"],
        qrels=qrels, qrels_version=(document["qrels"]["version"] + POOL_SUFFIX
                                           if qrels_version is None else qrels_version),
        corpus_version=document["corpus"]["version"], corpus_file=snap.file("corpus"),
        permissions_version=document["permissions"]["version"],
        permissions_file=snap.file("permissions"), unit=snap.unit,
        chunking_version=chunking.get("version"), chunking_params=chunking.get("params"),
        chunks_file=snap.file("chunking"), name=snap.name,
        measures=scoring.get("measures", ()), gain=snap.gain, policy=snap.policy,
        stages=snap.stages, given={"qrels": judgments}, write=False)


def _file(snap: Snapshot, component: str) -> Path:
    file = snap.file(component)
    assert file is not None  # the schema requires a path for queries and qrels
    return file
