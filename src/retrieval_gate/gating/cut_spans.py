"""Span judgments cut by one run's chunking: the decisions they would bias are not trusted.

Spans made from one chunking's chunks begin and end on its boundaries
(:mod:`retrieval_gate.scoring.chunkcut`): that chunking holds each span in one chunk, another
needs two or more, so a comparison of the two favours the chunking that cut them. When at
least :data:`~retrieval_gate.scoring.chunkcut.CUT_SHARE` of the relevant spans are cut by one
run's chunking and the runs' chunkings differ, every retrieval measure's decision *in that
run's favour* is not trusted — a ``regression`` when it is the baseline's chunking, a ``pass``
(and an improvement) when it is the candidate's — and is ``inconclusive`` instead, saying why;
a decision against the favoured run stands (it holds in spite of the bias). Spans cut by both
runs' chunkings, when they are the same chunking (the same chunk table, or the same version,
or neither stated), favour neither. ``accept-cut-spans = true`` in the configuration decides
anyway (the report still warns).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from retrieval_gate.decide.policy import Comparison

_FAVOURED = {"baseline": "regression", "candidate": "pass"}  # the decision a favour would make
_FIX = ("narrow the spans to their evidence (gate qrels to-spans --evidence), or decide anyway "
        "with accept-cut-spans = true")


def favoured(spans_cut: Sequence[str], chunkings: tuple[dict[str, Any] | None,
                                                         dict[str, Any] | None]) -> tuple[str, ...]:
    """The runs (``baseline``, ``candidate``) that span judgments cut by their chunking favour:
    those of ``spans_cut`` — none when both cut them with the same chunking (each run's
    manifest ``chunkings``: equal chunk-table hashes and versions, or neither stated)."""
    base, cand = (c or {} for c in chunkings)
    same = all(base.get(key) == cand.get(key) for key in ("sha256", "version"))
    return () if len(spans_cut) == 2 and same else tuple(spans_cut)


def distrust_cut_spans(comparisons: Sequence[Comparison], measures: Sequence[str],
                       favoured_runs: Sequence[str]) -> tuple[Comparison, ...]:
    """``comparisons`` with each decision of a retrieval measure (``measures``) that favours a
    run of ``favoured_runs`` made ``inconclusive``, with the reason (see the module
    docstring)."""
    out = []
    for c in comparisons:
        roles = [role for role in favoured_runs if _FAVOURED[role] == c.decision]
        if c.measure in measures and roles:
            role = roles[0]
            what = "drop" if role == "baseline" else "pass"
            c = replace(c, decision="inconclusive", improvement=False, decision_note=(
                f"the span judgments were cut by the {role}'s chunking, which favours it: this "
                f"{what} may come from the cut, not from retrieval — {_FIX}"))
        out.append(c)
    return tuple(out)
