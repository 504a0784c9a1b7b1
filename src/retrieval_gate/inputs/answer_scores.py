"""A run's per-query scores on the snapshot: the score file a run manifest pins, read, matched
with the snapshot's queries, and its samples averaged per query.

Rules, the same for every format (:mod:`retrieval_gate.formats.scores`):

- **Matching.** A row's key is a query id, or — for a tool that records the question only —
  the query's text, matched exactly (the whole string) against the snapshot's query texts; a
  text that two of the snapshot's queries share cannot be matched and is refused, as is a key
  the snapshot does not hold. Every answerable query must have at least one row (exit 2 naming
  the first without one). The unanswerable queries are scored all or none: a file without
  them (an evaluation of the answerable questions only) is read, their scores are *absent*
  (:attr:`QueryScores.absent`) — not failed —, and such a score cannot be compared on the
  slice ``unanswerable``; a file that scores some of them only is refused, naming the first
  without a row.
- **Samples.** A query's rows are its samples (k of them; k may differ between queries). Its
  value for a score is the mean over its samples; the within-query spread of a score is the
  root mean square of the queries' sample standard deviations (ddof 1, over the queries with
  k ≥ 2). The gate compares the per-query means, so its bootstrap resamples a query with all
  its samples (a clustered bootstrap) and the sampling noise widens the interval and the
  detectable drop as it should.
- **Failed scores.** A NaN (null, a judge's failure, a missing value) is kept as NaN in the
  query's mean; what the gate does with it is the policy's ``missing``
  (:func:`retrieval_gate.decide.signals.apply_missing`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval_gate.core.errors import InputError, NotComparableError
from retrieval_gate.formats.jsonfmt import path as json_path
from retrieval_gate.formats.scores import read_scores
from retrieval_gate.formats.scores.rows import ScoreRows
from retrieval_gate.formats.source import Blob, read_blob
from retrieval_gate.inputs.run_manifest import RunManifest
from retrieval_gate.inputs.snapshot import TestSet


@dataclass(frozen=True)
class QueryScores:
    """A run's scores on the snapshot's queries (in ``query_ids`` order): ``values`` is
    queries × ``names``, each the mean over the query's samples (NaN when a sample failed);
    ``samples`` the number of samples per query; ``spread`` the within-query spread of each
    score (None when no query has two samples); ``source`` the score file and ``tool`` its
    producer; ``judge`` who scored (the manifest's record, empty when not recorded);
    ``absent``, per query, whether the file leaves it out (the unanswerable queries of a file
    that scores none of them: value NaN, 0 samples)."""

    source: str
    tool: str
    names: tuple[str, ...]
    query_ids: tuple[str, ...]
    values: np.ndarray
    samples: np.ndarray
    spread: tuple[float | None, ...]
    judge: dict[str, str]
    absent: np.ndarray

    @property
    def scores_unanswerable(self) -> bool:
        """Whether the file scores the unanswerable queries (it scores all or none)."""
        return not self.absent.any()

    def column(self, name: str) -> np.ndarray:
        """Score ``name``'s per-query means (NaN where a sample failed)."""
        return self.values[:, self.names.index(name)]


def load_query_scores(blob: Blob, format: str | None, queries: tuple[Any, ...],
                      query_ids: tuple[str, ...], judge: dict[str, str] | None = None,
                      unanswerable: int = 0) -> QueryScores:
    """The score file ``blob`` (read once, its hash checked by the caller) in ``format``,
    matched with ``queries`` (the snapshot's :class:`~retrieval_gate.core.model.Query` objects)
    and arranged in ``query_ids`` order (the gate's rows: answerable, then the last
    ``unanswerable`` ones, which the file scores all or none: see the module docstring)."""
    rows = read_scores(blob, format)
    position = _positions(rows, queries, query_ids, blob.name)
    n, m = len(query_ids), len(rows.names)
    sums = np.zeros((n, m))
    squares = np.zeros((n, m))
    counts = np.bincount(position, minlength=n)
    absent = np.zeros(n, dtype=bool)
    if unanswerable and not counts[n - unanswerable:].any():
        absent[n - unanswerable:] = True
    _require_scored(counts, absent, query_ids, unanswerable, blob.name)
    np.add.at(sums, position, rows.values)
    np.add.at(squares, position, rows.values ** 2)
    with np.errstate(invalid="ignore"):  # an absent query: 0 / 0, its mean NaN
        means = sums / counts[:, None]
    spread: list[float | None] = []
    several = counts >= 2
    for j in range(m):
        if not several.any():
            spread.append(None)
            continue
        k = counts[several]
        variance = (squares[several, j] - k * means[several, j] ** 2) / (k - 1)
        finite = variance[np.isfinite(variance)]
        spread.append(float(np.sqrt(np.clip(finite, 0, None).mean())) if len(finite) else None)
    return QueryScores(blob.name, rows.tool, rows.names, query_ids, means, counts,
                       tuple(spread), dict(judge or {}), absent)


def _require_scored(counts: np.ndarray, absent: np.ndarray, query_ids: tuple[str, ...],
                    unanswerable: int, name: str) -> None:
    """InputError naming the first query without a row that must have one: an answerable
    query, or an unanswerable one of a file that scores some of them."""
    missing = np.flatnonzero((counts == 0) & ~absent)
    if not len(missing):
        return
    first = int(missing[0])
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    if first >= len(query_ids) - unanswerable:
        scored = int((counts[len(query_ids) - unanswerable:] > 0).sum())
        raise InputError(name, f"unanswerable query {query_ids[first]} of the snapshot has no "
                         f"score{more}: the file scores {scored} of its {unanswerable} "
                         "unanswerable queries", "score every unanswerable query, or none "
                         "(their scores are then not compared on the slice unanswerable)")
    raise InputError(name, f"query {query_ids[first]} of the snapshot has no score{more}",
                     "score every answerable query of the snapshot (a judge that failed: write "
                     "null, and choose the policy's missing = \"drop-pair\" or \"worst\")")


def _positions(rows: ScoreRows, queries: tuple[Any, ...], query_ids: tuple[str, ...],
               name: str) -> np.ndarray:
    """Each row's position in ``query_ids``: by id, or by exact text (refusing a text two
    queries share); InputError at the row of a key the snapshot does not hold."""
    where = {qid: i for i, qid in enumerate(query_ids)}
    if rows.by_text:
        owners: dict[str, list[str]] = {}
        for q in queries:
            owners.setdefault(q.text, []).append(q.id)
    positions = np.empty(len(rows.keys), dtype=np.int64)
    for r, (key, place) in enumerate(zip(rows.keys, rows.places)):
        qid = key
        if rows.by_text:
            found = owners.get(key, [])
            if len(found) > 1:
                raise InputError(name, f"the question {key[:80]!r} is the text of queries "
                                 f"{', '.join(found[:5])} of the snapshot: it cannot tell which",
                                 "record the query id with each case (a query_id column, var "
                                 "or metadata field)", place)
            if not found:
                raise InputError(name, f"the question {key[:80]!r} is not the text of any "
                                 "query of the snapshot", "score the snapshot's questions as "
                                 "written there, or record the query id with each case "
                                 "(a query_id column, var or metadata field)", place)
            qid = found[0]
        if qid not in where:
            raise InputError(name, f"query {qid} is not a query of the snapshot",
                             "score the snapshot's queries only, or freeze a snapshot that "
                             "holds it", place)
        positions[r] = where[qid]
    return positions


def load_run_scores(manifest: RunManifest, test_set: TestSet, query_ids: tuple[str, ...]
                    ) -> QueryScores | None:
    """The score file ``manifest`` pins, read once: its bytes must have the pinned SHA-256
    (NotComparableError, exit 3, otherwise), then matched with the snapshot's queries in
    ``query_ids`` order (the answerable, then the unanswerable ones); None when the run pins
    no scores."""
    file = manifest.scores_file()
    record = manifest.scores
    if file is None or record is None:
        return None
    blob = read_blob(file)
    if blob.sha256 != record["sha256"]:
        raise NotComparableError(
            f"{manifest.source}:{json_path('scores', 'sha256')}: score file {blob.name} has "
            f"sha256 {blob.sha256}, the manifest pins {record['sha256']} — the scores changed "
            "after the manifest was written: rewrite the manifest with gate run-manifest "
            "--scores")
    return load_query_scores(blob, record["format"], test_set.queries, query_ids,
                             manifest.judge, len(test_set.unanswerable))


def judge_warnings(manifests: tuple[RunManifest, RunManifest]) -> list[str]:
    """Two runs scored by different judges are not comparable (exit 3): a changed judge model
    or prompt moves every score, as a changed chunking moves every ranking. The judges differ
    when a key is recorded with different values, or by one run only — a run that records no
    judge beside one that does is not comparable either (else dropping ``--judge`` would pass
    a changed judge). Runs that both record no judge are compared, with a warning saying so."""
    if any(m.scores is None for m in manifests):
        return []
    judges = [m.judge for m in manifests]
    if not judges[0] and not judges[1]:
        return [("scores: neither run records its judge — scores of different judges are not "
                 "comparable, and this check cannot tell (record it with gate run-manifest "
                 "--judge model=... --judge prompt=...)")]
    for key in sorted(set(judges[0]) | set(judges[1])):
        values = [j.get(key) for j in judges]
        if values[0] != values[1]:
            shown = [repr(v) if v is not None else "not recorded" for v in values]
            raise NotComparableError(
                f"not comparable: the runs' scores were judged differently — judge {key} is "
                f"{shown[0]} for the baseline ({manifests[0].source}) and {shown[1]} for the "
                f"candidate ({manifests[1].source})",
                "what to do — score both runs with the same judge (model, prompt, settings) "
                "and record it in both manifests, or score the baseline again with the "
                "candidate's judge and approve it")
    return []
