"""``gate score`` as one library call: files and options in, the scored document(s) out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.model import ChunkTable, Corpus, Qrels, RunRows
from retrieval_gate.formats import read_doc_map, read_fixture, read_qrels, read_queries, read_run
from retrieval_gate.formats.source import display_name
from retrieval_gate.scoring.measures import Measure, default_measures, parse_measures
from retrieval_gate.scoring.rules import ScoringPolicy
from retrieval_gate.scoring.scores import Scores, score_run

DEFAULT_K = 10


@dataclass(frozen=True)
class ScoredRun:
    """One scored run with the inputs that produced it (for the report header)."""

    name: str | None
    scores: Scores
    inputs: dict[str, Any]


def choose_measures(names: Sequence[str], k: int | None) -> tuple[Measure, ...]:
    """The measures named, or the default set (Recall, P, Hit, RR, nDCG, AP) at cutoff k."""
    if names and k is not None:
        raise InputError("-k", "applies only to the default measure set",
                         "write the cutoff in each measure name instead (e.g. -m nDCG@5)")
    return parse_measures(names) if names else default_measures(DEFAULT_K if k is None else k)


def score_files(files: Sequence[str], measures: Sequence[Measure], policy: ScoringPolicy,
                queries: str | None = None, doc_map: str | None = None,
                qrels_format: str | None = None, run_format: str | None = None,
                corpus: str | None = None, chunks: str | None = None,
                min_coverage: float = 1.0) -> list[ScoredRun]:
    """Score ``QRELS RUN`` (two files) or a fixture (one file; one run or several named runs).
    ``corpus`` pins the documents the run may name (span judgments need it); ``chunks`` is the
    run's chunk table."""
    query_set = read_queries(queries) if queries else None
    mapping = read_doc_map(doc_map) if doc_map else None
    pinned: Corpus | None = None
    table: ChunkTable | None = None
    if corpus or chunks:  # their readers are imported only for them
        from retrieval_gate.formats.corpus import read_chunk_table, read_corpus

        pinned = read_corpus(corpus) if corpus else None
        table = read_chunk_table(chunks) if chunks else None
    common = {"queries": queries and display_name(queries),
              "doc_map": doc_map and display_name(doc_map),
              "corpus": corpus and display_name(corpus), "chunks": chunks and display_name(chunks)}

    def scored(qrels: Qrels, run: RunRows) -> Scores:
        if table is not None:
            from retrieval_gate.scoring.evidence import attach_chunks

            run = attach_chunks(run, table)
        return score_run(qrels, run, measures, policy, query_set, mapping, pinned, min_coverage)

    if len(files) == 2:
        qrels, run = read_qrels(files[0], qrels_format), read_run(files[1], run_format)
        return [ScoredRun(None, scored(qrels, run),
                          {"qrels": qrels.source, "run": run.source, **common})]
    if len(files) == 1:
        fixture = read_fixture(files[0])
        return [ScoredRun(name if fixture.named else None, scored(fixture.qrels, run),
                          {"fixture": display_name(files[0]), **({"run": name} if fixture.named else {}),
                           **common})
                for name, run in fixture.runs.items()]
    raise InputError("gate score", f"got {len(files)} files",
                     "give QRELS RUN, or one fixture file with 'qrels' and 'runs'")
